//! Guards in front of every route: Host allowlist, trusted-proxy authentication, Origin
//! check.
//!
//! Host: only the names in [`AllowedHosts`] are answered (421 otherwise), which stops DNS
//! rebinding: a foreign page re-pointed at our address carries its own name in `Host`.
//!
//! Authentication: spotboard keeps no sessions of its own. Bound to loopback it trusts the
//! local user. Behind an authenticating proxy ([`Proxy`]) a request must come from the proxy
//! and name a user; otherwise 401, whatever headers it carries.
//!
//! Origin: a browser page on another origin must not drive our server functions or read the
//! stream with the user's network position (CSRF). Requests to `/api/`, and every request
//! that is not a GET, carrying an `Origin` whose host differs from `Host` get 403. Scripts
//! (no Origin) pass.

use axum::{
    extract::{Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::{hosts::AllowedHosts, proxy::Auth, streams::ClientKey};

/// What the guard checks, from the flags.
#[derive(Clone, Debug, Default)]
pub struct GuardSettings {
    pub auth: Auth,
    pub hosts: AllowedHosts,
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

/// The Host a request names: the Host header, or HTTP/2's `:authority`.
fn host_of(req: &Request) -> Option<&str> {
    req.headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
}

/// The middleware.
pub async fn guard(
    State(settings): State<GuardSettings>,
    mut req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path();
    // Probes are exempt: kubelet's httpGet names the pod's IP as Host, and they reveal
    // nothing.
    let open = path == "/healthz" || path == "/readyz";
    if !open && !settings.hosts.allows(host_of(&req)) {
        tracing::warn!(path, host = ?host_of(&req), "refused a request for a host that is not ours");
        return (
            StatusCode::MISDIRECTED_REQUEST,
            "this spotboard does not answer to that host name; its operator can add it with \
             --allowed-host",
        )
            .into_response();
    }
    let peer = super::serve::peer(&req);
    if let Some(proxy) = settings.auth.proxy()
        && !open
    {
        if !proxy.vouches_for(peer.map(|p| p.ip()), req.headers()) {
            tracing::warn!(
                path,
                ?peer,
                "refused a request that did not come through the proxy"
            );
            return (
                StatusCode::UNAUTHORIZED,
                "spotboard accepts requests only through its authenticating proxy",
            )
                .into_response();
        }
        if !req.headers().contains_key(proxy.user_header.as_str()) {
            return (
                StatusCode::UNAUTHORIZED,
                format!(
                    "missing {}: spotboard expects an authenticating proxy in front",
                    proxy.user_header
                ),
            )
                .into_response();
        }
    }
    let user = settings
        .auth
        .proxy()
        .and_then(|p| req.headers().get(p.user_header.as_str()))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    req.extensions_mut()
        .insert(ClientKey::of(user.as_deref(), peer));
    let path = req.uri().path();
    let guarded = path.starts_with("/api/") || req.method() != axum::http::Method::GET;
    if guarded && !same_origin(req.headers()) {
        tracing::warn!(path, origin = ?req.headers().get(header::ORIGIN), "refused a cross-origin request");
        return (StatusCode::FORBIDDEN, "cross-origin request refused").into_response();
    }
    next.run(req).await
}

/// Leptos answers 500 when a server function's arguments do not decode, before the function
/// runs and can set a status; `app::api_error::ApiError` names that error `Invalid`, the
/// caller's, so it becomes 400 here (a fuzzed or hand-written body must never look like a
/// server fault). Other server function errors keep the status their variant set.
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
    if bytes.starts_with(br#"{"Invalid":"#) {
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
