//! This fleet's own history of getting spot capacity in a zone, beside the provider-derived
//! score: how long its pools sat `QueuedAwaitingCapacity`, how many scale-ups it asked for and
//! how many were fulfilled, read from the NodePools' condition history (CoreWeave: Node Pool
//! reference, `status.conditions`: `Capacity` reason `QueuedAwaitingCapacity`; `AtTarget`
//! False while the pool is below `targetNodes`).

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use crate::domain::conditions_history::held;
use crate::model::ConditionTransition;

/// The Capacity condition's reason while a pool waits for capacity.
pub const QUEUED_REASON: &str = "QueuedAwaitingCapacity";

/// One pool's history over the last 24 h and 7 d.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolHistory {
    /// Seconds its Capacity condition had reason `QueuedAwaitingCapacity` in the last 24 h.
    pub queued_24h_s: u64,
    /// The same over the last 7 d.
    pub queued_7d_s: u64,
    /// Times its AtTarget condition turned False in the last 7 d: scale-ups (or
    /// replacements) asked of the provider.
    pub scale_ups_7d: u32,
    /// Of those, the ones that reached AtTarget True again.
    pub fulfilled_7d: u32,
}

/// Per `(cluster, pool)`, its [`PoolHistory`] at `now`, from every pool's `Capacity` and
/// `AtTarget` transitions (any order; the last one before the 7-day window included, so a
/// pool queued since before it counts from the window's start). A pool still queued counts
/// until `now`.
pub fn per_pool(
    capacity: &[ConditionTransition],
    at_target: &[ConditionTransition],
    now: DateTime<Utc>,
) -> BTreeMap<(String, String), PoolHistory> {
    let week = now - Duration::days(7);
    let day = now - Duration::days(1);
    let mut out: BTreeMap<(String, String), PoolHistory> = BTreeMap::new();
    for ((cluster, pool), ts) in by_pool(capacity) {
        let h = out.entry((cluster, pool)).or_default();
        for (t, start, end) in held(&ts, week, now) {
            if t.reason != QUEUED_REASON {
                continue;
            }
            h.queued_7d_s += (end - start).num_seconds().max(0) as u64;
            let (s, e) = (start.max(day), end);
            if e > s {
                h.queued_24h_s += (e - s).num_seconds() as u64;
            }
        }
    }
    for ((cluster, pool), mut ts) in by_pool(at_target) {
        ts.sort_by_key(|t| t.since);
        let h = out.entry((cluster, pool)).or_default();
        let mut open = false;
        let mut was_false = false;
        for t in &ts {
            let is_false = t.status == "False";
            if is_false && !was_false && t.since >= week {
                h.scale_ups_7d += 1;
                open = true;
            }
            if t.status == "True" && open {
                h.fulfilled_7d += 1;
                open = false;
            }
            was_false = is_false;
        }
    }
    out
}

fn by_pool(ts: &[ConditionTransition]) -> BTreeMap<(String, String), Vec<ConditionTransition>> {
    let mut out: BTreeMap<(String, String), Vec<ConditionTransition>> = BTreeMap::new();
    for t in ts {
        out.entry((t.cluster.clone(), t.pool.clone()))
            .or_default()
            .push(t.clone());
    }
    out
}

/// The nearest-rank percentile `q` (0–1) of `v`; `None` when empty.
pub fn percentile(v: &[u64], q: f64) -> Option<u64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    let rank = ((q * s.len() as f64).ceil() as usize).max(1);
    s.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::nodepool::ConditionType;

    fn t(
        type_: &ConditionType,
        pool: &str,
        hours_ago: i64,
        status: &str,
        reason: &str,
        now: DateTime<Utc>,
    ) -> ConditionTransition {
        ConditionTransition {
            cluster: "c".into(),
            pool: pool.into(),
            type_: type_.clone(),
            status: status.into(),
            reason: reason.into(),
            message: String::new(),
            since: now - Duration::hours(hours_ago),
        }
    }

    /// Worked by hand: pool `a` was queued 10 days ago until 6 days ago (1 day of it inside
    /// the week), again from 30 h ago to 20 h ago (10 h, 4 of them inside the last day), and
    /// is queued again since 2 h ago (2 h, both windows). So 24 h: 4 + 2 = 6 h; 7 d: 24 + 10
    /// + 2 = 36 h. AtTarget fell three times, twice inside the week, once fulfilled.
    #[test]
    fn a_pools_queued_time_and_scale_ups_by_hand() {
        let now = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        let cap = ConditionType::Capacity;
        let capacity = [
            t(&cap, "a", 240, "False", QUEUED_REASON, now),
            t(&cap, "a", 144, "True", "Sufficient", now),
            t(&cap, "a", 30, "False", QUEUED_REASON, now),
            t(&cap, "a", 20, "True", "Sufficient", now),
            t(&cap, "a", 2, "False", QUEUED_REASON, now),
            // Another reason while False is not queued time.
            t(&cap, "b", 5, "False", "NoneAvailable", now),
        ];
        let at = ConditionType::AtTarget;
        let at_target = [
            t(&at, "a", 240, "False", "", now),
            t(&at, "a", 144, "True", "", now),
            t(&at, "a", 30, "False", "", now),
            // A change of reason while False is the same scale-up.
            t(&at, "a", 25, "False", "Other", now),
            t(&at, "a", 20, "True", "", now),
            t(&at, "a", 2, "False", "", now),
        ];
        let h = per_pool(&capacity, &at_target, now);
        let a = h[&("c".to_string(), "a".to_string())];
        assert_eq!(a.queued_24h_s, 6 * 3600);
        assert_eq!(a.queued_7d_s, 36 * 3600);
        assert_eq!((a.scale_ups_7d, a.fulfilled_7d), (2, 1));
        let b = h[&("c".to_string(), "b".to_string())];
        assert_eq!((b.queued_24h_s, b.queued_7d_s), (0, 0));
    }

    #[test]
    fn nearest_rank_percentiles() {
        assert_eq!(percentile(&[], 0.95), None);
        assert_eq!(percentile(&[7], 0.95), Some(7));
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&v, 0.95), Some(19));
        assert_eq!(percentile(&v, 0.5), Some(10));
    }
}
