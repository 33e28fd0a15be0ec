//! `GET /api/v1/prices` (the catalog in force, with sources and dates),
//! `GET /api/v1/savings[.csv]?from=…&to=…` (the report; CSV: its breakdowns) and
//! `GET /api/v1/ledger[.csv]?from=…&to=…` (the lifetimes behind it) and
//! `GET /api/v1/fallback?range=…` (the fallback pairs).
//!
//! `from` and `to` are RFC 3339; `range=1h|24h|7d|30d` is a shorthand ending now. Default: the
//! last 24 hours.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Path, Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use spotboard_core::domain::savings::report::range_label;
use spotboard_core::model::{CostRow, Lifetime, SavingsReport};

use crate::ledger::Savings;

#[derive(Deserialize)]
pub struct RangeQuery {
    from: Option<String>,
    to: Option<String>,
    range: Option<String>,
}

impl RangeQuery {
    /// The range asked for (see `spotboard_core::domain::savings::range::resolve`).
    pub(super) fn resolve(&self) -> Result<(DateTime<Utc>, DateTime<Utc>), String> {
        spotboard_core::domain::savings::range::resolve(
            self.range.as_deref(),
            self.from.as_deref(),
            self.to.as_deref(),
            Utc::now(),
        )
    }
}

pub(super) fn bad(e: String) -> Response {
    (StatusCode::BAD_REQUEST, e).into_response()
}

pub(super) fn failed(e: crate::Error) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response()
}

pub(super) fn csv_response(name: &str, body: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        body,
    )
        .into_response()
}

#[derive(Serialize)]
pub struct Prices {
    /// Rows from the user's price file, first in `entries`.
    user_entries: usize,
    entries: Vec<spotboard_core::model::PriceEntry>,
}

pub async fn prices(State(s): State<Arc<Savings>>) -> Json<Prices> {
    Json(Prices {
        user_entries: s.prices.user_entries,
        entries: s.prices.entries.clone(),
    })
}

async fn load(s: &Savings, q: &RangeQuery) -> Result<SavingsReport, Response> {
    let (from, to) = q.resolve().map_err(bad)?;
    s.report(from, to).await.map_err(failed)
}

pub async fn savings(State(s): State<Arc<Savings>>, Query(q): Query<RangeQuery>) -> Response {
    match load(&s, &q).await {
        Ok(r) => Json(r).into_response(),
        Err(e) => e,
    }
}

/// `GET /api/v1/fallback?range=24h|7d|30d` (or `from`/`to`): the fallback pairs, their
/// on-demand node-hours while the spot side was short, the extra USD (decimal strings) and
/// the move-back advice (400 for a bad range, 503 while the ledger is away).
pub async fn fallback(State(s): State<Arc<Savings>>, Query(q): Query<RangeQuery>) -> Response {
    let (from, to) = match q.resolve() {
        Ok(r) => r,
        Err(e) => return bad(e),
    };
    match s.fallback(from, to).await {
        Ok(r) => Json(r).into_response(),
        Err(e) => failed(e),
    }
}

pub async fn savings_csv(State(s): State<Arc<Savings>>, Query(q): Query<RangeQuery>) -> Response {
    let r = match load(&s, &q).await {
        Ok(r) => r,
        Err(e) => return e,
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "by",
        "key",
        "node_hours",
        "actual_usd",
        "on_demand_baseline_usd",
        "savings_usd",
        "unpriced_nodes",
        "preemptions",
        "gap_usd",
        "lost_work_gpu_hours",
        "lost_work_usd",
        "net_savings_usd",
        "net_pct",
        "break_even_pct",
        "reserved_break_even_pct",
    ]);
    let total = CostRow {
        key: range_label(&r),
        node_hours: r.node_hours,
        actual_usd: r.actual_usd,
        baseline_usd: r.baseline_usd,
        savings_usd: r.savings_usd,
        unpriced_nodes: r.unpriced_nodes,
        net: r.net.clone(),
    };
    let _ = w.write_record(cost_record("total", &total));
    for (by, rows) in &r.breakdowns {
        for row in rows {
            let _ = w.write_record(cost_record(by, row));
        }
    }
    csv_response("spotboard-savings.csv", w.into_inner().unwrap_or_default())
}

/// One savings CSV record: the breakdown, the row's cost columns and its net savings.
fn cost_record(by: &str, row: &CostRow) -> Vec<String> {
    let n = &row.net;
    let opt = |d: Option<rust_decimal::Decimal>| d.map(|d| d.to_string()).unwrap_or_default();
    vec![
        by.to_string(),
        row.key.clone(),
        row.node_hours.to_string(),
        row.actual_usd.to_string(),
        row.baseline_usd.to_string(),
        row.savings_usd.to_string(),
        row.unpriced_nodes.to_string(),
        n.preemptions.to_string(),
        n.gap_usd.to_string(),
        n.lost_work_gpu_hours.to_string(),
        n.lost_work_usd.to_string(),
        n.net_usd.to_string(),
        n.net_pct.to_string(),
        opt(n.break_even_pct),
        opt(n.reserved_break_even_pct),
    ]
}

