//! `POST /api/v1/drill` `{cluster, node, mode: "dryRun"|"run"|"abort", confirm}`: the
//! preemption drill (`crate::drill`), as the user. The pool page's drill panel calls the same
//! through its server function (`app::drill_api`).
//!
//! Answers 200 with `{plan, drill, message}`; a refusal with its status (`refusal`, a
//! sentence in `message`): 400 a missing or wrong confirmation or a node that is not spot, 403
//! `--read-only`, no identity or a missing verb (named), 404 an unknown cluster or node, 409 a
//! node already under notice or a drill, 429 the rate limit, 502 the API server. A body that
//! is not a drill request is a 400 (axum's `Json` rejection), a foreign Origin a 403 (the
//! guard).

use std::sync::Arc;

use axum::{
    Json,
    extract::State,
    http::{StatusCode, request::Parts},
    response::{IntoResponse, Response},
};
use spotboard_core::model::DrillRequest;

use crate::drill::Driller;

pub async fn drill(
    State(driller): State<Arc<Driller>>,
    parts: Parts,
    Json(req): Json<DrillRequest>,
) -> Response {
    let outcome = driller.handle(&parts, req).await;
    let status = outcome.refusal.map_or(StatusCode::OK, |r| {
        StatusCode::from_u16(r.status()).unwrap_or(StatusCode::BAD_REQUEST)
    });
    (status, Json(outcome)).into_response()
}
