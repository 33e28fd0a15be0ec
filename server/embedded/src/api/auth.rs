//! Bearer-token authentication and the two roles: admin (everything) and reader (get, list,
//! watch, plus create/update/patch of Leases), like the read-only ClusterRole and the
//! leader-election Role spotboard ships for real clusters (`server/deploy/base/rbac.yaml`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Shared;
use super::request::Verb;
use super::resources::Kind;
use super::status::ApiError;
use super::watch::ReaderFault;

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

    /// Whether this user may `verb` objects of `kind`. The reader writes only Leases (leader
    /// election among spotboard replicas), and never deletes them, as the shipped Role says.
    pub fn may(self, verb: Verb, kind: Kind) -> bool {
        self == User::Admin
            || verb.is_read()
            || (kind == Kind::Leases && matches!(verb, Verb::Create | Verb::Update | Verb::Patch))
    }
}

/// Compares in time independent of where the first difference is, so response timing does
/// not leak a token byte by byte.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
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

/// First segment of a path that carries a token: `/token/{token}/api/v1/...`.
///
/// Why: kubectl (client-go's clientcmd) applies a kubeconfig's credentials only when the
/// server URL is `https`; over this server's plain HTTP it would send no token at all. A
/// server URL with a path is kept by client-go as a prefix on every request, so the
/// written kubeconfig points kubectl at `http://127.0.0.1:PORT/token/<admin token>` and
/// this prefix authenticates like the `Authorization` header. Requests without either are
/// still 401.
pub const TOKEN_PATH: &str = "/token";

/// The server URL for kubectl: `base` with the token path prefix.
pub fn url_with_token(base: &str, token: &str) -> String {
    format!("{}{TOKEN_PATH}/{token}", base.trim_end_matches('/'))
}

/// `(token, rest)` for `/token/{token}/rest`; `rest` is `/` when nothing follows.
fn split_token_path(path: &str) -> Option<(&str, &str)> {
    let after = path.strip_prefix(TOKEN_PATH)?.strip_prefix('/')?;
    match after.find('/') {
        Some(i) => Some((&after[..i], &after[i..])),
        None => Some((after, "/")),
    }
}

/// The `/token/{token}` prefix a request came with, for responses that hold absolute paths
/// (the OpenAPI index), so that the client's next request keeps it.
#[derive(Clone, Debug, Default)]
pub struct PathPrefix(pub String);

/// Answers 503 during a simulated outage and 401 without a known token (header or path
/// prefix); otherwise passes the request on, prefix stripped, with its [`User`] and
/// [`PathPrefix`] as extensions. Runs before routing, so that a stripped path routes.
pub async fn middleware(
    State(shared): State<Arc<Shared>>,
    mut req: Request,
    next: Next,
) -> Response {
    if *shared.outage.borrow() {
        return ApiError::unavailable().into_response();
    }
    let (admin, reader) = (&shared.tokens.admin, &shared.tokens.reader);
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let mut user = authenticate(authorization, admin, reader);
    let mut prefix = PathPrefix::default();
    if let Some((token, rest)) = split_token_path(req.uri().path()) {
        let Some(u) = authenticate(Some(&format!("Bearer {token}")), admin, reader) else {
            return ApiError::unauthorized().into_response();
        };
        user = Some(u);
        prefix = PathPrefix(format!("{TOKEN_PATH}/{token}"));
        let rest = match req.uri().query() {
            Some(q) => format!("{rest}?{q}"),
            None => rest.to_string(),
        };
        match rest.parse() {
            Ok(uri) => *req.uri_mut() = uri,
            Err(_) => return ApiError::bad_request("malformed request path").into_response(),
        }
    }
    // The official Python client and kr8s ask for `/version/` and `/apis/`, which a real API
    // server answers as `/version` and `/apis`.
    if let Some(uri) = without_trailing_slash(req.uri()) {
        *req.uri_mut() = uri;
    }
    req.extensions_mut().insert(prefix);
    // Impersonation needs the `impersonate` verb; only the admin has it here, as on a real
    // cluster where spotboard's read-only account lacks it unless granted.
    if let (Some(User::Reader), Some(as_user)) = (user, req.headers().get("impersonate-user")) {
        let as_user = as_user.to_str().unwrap_or("?").to_string();
        return ApiError::forbidden_impersonation(User::Reader.name(), &as_user).into_response();
    }
    if user == Some(User::Reader) {
        let mut fault = shared.reader_fault.subscribe();
        loop {
            let now = *fault.borrow_and_update();
            match now {
                ReaderFault::None => break,
                ReaderFault::Down => return ApiError::unavailable().into_response(),
                // Held unanswered until the stall ends (or the client gives up).
                ReaderFault::Stall => {
                    if fault.changed().await.is_err() {
                        break;
                    }
                }
            }
        }
    }
    match user {
        Some(user) => {
            req.extensions_mut().insert(user);
            next.run(req).await
        }
        None if is_public(req.uri().path()) => next.run(req).await,
        None => ApiError::unauthorized().into_response(),
    }
}

