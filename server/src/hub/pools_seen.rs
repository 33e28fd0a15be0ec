//! The pool of every node seen, remembered for an hour past the node's deletion.
//!
//! Events about a node arrive after the node is gone ("Deleted for preemption" is the last
//! word on a preempted CKS node), and an event row names its node's pool. Kubernetes keeps
//! events for an hour (the API server's `--event-ttl` default), so a pool is remembered as
//! long: kept for good, one entry per node name ever seen, a spot fleet that replaces its
//! nodes all day grew the dashboard without bound.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

/// How long a deleted node's pool is remembered: Kubernetes' default event time to live.
pub const KEPT_FOR: Duration = Duration::hours(1);

/// The table is not pruned below this many names.
const PRUNE_FROM: usize = 1024;

struct Seen {
    pool: Arc<str>,
    /// When the node was deleted; `None` while it exists.
    gone_at: Option<DateTime<Utc>>,
}

/// Node name → its pool, while the node exists and for [`KEPT_FOR`] after.
pub struct PoolsSeen {
    by_name: HashMap<Arc<str>, Seen>,
    prune_at: usize,
}

impl Default for PoolsSeen {
    fn default() -> Self {
        Self {
            by_name: HashMap::new(),
            prune_at: PRUNE_FROM,
        }
    }
}

impl PoolsSeen {
    /// Node `name` exists, in `pool` (a node that came back under its old name is present
    /// again).
    pub fn present(&mut self, name: Arc<str>, pool: Arc<str>) {
        self.by_name.insert(
            name,
            Seen {
                pool,
                gone_at: None,
            },
        );
    }

    /// Node `name` was deleted at `now`. Once the table has doubled since it was last pruned,
    /// names gone longer than [`KEPT_FOR`] are forgotten (amortized: each prune at least
    /// halves the calls that pay for one).
    pub fn gone(&mut self, name: &str, now: DateTime<Utc>) {
        if let Some(seen) = self.by_name.get_mut(name) {
            seen.gone_at = Some(now);
        }
        if self.by_name.len() >= self.prune_at {
            self.by_name
                .retain(|_, s| s.gone_at.is_none_or(|at| now - at < KEPT_FOR));
            self.by_name.shrink_to_fit();
            self.prune_at = (self.by_name.len() * 2).max(PRUNE_FROM);
        }
    }

    /// The pool node `name` was last seen in, if it exists or was deleted recently.
    pub fn pool(&self, name: &str) -> Option<&Arc<str>> {
        self.by_name.get(name).map(|s| &s.pool)
    }

    /// Names remembered, present or gone.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_name.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(i: usize) -> Arc<str> {
        format!("g{i:05}").into()
    }

    #[test]
    fn a_deleted_nodes_pool_is_kept_for_an_hour_then_forgotten_once_the_table_grows() {
        let mut seen = PoolsSeen::default();
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let pool: Arc<str> = "spot-a".into();
        seen.present(name(0), pool.clone());
        seen.gone("g00000", t0);
        // Recently deleted, and one that came back under its name: both remembered.
        seen.present(name(1), pool.clone());
        seen.gone("g00001", t0 + Duration::minutes(59));
        seen.present(name(2), pool.clone());
        seen.gone("g00002", t0);
        seen.present(name(2), pool.clone());
        for i in 3..PRUNE_FROM + 1 {
            seen.present(name(i), pool.clone());
        }
        assert_eq!(seen.pool("g00000").map(|p| &**p), Some("spot-a"));

        // The table reached its prune point: the delete that gets there prunes.
        seen.gone("g00003", t0 + Duration::minutes(61));
        assert_eq!(seen.pool("g00000"), None, "gone 61 minutes ago");
        assert!(seen.pool("g00001").is_some(), "gone 2 minutes ago");
        assert!(seen.pool("g00002").is_some(), "present again");
        assert!(seen.pool("g00003").is_some(), "just deleted");
        assert_eq!(seen.len(), PRUNE_FROM);
    }

    #[test]
    fn a_fleet_that_replaces_its_nodes_all_day_holds_about_an_hours_worth_of_names() {
        let mut seen = PoolsSeen::default();
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let pool: Arc<str> = "spot-a".into();
        // 100 nodes, each replaced by a new name every 10 minutes, for a day: 14,400 names.
        let mut live: Vec<usize> = (0..100).collect();
        for n in &live {
            seen.present(name(*n), pool.clone());
        }
        let mut next = 100;
        for minute in 0..24 * 60 {
            let now = t0 + Duration::minutes(minute);
            for _ in 0..10 {
                let old = live.remove(0);
                seen.gone(&name(old), now);
                seen.present(name(next), pool.clone());
                live.push(next);
                next += 1;
            }
        }
        // An hour of deletions is 600 names; the table prunes once it doubles from there.
        assert!(seen.len() <= 2 * PRUNE_FROM, "{} names kept", seen.len());
        for n in &live {
            assert!(seen.pool(&name(*n)).is_some());
        }
    }
}
