//! The seeded scenario: which NodePools each zone starts with, how many of their nodes exist
//! already, what runs on them, and the zone's capacity and quota.
//!
//! Pure: the same seed, zone and options give the same plan. The layout (see [`plan`]) is fixed
//! so docs and tests can name its pools; the seed picks node names, the organization ID,
//! capacity levels and, for zones beyond the third, the filler pools.

use std::collections::BTreeMap;

use rand::Rng;
use spotboard_core::catalog;
use spotboard_core::nodepool::{Lifecycle, NodePoolSpec, ScaleDownStrategy, Taint, TaintEffect};

use super::capacity::{self, CapacityClass, CapacityEntry};
pub use super::random::{NodeNamer, mix, org_id, rng};

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
    /// The NodePool's `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
}

/// The plan of one zone.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The customer organization, the value of `node.coreweave.cloud/reserved` (CoreWeave:
    /// Workload scheduling on CKS, "Node lifecycle labels").
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
const BULK_TYPES: [&str; 4] = [
    "gd-8xh100ib-i128",
    "gd-8xh200ib-i128",
    "gd-8xl40s-i128",
    "cd-gp-a192-genoa",
];
/// Quota limit of every non-Superchip type unless the scenario says otherwise.
const DEFAULT_QUOTA: u32 = 64;

/// The fixed pools: (group, name, computeClass, instance type, targetNodes, nodes at start,
/// workload). Group `g` goes to zone `g % zone_count`; `None` is every zone.
type Row = (
    Option<usize>,
    &'static str,
    &'static str,
    &'static str,
    i32,
    usize,
    Workload,
);
const LAYOUT: [Row; 14] = [
    (
        None,
        "cpu-control-plane",
        "default",
        "cd-gp-i64-erapids",
        2,
        2,
        Workload::ControlPlane,
    ),
    (
        Some(0),
        "example-nodepool",
        "default",
        "gd-8xa100-i128",
        1,
        1,
        Workload::Training,
    ),
    (
        Some(0),
        "h100-spot-train",
        "spot",
        "gd-8xh100ib-i128",
        4,
        4,
        Workload::Training,
    ),
    (
        Some(0),
        "cpu-spot-batch",
        "spot",
        "cd-gp-a192-genoa",
        3,
        3,
        Workload::Batch,
    ),
    (
        Some(0),
        "l40s-inference",
        "default",
        "gd-8xl40s-i128",
        2,
        2,
        Workload::Inference,
    ),
    (
        Some(1),
        "h200-spot-train",
        "spot",
        "gd-8xh200ib-i128",
        3,
        3,
        Workload::Training,
    ),
    (
        Some(1),
        "l40s-spot-inference",
        "spot",
        "gd-8xl40s-i128",
        2,
        2,
        Workload::Inference,
    ),
    (
        Some(1),
        "b200-spot-burst",
        "spot",
        "b200-8x",
        2,
        0,
        Workload::Training,
    ),
    (
        Some(1),
        "b200-on-demand",
        "default",
        "b200-8x",
        2,
        2,
        Workload::Training,
    ),
    (
        Some(1),
        "h100-reserved",
        "default",
        "gd-8xh100ib-i128",
        2,
        2,
        Workload::Training,
    ),
    (
        Some(2),
        "a100-spot-eval",
        "spot",
        "gd-8xa100-i128",
        3,
        3,
        Workload::Mixed,
    ),
    (
        Some(2),
        "rtxpro-render",
        "default",
        "rtxp6000-8x",
        3,
        2,
        Workload::Inference,
    ),
    (
        Some(2),
        "gb200-nvl72",
        "default",
        "gb200-4x",
        2,
        0,
        Workload::Training,
    ),
    (
        Some(2),
        "turin-cpu",
        "default",
        "turin-gp",
        2,
        2,
        Workload::Batch,
    ),
];

fn spec(class: &str, instance: &str, target: i32) -> NodePoolSpec {
    NodePoolSpec::new(class, instance, target)
}

