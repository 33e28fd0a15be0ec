//! `GET /api/v1/allocation[?cluster=C&pool=P]`: each node's GPUs, CPU and memory against what
//! its running pods request, the idle part's cost at the node's own price, and the pools'
//! sums ([`spotboard_core::model::Allocation`]); with `--prometheus-url`, each GPU node's
//! utilisation from DCGM exporter metrics ([`crate::dcgm`]).

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use spotboard_core::domain::allocation::{pools, settle};
use spotboard_core::model::{Allocation, AllocationSource};

use crate::dcgm::DcgmReader;
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
    State(dcgm): State<Option<DcgmReader>>,
    Query(q): Query<AllocationQuery>,
) -> Response {
    if let Some(refused) = super::api::unknown_cluster(&hub, q.cluster.as_deref()) {
        return refused;
    }
    let mut nodes = hub.allocations(q.cluster.as_deref(), q.pool.as_deref());
    // The last reading of GPU utilisation, when Prometheus is configured; `dcgm` once it
    // has answered, so a reader never takes "no figures yet" for idle GPUs.
    let reading = dcgm.as_ref().map(DcgmReader::get);
    let source = match &reading {
        Some((status, _)) if status.as_of.is_some() => AllocationSource::Dcgm,
        _ => AllocationSource::Requests,
    };
    for n in &mut nodes {
        if let Some((_, by_node)) = &reading {
            n.utilisation = by_node.get(&n.node).copied();
        }
        let price = n.instance_type.as_deref().and_then(|t| {
            savings
                .prices
                .lookup(&n.cluster, n.zone.as_deref(), t, n.capacity_type)
                .map(|u| u.usd_per_hour)
        });
        settle(n, price);
    }
    Json(Allocation {
        source,
        dcgm: reading.map(|(status, _)| status),
        pools: pools(&nodes),
        nodes,
    })
    .into_response()
}
