//! `GET /api/v1/capacity` (the grid) and `GET /api/v1/capacity-finder?instanceType=…&count=…
//! [&region=…]` (zones ranked, with each score part). Responses holding CoreWeave's
//! confidential capacity data carry `X-Spotboard-Confidential` and `Cache-Control: no-store`.

use app::capacity_api::CapacityReaderHandle;
use axum::{
    Json,
    extract::{Query, State},
    http::{HeaderName, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};
use spotboard_core::domain::capacity::rank;

/// The header naming confidential content.
pub const CONFIDENTIAL_HEADER: &str = "x-spotboard-confidential";

fn respond<T: Serialize>(body: T, confidential: bool) -> Response {
    let mut resp = Json(body).into_response();
    if confidential {
        let h = resp.headers_mut();
        h.insert(
            HeaderName::from_static(CONFIDENTIAL_HEADER),
            HeaderValue::from_static(
                "CoreWeave Capacity Data: confidential to the customer, do not share",
            ),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}

pub async fn grid(State(reader): State<CapacityReaderHandle>) -> Response {
    let grid = reader.0.grid();
    let confidential = grid.confidential;
    respond(grid, confidential)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinderQuery {
    instance_type: Option<String>,
    count: Option<u32>,
    region: Option<String>,
}

pub async fn finder(
    State(reader): State<CapacityReaderHandle>,
    Query(q): Query<FinderQuery>,
) -> Response {
    let Some(instance_type) = q.instance_type.filter(|t| !t.is_empty()) else {
        return (StatusCode::BAD_REQUEST, "instanceType is required").into_response();
    };
    let count = q.count.unwrap_or(1).max(1);
    let result = rank(
        &reader.0.grid(),
        &instance_type,
        count,
        q.region.as_deref().filter(|r| !r.is_empty()),
        chrono::Utc::now(),
    );
    let confidential = result.confidential;
    respond(result, confidential)
}