/// The per-pool details the table has no column for.
fn customize(name: &str, s: &mut NodePoolSpec) {
    match name {
        // The `kubectl describe nodepools example-nodepool` of CoreWeave: Node Pool reference.
        "example-nodepool" => {
            s.lifecycle = Some(Lifecycle {
                scale_down_strategy: Some(ScaleDownStrategy::IdleOnly),
                disable_unhealthy_node_eviction: Some(true),
            });
            s.min_nodes = Some(0);
            s.max_nodes = Some(0);
        }
        "h100-spot-train" => {
            s.node_labels.insert("team".into(), "ml-training".into());
            s.lifecycle = Some(Lifecycle {
                scale_down_strategy: Some(ScaleDownStrategy::PreferIdle),
                disable_unhealthy_node_eviction: None,
            });
        }
        "cpu-spot-batch" => {
            s.autoscaling = true;
            s.min_nodes = Some(1);
            s.max_nodes = Some(6);
        }
        "l40s-spot-inference" => {
            s.node_labels.insert("workload".into(), "inference".into());
            s.node_taints.push(Taint {
                key: "dedicated".into(),
                value: Some("inference".into()),
                effect: TaintEffect::NoSchedule,
            });
        }
        _ => {}
    }
}

/// The pool's annotations: `b200-on-demand` names `b200-spot-burst` as the spot pool it stands
/// in for (spotboard's documented `spotboard.dev/fallback-for`), the fallback pair a user who
/// keeps on-demand nodes for a queued spot pool declares.
fn annotations(name: &str) -> BTreeMap<String, String> {
    match name {
        "b200-on-demand" => [(
            "spotboard.dev/fallback-for".to_string(),
            "b200-spot-burst".to_string(),
        )]
        .into(),
        _ => BTreeMap::new(),
    }
}

/// The Capacity Finder's showcase: spot capacity of this instance type (no pool uses it) is
/// this many free nodes in zone 0 and scarce (baseline 0) in every other zone, so the Finder's
/// best zone for it is zone 0 whatever the seed.
pub const FINDER_SHOWCASE: (&str, u32) = ("b300-8x", 16);

