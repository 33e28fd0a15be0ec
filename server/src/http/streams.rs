//! Live streams per client: each open stream holds a slot, and a client that already holds
//! `--streams-per-client` gets 429. One client opening hundreds of streams would otherwise
//! hold a subscriber, a buffer and a connection per stream and starve everyone else.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
};

/// Who a stream is counted against: the proxy's user, or the peer address without a proxy.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientKey(pub String);

impl ClientKey {
    /// The key for a request: `user` when a proxy named one, else the peer's IP address
    /// (its port changes per connection), else one shared key for peerless requests.
    pub fn of(user: Option<&str>, peer: Option<SocketAddr>) -> Self {
        match (user, peer) {
            (Some(u), _) => ClientKey(format!("user:{u}")),
            (None, Some(p)) => ClientKey(format!("ip:{}", p.ip().to_canonical())),
            (None, None) => ClientKey("unknown".into()),
        }
    }
}

/// The open streams per client.
#[derive(Debug)]
pub struct StreamSlots {
    limit: usize,
    open: Mutex<HashMap<ClientKey, usize>>,
}

/// One open stream's slot, given back when the stream ends (its connection closed).
#[derive(Debug)]
pub struct Slot {
    slots: Arc<StreamSlots>,
    key: ClientKey,
}

impl StreamSlots {
    /// At most `limit` streams per client (at least one).
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(StreamSlots {
            limit: limit.max(1),
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for `key`, or `None` when it holds the limit already.
    pub fn take(self: &Arc<Self>, key: ClientKey) -> Option<Slot> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(key.clone()).or_default();
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(Slot {
            slots: self.clone(),
            key,
        })
    }

    /// Streams open for `key` now.
    pub fn open(&self, key: &ClientKey) -> usize {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(key).copied().unwrap_or(0)
    }

    /// The limit per client.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            // Forget clients with nothing open, so the map does not grow with every address.
            if *n == 0 {
                open.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_per_client_and_given_back() {
        let slots = StreamSlots::new(2);
        let a = ClientKey::of(None, Some("10.0.0.1:5000".parse().unwrap()));
        let same_ip_other_port = ClientKey::of(None, Some("10.0.0.1:5001".parse().unwrap()));
        assert_eq!(a, same_ip_other_port);
        let b = ClientKey::of(Some("bob"), Some("10.0.0.1:5002".parse().unwrap()));
        let s1 = slots.take(a.clone()).unwrap();
        let _s2 = slots.take(a.clone()).unwrap();
        assert!(slots.take(a.clone()).is_none(), "third stream refused");
        assert!(
            slots.take(b.clone()).is_some(),
            "another client is not affected"
        );
        drop(s1);
        assert_eq!(slots.open(&a), 1);
        assert!(slots.take(a.clone()).is_some());
    }

    #[test]
    fn idle_clients_are_forgotten() {
        let slots = StreamSlots::new(4);
        for i in 0..100 {
            let key = ClientKey::of(None, Some(format!("10.0.0.{i}:1").parse().unwrap()));
            drop(slots.take(key));
        }
        assert!(slots.open.lock().unwrap().is_empty());
    }
}
