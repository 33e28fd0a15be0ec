//! The seeded scenario: which NodePools each zone starts with, how many of their nodes exist
//! already, what runs on them, and the zone's capacity and quota.
//!
//! Pure: the same seed, zone and options give the same plan. The layout (see [`plan`]) is fixed
//! so docs and tests can name its pools; the seed picks node names, the organization ID,
//! capacity levels and, for zones beyond the third, the filler pools.

use std::collections::{BTreeMap, HashSet};

use app::catalog;
use app::nodepool::{Lifecycle, NodePoolSpec, ScaleDownStrategy, Taint, TaintEffect};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::capacity::{CapacityClass, CapacityEntry};

/// What runs on a pool's nodes (see `workloads.rs` for the pods of each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Cluster DNS and metrics in `kube-system` (the `cpu-control-plane` pool of every CKS
    /// cluster).
    ControlPlane,
    /// One 8-GPU training pod per node (StatefulSet), grace 600 s with a checkpointing
    /// preStop hook; gracefully interruptible on Spot, non-interruptible otherwise.
    Training,
    /// Inference replicas (ReplicaSet), 2 GPUs each, interruptible, grace 120 s.
    Inference,
    /// CPU batch Job pods, interruptible, grace 30 s.
    Batch,
    /// Inference and batch side by side.
    Mixed,
    /// `pods_per_node` identical pods per node (the `--nodes` scale pools).
    Bulk,
}

/// One NodePool of the scenario.
#[derive(Clone, Debug)]
pub struct PoolPlan {
    pub spec: NodePoolSpec,
    pub name: String,
    /// Nodes that exist at start, as if they had booted before the demo began; the
    /// controller requests the rest (`targetNodes - nodes.len()`).
    pub nodes: Vec<String>,
    pub workload: Workload,
}

/// The plan of one zone.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The customer organization, the value of `node.coreweave.cloud/reserved` (seed 002).
    pub org_id: String,
    pub pools: Vec<PoolPlan>,
    pub capacity: Vec<CapacityEntry>,
    /// Quota limit per instance type; types not listed are `NotSet`.
    pub quotas: BTreeMap<String, u32>,
    /// The namer that named the nodes at start; the controller names new nodes with it, so
    /// no name repeats.
    pub namer: NodeNamer,
}

/// Largest pool the `--nodes` scale nodes are put in.
pub const BULK_POOL_MAX: usize = 2_500;
const BULK_TYPES: [&str; 4] = ["gd-8xh100ib-i128", "gd-8xh200ib-i128", "gd-8xl40s-i128", "cd-gp-a192-genoa"];
/// Quota limit of every non-Superchip type unless the scenario says otherwise.
const DEFAULT_QUOTA: u32 = 64;

