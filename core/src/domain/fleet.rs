//! The fleet at a glance: what the Node Pools page's summary band shows, computed from the
//! pool rows the browser already holds (so it moves with the stream, with no request of its
//! own).

use crate::model::PoolRow;
use crate::{CapacityType, Provider};

/// Nodes of one provider by capacity type (`status.currentNodes` of its pools).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderNodes {
    pub provider: Provider,
    pub spot: u32,
    pub on_demand: u32,
    pub reserved: u32,
    /// Pools whose capacity type is mixed (GKE pools with both kinds of node, Karpenter pools
    /// that allow both) or unknown: their nodes are not split here.
    pub other: u32,
}

impl ProviderNodes {
    pub fn total(&self) -> u32 {
        self.spot + self.on_demand + self.reserved + self.other
    }
}

/// The summary band's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FleetSummary {
    pub pools: u32,
    /// Current nodes across all pools.
    pub nodes: u32,
    pub spot_nodes: u32,
    /// Spot nodes as a percentage of all nodes, 0–100; `None` with no nodes.
    pub spot_share_pct: Option<f64>,
    /// Pools with at least one problem (a condition that needs attention, a malformed object).
    pub pools_with_problem: u32,
    /// Nodes under a provider's preemption notice now.
    pub preempting_now: u32,
    /// One entry per provider with pools, in [`Provider`] order.
    pub by_provider: Vec<ProviderNodes>,
    /// GPUs on every pool's nodes, and the GPUs running pods request of them.
    pub gpus: u32,
    pub gpus_requested: u32,
    /// GPUs on spot pools' nodes, and those no running pod requests: capacity paid for at
    /// the spot price and idle.
    pub spot_gpus: u32,
    pub spot_gpus_idle: u32,
}

/// Sums `pools` into the summary. A pool that has not reported `currentNodes` counts no nodes.
///
/// `each_pool` calls what it is given with every pool: the browser's rows are one signal
/// each, read in place rather than copied.
pub fn summarize(each_pool: impl FnOnce(&mut dyn FnMut(&PoolRow))) -> FleetSummary {
    let mut s = FleetSummary::default();
    each_pool(&mut |p| s.add(p));
    s.finish()
}

impl FleetSummary {
    fn add(&mut self, p: &PoolRow) {
        self.pools += 1;
        let nodes = u32::try_from(p.current_nodes.unwrap_or(0)).unwrap_or(0);
        self.nodes += nodes;
        if p.has_problem() {
            self.pools_with_problem += 1;
        }
        self.preempting_now += p.nodes_preempting;
        self.gpus += p.gpus_allocatable;
        self.gpus_requested += p.gpus_in_use();
        if p.capacity_type == CapacityType::Spot {
            self.spot_gpus += p.gpus_allocatable;
            self.spot_gpus_idle += p.gpus_idle();
        }
        let i = match self
            .by_provider
            .iter()
            .position(|e| e.provider == p.provider)
        {
            Some(i) => i,
            None => {
                self.by_provider.push(ProviderNodes {
                    provider: p.provider,
                    ..Default::default()
                });
                self.by_provider.len() - 1
            }
        };
        let entry = &mut self.by_provider[i];
        match p.capacity_type {
            CapacityType::Spot => {
                entry.spot += nodes;
                self.spot_nodes += nodes;
            }
            CapacityType::OnDemand => entry.on_demand += nodes,
            CapacityType::Reserved => entry.reserved += nodes,
            CapacityType::Mixed | CapacityType::Unknown => entry.other += nodes,
        }
    }

    /// Puts the providers in [`Provider`] order and computes the spot share.
    fn finish(mut self) -> Self {
        self.by_provider.sort_by_key(|e| e.provider as u8);
        self.spot_share_pct =
            (self.nodes > 0).then(|| f64::from(self.spot_nodes) * 100.0 / f64::from(self.nodes));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(provider: Provider, capacity_type: CapacityType, nodes: Option<i32>) -> PoolRow {
        PoolRow {
            provider,
            capacity_type,
            current_nodes: nodes,
            ..Default::default()
        }
    }

    #[test]
    fn sums_nodes_by_provider_and_capacity_type() {
        let mut troubled = pool(Provider::Cks, CapacityType::Spot, Some(4));
        troubled.problems = vec!["Capacity: QueuedAwaitingCapacity".into()];
        troubled.nodes_preempting = 2;
        let mut malformed = pool(Provider::Cks, CapacityType::Unknown, None);
        malformed.malformed = Some("spec.targetNodes: not a number".into());
        let pools = [
            troubled,
            malformed,
            pool(Provider::Cks, CapacityType::OnDemand, Some(2)),
            pool(Provider::Gke, CapacityType::Mixed, Some(3)),
            pool(Provider::Karpenter, CapacityType::Spot, Some(1)),
            // A negative count from a broken status is no nodes, not a wrap-around.
            pool(Provider::Karpenter, CapacityType::OnDemand, Some(-1)),
        ];
        let s = summarize(|f| pools.iter().for_each(f));
        assert_eq!((s.pools, s.nodes, s.spot_nodes), (6, 10, 5));
        assert_eq!(s.spot_share_pct, Some(50.0));
        assert_eq!((s.pools_with_problem, s.preempting_now), (2, 2));
        let cks = &s.by_provider[0];
        assert_eq!(cks.provider, Provider::Cks);
        assert_eq!(
            (cks.spot, cks.on_demand, cks.other, cks.total()),
            (4, 2, 0, 6)
        );
        assert_eq!(s.by_provider[1].other, 3, "a mixed GKE pool is not split");
        assert_eq!(s.by_provider[2].provider, Provider::Karpenter);
        assert_eq!(s.by_provider.len(), 3);
        assert_eq!((s.gpus, s.spot_gpus), (0, 0), "no GPU counts, no GPUs");
    }

    /// Two spot pools (16 GPUs, 11 asked for; 6 GPUs with 7 asked for: over-asked counts as
    /// full) and an on-demand pool (8, 2 asked): 30 GPUs, 19 allocated, 5 idle on spot.
    #[test]
    fn gpus_are_summed_and_idle_spot_gpus_counted() {
        let with = |capacity_type, gpus_allocatable, gpus_requested| PoolRow {
            capacity_type,
            gpus_allocatable,
            gpus_requested,
            current_nodes: Some(1),
            ..Default::default()
        };
        let pools = [
            with(CapacityType::Spot, 16, 11),
            with(CapacityType::Spot, 6, 7),
            with(CapacityType::OnDemand, 8, 2),
        ];
        let s = summarize(|f| pools.iter().for_each(f));
        assert_eq!((s.gpus, s.gpus_requested), (30, 19));
        assert_eq!((s.spot_gpus, s.spot_gpus_idle), (22, 5));
    }

    #[test]
    fn an_empty_fleet_has_no_spot_share() {
        let s = summarize(|_| {});
        assert_eq!((s.nodes, s.spot_share_pct), (0, None));
        assert!(s.by_provider.is_empty());
    }
}
