//! Liveness and readiness.

use axum::{extract::State, http::StatusCode};

use crate::hub::Hub;

/// `GET /healthz`: the process serves HTTP.
pub async fn healthz() -> &'static str {
    "ok"
}

/// `GET /readyz`: 200 once every kind of every cluster has been listed once; 503 before.
pub async fn readyz(State(hub): State<Hub>) -> (StatusCode, &'static str) {
    if hub.ready() {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "listing clusters")
    }
}
