//! `GET /api/v1/waiting[?cluster=C]`: the pods waiting for a node, with the scheduler's
//! reasons, the pools they could land on and why they wait ([`crate::waiting::now`]); and
//! `GET /api/v1/kueue[?cluster=C]`: the work Kueue holds back ([`crate::kueue::now`]).

use axum::{
    Json,
    extract::{Query, State},
    response::{IntoResponse, Response},
};
use serde::Deserialize;

use crate::hub::Hub;

#[derive(Deserialize)]
pub struct WaitingQuery {
    pub cluster: Option<String>,
}

/// Every waiting pod of `cluster` (all clusters without one), longest waiting first, and the
/// per-cluster and per-pool rows; 404 for an unknown cluster.
pub async fn waiting(State(hub): State<Hub>, Query(q): Query<WaitingQuery>) -> Response {
    if let Some(refused) = super::api::unknown_cluster(&hub, q.cluster.as_deref()) {
        return refused;
    }
    let mut waiting = crate::waiting::now(&hub, q.cluster.as_deref());
    // The queue rows as last published (every 2 s), not made again for this request.
    waiting.queues = hub
        .queue_rows()
        .into_iter()
        .filter(|r| q.cluster.as_deref().is_none_or(|c| c == r.cluster))
        .collect();
    Json(waiting).into_response()
}

/// `GET /api/v1/kueue[?cluster=C]`: every Kueue ClusterQueue's row and every pending
/// workload, longest waiting first ([`crate::kueue::now`]); both empty where Kueue is not
/// served; 404 for an unknown cluster.
pub async fn kueue(State(hub): State<Hub>, Query(q): Query<WaitingQuery>) -> Response {
    if let Some(refused) = super::api::unknown_cluster(&hub, q.cluster.as_deref()) {
        return refused;
    }
    Json(crate::kueue::now(&hub, q.cluster.as_deref())).into_response()
}
