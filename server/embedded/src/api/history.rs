//! The per-kind log of changes that watches replay from a resourceVersion.
//!
//! It is bounded by count, like etcd's compaction bounds real history: a watch that asks
//! for a resourceVersion older than the oldest retained change gets `410 Gone`, and its
//! client re-lists. The log is also the live feed: a watcher reads what is new since the
//! last change it sent whenever the store signals a write, so a slow watcher never needs a
//! queue of its own; if it falls further behind than the log reaches, it gets the same
//! `410` a real API server sends a watcher too slow to keep up.

use std::collections::VecDeque;
use std::sync::Arc;

use super::stored::Obj;

/// How many changes each kind keeps by default.
///
/// Why 10,000: the longest gap a healthy watcher has to bridge is the time between the
/// resourceVersion of a paged list and the start of its watch. In the scale benchmark a
/// 50k-pod list takes 100 pages while pods are still being created; 10k changes is several
/// seconds of that churn. The cost is bounded: a change shares its `Arc`'d object with the
/// store and only keeps superseded versions alive, at most this many per kind.
pub const DEFAULT_HISTORY: usize = 10_000;

/// A watch event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    /// The wire form (`ADDED`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One stored change.
#[derive(Debug)]
pub struct Change {
    pub kind: EventType,
    /// The object after the change; for `Deleted`, the object as it was removed (with the
    /// deletion's resourceVersion).
    pub object: Obj,
    /// The object before a `Modified`, so that a filtered watch can tell an object that
    /// stopped matching its selector (sent as `DELETED`) from one that started (`ADDED`).
    pub prev: Option<Obj>,
    /// resourceVersion of the change.
    pub rv: u64,
}

/// A bounded, resourceVersion-ordered log of changes.
#[derive(Debug)]
pub struct History {
    changes: VecDeque<Arc<Change>>,
    limit: usize,
    /// resourceVersion of the newest evicted change: watches from before it cannot be
    /// served.
    compacted: u64,
}

impl History {
    /// `limit` ≥ 1 changes are kept.
    pub fn new(limit: usize) -> Self {
        Self {
            changes: VecDeque::new(),
            limit: limit.max(1),
            compacted: 0,
        }
    }

    /// Appends a change; its rv must exceed every earlier one.
    pub fn push(&mut self, change: Arc<Change>) {
        debug_assert!(self.changes.back().is_none_or(|c| c.rv < change.rv));
        self.changes.push_back(change);
        while self.changes.len() > self.limit {
            if let Some(old) = self.changes.pop_front() {
                self.compacted = old.rv;
            }
        }
    }

    /// Changes newer than `rv`, oldest first. `Err(oldest)` when some of them were
    /// already evicted; `oldest` is the smallest rv that can still be resumed from.
    pub fn since(&self, rv: u64) -> Result<Vec<Arc<Change>>, u64> {
        if rv < self.compacted {
            return Err(self.compacted);
        }
        let start = self.changes.partition_point(|c| c.rv <= rv);
        Ok(self.changes.range(start..).cloned().collect())
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.changes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::stored::Stored;
    use serde_json::json;

    fn change(rv: u64) -> Arc<Change> {
        Arc::new(Change {
            kind: EventType::Added,
            object: Arc::new(Stored::new(&json!({"rv": rv}))),
            prev: None,
            rv,
        })
    }

    fn rvs(v: &[Arc<Change>]) -> Vec<u64> {
        v.iter().map(|c| c.rv).collect()
    }

    #[test]
    fn since_returns_strictly_newer_changes() {
        let mut h = History::new(10);
        for rv in [3, 5, 9] {
            h.push(change(rv));
        }
        assert_eq!(rvs(&h.since(0).unwrap()), vec![3, 5, 9]);
        assert_eq!(rvs(&h.since(5).unwrap()), vec![9]);
        assert_eq!(rvs(&h.since(6).unwrap()), vec![9]);
        assert!(h.since(9).unwrap().is_empty());
        assert!(h.since(100).unwrap().is_empty());
    }

    #[test]
    fn eviction_makes_old_versions_expire() {
        let mut h = History::new(3);
        for rv in 1..=5 {
            h.push(change(rv));
        }
        assert_eq!(h.len(), 3);
        // 1 and 2 were evicted: resuming from 2 still works (3.. are all here), from 1 not.
        assert_eq!(rvs(&h.since(2).unwrap()), vec![3, 4, 5]);
        assert_eq!(h.since(1).unwrap_err(), 2);
        assert_eq!(h.since(0).unwrap_err(), 2);
    }

    #[test]
    fn event_type_wire_names() {
        assert_eq!(EventType::Added.as_str(), "ADDED");
        assert_eq!(EventType::Modified.as_str(), "MODIFIED");
        assert_eq!(EventType::Deleted.as_str(), "DELETED");
    }
}
