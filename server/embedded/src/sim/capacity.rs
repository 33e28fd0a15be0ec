//! Capacity and quota of one simulated zone: how many nodes of each instance type CoreWeave
//! could hand out right now, and how many the organization may hold.
//!
//! [`CapacitySnapshot`] is the published form: a plain, serializable value a capacity view
//! (or a Capacity Finder–like feature, CoreWeave: Spot Node Pools, "Check Spot capacity
//! before you provision") can show without knowing the simulation. [`CapacityModel`] is the
//! mutable model behind it.
//!
//! Model: each (instance type, [`CapacityClass`]) has `free_nodes`, the instances free in the
//! zone, drifting slowly around a seeded `baseline` (rich zones high, scarce zones near zero).
//! Assigning a node to a pool takes one; scaling a pool down gives one back; a Spot preemption
//! does not (CoreWeave reclaimed the instance for someone else; CoreWeave: Spot Node Pools).
//! Quota is per instance type for the organization; a missing or zero limit is `NotSet`
//! (CoreWeave's public `coreweave/skills` repository, `cw-create-node-pool`: "quota limit is
//! 0 for instance type …").

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rand::Rng;
use serde::Serialize;

/// Which of CoreWeave's capacity pools a NodePool draws from: Spot instances, or the
/// reserved/on-demand instances of `computeClass: default` (CoreWeave: Node Pool reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CapacityClass {
    Spot,
    OnDemand,
}

impl CapacityClass {
    /// The class a pool with `spec.computeClass` draws from; unknown classes count as
    /// on-demand (they never get this far: validation refuses them).
    pub fn of(compute_class: &spotboard_core::nodepool::ComputeClass) -> Self {
        match compute_class {
            spotboard_core::nodepool::ComputeClass::Spot => Self::Spot,
            _ => Self::OnDemand,
        }
    }
}

/// Free instances of one type and class in the zone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityEntry {
    /// Instance type ID, e.g. `gd-8xh100ib-i128`.
    pub instance_type: String,
    pub class: CapacityClass,
    /// Nodes that could be assigned now.
    pub free_nodes: u32,
    /// The level `free_nodes` drifts around (seeded per zone; 0 for a scarce type).
    pub baseline: u32,
}

/// The organization's quota for one instance type in the zone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaEntry {
    pub instance_type: String,
    /// Nodes the organization may hold; `None` when no quota is set (the `NotSet` reason).
    pub limit: Option<u32>,
    /// Nodes held or requested by the zone's NodePools (current + in progress + queued).
    pub in_use: u32,
}

/// A point-in-time copy of a zone's capacity and quota, for publishing.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacitySnapshot {
    /// Zone name, e.g. `US-EAST-04A`.
    pub zone: String,
    /// Wall-clock time of the copy.
    pub as_of: DateTime<Utc>,
    /// Sorted by instance type, then class.
    pub capacity: Vec<CapacityEntry>,
    /// Sorted by instance type; only types with a limit or in use.
    pub quotas: Vec<QuotaEntry>,
}

/// The mutable capacity and quota model of one zone.
#[derive(Clone, Debug)]
pub struct CapacityModel {
    zone: String,
    entries: BTreeMap<(String, CapacityClass), CapacityEntry>,
    quotas: BTreeMap<String, u32>,
    in_use: BTreeMap<String, u32>,
}

impl CapacityModel {
    /// A model with the given entries (one per type and class the zone offers) and quota
    /// limits (types without one are `NotSet`).
    pub fn new(
        zone: &str,
        entries: impl IntoIterator<Item = CapacityEntry>,
        quotas: BTreeMap<String, u32>,
    ) -> Self {
        let entries = entries
            .into_iter()
            .map(|e| ((e.instance_type.clone(), e.class), e))
            .collect();
        Self {
            zone: zone.to_string(),
            entries,
            quotas,
            in_use: BTreeMap::new(),
        }
    }

    /// Whether the zone offers this type in this class at all (`NoneAvailable` otherwise).
    pub fn offered(&self, instance_type: &str, class: CapacityClass) -> bool {
        self.entries
            .contains_key(&(instance_type.to_string(), class))
    }

    /// Nodes of this type and class that could be assigned now.
    pub fn free(&self, instance_type: &str, class: CapacityClass) -> u32 {
        self.entries
            .get(&(instance_type.to_string(), class))
            .map_or(0, |e| e.free_nodes)
    }

    /// Takes up to `n` free nodes; returns how many were taken.
    pub fn take(&mut self, instance_type: &str, class: CapacityClass, n: u32) -> u32 {
        match self.entries.get_mut(&(instance_type.to_string(), class)) {
            Some(e) => {
                let taken = n.min(e.free_nodes);
                e.free_nodes -= taken;
                taken
            }
            None => 0,
        }
    }

