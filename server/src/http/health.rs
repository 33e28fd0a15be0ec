//! Liveness and readiness.

use std::sync::Arc;

use axum::{
    extract::{Query, State},
    http::StatusCode,
};
use serde::Deserialize;

use crate::{hub::Hub, ledger::Savings};

/// `GET /healthz`: the process serves HTTP.
pub async fn healthz() -> &'static str {
    "ok"
}

/// `/readyz`'s query.
#[derive(Deserialize)]
pub struct ReadyQuery {
    /// `true`: a cluster showing its last known state (after a restart, until it is listed)
    /// counts as ready, so a lone replica serves that state (marked stale) at once instead of
    /// nothing. Off by default: beside a replica that has listed, a restarted one should not
    /// take the traffic with an older state.
    #[serde(rename = "last-known", default)]
    last_known: bool,
}

/// `GET /readyz[?last-known=true]`: 200 once every kind of every cluster has been listed
/// once (with `last-known=true`, or shows its last known state); 503 before.
/// The body names the ledger when its database is away: live pages still serve then (so the
/// status stays 200), but savings and history cannot.
pub async fn readyz(
    State(hub): State<Hub>,
    State(savings): State<Arc<Savings>>,
    Query(q): Query<ReadyQuery>,
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
        return (StatusCode::OK, format!("ready{ledger}"));
    }
    let (serving, restored) = hub.serving();
    if q.last_known && serving {
        (
            StatusCode::OK,
            format!(
                "ready: showing the last known state of {restored} cluster(s) while listing{ledger}"
            ),
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("listing clusters{ledger}"),
        )
    }
}