/// `uri` without the trailing slash of its path (`/apis/` → `/apis`), or `None` when there
/// is none to remove.
fn without_trailing_slash(uri: &axum::http::Uri) -> Option<axum::http::Uri> {
    let path = uri.path();
    let trimmed = path.trim_end_matches('/');
    if trimmed.len() == path.len() || trimmed.is_empty() {
        return None;
    }
    let text = match uri.query() {
        Some(q) => format!("{trimmed}?{q}"),
        None => trimmed.to_string(),
    };
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_slashes_are_dropped() {
        let u = |s: &str| s.parse::<axum::http::Uri>().unwrap();
        assert_eq!(without_trailing_slash(&u("/version/")), Some(u("/version")));
        assert_eq!(
            without_trailing_slash(&u("/apis/?x=1")),
            Some(u("/apis?x=1"))
        );
        assert_eq!(without_trailing_slash(&u("/apis")), None);
        assert_eq!(without_trailing_slash(&u("/")), None);
    }

    #[test]
    fn tokens_map_to_users() {
        let a = authenticate(Some("Bearer adm"), "adm", "rdr");
        assert_eq!(a, Some(User::Admin));
        assert_eq!(
            authenticate(Some("Bearer rdr"), "adm", "rdr"),
            Some(User::Reader)
        );
        assert_eq!(authenticate(Some("Bearer nope"), "adm", "rdr"), None);
        assert_eq!(authenticate(Some("Basic adm"), "adm", "rdr"), None);
        assert_eq!(authenticate(None, "adm", "rdr"), None);
        assert_eq!(authenticate(Some("Bearer ad"), "adm", "rdr"), None);
    }

    #[test]
    fn reader_reads_and_writes_only_leases() {
        assert!(
            User::Reader.may(Verb::Watch, Kind::Nodes) && User::Reader.may(Verb::List, Kind::Pods)
        );
        for v in [
            Verb::Create,
            Verb::Update,
            Verb::Patch,
            Verb::Delete,
            Verb::DeleteCollection,
        ] {
            assert!(!User::Reader.may(v, Kind::Nodes));
            assert!(User::Admin.may(v, Kind::Nodes));
        }
        for v in [Verb::Create, Verb::Update, Verb::Patch] {
            assert!(User::Reader.may(v, Kind::Leases));
        }
        assert!(!User::Reader.may(Verb::Delete, Kind::Leases));
        assert!(is_public("/version") && !is_public("/api"));
    }

    #[test]
    fn token_paths() {
        assert_eq!(
            split_token_path("/token/abc/api/v1/nodes"),
            Some(("abc", "/api/v1/nodes"))
        );
        assert_eq!(split_token_path("/token/abc"), Some(("abc", "/")));
        assert_eq!(split_token_path("/api/v1"), None);
        assert_eq!(split_token_path("/tokens/abc"), None);
        assert_eq!(
            url_with_token("http://127.0.0.1:1/", "t"),
            "http://127.0.0.1:1/token/t"
        );
    }
}
