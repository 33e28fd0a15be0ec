//! Allocation arithmetic: a node's idle share and its cost, and a pool's sums.
//!
//! A GPU node is idle by its GPUs (the GPUs are what its price pays for); a CPU node by the
//! share of its allocatable CPU no pod requests (OpenCost, "Idle costs", weighs CPU and
//! memory; CPU alone is used here, memory being sold with it on every machine type listed).

use std::collections::BTreeMap;

use rust_decimal::Decimal;

use crate::domain::cost::cents;
use crate::model::{NodeAllocation, PoolAllocation};

/// The pool name of nodes without one.
pub const NO_POOL: &str = "(none)";

/// Fills `n.idle_gpus` and `n.idle_usd_h` from its allocatable and requests and its price
/// (`usd_h`, USD per instance-hour at its capacity type; `None` when unpriced).
pub fn settle(n: &mut NodeAllocation, usd_h: Option<Decimal>) {
    n.idle_gpus = n.gpus_allocatable.saturating_sub(n.gpus_requested);
    n.idle_usd_h = usd_h.and_then(|price| idle_share(n).map(|share| cents(price * share)));
}

/// The idle share of `n`, 0 to 1: by GPUs on a GPU node, by CPU on a CPU node; `None` for a
/// CPU node without allocatable CPU.
pub fn idle_share(n: &NodeAllocation) -> Option<Decimal> {
    if n.gpus_allocatable > 0 {
        let idle = n.gpus_allocatable.saturating_sub(n.gpus_requested);
        return Some(Decimal::from(idle) / Decimal::from(n.gpus_allocatable));
    }
    let cpu = n.cpu_allocatable.filter(|c| *c > Decimal::ZERO)?;
    Some((Decimal::ONE - n.cpu_requested / cpu).clamp(Decimal::ZERO, Decimal::ONE))
}

/// The pools of `nodes`, summed, by cluster and pool.
///
/// A pool's utilisation is the mean of its nodes' figures weighed by their GPUs (a node whose
/// GPU count is unknown weighs 1), over the nodes that have one: the pool's GPUs' mean when
/// every node has a figure.
pub fn pools(nodes: &[NodeAllocation]) -> Vec<PoolAllocation> {
    let mut out: BTreeMap<(&str, &str), PoolAllocation> = BTreeMap::new();
    // Per pool: Σ utilisation × GPUs and Σ GPUs of the nodes with a figure.
    let mut weighed: BTreeMap<(&str, &str), (Decimal, Decimal)> = BTreeMap::new();
    for n in nodes {
        if let Some(u) = n.utilisation {
            let w = Decimal::from(n.gpus_allocatable.max(1));
            let (sum, weight) = weighed
                .entry((n.cluster.as_str(), n.pool.as_deref().unwrap_or(NO_POOL)))
                .or_default();
            *sum += u * w;
            *weight += w;
        }
        let pool = n.pool.as_deref().unwrap_or(NO_POOL);
        let p = out
            .entry((n.cluster.as_str(), pool))
            .or_insert_with(|| PoolAllocation {
                cluster: n.cluster.clone(),
                pool: pool.to_string(),
                ..Default::default()
            });
        p.nodes += 1;
        p.gpus_allocatable = p.gpus_allocatable.saturating_add(n.gpus_allocatable);
        p.gpus_requested = p.gpus_requested.saturating_add(n.gpus_requested);
        p.idle_gpus = p.idle_gpus.saturating_add(n.idle_gpus);
        p.cpu_allocatable += n.cpu_allocatable.unwrap_or_default();
        p.cpu_requested += n.cpu_requested;
        p.memory_allocatable = p
            .memory_allocatable
            .saturating_add(n.memory_allocatable.unwrap_or(0));
        p.memory_requested = p.memory_requested.saturating_add(n.memory_requested);
        match n.idle_usd_h {
            Some(usd) => p.idle_usd_h += usd,
            None => p.unpriced_nodes += 1,
        }
    }
    for (key, (sum, weight)) in weighed {
        if let Some(p) = out.get_mut(&key) {
            p.utilisation = Some((sum / weight).round_dp(1));
        }
    }
    out.into_values().collect()
}

/// Millicores as cores, exact.
pub fn cores(millicores: u64) -> Decimal {
    Decimal::from(millicores) / Decimal::from(1000)
}

#[cfg(test)]
mod tests {
    use rust_decimal_macros::dec;

    use super::*;

    fn node(
        pool: &str,
        gpus: u32,
        asked: u32,
        cpu_m: Option<u64>,
        cpu_asked_m: u64,
    ) -> NodeAllocation {
        NodeAllocation {
            cluster: "c".into(),
            node: format!("{pool}-{gpus}-{asked}"),
            pool: Some(pool.into()),
            gpus_allocatable: gpus,
            gpus_requested: asked,
            cpu_allocatable: cpu_m.map(cores),
            cpu_requested: cores(cpu_asked_m),
            ..Default::default()
        }
    }