/// The zone's plan. Layout by zone index (with fewer zones, the groups of the missing zones
/// join zone 0, so one zone still shows every case):
///
/// | zone | pools (class, instance type, target / nodes at start) |
/// |---|---|
/// | every | `cpu-control-plane` (default, cd-gp-i64-erapids, 2/2) |
/// | 0 | `example-nodepool` (the Node Pool reference's example: default, gd-8xa100-i128, 1/1, IdleOnly); `h100-spot-train` (spot, H100, 4/4); `cpu-spot-batch` (spot, cd-gp-a192-genoa, autoscaling 1..6, 3/3); `l40s-inference` (default, L40S, 2/2) |
/// | 1 | `h200-spot-train` (spot, H200, 3/3); `l40s-spot-inference` (spot, L40S, tainted, 2/2); `b200-spot-burst` (spot, B200, 2/0: no free B200 Spot, so `QueuedAwaitingCapacity`); `b200-on-demand` (default, B200, 2/2, annotated as its fallback); `h100-reserved` (default, H100, 2/2) |
/// | 2 | `a100-spot-eval` (spot, A100, 3/3); `rtxpro-render` (default, RTX PRO 6000, 3/2, quota 2: `Over`); `gb200-nvl72` (default, gb200-4x, 2/0, no quota: `NotSet`); `turin-cpu` (default, turin-gp, 2/2) |
/// | 3+ | a seeded Spot GPU pool (2–3 nodes) and a small CPU pool |
///
/// Of `scale = (extra_nodes, pool_max)`, `extra_nodes / zone_count` scale nodes (the
/// remainder to the first zones) go in `bulk-spot-*` pools of at most `pool_max` nodes
/// ([`BULK_POOL_MAX`] by default).
pub fn plan(
    seed: u64,
    zone_index: usize,
    zone_count: usize,
    (extra_nodes, pool_max): (usize, usize),
) -> Scenario {
    let zone_count = zone_count.max(1);
    let mut rng = rng(seed, zone_index, 1);
    let mut quotas: BTreeMap<String, u32> = catalog::instance_types()
        .iter()
        .filter(|t| !t.superchip)
        .map(|t| (t.id.clone(), DEFAULT_QUOTA))
        .collect();
    // Zone 0 is rich so the demo's first zone recovers from preemptions; others are seeded.
    let rich = zone_index == 0 || rng.random_bool(0.5);

    let mut pools: Vec<(String, NodePoolSpec, usize, Workload)> = LAYOUT
        .iter()
        .filter(|row| row.0.is_none_or(|g| g % zone_count == zone_index))
        .map(|&(_, name, class, instance, target, at_start, workload)| {
            let mut s = spec(class, instance, target);
            customize(name, &mut s);
            (name.to_string(), s, at_start, workload)
        })
        .collect();
    if zone_index >= 3 {
        let gpus = [
            "gd-8xh100ib-i128",
            "gd-8xh200ib-i128",
            "gd-8xl40s-i128",
            "gd-8xa100-i128",
        ];
        let gpu = gpus[rng.random_range(0..gpus.len())];
        let short = gpu.trim_start_matches("gd-8x").trim_end_matches("-i128");
        let n = rng.random_range(2..=3);
        let name = format!("{}-spot-{zone_index}", short.trim_end_matches("ib"));
        pools.push((name, spec("spot", gpu, n), n as usize, Workload::Mixed));
        let cpu = spec("default", "cd-gp-i64-erapids", 1);
        pools.push(("cpu-batch".into(), cpu, 1, Workload::Batch));
    }

    let mut left = extra_nodes / zone_count + usize::from(zone_index < extra_nodes % zone_count);
    for k in 0.. {
        if left == 0 {
            break;
        }
        let size = left.min(pool_max.max(1));
        let t = BULK_TYPES[k % BULK_TYPES.len()];
        *quotas.entry(t.to_string()).or_default() += size as u32;
        let name = format!("bulk-spot-{}-{k}", t.split('-').nth(1).unwrap_or("x"));
        pools.push((name, spec("spot", t, size as i32), size, Workload::Bulk));
        left -= size;
    }

    let has = |name: &str| pools.iter().any(|p| p.0 == name);
    // The cases the dashboard must show: a Spot request nobody can serve, a pool over quota.
    let mut scarce: Vec<(&str, CapacityClass)> = if has("b200-spot-burst") {
        vec![("b200-8x", CapacityClass::Spot)]
    } else {
        vec![]
    };
    // The Capacity Finder's showcase: plenty of spot in zone 0, next to none elsewhere.
    let (showcase, plenty) = FINDER_SHOWCASE;
    if zone_index != 0 {
        scarce.push((showcase, CapacityClass::Spot));
    }
    if has("rtxpro-render") {
        quotas.insert("rtxp6000-8x".into(), 2);
    }
    let mut capacity: Vec<CapacityEntry> = capacity::seeded(&mut rng, rich, &scarce);
    if zone_index == 0 {
        for e in capacity
            .iter_mut()
            .filter(|e| e.instance_type == showcase && e.class == CapacityClass::Spot)
        {
            (e.baseline, e.free_nodes) = (plenty, plenty);
        }
    }

    let mut namer = NodeNamer::new(seed, zone_index);
    let pools = pools
        .into_iter()
        .map(|(name, spec, at_start, workload)| {
            let gpu = catalog::instance_type(&spec.instance_type).is_some_and(|t| t.gpus > 0);
            PoolPlan {
                nodes: (0..at_start).map(|_| namer.next(gpu)).collect(),
                annotations: annotations(&name),
                name,
                spec,
                workload,
            }
        })
        .collect();
    Scenario {
        org_id: org_id(seed),
        pools,
        capacity,
        quotas,
        namer,
    }
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
