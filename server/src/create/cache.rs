//! Answers reused for [`ACCESS_CACHE_TTL`](super::ACCESS_CACHE_TTL) per user and cluster, so
//! a page load does not cost one review per cluster every time.

use std::{collections::HashMap, sync::Mutex, time::Instant};

use super::ACCESS_CACHE_TTL;

/// (identity key, cluster name).
pub type Key = (String, String);

/// A per-user, per-cluster answer cache that forgets answers older than the TTL.
pub struct TtlCache<V>(Mutex<HashMap<Key, (Instant, V)>>);

impl<V> Default for TtlCache<V> {
    fn default() -> Self {
        TtlCache(Mutex::new(HashMap::new()))
    }
}

impl<V: Clone> TtlCache<V> {
    /// The answer for `key`, if fresh.
    pub fn get(&self, key: &Key) -> Option<V> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(key)
            .filter(|(at, _)| at.elapsed() < ACCESS_CACHE_TTL)
            .map(|(_, v)| v.clone())
    }

    /// Keeps `value` for `key`, dropping stale answers.
    pub fn put(&self, key: Key, value: V) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, (at, _)| at.elapsed() < ACCESS_CACHE_TTL);
        map.insert(key, (Instant::now(), value));
    }
}