    /// Gives `n` nodes back (a pool scaled down, or a boot was cancelled).
    pub fn release(&mut self, instance_type: &str, class: CapacityClass, n: u32) {
        if let Some(e) = self.entries.get_mut(&(instance_type.to_string(), class)) {
            e.free_nodes = e.free_nodes.saturating_add(n);
        }
    }

    /// The organization's quota for the type; `None` (or a stored 0) is `NotSet`.
    pub fn quota_limit(&self, instance_type: &str) -> Option<u32> {
        self.quotas.get(instance_type).copied().filter(|l| *l > 0)
    }

    /// Records nodes held or requested per instance type, for the snapshot.
    pub fn set_in_use(&mut self, in_use: BTreeMap<String, u32>) {
        self.in_use = in_use;
    }

    /// One drift step (the controller takes one per 10 simulated minutes): each entry moves by at most one node, pulled towards its baseline,
    /// so capacity changes slowly and scarce types stay scarce most of the time.
    pub fn drift(&mut self, rng: &mut impl Rng) {
        for e in self.entries.values_mut() {
            e.free_nodes = drift_step(e.free_nodes, e.baseline, rng.random::<f64>());
        }
    }

    /// A copy for publishing.
    pub fn snapshot(&self) -> CapacitySnapshot {
        let mut types: Vec<&String> = self.quotas.keys().chain(self.in_use.keys()).collect();
        types.sort();
        types.dedup();
        CapacitySnapshot {
            zone: self.zone.clone(),
            as_of: Utc::now(),
            capacity: self.entries.values().cloned().collect(),
            quotas: types
                .into_iter()
                .map(|t| QuotaEntry {
                    instance_type: t.clone(),
                    limit: self.quota_limit(t),
                    in_use: self.in_use.get(t).copied().unwrap_or(0),
                })
                .collect(),
        }
    }
}

impl CapacitySnapshot {
    /// This snapshot in the capacity feed format (`spotboard_core::model::capacity`): one entry per
    /// instance type and capacity class, `availableNodes` = free nodes now.
    pub fn to_feed(&self) -> spotboard_core::model::CapacityFeed {
        spotboard_core::model::CapacityFeed {
            source: format!("spotboard embedded cluster, zone {} (simulated)", self.zone),
            generated_at: self.as_of,
            confidential: false,
            entries: self
                .capacity
                .iter()
                .map(|e| spotboard_core::model::FeedEntry {
                    zone: self.zone.clone(),
                    instance_type: e.instance_type.clone(),
                    capacity_type: match e.class {
                        CapacityClass::Spot => spotboard_core::CapacityType::Spot,
                        CapacityClass::OnDemand => spotboard_core::CapacityType::OnDemand,
                    },
                    available_nodes: e.free_nodes,
                    observed_at: Some(self.as_of),
                })
                .collect(),
        }
    }
}

/// Seeded entries for every catalog type: on-demand capacity 2–8 nodes (0–2 for Superchip
/// types), Spot capacity (non-Superchip types only; CoreWeave: Spot Node Pools) 4–12 in a
/// `rich` zone and 0–3 otherwise; `scarce` (type, class) pairs start and stay near 0.
pub fn seeded(
    rng: &mut impl Rng,
    rich: bool,
    scarce: &[(&str, CapacityClass)],
) -> Vec<CapacityEntry> {
    let mut out = Vec::new();
    for t in spotboard_core::catalog::instance_types() {
        let on_demand = if t.superchip {
            rng.random_range(0..=2)
        } else {
            rng.random_range(2..=8)
        };
        let spot = if rich {
            rng.random_range(4..=12)
        } else {
            rng.random_range(0..=3)
        };
        let mut classes = vec![(CapacityClass::OnDemand, on_demand)];
        if t.spot_ok {
            classes.push((CapacityClass::Spot, spot));
        }
        for (class, baseline) in classes {
            let baseline = if scarce.contains(&(t.id.as_str(), class)) {
                0
            } else {
                baseline
            };
            out.push(CapacityEntry {
                instance_type: t.id.clone(),
                class,
                free_nodes: baseline,
                baseline,
            });
        }
    }
    out
}

