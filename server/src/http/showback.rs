//! `GET /api/v1/showback[.csv]?range=…&by=namespace|team|pool` (or `from`/`to`): each
//! namespace's, team's or pool's share of the fleet's cost, with what no pod requested as its
//! pool's idle; the rows and the idle rows add up to `total` to the cent
//! (`spotboard_core::domain::showback`). 400 for a bad range or `by`, 503 while the ledger is
//! away.

use std::sync::Arc;

use axum::{
    Json,
    extract::{Query, State},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use spotboard_core::model::{ShowbackBy, ShowbackReport};

use super::savings::{RangeQuery, bad, csv_response, failed};
use crate::ledger::Savings;

/// The savings report's range, and the grouping.
#[derive(Deserialize)]
pub struct ShowbackQuery {
    #[serde(flatten)]
    range: RangeQuery,
    by: Option<String>,
}

async fn load(s: &Savings, q: &ShowbackQuery) -> Result<ShowbackReport, Response> {
    let (from, to) = q.range.resolve().map_err(bad)?;
    let by = match q.by.as_deref() {
        None => ShowbackBy::default(),
        Some(b) => ShowbackBy::parse(b).map_err(|e| bad(e.to_string()))?,
    };
    s.showback(from, to, by).await.map_err(failed)
}

pub async fn showback(State(s): State<Arc<Savings>>, Query(q): Query<ShowbackQuery>) -> Response {
    match load(&s, &q).await {
        Ok(r) => Json(r).into_response(),
        Err(e) => e,
    }
}

/// The CSV: one record per row (`kind` = the grouping), then one per idle row (`idle`,
/// key `cluster/pool`), then the total; money in USD, hours decimal.
pub async fn showback_csv(
    State(s): State<Arc<Savings>>,
    Query(q): Query<ShowbackQuery>,
) -> Response {
    let r = match load(&s, &q).await {
        Ok(r) => r,
        Err(e) => return e,
    };
    csv_response("spotboard-showback.csv", csv(&r))
}

/// `r` as CSV text.
pub fn csv(r: &ShowbackReport) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "kind",
        "key",
        "cost_usd",
        "on_demand_usd",
        "savings_usd",
        "pod_hours",
        "gpu_hours",
        "spot_gpu_hours",
        "unpriced_hours",
        "pods_without_requests",
        "preemptions",
        "pods_killed",
        "gpu_hours_lost_upper_bound",
    ]);
    for row in &r.rows {
        let _ = w.write_record([
            r.by.as_str().to_string(),
            row.key.clone(),
            row.cost_usd.to_string(),
            row.on_demand_usd.to_string(),
            row.savings_usd.to_string(),
            row.pod_hours.to_string(),
            row.gpu_hours.to_string(),
            row.spot_gpu_hours.to_string(),
            row.unpriced_pod_hours.to_string(),
            row.pods_without_requests.to_string(),
            row.preemptions.to_string(),
            row.pods_killed.to_string(),
            row.gpu_hours_lost.to_string(),
        ]);
    }
    for i in &r.idle {
        let _ = w.write_record([
            "idle".to_string(),
            format!("{}/{}", i.cluster, i.pool),
            i.cost_usd.to_string(),
            i.on_demand_usd.to_string(),
            i.savings_usd.to_string(),
            String::new(),
            i.gpu_hours.to_string(),
            String::new(),
            i.unpriced_node_hours.to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    let t = &r.total;
    let _ = w.write_record([
        "total".to_string(),
        String::new(),
        t.cost_usd.to_string(),
        t.on_demand_usd.to_string(),
        t.savings_usd.to_string(),
        String::new(),
        t.gpu_hours.to_string(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
    ]);
    w.into_inner().unwrap_or_default()
}
