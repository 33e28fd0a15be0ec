//! Answers reused for [`ACCESS_CACHE_TTL`](super::ACCESS_CACHE_TTL) per user and cluster, so
//! a page load does not cost one review per cluster every time.
//!
//! Bounded (quick_cache, S3-FIFO): an insert evicts in O(1) amortised. The map this replaced
//! dropped stale answers by scanning every entry at each insert, so a stream of new bearer
//! tokens (one entry each) cost time quadratic in their number.

use std::time::Instant;

use super::ACCESS_CACHE_TTL;

/// (identity key, cluster name).
pub type Key = (String, String);

/// Answers kept at most. An entry is two short strings and an answer (~200 bytes): about
/// 2 MB when full, far more users than a dashboard has within a TTL.
pub const CAPACITY: usize = 10_000;

/// A per-user, per-cluster answer cache that forgets answers older than the TTL, and the
/// least used ones beyond [`CAPACITY`].
pub struct TtlCache<V: Clone>(quick_cache::sync::Cache<Key, (Instant, V)>);

impl<V: Clone> Default for TtlCache<V> {
    fn default() -> Self {
        TtlCache(quick_cache::sync::Cache::new(CAPACITY))
    }
}

impl<V: Clone> TtlCache<V> {
    /// The answer for `key`, if fresh.
    pub fn get(&self, key: &Key) -> Option<V> {
        self.0
            .get(key)
            .filter(|(at, _)| at.elapsed() < ACCESS_CACHE_TTL)
            .map(|(_, v)| v)
    }

    /// Keeps `value` for `key` (a stale answer is replaced here, or evicted in time).
    pub fn put(&self, key: Key, value: V) {
        self.0.insert(key, (Instant::now(), value));
    }

    /// Answers held now (fresh or not yet evicted).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_kept_and_the_cache_stays_bounded() {
        let c = TtlCache::<u32>::default();
        c.put(("a".into(), "c1".into()), 1);
        assert_eq!(c.get(&("a".into(), "c1".into())), Some(1));
        assert_eq!(c.get(&("a".into(), "c2".into())), None);
        let started = Instant::now();
        for i in 0..(5 * CAPACITY as u32) {
            c.put((format!("token:{i}"), "c1".into()), i);
        }
        assert!(c.len() <= CAPACITY, "{}", c.len());
        // 50,000 inserts: linear, well under a second even in a debug build (the scan made
        // this minutes).
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    }
}
