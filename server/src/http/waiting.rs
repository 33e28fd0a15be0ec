//! `GET /api/v1/waiting[?cluster=C]`: the pods waiting for a node, with the scheduler's
//! reasons ([`spotboard_core::model::Waiting`]).

use axum::{
    Json,
    extract::{Query, State},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use spotboard_core::model::Waiting;

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
    Json(Waiting {
        pods: hub.waiting(q.cluster.as_deref()),
    })
    .into_response()
}
