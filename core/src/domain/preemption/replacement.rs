//! Replacement latency: from a preemption's T=0 until its pool's replacement node is Ready,
//! the second of the four signals a team running Spot should watch (AWS: "Best practices for
//! handling EC2 Spot Instance interruptions"). It ends at the replacement's Ready condition
//! (lastTransitionTime), not at its creation: a node that exists but cannot run pods has not
//! replaced anything yet.
//!
//! The bands are the article's: above 60 s amber, above 90 s red. On AWS the two-minute
//! notice means a replacement Ready within 90 s leaves 30 s for pods to be scheduled on it
//! before the old instance is gone. CKS gives seven minutes (cordon at T=0, drain at T+2 min,
//! gone by T+7 min; CoreWeave: Spot Node Pools), so a CKS replacement Ready within 2 minutes
//! is there before the drain starts; the same bands are kept for every provider so pools
//! compare, and CKS pools simply have more room before red hurts.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};

use crate::model::Lifetime;

/// Above this many seconds a replacement latency is amber.
pub const AMBER_S: f64 = 60.0;
/// Above this many seconds it is red.
pub const RED_S: f64 = 90.0;

/// `ok`, `amber` or `red` for a latency in seconds.
pub fn band(seconds: f64) -> &'static str {
    if seconds > RED_S {
        "red"
    } else if seconds > AMBER_S {
        "amber"
    } else {
        "ok"
    }
}

/// Pairs each preempted lifetime (by uid) with its replacement: taking the preemptions of a
/// pool in T=0 order, each gets the earliest-started node of the same cluster and pool that
/// started at or after its T=0 and replaces no earlier preemption. Two preemptions in one
/// pool thus get two replacements, never the same one twice.
pub fn pair<'a>(
    lifetimes: impl IntoIterator<Item = &'a Lifetime>,
) -> HashMap<&'a str, &'a Lifetime> {
    let mut by_pool: BTreeMap<(&str, &str), Vec<&Lifetime>> = BTreeMap::new();
    for l in lifetimes {
        if let Some(p) = l.pool.as_deref() {
            by_pool.entry((l.cluster.as_str(), p)).or_default().push(l);
        }
    }
    let mut out = HashMap::new();
    for members in by_pool.values_mut() {
        members.sort_by_key(|l| (l.started_at, l.uid.as_str()));
        let mut victims: Vec<(DateTime<Utc>, &Lifetime)> = members
            .iter()
            .filter_map(|l| Some((l.preemption_t0?, *l)))
            .collect();
        victims.sort_by_key(|(t0, l)| (*t0, l.uid.as_str()));
        let mut taken: HashSet<&str> = HashSet::new();
        for (t0, victim) in victims {
            let replacement = members.iter().find(|c| {
                c.uid != victim.uid && c.started_at >= t0 && !taken.contains(c.uid.as_str())
            });
            if let Some(r) = replacement {
                taken.insert(r.uid.as_str());
                out.insert(victim.uid.as_str(), *r);
            }
        }
    }
    out
}

/// Seconds from `victim`'s T=0 to `replacement` being Ready; `None` when either is unknown.
pub fn latency_s(victim: &Lifetime, replacement: &Lifetime) -> Option<f64> {
    let t0 = victim.preemption_t0?;
    let ready = replacement.ready_at?;
    Some(((ready - t0).num_milliseconds().max(0)) as f64 / 1000.0)
}

/// Each preempted lifetime whose replacement ([`pair`]) is Ready, with its latency in seconds.
pub fn latencies(lifetimes: &[Lifetime]) -> Vec<(&Lifetime, f64)> {
    let pairs = pair(lifetimes);
    lifetimes
        .iter()
        .filter_map(|l| Some((l, latency_s(l, pairs.get(l.uid.as_str())?)?)))
        .collect()
}

/// p50, p95 and max of a set of latencies, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyStats {
    pub p50_s: f64,
    pub p95_s: f64,
    pub max_s: f64,
}

/// Nearest-rank percentiles (the smallest value with at least q of the values at or below it),
/// so every figure is one that was measured; `None` for no values.
pub fn stats(values: &[f64]) -> Option<LatencyStats> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Some(LatencyStats {
        p50_s: rank(0.50),
        p95_s: rank(0.95),
        max_s: v[v.len() - 1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(s: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 0).unwrap() + chrono::Duration::seconds(s)
    }

    fn node(uid: &str, pool: &str, start: i64, t0: Option<i64>, ready: Option<i64>) -> Lifetime {
        Lifetime {
            uid: uid.into(),
            cluster: "c".into(),
            node: uid.into(),
            pool: Some(pool.into()),
            started_at: at(start),
            preemption_t0: t0.map(at),
            ready_at: ready.map(at),
            ..Default::default()
        }
    }

    #[test]
    fn each_preemption_gets_its_own_replacement_in_t0_order() {
        let ls = [
            node("v1", "p", -1000, Some(0), Some(-990)),
            node("v2", "p", -1000, Some(10), Some(-990)),
            // Started before v1's T=0: not a replacement.
            node("old", "p", -500, None, Some(-480)),
            node("r1", "p", 30, None, Some(75)),
            node("r2", "p", 40, None, Some(140)),
            // Another pool's new node replaces nothing here.
            node("x", "q", 5, None, Some(20)),
        ];
        let pairs = pair(&ls);
        assert_eq!(pairs["v1"].uid, "r1");
        assert_eq!(pairs["v2"].uid, "r2");
        assert_eq!(pairs.len(), 2);
        // v1: T=0 at 0 s, r1 Ready at 75 s; v2: T=0 at 10 s, r2 Ready at 140 s.
        assert_eq!(latency_s(&ls[0], pairs["v1"]), Some(75.0));
        assert_eq!(latency_s(&ls[1], pairs["v2"]), Some(130.0));
        assert_eq!(band(75.0), "amber");
        assert_eq!(band(130.0), "red");
        assert_eq!(band(60.0), "ok");
    }

    #[test]
    fn a_replacement_not_yet_ready_has_no_latency() {
        let ls = [
            node("v", "p", -100, Some(0), Some(-90)),
            node("r", "p", 20, None, None),
        ];
        let pairs = pair(&ls);
        assert_eq!(pairs["v"].uid, "r");
        assert_eq!(latency_s(&ls[0], pairs["v"]), None);
    }

    #[test]
    fn nearest_rank_percentiles_by_hand() {
        // Sorted: 10 20 30 40 50 60 70 80 90 100. p50: rank ceil(5) = 5th = 50; p95: rank
        // ceil(9.5) = 10th = 100.
        let v = [100.0, 10.0, 90.0, 20.0, 80.0, 30.0, 70.0, 40.0, 60.0, 50.0];
        assert_eq!(
            stats(&v),
            Some(LatencyStats {
                p50_s: 50.0,
                p95_s: 100.0,
                max_s: 100.0
            })
        );
        // Three values: p50 rank ceil(1.5) = 2nd; p95 rank ceil(2.85) = 3rd.
        assert_eq!(
            stats(&[45.0, 120.0, 61.0]),
            Some(LatencyStats {
                p50_s: 61.0,
                p95_s: 120.0,
                max_s: 120.0
            })
        );
        assert_eq!(stats(&[]), None);
    }
}
