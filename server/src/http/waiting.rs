//! `GET /api/v1/waiting[?cluster=C]`: the pods waiting for a node, with the scheduler's
//! reasons ([`spotboard_core::model::Waiting`]).

use axum::{
    Json,
    extract::{Query, State},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use spotboard_core::domain::waiting::pools::{per_pool, place};
use spotboard_core::model::{PoolRow, Waiting};

use crate::hub::Hub;

#[derive(Deserialize)]
pub struct WaitingQuery {
    pub cluster: Option<String>,
}

/// Every waiting pod of `cluster` (all clusters without one), longest waiting first; 404 for
/// an unknown cluster.
pub async fn waiting(State(hub): State<Hub>, Query(q): Query<WaitingQuery>) -> Response {
    if let Some(refused) = super::api::unknown_cluster(&hub, q.cluster.as_deref()) {
        return refused;
    }
    let mut pods = hub.waiting(q.cluster.as_deref());
    let rows = hub.shared_pool_rows();
    let pools: Vec<&PoolRow> = rows
        .iter()
        .map(|p| &**p)
        .filter(|p| q.cluster.as_deref().is_none_or(|c| c == p.cluster))
        .collect();
    place(&mut pods, &pools);
    Json(Waiting {
        pools: per_pool(&pods, &pools),
        pods,
    })
    .into_response()
}
