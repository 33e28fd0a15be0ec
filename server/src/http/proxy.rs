//! The authenticating proxy in front of spotboard, and when its headers are believed.
//!
//! spotboard keeps no sessions of its own: a proxy such as oauth2-proxy signs the user in and
//! names them in a header (`--auth-proxy-header`, groups in `--auth-proxy-groups-header`).
//! Anyone who can reach spotboard directly could set those headers too, so they are believed
//! only on requests that come from the proxy: from a peer address inside `--trusted-proxy`
//! (default: loopback, for a proxy on the same host or in the same pod), or carrying the
//! shared secret of `--auth-proxy-secret` in [`SECRET_HEADER`]. Every other request gets 401,
//! whatever headers it carries.

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;
use subtle::ConstantTimeEq;

/// The header a proxy sets to the shared secret when `--auth-proxy-secret` is configured.
pub const SECRET_HEADER: &str = "x-spotboard-proxy-secret";

/// The default `--trusted-proxy`: a proxy on this host or in this pod.
pub const LOOPBACK_NETS: [&str; 2] = ["127.0.0.0/8", "::1/128"];

/// How requests are authenticated.
#[derive(Clone, Debug, Default)]
pub enum Auth {
    /// Loopback only: the local user is trusted, no proxy headers are read.
    #[default]
    Loopback,
    /// An authenticating proxy in front names the user.
    Proxy(std::sync::Arc<Proxy>),
}

impl Auth {
    /// The proxy's settings, when one is configured.
    pub fn proxy(&self) -> Option<&Proxy> {
        match self {
            Auth::Loopback => None,
            Auth::Proxy(p) => Some(p),
        }
    }
}

/// The proxy's headers and how its requests are recognised.
#[derive(Clone, Debug)]
pub struct Proxy {
    /// Lower-case name of the header holding the user's name.
    pub user_header: String,
    /// Lower-case name of the header holding the user's groups, comma-separated.
    pub groups_header: Option<String>,
    /// Peer networks the proxy connects from.
    pub trusted: Vec<IpNet>,
    /// The shared secret the proxy sends in [`SECRET_HEADER`], when configured.
    pub secret: Option<String>,
}

impl Proxy {
    /// A proxy naming users in `user_header`, trusted from `trusted` networks (CIDR text;
    /// loopback when empty).
    ///
    /// Errors: a network that is not CIDR notation (the message names it).
    pub fn new(
        user_header: &str,
        groups_header: Option<&str>,
        trusted: &[String],
        secret: Option<String>,
    ) -> Result<Self, String> {
        let texts: Vec<String> = if trusted.is_empty() {
            LOOPBACK_NETS.iter().map(|s| s.to_string()).collect()
        } else {
            trusted.to_vec()
        };
        let trusted = texts
            .iter()
            .map(|t| parse_net(t))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Proxy {
            user_header: user_header.trim().to_ascii_lowercase(),
            groups_header: groups_header.map(|g| g.trim().to_ascii_lowercase()),
            trusted,
            secret: secret.filter(|s| !s.is_empty()),
        })
    }

    /// Whether a request from `peer` with `headers` comes from the proxy. Without a peer
    /// address (a request that did not arrive over TCP) only the secret can vouch for it.
    pub fn vouches_for(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> bool {
        if let Some(secret) = &self.secret {
            return headers
                .get(SECRET_HEADER)
                .is_some_and(|v| bool::from(v.as_bytes().ct_eq(secret.as_bytes())));
        }
        peer.map(|p| p.to_canonical())
            .is_some_and(|p| self.trusted.iter().any(|n| n.contains(&p)))
    }
}

/// One `--trusted-proxy` value: CIDR, or a bare address (a /32 or /128).
fn parse_net(text: &str) -> Result<IpNet, String> {
    let t = text.trim();
    t.parse::<IpNet>()
        .or_else(|_| t.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("--trusted-proxy {t:?} is not an address or CIDR network"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret_headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(SECRET_HEADER, v.parse().unwrap());
        h
    }

    #[test]
    fn loopback_by_default() {
        let p = Proxy::new("X-Forwarded-User", None, &[], None).unwrap();
        assert_eq!(p.user_header, "x-forwarded-user");
        let none = HeaderMap::new();
        assert!(p.vouches_for(Some("127.0.0.1".parse().unwrap()), &none));
        assert!(p.vouches_for(Some("::1".parse().unwrap()), &none));
        assert!(p.vouches_for(Some("::ffff:127.0.0.9".parse().unwrap()), &none));
        assert!(!p.vouches_for(Some("10.1.2.3".parse().unwrap()), &none));
        assert!(!p.vouches_for(None, &none));
    }

    #[test]
    fn named_networks_and_bare_addresses() {
        let p = Proxy::new(
            "x-user",
            Some("x-groups"),
            &["10.0.0.0/8".into(), "192.0.2.7".into()],
            None,
        )
        .unwrap();
        let none = HeaderMap::new();
        assert!(p.vouches_for(Some("10.200.0.1".parse().unwrap()), &none));
        assert!(p.vouches_for(Some("192.0.2.7".parse().unwrap()), &none));
        assert!(!p.vouches_for(Some("192.0.2.8".parse().unwrap()), &none));
        assert!(
            !p.vouches_for(Some("127.0.0.1".parse().unwrap()), &none),
            "naming networks replaces the loopback default"
        );
        assert!(Proxy::new("x", None, &["10.0.0.0/33".into()], None).is_err());
        assert!(Proxy::new("x", None, &["proxy.local".into()], None).is_err());
    }

    #[test]
    fn a_secret_is_required_wherever_the_request_comes_from() {
        let p = Proxy::new("x-user", None, &[], Some("s3cret".into())).unwrap();
        let lo = Some("127.0.0.1".parse().unwrap());
        assert!(!p.vouches_for(lo, &HeaderMap::new()));
        assert!(!p.vouches_for(lo, &secret_headers("s3cre")));
        assert!(!p.vouches_for(lo, &secret_headers("s3cret2")));
        assert!(p.vouches_for(lo, &secret_headers("s3cret")));
        assert!(p.vouches_for(None, &secret_headers("s3cret")));
    }
}
