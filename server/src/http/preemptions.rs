//! `GET /api/v1/preemptions` (active and recent preemptions: node, cluster, pool, provider,
//! phase, T=0 and phase times, pods hit, grace-period fit) and `GET /api/v1/readiness` (the spot
//! readiness audit).

use axum::{Json, extract::State};
use spotboard_core::model::Preemptions;

use crate::preemption::PreemptionWatch;

pub async fn list(State(w): State<PreemptionWatch>) -> Json<Preemptions> {
    Json(w.view().await)
}

/// `GET /api/v1/readiness`: the spot readiness audit per pool (cached 15 s).
pub async fn readiness(State(w): State<PreemptionWatch>) -> Json<spotboard_core::model::Readiness> {
    Json(w.readiness.report().await)
}
