//! `GET /api/v1/preemptions` (active and recent preemptions: node, cluster, pool, provider,
//! phase, T=0 and phase times, pods hit, grace-period fit), `GET /api/v1/readiness` (the spot
//! readiness audit) and `GET /metrics` (Prometheus).

use app::model::Preemptions;
use axum::{Json, extract::State, http::header, response::IntoResponse};

use std::sync::Arc;

use crate::hub::Hub;
use crate::ledger::Savings;
use crate::preemption::PreemptionWatch;

pub async fn list(State(w): State<PreemptionWatch>) -> Json<Preemptions> {
    Json(w.view().await)
}

/// `GET /api/v1/readiness`: the spot readiness audit per pool (cached 15 s).
pub async fn readiness(State(w): State<PreemptionWatch>) -> Json<app::model::Readiness> {
    Json(w.readiness.report().await)
}

/// `GET /metrics`: the counters as they are, the fleet and savings gauges as of this scrape.
/// A ledger that cannot be read leaves the savings gauges at their last value.
pub async fn metrics(
    State(w): State<PreemptionWatch>,
    State(hub): State<Hub>,
    State(savings): State<Arc<Savings>>,
) -> impl IntoResponse {
    w.metrics.set_fleet(&hub.pool_rows());
    let now = chrono::Utc::now();
    // The run rate is "now"; an hour back is enough lifetimes to find the running nodes.
    match savings.report(now - chrono::Duration::hours(1), now).await {
        Ok(r) => w.metrics.set_run_rate(&r.run_rate),
        Err(e) => tracing::warn!(error = %e, "metrics: savings run rate not updated"),
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        w.metrics.encode(),
    )
}
