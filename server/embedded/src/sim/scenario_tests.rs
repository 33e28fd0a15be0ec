use std::collections::HashSet;

use super::*;
use crate::sim::admission::check;
use spotboard_core::nodepool::ComputeClass;

fn names(s: &Scenario) -> Vec<&str> {
    s.pools.iter().map(|p| p.name.as_str()).collect()
}

fn nodes(s: &Scenario) -> usize {
    s.pools.iter().map(|p| p.nodes.len()).sum()
}

#[test]
fn three_zones_split_the_groups_and_stay_small() {
    let zones: Vec<Scenario> = (0..3).map(|i| plan(42, i, 3, (0, BULK_POOL_MAX))).collect();
    assert_eq!(
        names(&zones[0]),
        [
            "cpu-control-plane",
            "example-nodepool",
            "h100-spot-train",
            "cpu-spot-batch",
            "l40s-inference"
        ]
    );
    assert!(names(&zones[1]).contains(&"b200-spot-burst"));
    assert!(names(&zones[2]).contains(&"gb200-nvl72"));
    let total: usize = zones.iter().map(nodes).sum();
    assert!((10..=40).contains(&total), "{total} nodes");
    for z in &zones {
        for p in &z.pools {
            let problems = check(&p.spec);
            assert!(problems.is_empty(), "{} is valid: {problems:?}", p.name);
            assert!(p.nodes.len() <= p.spec.target_nodes as usize);
        }
    }
}

#[test]
fn example_nodepool_is_the_node_pool_references() {
    let s = plan(1, 0, 3, (0, BULK_POOL_MAX));
    let ex = s
        .pools
        .iter()
        .find(|p| p.name == "example-nodepool")
        .unwrap();
    assert_eq!(ex.spec.instance_type, "gd-8xa100-i128");
    assert_eq!(ex.spec.compute_class, ComputeClass::Default);
    assert_eq!(ex.spec.target_nodes, 1);
    assert_eq!(
        ex.spec.lifecycle.as_ref().unwrap().scale_down_strategy,
        Some(ScaleDownStrategy::IdleOnly)
    );
    assert_eq!(ex.nodes.len(), 1);
    assert!(
        plan(1, 1, 3, (0, BULK_POOL_MAX))
            .pools
            .iter()
            .all(|p| p.name != "example-nodepool")
    );
}

#[test]
fn one_zone_shows_every_case() {
    let s = plan(7, 0, 1, (0, BULK_POOL_MAX));
    let n = names(&s);
    for want in [
        "example-nodepool",
        "b200-spot-burst",
        "rtxpro-render",
        "gb200-nvl72",
        "cpu-spot-batch",
    ] {
        assert!(n.contains(&want), "{want} in {n:?}");
    }
    // The queued pool's type has no free Spot capacity, the quota cases are set up.
    let b200 = s
        .capacity
        .iter()
        .find(|e| e.instance_type == "b200-8x" && e.class == CapacityClass::Spot)
        .unwrap();
    assert_eq!((b200.free_nodes, b200.baseline), (0, 0));
    assert_eq!(s.quotas.get("rtxp6000-8x"), Some(&2));
    assert_eq!(s.quotas.get("gb200-4x"), None);
    assert!(
        s.pools
            .iter()
            .any(|p| p.spec.autoscaling && p.spec.max_nodes > p.spec.min_nodes)
    );
    let spot_types: HashSet<_> = s
        .pools
        .iter()
        .filter(|p| p.spec.compute_class == ComputeClass::Spot)
        .map(|p| p.spec.instance_type.as_str())
        .collect();
    for t in [
        "gd-8xh100ib-i128",
        "gd-8xh200ib-i128",
        "gd-8xl40s-i128",
        "gd-8xa100-i128",
        "cd-gp-a192-genoa",
    ] {
        assert!(spot_types.contains(t), "spot pool of {t}");
    }
}

