//! Who a create goes out as. spotboard's own account only reads; a create uses the user's
//! identity, taken from the request:
//!
//! 1. `Authorization: Bearer <token>` (set by an authenticating proxy that forwards the user's
//!    Kubernetes token): the request goes out with that token instead of spotboard's.
//! 2. `--impersonate` with `--auth-proxy-header`: spotboard's account sends `Impersonate-User`
//!    (and `Impersonate-Group`) naming the proxy's user; the cluster checks that user's RBAC.
//! 3. Loopback without a proxy: the person at this machine. On the embedded cluster that is
//!    its administrator; with `--kubeconfig` it is the kubeconfig's own user, as with kubectl.
//!
//! With none of these the form is disabled and says why.

use std::hash::{DefaultHasher, Hash, Hasher};

use axum::http::{HeaderMap, header};

use crate::http::Auth;

/// How identities are taken from requests (from the flags).
#[derive(Clone, Debug, Default)]
pub struct IdentitySettings {
    pub auth: Auth,
    pub impersonate: bool,
    pub groups_header: Option<String>,
}

/// The identity one request's create goes out as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// The local user on a loopback-bound spotboard.
    Local,
    /// The user's own bearer token; `user` is the proxy's user header when present.
    Bearer { token: String, user: Option<String> },
    /// Impersonation of the proxy's user (and groups) by spotboard's account.
    Impersonate { user: String, groups: Vec<String> },
}

impl Identity {
    /// For the audit log and the form: never contains a token.
    pub fn label(&self) -> String {
        match self {
            Identity::Local => "local user".into(),
            Identity::Bearer { user: Some(u), .. } => format!("{u} (bearer token)"),
            Identity::Bearer { user: None, token } => {
                format!("bearer token {}", token_fingerprint(token))
            }
            Identity::Impersonate { user, .. } => format!("{user} (impersonated)"),
        }
    }

    /// A stable key per user for rate limits and caches; never contains a token.
    pub fn key(&self) -> String {
        match self {
            Identity::Local => "local".into(),
            Identity::Bearer { token, .. } => format!("token:{}", token_fingerprint(token)),
            Identity::Impersonate { user, groups } => format!("as:{user}:{}", groups.join(",")),
        }
    }
}

/// A short, non-reversible tag of a token (not a security boundary, only a log and map key).
fn token_fingerprint(token: &str) -> String {
    let mut h = DefaultHasher::new();
    token.hash(&mut h);
    format!("#{:08x}", h.finish() as u32)
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let v = headers.get(name)?.to_str().ok()?.trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// The identity of the request behind `headers`.
///
/// Errors: a sentence saying why creating is not possible and what to configure.
pub fn identify(headers: &HeaderMap, settings: &IdentitySettings) -> Result<Identity, String> {
    let proxy_user = match &settings.auth {
        Auth::ProxyHeader(name) => header_text(headers, name),
        Auth::Loopback => None,
    };
    if let Some(token) = header_text(headers, header::AUTHORIZATION.as_str())
        .and_then(|v| v.strip_prefix("Bearer ").map(|t| t.trim().to_string()))
        .filter(|t| !t.is_empty())
    {
        return Ok(Identity::Bearer {
            token,
            user: proxy_user,
        });
    }
    match (&settings.auth, settings.impersonate, proxy_user) {
        (Auth::ProxyHeader(_), true, Some(user)) => {
            let groups = settings
                .groups_header
                .as_deref()
                .and_then(|h| header_text(headers, h))
                .map(|g| {
                    g.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            Ok(Identity::Impersonate { user, groups })
        }
        (Auth::Loopback, _, _) => Ok(Identity::Local),
        (Auth::ProxyHeader(name), _, _) => Err(format!(
            "Creating a NodePool needs your own Kubernetes identity, and spotboard's account is \
             read-only. Have the proxy forward your bearer token in the Authorization header, or \
             start spotboard with --impersonate so creates impersonate the user named in {name}."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    fn proxy(impersonate: bool) -> IdentitySettings {
        IdentitySettings {
            auth: Auth::ProxyHeader("x-forwarded-user".into()),
            impersonate,
            groups_header: Some("x-forwarded-groups".into()),
        }
    }

    #[test]
    fn loopback_is_local_unless_a_token_comes_along() {
        let s = IdentitySettings::default();
        assert_eq!(identify(&HeaderMap::new(), &s), Ok(Identity::Local));
        let id = identify(&headers(&[("authorization", "Bearer abc")]), &s).unwrap();
        assert_eq!(
            id,
            Identity::Bearer {
                token: "abc".into(),
                user: None
            }
        );
        assert!(!id.label().contains("abc") && !id.key().contains("abc"));
    }

    #[test]
    fn proxy_needs_a_token_or_impersonation() {
        let h = headers(&[
            ("x-forwarded-user", "alice"),
            ("x-forwarded-groups", "ml, admins"),
        ]);
        let why = identify(&h, &proxy(false)).unwrap_err();
        assert!(why.contains("--impersonate"), "{why}");
        assert_eq!(
            identify(&h, &proxy(true)),
            Ok(Identity::Impersonate {
                user: "alice".into(),
                groups: vec!["ml".into(), "admins".into()]
            })
        );
        let bearer = headers(&[("x-forwarded-user", "bob"), ("authorization", "Bearer t")]);
        assert_eq!(
            identify(&bearer, &proxy(false)).unwrap().label(),
            "bob (bearer token)"
        );
        assert!(
            identify(&HeaderMap::new(), &proxy(true)).is_err(),
            "no user header"
        );
    }
}
