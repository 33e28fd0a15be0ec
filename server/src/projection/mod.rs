//! Pure projections from trimmed records to the view rows of `spotboard_core::model`.
//!
//! Everything a person sees about a pool is computed here (or in `spotboard_core::domain`, which this
//! calls): counts, the five conditions in order, severities, problems.

mod pool;
mod provider_pool;

pub use pool::{NodeAggregate, condition_view, pool_row};
pub use provider_pool::provider_pool_row;

use spotboard_core::model::{EventRow, NodeRow};

use crate::watch::records::{EventRecord, NodeRecord};

/// A Node's row: its record plus the number of pods bound to it.
pub fn node_row(cluster: &str, rec: &NodeRecord, pods: u32) -> NodeRow {
    NodeRow {
        key: rec.uid.to_string(),
        cluster: cluster.to_string(),
        name: rec.name.to_string(),
        pool: rec.pool.as_deref().map(str::to_string),
        instance_type: rec.instance_type.as_deref().map(str::to_string),
        zone: rec.zone.as_deref().map(str::to_string),
        state: rec.state.as_deref().map(str::to_string),
        ready: rec.ready,
        ready_since: rec.ready_since,
        cordoned: rec.cordoned,
        pending_preemption: rec.pending_preemption,
        evicted_at: rec.evicted_at.clone(),
        pods,
        created: rec.created,
        provider: rec.provider,
        capacity_type: rec.capacity,
        notice: rec.notice,
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
    }
}
