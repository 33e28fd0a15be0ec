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

use std::sync::LazyLock;

use axum::http::{HeaderMap, header};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::http::Auth;

/// How identities are taken from requests (from the flags). The groups header is part of
/// the proxy's settings: groups are read only from requests the proxy vouched for.
#[derive(Clone, Debug, Default)]
pub struct IdentitySettings {
    pub auth: Auth,
    pub impersonate: bool,
}

/// Group prefixes spotboard never impersonates, whatever the proxy says: `system:masters`
/// bypasses RBAC altogether, and the other `system:` groups belong to nodes and
/// controllers, never to a person using a dashboard.
pub const SYSTEM_PREFIX: &str = "system:";

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

    /// [`Identity::label`] naming also the cluster's user name for a bearer token
    /// (`subject`, from a SelfSubjectReview), when known.
    pub fn label_as(&self, subject: Option<&str>) -> String {
        match (self, subject) {
            (Identity::Bearer { user: Some(u), .. }, Some(s)) => {
                format!("{u} (bearer token of {s})")
            }
            (Identity::Bearer { user: None, token }, Some(s)) => {
                format!("{s} (bearer token {})", token_fingerprint(token))
            }
            _ => self.label(),
        }
    }

    /// A stable key per user for rate limits and caches; never contains a token. Two users
    /// never share a key: tokens are keyed-hashed (128 bits of HMAC-SHA256 under a key drawn
    /// at start), and names are length-prefixed so no choice of user and groups can spell
    /// another's key.
    pub fn key(&self) -> String {
        match self {
            Identity::Local => "local".into(),
            Identity::Bearer { token, .. } => format!("token:{}", keyed_hash(token, 32)),
            Identity::Impersonate { user, groups } => {
                let mut key = format!("as:{}:{user}", user.len());
                for g in groups {
                    key.push_str(&format!("|{}:{g}", g.len()));
                }
                key
            }
        }
    }
}

/// This process's key for hashing tokens: random per start, so a hash seen in a log says
/// nothing outside this run and cannot be precomputed.
static HASH_KEY: LazyLock<[u8; 32]> = LazyLock::new(rand::random);

/// The first `hex_len` hex digits of HMAC-SHA256(`HASH_KEY`, `token`).
fn keyed_hash(token: &str, hex_len: usize) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(HASH_KEY.as_slice())
        .expect("HMAC accepts keys of any length");
    mac.update(token.as_bytes());
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..hex_len.min(hex.len())].to_string()
}

/// A short tag of a token for logs and the form (never the token).
fn token_fingerprint(token: &str) -> String {
    format!("#{}", keyed_hash(token, 8))
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let v = headers.get(name)?.to_str().ok()?.trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// The identity of the request behind `headers`.
///
/// Errors: a sentence saying why creating is not possible and what to configure.
pub fn identify(headers: &HeaderMap, settings: &IdentitySettings) -> Result<Identity, String> {
    let proxy = settings.auth.proxy();
    let proxy_user = proxy.and_then(|p| header_text(headers, &p.user_header));
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
        (Auth::Proxy(p), true, Some(user)) => {
            let groups: Vec<String> = p
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
            if user.starts_with(SYSTEM_PREFIX) {
                return Err(format!(
                    "spotboard does not impersonate {user}: system: users are the cluster's own"
                ));
            }
            if let Some(g) = groups.iter().find(|g| g.starts_with(SYSTEM_PREFIX)) {
                return Err(format!(
                    "spotboard does not impersonate the group {g}: system: groups are the \
                     cluster's own (system:masters bypasses RBAC)"
                ));
            }
            Ok(Identity::Impersonate { user, groups })
        }
        (Auth::Loopback, _, _) => Ok(Identity::Local),
        (Auth::Proxy(p), _, _) => Err(format!(
            "Creating a NodePool needs your own Kubernetes identity, and spotboard's account is \
             read-only. Have the proxy forward your bearer token in the Authorization header, or \
             start spotboard with --impersonate so creates impersonate the user named in {}.",
            p.user_header
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
        let p = crate::http::Proxy::new("X-Forwarded-User", Some("X-Forwarded-Groups"), &[], None)
            .unwrap();
        IdentitySettings {
            auth: Auth::Proxy(std::sync::Arc::new(p)),
            impersonate,
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

    #[test]
    fn system_groups_and_users_are_never_impersonated() {
        let masters = headers(&[
            ("x-forwarded-user", "mallory"),
            ("x-forwarded-groups", "ml,system:masters"),
        ]);
        let why = identify(&masters, &proxy(true)).unwrap_err();
        assert!(why.contains("system:masters"), "{why}");
        let node = headers(&[("x-forwarded-user", "system:node:gpu-1")]);
        assert!(identify(&node, &proxy(true)).is_err());
    }

    #[test]
    fn keys_do_not_collide() {
        let a = Identity::Impersonate {
            user: "a".into(),
            groups: vec!["b,c".into()],
        };
        let b = Identity::Impersonate {
            user: "a".into(),
            groups: vec!["b".into(), "c".into()],
        };
        let c = Identity::Impersonate {
            user: "a:1:b".into(),
            groups: vec![],
        };
        assert_ne!(a.key(), b.key());
        assert_ne!(a.key(), c.key());
        let t1 = Identity::Bearer {
            token: "t1".into(),
            user: None,
        };
        let t2 = Identity::Bearer {
            token: "t2".into(),
            user: None,
        };
        assert_ne!(t1.key(), t2.key());
        assert_eq!(t1.key(), t1.clone().key(), "stable within a run");
        assert_eq!(t1.key().len(), "token:".len() + 32, "128 bits");
        let long = Identity::Bearer {
            token: "eyJhbGciOiJSUzI1NiJ9.secret".into(),
            user: None,
        };
        assert!(!long.key().contains("secret") && !long.label().contains("secret"));
    }
}
