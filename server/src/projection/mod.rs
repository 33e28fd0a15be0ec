//! Pure projections from trimmed records to the view rows of `spotboard_core::model`.
//!
//! Everything a person sees about a pool is computed here (or in `spotboard_core::domain`, which this
//! calls): counts, the five conditions in order, severities, problems.

mod pool;
mod provider_pool;

pub use pool::{NodeAggregate, condition_view, pool_row};
pub use provider_pool::provider_pool_row;

use spotboard_core::model::{EventRow, GpuSource, NodeRow};
use spotboard_core::nodepool::ComputeClass;
use spotboard_core::{CapacityType, Provider};

use crate::watch::records::{EventRecord, NodeRecord};

/// What a node's row needs from beyond its own record, looked up by the caller (which holds
/// the cluster's pools, pods and events).
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeContext<'a> {
    /// Pods bound to the node.
    pub pods: u32,
    /// GPUs its running pods request.
    pub gpus_requested: u32,
    /// `spec.computeClass` of the node's CKS NodePool, when it has one that could be read.
    pub pool_class: Option<&'a ComputeClass>,
    /// A Karpenter `SpotInterrupted` event names the node.
    pub interrupted: bool,
}

/// Whether a node is under its provider's preemption notice: its own signal (for Karpenter
/// only together with the `SpotInterrupted` event, since the `karpenter.sh/disrupted` taint
/// also marks consolidation), or, for CKS, a drain under way (`qos.coreweave.cloud/evicted-at`,
/// read only from CKS's own label). The one definition: node rows carry it, and the pool
/// counts, the ledger and the preemption tracker read it from there.
pub fn notice(rec: &NodeRecord, interrupted: bool) -> bool {
    let signal = rec.notice && (rec.provider != Provider::Karpenter || interrupted);
    signal || rec.evicted_at.is_some()
}

/// A node's capacity type: its own labels' (GKE, Karpenter), else, for a CKS node, its
/// NodePool's `computeClass` (`spot` is spot, `default` on-demand). The one definition: node
/// rows carry it.
pub fn capacity_type(rec: &NodeRecord, pool_class: Option<&ComputeClass>) -> CapacityType {
    if rec.capacity != CapacityType::Unknown {
        return rec.capacity;
    }
    pool_class.map_or(CapacityType::Unknown, CapacityType::of_compute_class)
}

/// A Node's row: its record and what [`NodeContext`] adds.
pub fn node_row(cluster: &str, rec: &NodeRecord, ctx: NodeContext<'_>) -> NodeRow {
    let (gpus, gpus_from) = gpus(rec);
    NodeRow {
        key: rec.uid.to_string(),
        cluster: cluster.to_string(),
        name: rec.name.to_string(),
        pool: rec.pool.as_deref().map(str::to_string),
        instance_type: rec.instance_type.as_deref().map(str::to_string),
        zone: rec.zone.as_deref().map(str::to_string),
        state: rec.state.as_deref().map(str::to_string),
        ready: rec.ready,
        ready_changed: rec.ready_changed,
        cordoned: rec.cordoned,
        pending_preemption: rec.pending_preemption,
        evicted_at: rec.evicted_at.clone(),
        pods: ctx.pods,
        created: rec.created,
        provider: rec.provider,
        capacity_type: capacity_type(rec, ctx.pool_class),
        notice: notice(rec, ctx.interrupted),
        drill: rec.drill,
        gpus,
        gpus_from,
        gpus_requested: ctx.gpus_requested,
    }
}

/// A node's GPU count and where it came from: the node's own capacity first (every
/// provider's GPU nodes advertise `nvidia.com/gpu` once the device plugin runs), else the
/// catalog's count for its instance type (CKS types), else unknown.
pub fn gpus(rec: &NodeRecord) -> (Option<u32>, GpuSource) {
    if let Some(g) = rec.gpus {
        return (Some(g), GpuSource::Capacity);
    }
    match rec
        .instance_type
        .as_deref()
        .and_then(spotboard_core::catalog::instance_type)
    {
        Some(t) => (Some(t.gpus), GpuSource::Catalog),
        None => (None, GpuSource::Unknown),
    }
}

/// An Event's row. `pool` is the NodePool it concerns: the involved NodePool's name, or the
/// pool of the involved Node (resolved by the caller, which knows the nodes).
pub fn event_row(cluster: &str, rec: &EventRecord, pool: Option<String>) -> EventRow {
    EventRow {
        key: rec.uid.clone(),
        cluster: cluster.to_string(),
        pool,
        object: format!("{}/{}", rec.kind, rec.object_name),
        type_: rec.type_.as_str().into(),
        reason: rec.reason.clone(),
        message: rec.message.clone(),
        count: rec.count,
        last_seen: rec.last_seen,
        drill: rec.drill,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(instance_type: &str, gpus: Option<u32>) -> NodeRecord {
        NodeRecord {
            instance_type: Some(instance_type.into()),
            gpus,
            ..Default::default()
        }
    }

    #[test]
    fn a_nodes_capacity_wins_over_the_catalog_and_the_source_is_said() {
        // The catalog's gd-8xh100ib-i128 has 8 GPUs; a node reporting 8 says so itself.
        assert_eq!(
            gpus(&rec("gd-8xh100ib-i128", Some(8))),
            (Some(8), GpuSource::Capacity)
        );
        // Its device plugin not yet up: the catalog's count.
        assert_eq!(
            gpus(&rec("gd-8xh100ib-i128", None)),
            (Some(8), GpuSource::Catalog)
        );
        // A GKE L4 machine the catalog does not list: only its capacity knows.
        assert_eq!(
            gpus(&rec("g2-standard-24", Some(2))),
            (Some(2), GpuSource::Capacity)
        );
        assert_eq!(
            gpus(&rec("e2-standard-8", None)),
            (None, GpuSource::Unknown)
        );
    }
}
