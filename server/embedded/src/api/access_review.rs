//! `SelfSubjectAccessReview` (`authorization.k8s.io/v1`): "may I do this?", answered with the
//! embedded cluster's two roles. spotboard asks it before offering the Create button, as it
//! asks a real cluster. And `SelfSubjectReview` (`authentication.k8s.io/v1`): "who am I?",
//! which spotboard asks with a user's bearer token to name that user in its audit trail.

use axum::Extension;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::auth::User;
use super::responses;
use super::status::ApiError;

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`.
pub async fn create(Extension(user): Extension<User>, body: Bytes) -> Response {
    let review: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return ApiError::bad_request(format!("SelfSubjectAccessReview: {e}")).into_response();
        }
    };
    let attrs = &review["spec"]["resourceAttributes"];
    let verb = attrs["verb"].as_str().unwrap_or_default();
    let allowed = user == User::Admin || matches!(verb, "get" | "list" | "watch");
    let reason = if allowed {
        format!("{} may {verb}", user.name())
    } else {
        format!("{} may only get, list and watch", user.name())
    };
    let mut answer = review.clone();
    answer["apiVersion"] = json!("authorization.k8s.io/v1");
    answer["kind"] = json!("SelfSubjectAccessReview");
    answer["status"] = json!({ "allowed": allowed, "reason": reason });
    responses::json(StatusCode::CREATED, &answer)
}

/// `POST /apis/authentication.k8s.io/v1/selfsubjectreviews`: the caller's user name and
/// groups, as a real API server answers it (GA since Kubernetes 1.28).
pub async fn who_am_i(Extension(user): Extension<User>) -> Response {
    let groups = match user {
        User::Admin => json!(["system:authenticated", "spotboard:admins"]),
        User::Reader => json!(["system:authenticated"]),
    };
    responses::json(
        StatusCode::CREATED,
        &json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "SelfSubjectReview",
            "metadata": {"creationTimestamp": null},
            "status": {"userInfo": {"username": user.name(), "groups": groups}},
        }),
    )
}
