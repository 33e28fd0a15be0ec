//! Time spent in each condition status, from a NodePool's transitions: "how long was this pool
//! queued for capacity last week".

use chrono::{DateTime, Utc};

use crate::model::{ConditionHistory, ConditionSpan, ConditionTransition};

/// The history as served: `transitions` (oldest first, as the ledger reads them) newest first,
/// with their [`spans`] over `[from, to]`.
pub fn history(
    mut transitions: Vec<ConditionTransition>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> ConditionHistory {
    let spans = spans(&transitions, from, to);
    transitions.reverse();
    ConditionHistory {
        from: Some(from),
        to: Some(to),
        transitions,
        spans,
    }
}

/// Each transition with the part of `[from, to]` it held: until the next transition of its
/// type (the last one until `to`), from `from` on for one before the window. Transitions that
/// held nothing in the window are left out. `transitions` are one pool's, in any order; the
/// result is by condition type, then time.
pub fn held(
    transitions: &[ConditionTransition],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<(&ConditionTransition, DateTime<Utc>, DateTime<Utc>)> {
    let mut sorted: Vec<&ConditionTransition> = transitions.iter().collect();
    sorted.sort_by(|a, b| (a.type_.as_str(), a.since).cmp(&(b.type_.as_str(), b.since)));
    let mut out = Vec::new();
    for (i, t) in sorted.iter().enumerate() {
        let end = sorted
            .get(i + 1)
            .filter(|n| n.type_ == t.type_)
            .map_or(to, |n| n.since)
            .min(to);
        let start = t.since.max(from);
        if end > start {
            out.push((*t, start, end));
        }
    }
    out
}

/// Completed episodes of one condition being False, per pool: `(cluster, pool, seconds)` from
/// its first False to the next True. Used with `AtTarget` for the capacity grid's "time from
/// queued to current". `transitions` are of one condition type, any pools, any order; an
/// episode still open, or one whose start is not among them, is left out.
pub fn false_episodes(transitions: &[ConditionTransition]) -> Vec<(String, String, u64)> {
    let mut sorted: Vec<&ConditionTransition> = transitions.iter().collect();
    sorted.sort_by(|a, b| (&a.cluster, &a.pool, a.since).cmp(&(&b.cluster, &b.pool, b.since)));
    let mut out = Vec::new();
    let mut open: Option<(&str, &str, DateTime<Utc>)> = None;
    for t in sorted {
        if open.is_some_and(|(c, p, _)| c != t.cluster || p != t.pool) {
            open = None;
        }
        match t.status.as_str() {
            // A change of reason while False continues the same episode.
            "False" if open.is_none() => open = Some((&t.cluster, &t.pool, t.since)),
            "True" => {
                if let Some((c, p, start)) = open.take() {
                    out.push((
                        c.to_string(),
                        p.to_string(),
                        (t.since - start).num_seconds().max(0) as u64,
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// Per condition type, status and reason, the seconds within `[from, to]` and the times it was
/// entered in the window (see [`held`]).
pub fn spans(
    transitions: &[ConditionTransition],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<ConditionSpan> {
    let mut out: Vec<ConditionSpan> = Vec::new();
    for (t, start, end) in held(transitions, from, to) {
        let entered = u32::from(t.since >= from);
        match out
            .iter_mut()
            .find(|s| s.type_ == t.type_ && s.status == t.status && s.reason == t.reason)
        {
            Some(s) => {
                s.seconds += (end - start).num_seconds();
                s.entered += entered;
            }
            None => out.push(ConditionSpan {
                type_: t.type_.clone(),
                status: t.status.clone(),
                reason: t.reason.clone(),
                seconds: (end - start).num_seconds(),
                entered,
            }),
        }
    }
    out.sort_by(|a, b| {
        (a.type_.as_str(), std::cmp::Reverse(a.seconds))
            .cmp(&(b.type_.as_str(), std::cmp::Reverse(b.seconds)))
    });
    out
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};

    use super::*;
    use crate::nodepool::ConditionType;

    fn at(h: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap() + Duration::hours(h)
    }

    fn t(type_: ConditionType, status: &str, reason: &str, h: i64) -> ConditionTransition {
        ConditionTransition {
            type_,
            status: status.into(),
            reason: reason.into(),
            since: at(h),
            ..Default::default()
        }
    }

    #[test]
    fn time_queued_for_capacity_in_a_week() {
        let history = [
            // Before the window: counts from its start.
            t(ConditionType::Capacity, "True", "Sufficient", -10),
            t(
                ConditionType::Capacity,
                "False",
                "QueuedAwaitingCapacity",
                5,
            ),
            t(ConditionType::Capacity, "True", "Sufficient", 8),
            t(
                ConditionType::Capacity,
                "False",
                "QueuedAwaitingCapacity",
                20,
            ),
            // Another type is its own timeline.
            t(ConditionType::Quota, "True", "Under", 1),
        ];
        let s = spans(&history, at(0), at(24));
        let queued = s
            .iter()
            .find(|s| s.reason == "QueuedAwaitingCapacity")
            .unwrap();
        assert_eq!(queued.seconds, (3 + 4) * 3600, "5→8 h and 20→24 h");
        assert_eq!(queued.entered, 2);
        let sufficient = s.iter().find(|s| s.reason == "Sufficient").unwrap();
        assert_eq!(sufficient.seconds, (5 + 12) * 3600, "0→5 h and 8→20 h");
        assert_eq!(
            sufficient.entered, 1,
            "the one before the window was not entered in it"
        );
        let quota = s.iter().find(|s| s.type_ == ConditionType::Quota).unwrap();
        assert_eq!(quota.seconds, 23 * 3600);
    }

    #[test]
    fn transitions_after_the_window_count_nothing() {
        let s = spans(
            &[t(ConditionType::Capacity, "False", "NoneAvailable", 30)],
            at(0),
            at(24),
        );
        assert!(s.is_empty());
    }

    #[test]
    fn false_episodes_run_from_the_first_false_to_the_next_true_per_pool() {
        let on = |pool: &str, status: &str, reason: &str, h: i64| ConditionTransition {
            cluster: "c".into(),
            pool: pool.into(),
            ..t(ConditionType::AtTarget, status, reason, h)
        };
        let e = false_episodes(&[
            on("a", "True", "AtTarget", 0),
            on("a", "False", "Scaling", 1),
            // Same episode, another reason.
            on("a", "False", "QueuedAwaitingCapacity", 2),
            on("a", "True", "AtTarget", 4),
            on("b", "False", "Scaling", 3),
            // b's episode is still open; a True without a False before it starts nothing.
            on("c", "True", "AtTarget", 5),
        ]);
        assert_eq!(e, [("c".to_string(), "a".to_string(), 3 * 3600)]);
    }
}
