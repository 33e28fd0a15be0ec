//! The Host names spotboard answers to (DNS rebinding defence).
//!
//! A page on `evil.example` whose DNS name is re-pointed at 127.0.0.1 reaches a loopback
//! spotboard from the victim's browser with `Host: evil.example:3000` and a matching
//! `Origin`, so the Origin check alone passes it and the page acts as the local user (the
//! cluster's administrator on the embedded cluster). Answering only the Host names the
//! operator expects closes that door: anything else gets 421 Misdirected Request.

use std::net::SocketAddr;

/// Host names (with or without a port) that requests may carry.
#[derive(Clone, Debug, Default)]
pub struct AllowedHosts {
    /// Lower-case `host` (any port) or `host:port`; IPv6 hosts in brackets.
    entries: Vec<String>,
}

impl AllowedHosts {
    /// The defaults for a server bound to `addr`: its own address, and the loopback names
    /// (`localhost`, `127.0.0.1`, `[::1]`) at its port; plus `extra` (`--allowed-host`),
    /// each `host` or `host:port`.
    pub fn new(addr: SocketAddr, extra: &[String]) -> Self {
        let port = addr.port();
        let own = match addr {
            SocketAddr::V4(a) => format!("{}:{port}", a.ip()),
            SocketAddr::V6(a) => format!("[{}]:{port}", a.ip()),
        };
        let mut entries = vec![
            own,
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ];
        entries.extend(
            extra
                .iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .filter(|h| !h.is_empty()),
        );
        AllowedHosts { entries }
    }

    /// Whether `host` (a Host header or an HTTP/2 `:authority`) is one of ours. A request
    /// naming no host at all is refused too: every browser sends one.
    pub fn allows(&self, host: Option<&str>) -> bool {
        let Some(host) = host.map(|h| h.trim().to_ascii_lowercase()) else {
            return false;
        };
        let host = host.as_str();
        let name = strip_port(host);
        self.entries
            .iter()
            .any(|e| e == host || (!has_port(e) && e == name))
    }
}

/// `host` without its `:port` (IPv6 literals keep their brackets).
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map(|i| &host[..=i]).unwrap_or(host);
    }
    host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
}

fn has_port(entry: &str) -> bool {
    strip_port(entry) != entry
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(extra: &[&str]) -> AllowedHosts {
        AllowedHosts::new(
            "127.0.0.1:3000".parse().unwrap(),
            &extra.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn loopback_names_at_our_port_only() {
        let h = hosts(&[]);
        for ok in [
            "127.0.0.1:3000",
            "localhost:3000",
            "LOCALHOST:3000",
            "[::1]:3000",
        ] {
            assert!(h.allows(Some(ok)), "{ok}");
        }
        for bad in [
            "evil.example:3000",
            "evil.example",
            "localhost:3001",
            "localhost",
            "127.0.0.1",
            "127.0.0.1.evil.example:3000",
            "",
        ] {
            assert!(!h.allows(Some(bad)), "{bad}");
        }
        assert!(!h.allows(None));
    }

    #[test]
    fn extra_hosts_with_and_without_port() {
        let h = hosts(&["spotboard.example.com", "ops.example.com:8443"]);
        assert!(h.allows(Some("spotboard.example.com")));
        assert!(h.allows(Some("spotboard.example.com:443")));
        assert!(h.allows(Some("ops.example.com:8443")));
        assert!(!h.allows(Some("ops.example.com")));
        assert!(!h.allows(Some("ops.example.com:443")));
        assert!(!h.allows(Some("example.com")));
    }

    #[test]
    fn ipv6_listen_address() {
        let h = AllowedHosts::new("[::1]:8080".parse().unwrap(), &[]);
        assert!(h.allows(Some("[::1]:8080")));
        assert!(!h.allows(Some("[::2]:8080")));
    }
}
