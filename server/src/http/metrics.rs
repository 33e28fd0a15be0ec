//! `GET /metrics` (OpenMetrics text: the preemption, wave, eviction-error, replacement-latency,
//! rate, fleet and savings families, `crate::metrics`), on the dashboard's address and, with
//! `--metrics-listen`, alone on an address of its own.
//!
//! Why a second address: inside a cluster Prometheus scrapes the pod's IP, which the Host
//! allow-list (`hosts.rs`) refuses with 421 on the dashboard's address, and behind the
//! oauth2-proxy sidecar the dashboard listens on loopback only. The metrics address serves
//! nothing else, so nothing a browser could be tricked into driving sits behind it.

use std::sync::Arc;

use axum::{Router, extract::State, http::header, response::IntoResponse, routing::get};

use super::AppState;
use crate::hub::Hub;
use crate::ledger::Savings;
use crate::preemption::PreemptionWatch;

/// `GET /metrics`: the counters as they are, the fleet and savings gauges as of this scrape.
/// A ledger that cannot be read leaves the savings gauges at their last value.
pub async fn metrics(
    State(w): State<PreemptionWatch>,
    State(hub): State<Hub>,
    State(savings): State<Arc<Savings>>,
) -> impl IntoResponse {
    let pools = hub.pool_rows();
    w.metrics.set_fleet(&pools);
    let now = chrono::Utc::now();
    w.metrics.set_waiting(&pools, &hub.waiting_clusters(), now);
    w.metrics.set_kueue(&hub.queue_rows(), now);
    w.metrics.set_launch_failures(&hub.launch_failure_rows());
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

/// The router of `--metrics-listen`: `GET /metrics` and nothing else (every other path 404).
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(state)
}
