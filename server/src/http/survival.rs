//! `GET /api/v1/survival?by=pool|zone|instance-type|zone-instance-type&range=7d|30d` (the
//! Kaplan–Meier curves of spot nodes, `spotboard_core::domain::survival`) and
//! `GET /api/v1/checkpoint?cluster=C&pool=P[&checkpoint_s=300&restart_s=300&range=30d]`
//! (Young's checkpoint interval from a pool's curve).
//!
//! Defaults: `by=pool`, `range=30d` (`24h` is accepted too). A parameter that does not parse
//! is a 400 naming it; the ledger away is a 503.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use chrono::Utc;
use serde::Deserialize;
use spotboard_core::Provider;
use spotboard_core::domain::preemption::rates::Window;
use spotboard_core::domain::survival::checkpoint::{CheckpointAdvice, Costs};
use spotboard_core::domain::survival::report::{SurvivalBy, SurvivalRow};

use crate::hub::Hub;
use crate::ledger::Savings;

/// The range when none is asked for: a month holds more preemptions than a week.
const DEFAULT_RANGE: Window = Window::Last30d;

fn bad(e: impl ToString) -> Response {
    (StatusCode::BAD_REQUEST, e.to_string()).into_response()
}

fn failed(e: crate::Error) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response()
}

fn range(text: Option<&str>) -> spotboard_core::Result<Window> {
    text.filter(|r| !r.is_empty())
        .map_or(Ok(DEFAULT_RANGE), Window::parse)
}

#[derive(Deserialize)]
pub struct SurvivalQuery {
    by: Option<String>,
    range: Option<String>,
}

pub async fn survival(State(s): State<Arc<Savings>>, Query(q): Query<SurvivalQuery>) -> Response {
    let by = match q.by.as_deref().filter(|b| !b.is_empty()) {
        None => SurvivalBy::Pool,
        Some(b) => match SurvivalBy::parse(b) {
            Ok(b) => b,
            Err(e) => return bad(e),
        },
    };
    let range = match range(q.range.as_deref()) {
        Ok(r) => r,
        Err(e) => return bad(e),
    };
    match s.survival(by, range, Utc::now()).await {
        Ok(report) => Json(report).into_response(),
        Err(e) => failed(e),
    }
}

#[derive(Deserialize)]
pub struct CheckpointQuery {
    cluster: Option<String>,
    pool: Option<String>,
    checkpoint_s: Option<String>,
    restart_s: Option<String>,
    range: Option<String>,
}

/// Seconds from a query parameter; `None` when absent or empty.
fn seconds(name: &str, text: Option<&str>) -> Result<Option<f64>, String> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => t
            .parse::<f64>()
            .map(Some)
            .map_err(|_| format!("{name} \"{t}\" is not a number of seconds")),
    }
}

/// `GET /api/v1/checkpoint`: the advice for one pool's spot nodes. The provider (for the
/// notice window) is the watched pool's; a pool no longer watched reads as `unknown`. 404
/// when the pool is neither watched nor in the range's cohort.
pub async fn checkpoint(
    State(s): State<Arc<Savings>>,
    State(hub): State<Hub>,
    Query(q): Query<CheckpointQuery>,
) -> Response {
    let (Some(cluster), Some(pool)) = (
        q.cluster.filter(|c| !c.is_empty()),
        q.pool.filter(|p| !p.is_empty()),
    ) else {
        return bad("cluster and pool are required");
    };
    let costs = match (
        seconds("checkpoint_s", q.checkpoint_s.as_deref()),
        seconds("restart_s", q.restart_s.as_deref()),
    ) {
        (Ok(c), Ok(r)) => match Costs::new(c, r) {
            Ok(costs) => costs,
            Err(e) => return bad(e),
        },
        (Err(e), _) | (_, Err(e)) => return bad(e),
    };
    let range = match range(q.range.as_deref()) {
        Ok(r) => r,
        Err(e) => return bad(e),
    };
    let rows = match s.survival(SurvivalBy::Pool, range, Utc::now()).await {
        Ok(report) => report.rows,
        Err(e) => return failed(e),
    };
    let key = format!("{cluster}/{pool}");
    let watched = hub
        .shared_pool_rows()
        .iter()
        .find(|p| p.cluster == cluster && p.name == pool)
        .map(|p| p.provider);
    let row = rows.into_iter().find(|r| r.key == key);
    if row.is_none() && watched.is_none() {
        return (
            StatusCode::NOT_FOUND,
            format!(
                "no pool {pool} in cluster {cluster}, and no spot node of it in the last {range}"
            ),
        )
            .into_response();
    }
    let row = row.unwrap_or_else(|| SurvivalRow {
        key,
        ..Default::default()
    });
    Json(CheckpointAdvice::new(
        &row,
        costs,
        watched.unwrap_or(Provider::Unknown),
        &cluster,
        &pool,
        range,
    ))
    .into_response()
}
