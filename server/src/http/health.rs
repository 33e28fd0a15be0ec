//! Liveness and readiness.

use std::sync::Arc;

use axum::{extract::State, http::StatusCode};

use crate::{hub::Hub, ledger::Savings};

/// `GET /healthz`: the process serves HTTP.
pub async fn healthz() -> &'static str {
    "ok"
}

/// `GET /readyz`: 200 once every kind of every cluster has been listed once; 503 before.
/// The body names the ledger when its database is away: live pages still serve then (so the
/// status stays 200), but savings and history cannot.
pub async fn readyz(
    State(hub): State<Hub>,
    State(savings): State<Arc<Savings>>,
) -> (StatusCode, String) {
    let ledger = match savings.ledger.health().unavailable_since {
        Some(since) => format!(
            "; ledger unavailable since {}",
            since.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        None => String::new(),
    };
    // Among replicas: which one writes the ledger (the others serve the same live data).
    let writer = savings.ledger.writer();
    let ledger = if writer.is_elected() {
        format!("{ledger}; ledger writer: {}", writer.describe())
    } else {
        ledger
    };
    if hub.ready() {
        (StatusCode::OK, format!("ready{ledger}"))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("listing clusters{ledger}"),
        )
    }
}