#[test]
fn zone_zero_has_spot_capacity_for_its_spot_pools() {
    for seed in 0..20 {
        let s = plan(seed, 0, 3, (0, BULK_POOL_MAX));
        for p in s
            .pools
            .iter()
            .filter(|p| p.spec.compute_class == ComputeClass::Spot)
        {
            let e = s
                .capacity
                .iter()
                .find(|e| e.instance_type == p.spec.instance_type && e.class == CapacityClass::Spot)
                .unwrap();
            assert!(e.baseline >= 4, "seed {seed} {}: {e:?}", p.name);
        }
    }
}

#[test]
fn same_seed_same_plan_other_seed_other_names() {
    let a = plan(5, 1, 3, (0, BULK_POOL_MAX));
    let b = plan(5, 1, 3, (0, BULK_POOL_MAX));
    let c = plan(6, 1, 3, (0, BULK_POOL_MAX));
    let all = |s: &Scenario| {
        s.pools
            .iter()
            .flat_map(|p| p.nodes.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(all(&a), all(&b));
    assert_eq!(a.capacity, b.capacity);
    assert_ne!(all(&a), all(&c));
    assert_eq!(org_id(5), a.org_id);
    assert!(a.org_id.starts_with("cw") && a.org_id.len() == 8);
}

#[test]
fn extra_nodes_are_shared_and_split_into_bulk_pools() {
    let zones: Vec<Scenario> = (0..3)
        .map(|i| plan(9, i, 3, (10_000, BULK_POOL_MAX)))
        .collect();
    let bulk: Vec<usize> = zones
        .iter()
        .map(|z| {
            z.pools
                .iter()
                .filter(|p| p.workload == Workload::Bulk)
                .map(|p| p.nodes.len())
                .sum()
        })
        .collect();
    assert_eq!(bulk, [3334, 3333, 3333]);
    let z0 = &zones[0];
    let pools: Vec<_> = z0
        .pools
        .iter()
        .filter(|p| p.workload == Workload::Bulk)
        .collect();
    assert_eq!(pools.len(), 2);
    assert!(
        pools
            .iter()
            .all(|p| p.spec.compute_class == ComputeClass::Spot)
    );
    assert!(pools.iter().all(|p| p.nodes.len() <= BULK_POOL_MAX));
    let h100_quota = z0.quotas["gd-8xh100ib-i128"];
    assert!(
        h100_quota as usize >= BULK_POOL_MAX + 4,
        "bulk pools fit their quota"
    );
    let unique: HashSet<_> = z0.pools.iter().flat_map(|p| p.nodes.iter()).collect();
    assert_eq!(unique.len(), nodes(z0));
}

#[test]
fn filler_zones_get_a_spot_pool() {
    let s = plan(3, 4, 6, (0, BULK_POOL_MAX));
    assert!(
        s.pools
            .iter()
            .any(|p| p.spec.compute_class == ComputeClass::Spot && !p.nodes.is_empty())
    );
    assert!(s.pools.iter().all(|p| check(&p.spec).is_empty()));
}

#[test]
fn the_finder_showcase_is_plentiful_in_zone_0_only_for_every_seed() {
    let (showcase, plenty) = FINDER_SHOWCASE;
    for seed in [1, 7, 42, 1234] {
        let spot = |s: &Scenario| {
            s.capacity
                .iter()
                .find(|e| e.instance_type == showcase && e.class == CapacityClass::Spot)
                .map(|e| e.free_nodes)
        };
        let zones: Vec<Scenario> = (0..3)
            .map(|i| plan(seed, i, 3, (0, BULK_POOL_MAX)))
            .collect();
        assert_eq!(spot(&zones[0]), Some(plenty), "seed {seed}");
        assert_eq!(spot(&zones[1]), Some(0), "seed {seed}");
        assert_eq!(spot(&zones[2]), Some(0), "seed {seed}");
        assert!(
            zones
                .iter()
                .all(|z| z.pools.iter().all(|p| p.spec.instance_type != showcase)),
            "no pool takes the showcase's capacity"
        );
    }
}

#[test]
fn nodes_per_pool_bounds_each_bulk_pool() {
    let s = plan(9, 0, 1, (12, 5));
    let sizes: Vec<usize> = s
        .pools
        .iter()
        .filter(|p| p.workload == Workload::Bulk)
        .map(|p| p.nodes.len())
        .collect();
    assert_eq!(sizes, [5, 5, 2]);
}