async fn lifetimes(s: &Savings, q: &RangeQuery) -> Result<Vec<Lifetime>, Response> {
    let (from, to) = q.resolve().map_err(bad)?;
    s.ledger.between(from, to).await.map_err(failed)
}

pub async fn ledger(State(s): State<Arc<Savings>>, Query(q): Query<RangeQuery>) -> Response {
    match lifetimes(&s, &q).await {
        Ok(l) => Json(l).into_response(),
        Err(e) => e,
    }
}

pub async fn ledger_csv(State(s): State<Arc<Savings>>, Query(q): Query<RangeQuery>) -> Response {
    let rows = match lifetimes(&s, &q).await {
        Ok(l) => l,
        Err(e) => return e,
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "uid",
        "cluster",
        "node",
        "pool",
        "instance_type",
        "zone",
        "capacity_type",
        "gpus",
        "started_at",
        "ended_at",
        "end_reason",
        "preemption_t0",
        "ready_at",
        "work_lost_gpu_s",
        // Last: a reader of the columns before it by position reads them as before.
        "end_evidence",
    ]);
    let t = |t: Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339()).unwrap_or_default();
    for l in rows {
        let _ = w.write_record([
            l.uid,
            l.cluster,
            l.node,
            l.pool.unwrap_or_default(),
            l.instance_type.unwrap_or_default(),
            l.zone.unwrap_or_default(),
            l.capacity_type.to_string(),
            l.gpus.to_string(),
            l.started_at.to_rfc3339(),
            t(l.ended_at),
            l.end_reason.unwrap_or_else(|| "still running".into()),
            t(l.preemption_t0),
            t(l.ready_at),
            l.work_lost_gpu_s.to_string(),
            l.end_evidence.unwrap_or_default(),
        ]);
    }
    csv_response("spotboard-ledger.csv", w.into_inner().unwrap_or_default())
}

#[derive(Deserialize)]
pub struct PodsQuery {
    uid: String,
}

#[derive(Deserialize)]
pub struct PodHitsQuery {
    namespace: String,
    name: String,
}

/// `GET /api/v1/ledger/pod-hits?namespace=NS&name=PREFIX`: the preemptions that hit pods of
/// `NS` named `PREFIX…`, newest first (400 when either is not a Kubernetes name).
pub async fn ledger_pod_hits(
    State(s): State<Arc<Savings>>,
    Query(q): Query<PodHitsQuery>,
) -> Response {
    if let Err(e) = spotboard_core::domain::preemption::readiness::pod_lookup(&q.namespace, &q.name)
    {
        return (StatusCode::BAD_REQUEST, e).into_response();
    }
    match s.ledger.hits_on(&q.namespace, &q.name).await {
        Ok(h) => Json(h).into_response(),
        Err(e) => failed(e),
    }
}

/// `GET /api/v1/ledger/pods?uid=NODE_UID`: the pods a preempted node held at T=0.
pub async fn ledger_pods(State(s): State<Arc<Savings>>, Query(q): Query<PodsQuery>) -> Response {
    match s.ledger.pods_of(&q.uid).await {
        Ok(p) => Json(p).into_response(),
        Err(e) => failed(e),
    }
}

/// `GET /api/v1/pools/{cluster}/{name}/conditions?from=&to=` (or `range=`): the same history
/// as [`ledger_conditions`], addressed as the pool's own resource.
pub async fn pool_conditions(
    State(s): State<Arc<Savings>>,
    Path((cluster, pool)): Path<(String, String)>,
    Query(range): Query<RangeQuery>,
) -> Response {
    ledger_conditions(
        State(s),
        Query(ConditionsQuery {
            cluster,
            pool,
            range,
        }),
    )
    .await
}

#[derive(Deserialize)]
pub struct ConditionsQuery {
    cluster: String,
    pool: String,
    #[serde(flatten)]
    range: RangeQuery,
}

/// `GET /api/v1/ledger/conditions?cluster=C&pool=P[&range=7d|from=&to=]`: the pool's condition
/// transitions that held in the range (default 24 h), newest first, and the time it spent in
/// each status and reason (400 for a bad range, 503 while the ledger is away).
pub async fn ledger_conditions(
    State(s): State<Arc<Savings>>,
    Query(q): Query<ConditionsQuery>,
) -> Response {
    let (from, to) = match q.range.resolve() {
        Ok(r) => r,
        Err(e) => return bad(e),
    };
    match s.ledger.conditions_of(&q.cluster, &q.pool, from, to).await {
        Ok(transitions) => Json(spotboard_core::domain::conditions_history::history(
            transitions,
            from,
            to,
        ))
        .into_response(),
        Err(e) => failed(e),
    }
}
