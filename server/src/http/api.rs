//! The read-only JSON API: what the pages show, for scripts and tests.

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde::Serialize;
use spotboard_core::model::{EventRow, NodeRow, PoolRow};

use crate::hub::Hub;

/// `GET /api/v1/pools` body.
#[derive(Serialize)]
pub struct PoolList {
    /// The hub revision the list is current at.
    pub rev: u64,
    pub pools: Vec<PoolRow>,
}

/// `GET /api/v1/pools/{cluster}/{name}` body.
#[derive(Serialize)]
pub struct PoolPage {
    pub pool: PoolRow,
    pub nodes: Vec<NodeRow>,
    /// Newest first.
    pub events: Vec<EventRow>,
}

/// Every pool across clusters, with cluster, zone, spec fields, status counts, conditions.
pub async fn pools(State(hub): State<Hub>) -> Json<PoolList> {
    let rev = hub.stats().rev;
    Json(PoolList {
        rev,
        pools: hub.shown_pool_rows(),
    })
}

/// One pool with its nodes and recent events; 404 with a JSON message when unknown.
pub async fn pool(
    State(hub): State<Hub>,
    Path((cluster, name)): Path<(String, String)>,
) -> Response {
    match hub.pool(&cluster, &name) {
        Some((pool, nodes, events)) => Json(PoolPage {
            pool,
            nodes,
            events,
        })
        .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"error": format!("no NodePool {name} in cluster {cluster}")})),
        )
            .into_response(),
    }
}

/// A 404 when `cluster` is given and the hub does not follow it: a typo must not read as an
/// empty fleet. `None` when there is no filter or the cluster is known.
pub(super) fn unknown_cluster(hub: &Hub, cluster: Option<&str>) -> Option<Response> {
    let c = cluster?;
    (!hub.cluster_names().iter().any(|n| n == c)).then(|| {
        (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({"error": "no such cluster"})),
        )
            .into_response()
    })
}
