//! What the blast-radius reads of a preemption wave share: a cap on how many run at once,
//! and the replica counts and PodDisruptionBudgets each would otherwise read again.
//!
//! Why: a node's blast radius lists its own pods (small), then every sibling of each of its
//! owners and every budget in the cluster (large: one Deployment spread over the fleet has
//! tens of thousands of pods). A 2,000-node wave reading all of that for every node at once
//! held hundreds of megabytes and asked the API server for the same lists 2,000 times.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spotboard_core::domain::preemption::readiness::PdbFacts;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Blast-radius reads running at once, over every cluster; the others wait their turn (a
/// card shows its pods a little later, never loses them).
pub const READS_AT_ONCE: usize = 2;

/// How long a replica count or a cluster's budget list serves the other nodes of a wave.
/// Short: "its replicas now" means at T=0, and a drain changes the count within minutes
/// (CKS drains at T+2 min).
pub const FRESH_FOR: Duration = Duration::from_secs(10);

/// A workload in a cluster: (cluster, namespace, `Kind/name`).
pub type WorkloadKey = (String, String, String);

/// Values read at a time, good for [`FRESH_FOR`].
struct Fresh<K, V> {
    read: HashMap<K, (Instant, V)>,
}

impl<K: Eq + Hash, V: Clone> Fresh<K, V> {
    fn new() -> Self {
        Self {
            read: HashMap::new(),
        }
    }

    fn get(&self, key: &K, now: Instant) -> Option<V> {
        self.read
            .get(key)
            .filter(|(at, _)| now.duration_since(*at) < FRESH_FOR)
            .map(|(_, v)| v.clone())
    }

    /// Keeps `value` and forgets what is no longer fresh, so the map holds one wave's keys.
    fn put(&mut self, key: K, value: V, now: Instant) {
        self.read
            .retain(|_, (at, _)| now.duration_since(*at) < FRESH_FOR);
        self.read.insert(key, (now, value));
    }
}

/// Shared by every blast-radius read of the process.
pub struct SharedReads {
    at_once: Semaphore,
    replicas: Mutex<Fresh<WorkloadKey, u32>>,
    pdbs: Mutex<Fresh<String, Arc<Vec<PdbFacts>>>>,
}

impl Default for SharedReads {
    fn default() -> Self {
        Self {
            at_once: Semaphore::new(READS_AT_ONCE),
            replicas: Mutex::new(Fresh::new()),
            pdbs: Mutex::new(Fresh::new()),
        }
    }
}

impl SharedReads {
    /// Waits for a read's turn; the read runs while the permit is held.
    pub async fn turn(&self) -> SemaphorePermit<'_> {
        // Never closed: the semaphore lives as long as `self`.
        self.at_once
            .acquire()
            .await
            .expect("the blast-radius semaphore is never closed")
    }

    /// The active replicas of `workload` read less than [`FRESH_FOR`] before `now`.
    pub fn replicas(&self, workload: &WorkloadKey, now: Instant) -> Option<u32> {
        lock(&self.replicas).get(workload, now)
    }

    pub fn put_replicas(&self, workload: WorkloadKey, n: u32, now: Instant) {
        lock(&self.replicas).put(workload, n, now);
    }

    /// `cluster`'s budgets read less than [`FRESH_FOR`] before `now`.
    pub fn pdbs(&self, cluster: &str, now: Instant) -> Option<Arc<Vec<PdbFacts>>> {
        lock(&self.pdbs).get(&cluster.to_string(), now)
    }

    pub fn put_pdbs(&self, cluster: &str, pdbs: Arc<Vec<PdbFacts>>, now: Instant) {
        lock(&self.pdbs).put(cluster.to_string(), pdbs, now);
    }
}

// A panic while holding the lock leaves a plain cache: still usable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(w: &str) -> WorkloadKey {
        ("c".into(), "ns".into(), w.into())
    }

    #[test]
    fn a_count_serves_the_wave_then_is_read_again() {
        let s = SharedReads::default();
        let t0 = Instant::now();
        assert_eq!(
            s.replicas(&key("ReplicaSet/a"), t0),
            None,
            "nothing read yet"
        );
        s.put_replicas(key("ReplicaSet/a"), 12, t0);
        assert_eq!(
            s.replicas(&key("ReplicaSet/a"), t0 + FRESH_FOR / 2),
            Some(12)
        );
        assert_eq!(
            s.replicas(&key("ReplicaSet/b"), t0),
            None,
            "another workload"
        );
        assert_eq!(
            s.replicas(&("other".into(), "ns".into(), "ReplicaSet/a".into()), t0),
            None,
            "the same workload in another cluster"
        );
        assert_eq!(
            s.replicas(&key("ReplicaSet/a"), t0 + FRESH_FOR),
            None,
            "stale after FRESH_FOR"
        );
    }

    #[test]
    fn stale_entries_are_dropped_when_new_ones_come() {
        let s = SharedReads::default();
        let t0 = Instant::now();
        for i in 0..100 {
            s.put_replicas(key(&format!("ReplicaSet/{i}")), i, t0);
        }
        s.put_replicas(key("ReplicaSet/late"), 1, t0 + FRESH_FOR);
        assert_eq!(lock(&s.replicas).read.len(), 1, "one wave's keys at a time");
    }

    #[test]
    fn budgets_are_kept_per_cluster() {
        let s = SharedReads::default();
        let t0 = Instant::now();
        let one = Arc::new(vec![PdbFacts {
            name: "web".into(),
            ..Default::default()
        }]);
        s.put_pdbs("a", one.clone(), t0);
        assert_eq!(s.pdbs("a", t0), Some(one));
        assert_eq!(s.pdbs("b", t0), None);
        assert_eq!(s.pdbs("a", t0 + FRESH_FOR), None);
    }

    #[tokio::test]
    async fn no_more_than_reads_at_once_run() {
        let s = SharedReads::default();
        let mut held = Vec::new();
        for _ in 0..READS_AT_ONCE {
            held.push(s.turn().await);
        }
        let waiting = tokio::time::timeout(Duration::from_millis(50), s.turn()).await;
        assert!(waiting.is_err(), "one more read waits");
        held.pop();
        let next = tokio::time::timeout(Duration::from_millis(50), s.turn()).await;
        assert!(next.is_ok(), "and runs once one ends");
    }
}
