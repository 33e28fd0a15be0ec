//! What the spot GPUs nobody asks for cost now: per spot pool, the GPUs on its nodes less those
//! its running pods request, at the pool's spot price per GPU-hour (the node's spot price over
//! its GPUs). Allocation by requests, not utilisation: a pod that holds a GPU and computes
//! nothing counts as using it.

use rust_decimal::Decimal;

use crate::CapacityType;
use crate::model::{IdleSpotGpus, PoolRow};

/// Sums the idle spot GPUs of `pools` and their cost. `spot_price` gives a pool's spot price in
/// USD per instance-hour (`None` when no price is known: the pool's idle GPUs count in
/// `unpriced_gpus` and cost nothing here). A pool's GPUs per node are its `gpus_per_node`;
/// a pool without one (its nodes of several GPU counts) is unpriced too.
pub fn idle_spot_gpus<'a>(
    pools: impl IntoIterator<Item = &'a PoolRow>,
    spot_price: impl Fn(&PoolRow) -> Option<Decimal>,
) -> IdleSpotGpus {
    let mut out = IdleSpotGpus::default();
    for p in pools {
        if p.capacity_type != CapacityType::Spot || p.gpus_allocatable == 0 {
            continue;
        }
        let idle = p.gpus_idle();
        out.gpus += p.gpus_allocatable;
        out.idle += idle;
        if idle == 0 {
            continue;
        }
        let per_gpu = p
            .gpus_per_node
            .filter(|g| *g > 0)
            .zip(spot_price(p))
            .map(|(g, price)| price / Decimal::from(g));
        match per_gpu {
            Some(usd) => out.usd_h += usd * Decimal::from(idle),
            None => out.unpriced_gpus += idle,
        }
    }
    out.usd_h = out.usd_h.round_dp(2);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    fn pool(
        name: &str,
        capacity_type: CapacityType,
        per_node: Option<u32>,
        on: u32,
        asked: u32,
    ) -> PoolRow {
        PoolRow {
            name: name.into(),
            capacity_type,
            gpus_per_node: per_node,
            gpus_allocatable: on,
            gpus_requested: asked,
            ..Default::default()
        }
    }

    /// By hand: an H100 spot pool of 3 nodes × 8 GPUs at $19.71 per node-hour with 19 GPUs
    /// asked for leaves 5 idle at $19.71 / 8 = $2.46375 each, $12.31875, $12.32 an hour; an
    /// L4 pool of 2 × 2 GPUs at $0.60 per node-hour with 3 asked, 1 idle at $0.30; an
    /// on-demand pool's idle GPUs are not spot's; a pool without a price counts its idle GPUs
    /// as unpriced; over-asked counts as full.
    #[test]
    fn idle_spot_gpus_by_hand() {
        let pools = [
            pool("h100", CapacityType::Spot, Some(8), 24, 19),
            pool("l4", CapacityType::Spot, Some(2), 4, 3),
            pool("od", CapacityType::OnDemand, Some(8), 16, 0),
            pool("unpriced", CapacityType::Spot, Some(8), 8, 6),
            pool("full", CapacityType::Spot, Some(8), 8, 9),
        ];
        let price = |p: &PoolRow| match p.name.as_str() {
            "h100" | "full" => Some(dec!(19.71)),
            "l4" => Some(dec!(0.60)),
            _ => None,
        };
        let idle = idle_spot_gpus(&pools, price);
        assert_eq!((idle.gpus, idle.idle, idle.unpriced_gpus), (44, 8, 2));
        assert_eq!(idle.usd_h, dec!(12.62));
    }
}
