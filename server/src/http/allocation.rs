//! `GET /api/v1/allocation[?cluster=C&pool=P]`: each node's GPUs, CPU and memory against what
//! its running pods request, the idle part's cost at the node's own price, and the pools'
//! sums ([`spotboard_core::model::Allocation`]).

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use spotboard_core::domain::allocation::{pools, settle};
use spotboard_core::model::{Allocation, AllocationSource};

use crate::hub::Hub;
use crate::ledger::Savings;

/// The filters; both optional.
#[derive(Deserialize)]
pub struct AllocationQuery {
    pub cluster: Option<String>,
    pub pool: Option<String>,
}

/// The allocation from the running pods' requests, priced from the catalog in force. An
/// unknown cluster is a 404 (a typo should not read as an empty fleet); a pool filter that
/// matches nothing is an empty list.
pub async fn allocation(
    State(hub): State<Hub>,
    State(savings): State<Arc<Savings>>,
    Query(q): Query<AllocationQuery>,
) -> Response {
    if let Some(refused) = super::api::unknown_cluster(&hub, q.cluster.as_deref()) {
        return refused;
    }
    let mut nodes = hub.allocations(q.cluster.as_deref(), q.pool.as_deref());
    for n in &mut nodes {
        let price = n.instance_type.as_deref().and_then(|t| {
            savings
                .prices
                .lookup(&n.cluster, n.zone.as_deref(), t, n.capacity_type)
                .map(|u| u.usd_per_hour)
        });
        settle(n, price);
    }
    Json(Allocation {
        source: AllocationSource::Requests,
        pools: pools(&nodes),
        nodes,
    })
    .into_response()
}
