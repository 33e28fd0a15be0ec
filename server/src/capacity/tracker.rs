//! Time to fulfil, observed: how long pools take from falling below target (their AtTarget
//! condition turning False) to reaching it again (True), per zone and instance type. Both ends
//! are the condition's own `lastTransitionTime`, so the sampling interval does not blur them.
//!
//! The ledger's condition history (last 7 days, every pool's AtTarget transitions) wins over
//! what this process saw since it started, once it has been read: a restart then keeps the
//! figure. The live samples serve until then, and while the ledger is away.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use spotboard_core::model::PoolRow;

/// Samples kept per (zone, instance type): the most recent ones.
pub const SAMPLES_KEPT: usize = 50;

/// Open gaps and finished samples.
#[derive(Default)]
pub struct FulfilTracker {
    /// Pool key → when AtTarget turned False.
    open: HashMap<String, DateTime<Utc>>,
    samples: BTreeMap<(String, String), Vec<u64>>,
    /// From the ledger's condition history, when read.
    history: Option<BTreeMap<(String, String), Vec<u64>>>,
}

impl FulfilTracker {
    /// Takes one look at every pool.
    pub fn observe(&mut self, pools: &[Arc<PoolRow>]) {
        for p in pools {
            let Some(zone) = &p.zone else { continue };
            let Some(at_target) = p
                .conditions
                .iter()
                .find(|c| c.type_ == spotboard_core::nodepool::ConditionType::AtTarget)
            else {
                continue;
            };
            let Some(t) = at_target.last_transition else {
                continue;
            };
            match at_target.status.as_str() {
                "False" => {
                    self.open.entry(p.key.clone()).or_insert(t);
                }
                "True" => {
                    if let Some(start) = self.open.remove(&p.key)
                        && t >= start
                    {
                        let v = self
                            .samples
                            .entry((zone.clone(), p.instance_type.clone()))
                            .or_default();
                        v.push((t - start).num_seconds() as u64);
                        if v.len() > SAMPLES_KEPT {
                            v.remove(0);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Seconds per (zone, instance type): the ledger's history when read, else live.
    pub fn samples(&self) -> &BTreeMap<(String, String), Vec<u64>> {
        self.history.as_ref().unwrap_or(&self.samples)
    }

    /// Takes the ledger's completed AtTarget False episodes, `(cluster, pool, seconds)`,
    /// placed by each pool's zone and instance type in `pools` (episodes of pools no longer
    /// there are left out), the most recent [`SAMPLES_KEPT`] per cell.
    pub fn set_history(&mut self, episodes: &[(String, String, u64)], pools: &[Arc<PoolRow>]) {
        let place: HashMap<(&str, &str), (&String, &String)> = pools
            .iter()
            .filter_map(|p| {
                Some((
                    (p.cluster.as_str(), p.name.as_str()),
                    (p.zone.as_ref()?, &p.instance_type),
                ))
            })
            .collect();
        let mut h: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
        for (cluster, pool, s) in episodes {
            if let Some((zone, t)) = place.get(&(cluster.as_str(), pool.as_str())) {
                h.entry(((*zone).clone(), (*t).clone()))
                    .or_default()
                    .push(*s);
            }
        }
        for v in h.values_mut() {
            let extra = v.len().saturating_sub(SAMPLES_KEPT);
            v.drain(..extra);
        }
        self.history = Some(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};
    use spotboard_core::model::ConditionView;

    fn pool(status: &str, at: DateTime<Utc>) -> Arc<PoolRow> {
        Arc::new(PoolRow {
            key: "uid-1".into(),
            zone: Some("US-EAST-04A".into()),
            instance_type: "gd-8xa100-i128".into(),
            conditions: vec![ConditionView {
                type_: "AtTarget".into(),
                status: status.into(),
                last_transition: Some(at),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    #[test]
    fn a_gap_becomes_one_sample_in_condition_time() {
        let t0 = Utc.with_ymd_and_hms(2026, 11, 21, 8, 0, 0).unwrap();
        let mut t = FulfilTracker::default();
        t.observe(&[pool("True", t0)]);
        assert!(
            t.samples().is_empty(),
            "at target from the start: nothing to measure"
        );
        t.observe(&[pool("False", t0 + Duration::seconds(10))]);
        t.observe(&[pool("False", t0 + Duration::seconds(10))]);
        t.observe(&[pool("True", t0 + Duration::seconds(100))]);
        t.observe(&[pool("True", t0 + Duration::seconds(100))]);
        let key = ("US-EAST-04A".to_string(), "gd-8xa100-i128".to_string());
        assert_eq!(t.samples()[&key], vec![90]);
    }
}