/// A 64-bit mix of the seed and a stream number (splitmix64), stable across Rust versions,
/// unlike `std`'s hashers.
pub fn mix(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A generator for one purpose (`stream`) of one zone.
pub fn rng(seed: u64, zone_index: usize, stream: u64) -> SmallRng {
    SmallRng::seed_from_u64(mix(mix(seed, zone_index as u64 + 1), stream))
}

/// The organization ID of the seed, e.g. `cw7f3a9c` (same in every zone: one customer).
pub fn org_id(seed: u64) -> String {
    format!("cw{:06x}", mix(seed, 0x0_0c9) & 0xff_ffff)
}

fn pool(name: &str, class: &str, instance: &str, target: i32, at_start: i32, workload: Workload) -> (PoolPlan, usize) {
    let spec = NodePoolSpec {
        compute_class: class.into(),
        instance_type: instance.into(),
        target_nodes: target,
        ..Default::default()
    };
    let plan = PoolPlan {
        spec,
        name: name.into(),
        nodes: Vec::new(),
        workload,
    };
    (plan, at_start as usize)
}

/// The zone's plan. Layout by zone index (with fewer zones, the groups of the missing zones
/// join zone 0, so one zone still shows every case):
///
/// | zone | pools (class, instance type, target / nodes at start) |
/// |---|---|
/// | every | `cpu-control-plane` (default, cd-gp-i64-erapids, 2/2) |
/// | 0 | `example-nodepool` (seed 001: default, gd-8xa100-i128, 1/1, IdleOnly); `h100-spot-train` (spot, H100, 4/4); `cpu-spot-batch` (spot, cd-gp-a192-genoa, autoscaling 1..6, 3/3); `l40s-inference` (default, L40S, 2/2) |
/// | 1 | `h200-spot-train` (spot, H200, 3/3); `l40s-spot-inference` (spot, L40S, tainted, 2/2); `b200-spot-burst` (spot, B200, 2/0: no free B200 Spot, so `QueuedAwaitingCapacity`); `h100-reserved` (default, H100, 2/2) |
/// | 2 | `a100-spot-eval` (spot, A100, 3/3); `rtxpro-render` (default, RTX PRO 6000, 3/2, quota 2: `Over`); `gb200-nvl72` (default, gb200-4x, 2/0, no quota: `NotSet`); `turin-cpu` (default, turin-gp, 2/2) |
/// | 3+ | a seeded Spot GPU pool (2–3 nodes) and a small CPU pool |
///
/// `extra_nodes / zone_count` scale nodes (the remainder to the first zones) go in
/// `bulk-spot-*` pools of at most [`BULK_POOL_MAX`] nodes.
pub fn plan(seed: u64, zone_index: usize, zone_count: usize, extra_nodes: usize) -> Scenario {
    let zone_count = zone_count.max(1);
    let mut rng = rng(seed, zone_index, 1);
    let mut quotas: BTreeMap<String, u32> = catalog::instance_types()
        .iter()
        .filter(|t| !t.superchip)
        .map(|t| (t.id.clone(), DEFAULT_QUOTA))
        .collect();
    // Zone 0 is rich so the demo's first zone recovers from preemptions; others are seeded.
    let rich = zone_index == 0 || rng.random_bool(0.5);
    let mut scarce: Vec<(&str, CapacityClass)> = Vec::new();

    let mut pools = vec![pool("cpu-control-plane", "default", "cd-gp-i64-erapids", 2, 2, Workload::ControlPlane)];
    let groups: Vec<usize> = (0..3).filter(|g| g % zone_count == zone_index).collect();
    for g in groups {
        match g {
            0 => {
                let (mut example, n) = pool("example-nodepool", "default", "gd-8xa100-i128", 1, 1, Workload::Training);
                example.spec.lifecycle = Some(Lifecycle {
                    scale_down_strategy: Some(ScaleDownStrategy::IdleOnly),
                    disable_unhealthy_node_eviction: Some(true),
                });
                example.spec.min_nodes = Some(0);
                example.spec.max_nodes = Some(0);
                pools.push((example, n));
                let (mut train, n) = pool("h100-spot-train", "spot", "gd-8xh100ib-i128", 4, 4, Workload::Training);
                train.spec.node_labels.insert("team".into(), "ml-training".into());
                train.spec.lifecycle = Some(Lifecycle {
                    scale_down_strategy: Some(ScaleDownStrategy::PreferIdle),
                    disable_unhealthy_node_eviction: None,
                });
                pools.push((train, n));
                let (mut batch, n) = pool("cpu-spot-batch", "spot", "cd-gp-a192-genoa", 3, 3, Workload::Batch);
                batch.spec.autoscaling = true;
                batch.spec.min_nodes = Some(1);
                batch.spec.max_nodes = Some(6);
                pools.push((batch, n));
                pools.push(pool("l40s-inference", "default", "gd-8xl40s-i128", 2, 2, Workload::Inference));
            }
            1 => {
                pools.push(pool("h200-spot-train", "spot", "gd-8xh200ib-i128", 3, 3, Workload::Training));
                let (mut inf, n) = pool("l40s-spot-inference", "spot", "gd-8xl40s-i128", 2, 2, Workload::Inference);
                inf.spec.node_taints.push(Taint {
                    key: "dedicated".into(),
                    value: Some("inference".into()),
                    effect: TaintEffect::NoSchedule,
                });
                inf.spec.node_labels.insert("workload".into(), "inference".into());
                pools.push((inf, n));
                pools.push(pool("b200-spot-burst", "spot", "b200-8x", 2, 0, Workload::Training));
                scarce.push(("b200-8x", CapacityClass::Spot));
                pools.push(pool("h100-reserved", "default", "gd-8xh100ib-i128", 2, 2, Workload::Training));
            }
            _ => {
                pools.push(pool("a100-spot-eval", "spot", "gd-8xa100-i128", 3, 3, Workload::Mixed));
                pools.push(pool("rtxpro-render", "default", "rtxp6000-8x", 3, 2, Workload::Inference));
                quotas.insert("rtxp6000-8x".into(), 2);
                pools.push(pool("gb200-nvl72", "default", "gb200-4x", 2, 0, Workload::Training));
                pools.push(pool("turin-cpu", "default", "turin-gp", 2, 2, Workload::Batch));
            }
        }
    }
    if zone_index >= 3 {
        let gpu = ["gd-8xh100ib-i128", "gd-8xh200ib-i128", "gd-8xl40s-i128", "gd-8xa100-i128"][rng.random_range(0..4)];
        let short = gpu.trim_start_matches("gd-8x").split('-').next().unwrap_or("gpu").trim_end_matches("ib");
        let n = rng.random_range(2..=3);
        pools.push(pool(&format!("{short}-spot-{zone_index}"), "spot", gpu, n, n, Workload::Mixed));
        pools.push(pool("cpu-batch", "default", "cd-gp-i64-erapids", 1, 1, Workload::Batch));
    }

    let share = extra_nodes / zone_count + usize::from(zone_index < extra_nodes % zone_count);
    let mut left = share;
    let mut k = 0;
    while left > 0 {
        let size = left.min(BULK_POOL_MAX);
        let t = BULK_TYPES[k % BULK_TYPES.len()];
        *quotas.entry(t.to_string()).or_default() += size as u32;
        let name = format!("bulk-spot-{}-{k}", t.split('-').nth(1).unwrap_or("x"));
        pools.push(pool(&name, "spot", t, size as i32, size as i32, Workload::Bulk));
        left -= size;
        k += 1;
    }

    let mut names = NodeNamer::new(seed, zone_index);
    let pools = pools
        .into_iter()
        .map(|(mut p, at_start)| {
            let gpu = catalog::instance_type(&p.spec.instance_type).is_some_and(|t| t.gpus > 0);
            p.nodes = (0..at_start).map(|_| names.next(gpu)).collect();
            p
        })
        .collect();

    let capacity = capacity(&mut rng, rich, &scarce);
    Scenario {
        org_id: org_id(seed),
        pools,
        capacity,
        quotas,
        namer: names,
    }
}

fn capacity(rng: &mut SmallRng, rich: bool, scarce: &[(&str, CapacityClass)]) -> Vec<CapacityEntry> {
    let mut out = Vec::new();
    for t in catalog::instance_types() {
        let on_demand = if t.superchip { rng.random_range(0..=2) } else { rng.random_range(2..=8) };
        let spot = if rich { rng.random_range(4..=12) } else { rng.random_range(0..=3) };
        let mut classes = vec![(CapacityClass::OnDemand, on_demand)];
        if t.spot_ok {
            classes.push((CapacityClass::Spot, spot));
        }
        for (class, baseline) in classes {
            let baseline = if scarce.contains(&(t.id.as_str(), class)) { 0 } else { baseline };
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

/// Node names in the style of physical machines (`g` + 6 hex digits for GPU nodes, `c` for
/// CPU nodes): CKS nodes are named after the machine, not the pool. Unique within a zone.
#[derive(Clone, Debug)]
pub struct NodeNamer {
    rng: SmallRng,
    used: HashSet<String>,
}

impl NodeNamer {
    pub fn new(seed: u64, zone_index: usize) -> Self {
        Self {
            rng: rng(seed, zone_index, 2),
            used: HashSet::new(),
        }
    }

    /// A name not handed out before by this namer.
    pub fn next(&mut self, gpu: bool) -> String {
        loop {
            let name = format!("{}{:06x}", if gpu { 'g' } else { 'c' }, self.rng.random::<u32>() & 0xff_ffff);
            if self.used.insert(name.clone()) {
                return name;
            }
        }
    }
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