/// The next free count from `free`, its `baseline` and a uniform draw `u` in [0, 1).
///
/// Below the baseline capacity returns with probability 0.35 (and shrinks with 0.05); above
/// it, the reverse; at the baseline it wanders either way with 0.15, except a zero baseline,
/// which only blips up with 0.02, so a scarce type gets a node back about every 50 steps
/// (8 simulated hours).
/// Never above `2 × baseline + 2`.
pub fn drift_step(free: u32, baseline: u32, u: f64) -> u32 {
    let (up, down) = match free.cmp(&baseline) {
        std::cmp::Ordering::Less => (0.35, 0.05),
        std::cmp::Ordering::Greater => (0.05, 0.35),
        std::cmp::Ordering::Equal if baseline == 0 => (0.02, 0.0),
        std::cmp::Ordering::Equal => (0.15, 0.15),
    };
    let next = if u < up {
        free + 1
    } else if u < up + down {
        free.saturating_sub(1)
    } else {
        free
    };
    next.min(baseline * 2 + 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn model() -> CapacityModel {
        let entry = |t: &str, class, free, baseline| CapacityEntry {
            instance_type: t.into(),
            class,
            free_nodes: free,
            baseline,
        };
        CapacityModel::new(
            "US-EAST-04A",
            [
                entry("gd-8xh100ib-i128", CapacityClass::Spot, 0, 0),
                entry("gd-8xh100ib-i128", CapacityClass::OnDemand, 5, 5),
                entry("turin-gp", CapacityClass::Spot, 3, 8),
            ],
            [
                ("gd-8xh100ib-i128".to_string(), 8),
                ("b200-8x".to_string(), 0),
            ]
            .into(),
        )
    }

    #[test]
    fn take_and_release_stay_within_free() {
        let mut m = model();
        assert_eq!(m.take("turin-gp", CapacityClass::Spot, 5), 3);
        assert_eq!(m.free("turin-gp", CapacityClass::Spot), 0);
        m.release("turin-gp", CapacityClass::Spot, 2);
        assert_eq!(m.free("turin-gp", CapacityClass::Spot), 2);
        assert_eq!(m.take("gd-8xa100-i128", CapacityClass::Spot, 1), 0);
        assert!(!m.offered("gd-8xa100-i128", CapacityClass::Spot));
        assert!(m.offered("gd-8xh100ib-i128", CapacityClass::Spot));
    }

    #[test]
    fn zero_or_missing_quota_is_not_set() {
        let m = model();
        assert_eq!(m.quota_limit("gd-8xh100ib-i128"), Some(8));
        assert_eq!(m.quota_limit("b200-8x"), None);
        assert_eq!(m.quota_limit("gb200-4x"), None);
    }

    #[test]
    fn drift_step_table() {
        // (free, baseline, draw, next)
        let cases = [
            (2, 8, 0.1, 3),
            (2, 8, 0.38, 1),
            (2, 8, 0.9, 2),
            (9, 8, 0.01, 10),
            (9, 8, 0.2, 8),
            (0, 0, 0.01, 1),
            (0, 0, 0.5, 0),
            (1, 0, 0.2, 0),
            (2, 0, 0.01, 2), // capped at 2 × 0 + 2
            (8, 8, 0.1, 9),
            (8, 8, 0.2, 7),
        ];
        for (free, baseline, u, want) in cases {
            assert_eq!(drift_step(free, baseline, u), want, "{free}/{baseline}/{u}");
        }
    }

    #[test]
    fn drift_is_slow_and_seeded() {
        let mut a = model();
        let mut b = model();
        let mut ra = rand::rngs::SmallRng::seed_from_u64(7);
        let mut rb = rand::rngs::SmallRng::seed_from_u64(7);
        let mut zero_steps = 0;
        for _ in 0..200 {
            let before = a.free("turin-gp", CapacityClass::Spot);
            a.drift(&mut ra);
            b.drift(&mut rb);
            let after = a.free("turin-gp", CapacityClass::Spot);
            assert!(before.abs_diff(after) <= 1);
            if a.free("gd-8xh100ib-i128", CapacityClass::Spot) == 0 {
                zero_steps += 1;
            }
        }
        assert_eq!(a.snapshot().capacity, b.snapshot().capacity);
        assert!(
            zero_steps > 100,
            "a scarce type stays mostly at zero: {zero_steps}"
        );
    }

    #[test]
    fn snapshot_lists_quota_and_use() {
        let mut m = model();
        m.set_in_use(
            [
                ("gd-8xh100ib-i128".to_string(), 3),
                ("gb200-4x".to_string(), 2),
            ]
            .into(),
        );
        let s = m.snapshot();
        assert_eq!(s.zone, "US-EAST-04A");
        assert_eq!(s.capacity.len(), 3);
        let q: Vec<_> = s
            .quotas
            .iter()
            .map(|q| (q.instance_type.as_str(), q.limit, q.in_use))
            .collect();
        assert_eq!(
            q,
            [
                ("b200-8x", None, 0),
                ("gb200-4x", None, 2),
                ("gd-8xh100ib-i128", Some(8), 3)
            ]
        );
    }
}
