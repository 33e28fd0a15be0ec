//! `POST /api/v1/pools/validate`: lint a NodePool manifest (or a bare spec) in JSON or YAML
//! with the same module the create form runs, so scripts and CI get the form's messages.
//!
//! Answers 200 when valid, 422 with per-field errors when not, 400 when the body is not a
//! NodePool manifest at all (with line and column). `?cluster=NAME` also checks that the name
//! is free in that cluster.

use axum::{
    Json,
    body::Bytes,
    extract::{Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};
use spotboard_core::domain::{manifest, validation};
use spotboard_core::model::PoolDraft;

use crate::hub::Hub;

#[derive(Deserialize)]
pub struct ValidateQuery {
    cluster: Option<String>,
}

/// The response body.
#[derive(Serialize)]
pub struct ValidateReport {
    pub valid: bool,
    pub errors: Vec<validation::FieldError>,
    /// Non-blocking remarks (e.g. `image` wins over `gpu.version`).
    pub notes: Vec<validation::FieldError>,
}

pub async fn validate(
    State(hub): State<Hub>,
    Query(q): Query<ValidateQuery>,
    body: Bytes,
) -> Response {
    let text = String::from_utf8_lossy(&body);
    let (name, spec) = match manifest::from_text(&text) {
        Ok(parsed) => parsed,
        Err(e) => {
            let report = ValidateReport {
                valid: false,
                errors: vec![validation::FieldError::at("body", e.to_string())],
                notes: Vec::new(),
            };
            return (StatusCode::BAD_REQUEST, Json(report)).into_response();
        }
    };
    let errors = if name.is_empty() && q.cluster.is_none() {
        // A bare spec: nothing to say about a name or a cluster.
        validation::validate(&spec)
    } else {
        let pools = hub.pool_rows();
        let cluster = q.cluster.clone().unwrap_or_else(|| "any cluster".into());
        let draft = PoolDraft {
            cluster: cluster.clone(),
            name,
            spec,
        };
        let errors = validation::validate_draft(&draft, |n| {
            pools.iter().any(|p| p.cluster == cluster && p.name == n)
        });
        let notes = validation::notes(&draft.spec);
        return report(errors, notes);
    };
    let notes = validation::notes(&spec);
    report(errors, notes)
}

fn report(errors: Vec<validation::FieldError>, notes: Vec<validation::FieldError>) -> Response {
    let status = if errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let body = ValidateReport {
        valid: errors.is_empty(),
        errors,
        notes,
    };
    (status, Json(body)).into_response()
}
