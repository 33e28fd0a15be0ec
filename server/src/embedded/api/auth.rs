//! Bearer-token authentication and the two roles: admin (everything) and reader (get, list,
//! watch), like the read-only ClusterRole spotboard ships for real clusters.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Shared;
use super::request::Verb;
use super::status::ApiError;

/// Who a request comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    Admin,
    Reader,
}

impl User {
    /// The user name in RBAC-style denials.
    pub fn name(self) -> &'static str {
        match self {
            User::Admin => "spotboard-admin",
            User::Reader => "spotboard-reader",
        }
    }

    pub fn may(self, verb: Verb) -> bool {
        self == User::Admin || verb.is_read()
    }
}

/// Compares in time independent of where the first difference is, so response timing does
/// not leak a token byte by byte.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The user a bearer token belongs to.
pub fn authenticate(authorization: Option<&str>, admin: &str, reader: &str) -> Option<User> {
    let token = authorization?.strip_prefix("Bearer ")?.trim();
    if same(token, admin) {
        Some(User::Admin)
    } else if same(token, reader) {
        Some(User::Reader)
    } else {
        None
    }
}

/// Paths anyone may read, as on a real API server (`system:public-info-viewer`).
fn is_public(path: &str) -> bool {
    matches!(path, "/version" | "/healthz" | "/readyz" | "/livez")
}

/// Answers 503 during a simulated outage and 401 without a known token; otherwise passes
/// the request on with its [`User`] as an extension.
pub async fn middleware(State(shared): State<Arc<Shared>>, mut req: Request, next: Next) -> Response {
    if *shared.outage.borrow() {
        return ApiError::unavailable().into_response();
    }
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match authenticate(authorization, &shared.tokens.admin, &shared.tokens.reader) {
        Some(user) => {
            req.extensions_mut().insert(user);
            next.run(req).await
        }
        None if is_public(req.uri().path()) => next.run(req).await,
        None => ApiError::unauthorized().into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_map_to_users() {
        let a = authenticate(Some("Bearer adm"), "adm", "rdr");
        assert_eq!(a, Some(User::Admin));
        assert_eq!(authenticate(Some("Bearer rdr"), "adm", "rdr"), Some(User::Reader));
        assert_eq!(authenticate(Some("Bearer nope"), "adm", "rdr"), None);
        assert_eq!(authenticate(Some("Basic adm"), "adm", "rdr"), None);
        assert_eq!(authenticate(None, "adm", "rdr"), None);
        assert_eq!(authenticate(Some("Bearer ad"), "adm", "rdr"), None);
    }

    #[test]
    fn reader_only_reads() {
        assert!(User::Reader.may(Verb::Watch) && User::Reader.may(Verb::List));
        for v in [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete, Verb::DeleteCollection] {
            assert!(!User::Reader.may(v));
            assert!(User::Admin.may(v));
        }
        assert!(is_public("/version") && !is_public("/api"));
    }
}
