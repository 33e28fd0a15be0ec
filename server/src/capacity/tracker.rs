//! Time to fulfil, observed: how long pools take from falling below target (their AtTarget
//! condition turning False) to reaching it again (True), per zone and instance type. Both ends
//! are the condition's own `lastTransitionTime`, so the sampling interval does not blur them.

use std::collections::{BTreeMap, HashMap};

use app::model::PoolRow;
use chrono::{DateTime, Utc};

/// Samples kept per (zone, instance type): the most recent ones.
pub const SAMPLES_KEPT: usize = 50;

/// Open gaps and finished samples.
#[derive(Default)]
pub struct FulfilTracker {
    /// Pool key → when AtTarget turned False.
    open: HashMap<String, DateTime<Utc>>,
    samples: BTreeMap<(String, String), Vec<u64>>,
}

impl FulfilTracker {
    /// Takes one look at every pool.
    pub fn observe(&mut self, pools: &[PoolRow]) {
        for p in pools {
            let Some(zone) = &p.zone else { continue };
            let Some(at_target) = p
                .conditions
                .iter()
                .find(|c| c.type_ == app::nodepool::ConditionType::AtTarget)
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

    /// Seconds per (zone, instance type).
    pub fn samples(&self) -> &BTreeMap<(String, String), Vec<u64>> {
        &self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::model::ConditionView;
    use chrono::{Duration, TimeZone};

    fn pool(status: &str, at: DateTime<Utc>) -> PoolRow {
        PoolRow {
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
        }
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