    /// By hand: an 8-GPU node at 9.65 USD/h with 2 GPUs requested idles 6/8 of it, 7.24 USD/h
    /// (7.2375, half up); a CPU node of 7,910m at 0.27 USD/h with 2,000m requested idles
    /// 5,910/7,910 of it, 0.20 USD/h (0.20173…).
    #[test]
    fn idle_cost_by_hand() {
        let mut gpu = node("h100", 8, 2, Some(127_000), 60_000);
        settle(&mut gpu, Some(dec!(9.65)));
        assert_eq!((gpu.idle_gpus, gpu.idle_usd_h), (6, Some(dec!(7.24))));
        let mut cpu = node("cpu", 0, 0, Some(7_910), 2_000);
        settle(&mut cpu, Some(dec!(0.27)));
        assert_eq!(cpu.idle_usd_h, Some(dec!(0.20)));
        // Bad input: more requested than there is (a node shrinking under its pods) is 0
        // idle, never negative; no price or no allocatable CPU is unknown, never $0.
        let mut over = node("h100", 8, 10, None, 0);
        settle(&mut over, Some(dec!(9.65)));
        assert_eq!((over.idle_gpus, over.idle_usd_h), (0, Some(dec!(0))));
        let mut unpriced = node("h100", 8, 2, None, 0);
        settle(&mut unpriced, None);
        assert_eq!(unpriced.idle_usd_h, None);
        let mut blind = node("cpu", 0, 0, None, 500);
        settle(&mut blind, Some(dec!(0.27)));
        assert_eq!(blind.idle_usd_h, None);
    }

    /// A pool's figures are its nodes' sums, whatever the nodes (a small exhaustive sweep
    /// against a plain re-summing).
    #[test]
    fn pools_add_up_their_nodes() {
        let mut nodes = Vec::new();
        for (i, gpus) in [0u32, 1, 2, 8].into_iter().enumerate() {
            for asked in 0..=gpus + 1 {
                let mut n = node(
                    ["a", "b"][i % 2],
                    gpus,
                    asked,
                    Some(8_000),
                    1_000 * u64::from(asked),
                );
                n.memory_allocatable = Some(32 << 30);
                n.memory_requested = u64::from(asked) << 30;
                settle(&mut n, (asked % 3 != 0).then_some(dec!(2.5)));
                nodes.push(n);
            }
        }
        nodes.push(NodeAllocation {
            pool: None,
            ..node("x", 1, 0, None, 0)
        });
        let pools = pools(&nodes);
        assert_eq!(
            pools.iter().map(|p| p.nodes as usize).sum::<usize>(),
            nodes.len()
        );
        for p in &pools {
            let mine: Vec<&NodeAllocation> = nodes
                .iter()
                .filter(|n| n.pool.as_deref().unwrap_or(NO_POOL) == p.pool)
                .collect();
            assert_eq!(p.idle_gpus, mine.iter().map(|n| n.idle_gpus).sum::<u32>());
            assert_eq!(
                (p.gpus_allocatable, p.gpus_requested),
                (
                    mine.iter().map(|n| n.gpus_allocatable).sum::<u32>(),
                    mine.iter().map(|n| n.gpus_requested).sum::<u32>()
                )
            );
            let priced: Decimal = mine.iter().filter_map(|n| n.idle_usd_h).sum();
            assert_eq!(p.idle_usd_h, priced);
            assert_eq!(
                p.unpriced_nodes as usize,
                mine.iter().filter(|n| n.idle_usd_h.is_none()).count()
            );
            assert_eq!(
                p.memory_requested,
                mine.iter().map(|n| n.memory_requested).sum::<u64>()
            );
        }
        assert!(pools.iter().any(|p| p.pool == NO_POOL));
    }

    /// By hand: an 8-GPU node at 90 % and a 2-GPU node at 15 % make a pool at
    /// (8 × 90 + 2 × 15) ÷ 10 = 75 %, not the nodes' plain mean (52.5 %); a node without a
    /// figure does not count, and a pool without any has none (not 0 %).
    #[test]
    fn pool_utilisation_weighs_nodes_by_their_gpus() {
        let mut big = node("a", 8, 8, None, 0);
        big.utilisation = Some(dec!(90));
        let mut small = node("a", 2, 1, None, 0);
        small.utilisation = Some(dec!(15));
        let blind = node("a", 4, 0, None, 0);
        let other = node("b", 8, 0, None, 0);
        let pools = pools(&[big, small, blind, other]);
        assert_eq!(pools[0].utilisation, Some(dec!(75)));
        assert_eq!((pools[1].pool.as_str(), pools[1].utilisation), ("b", None));
    }
}
