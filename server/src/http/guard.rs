//! Guards in front of every route: Origin check and trusted-proxy authentication.
//!
//! Origin: a browser page on another origin must not drive our server functions or read the
//! stream with the user's network position (CSRF, DNS rebinding). Requests to `/api/` that
//! carry an `Origin` whose host differs from `Host` get 403. Scripts (no Origin) pass.
//!
//! Authentication: spotboard keeps no sessions of its own (USERS.md #6). Bound to loopback
//! it trusts the local user. Bound elsewhere it must sit behind an authenticating proxy that
//! sets a user header (`--auth-proxy-header`); requests without it get 401.

use axum::{
    extract::{Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

/// How requests are authenticated.
#[derive(Clone, Debug, Default)]
pub enum Auth {
    /// Loopback only: the local user is trusted.
    #[default]
    Loopback,
    /// An authenticating proxy in front sets this header to the user's name.
    ProxyHeader(String),
}

/// Whether the Origin header, when present, names the same host as the Host header.
pub fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let origin_host = origin
        .split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(origin)
        .trim_end_matches('/');
    origin_host.eq_ignore_ascii_case(host)
}

/// The middleware.
pub async fn guard(State(auth): State<Auth>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let open = path == "/healthz" || path == "/readyz";
    if let Auth::ProxyHeader(name) = &auth
        && !open
        && !req.headers().contains_key(name.as_str())
    {
        return (
            StatusCode::UNAUTHORIZED,
            format!("missing {name}: spotboard expects an authenticating proxy in front"),
        )
            .into_response();
    }
    let guarded = path.starts_with("/api/") || req.method() != axum::http::Method::GET;
    if guarded && !same_origin(req.headers()) {
        tracing::warn!(path, origin = ?req.headers().get(header::ORIGIN), "refused a cross-origin request");
        return (StatusCode::FORBIDDEN, "cross-origin request refused").into_response();
    }
    next.run(req).await
}

/// Leptos answers 500 when a server function's arguments do not decode; that is the caller's
/// error, so it becomes 400 here (a fuzzed or hand-written body must never look like a server
/// fault). Other server function errors stay 500.
pub async fn undecodable_is_bad_request(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR
        || !response.headers().contains_key("serverfnerror")
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        parts.status = StatusCode::BAD_REQUEST;
        return Response::from_parts(parts, axum::body::Body::empty());
    };
    if bytes.starts_with(b"Args|") || bytes.starts_with(b"Deserialization|") {
        parts.status = StatusCode::BAD_REQUEST;
    }
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, host.parse().unwrap());
        if let Some(o) = origin {
            h.insert(header::ORIGIN, o.parse().unwrap());
        }
        h
    }

    #[test]
    fn origins() {
        assert!(same_origin(&headers(None, "127.0.0.1:3000")));
        assert!(same_origin(&headers(
            Some("http://127.0.0.1:3000"),
            "127.0.0.1:3000"
        )));
        assert!(!same_origin(&headers(
            Some("http://evil.example"),
            "127.0.0.1:3000"
        )));
        assert!(!same_origin(&headers(
            Some("http://127.0.0.1:3001"),
            "127.0.0.1:3000"
        )));
        assert!(!same_origin(&headers(Some("null"), "127.0.0.1:3000")));
    }
}
