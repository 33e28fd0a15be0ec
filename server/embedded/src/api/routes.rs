//! The router: discovery, OpenAPI, version and health as fixed routes; everything else is
//! a resource request (see [`handlers`](super::handlers)).

use std::sync::Arc;

use axum::Extension;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::status::ApiError;
use super::{Shared, access_review, auth, discovery, handlers, openapi, responses};

/// The API server's routes over `shared`.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route(
            "/version",
            get(|| async { responses::json(StatusCode::OK, &discovery::version()) }),
        )
        .route("/healthz", get(ok))
        .route("/readyz", get(ok))
        .route("/livez", get(ok))
        .route("/api", get(core_versions))
        .route("/api/{version}", get(core_resources))
        .route("/apis", get(group_list))
        .route("/apis/{group}", get(api_group))
        .route("/apis/{group}/{version}", get(group_resources))
        .route(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            post(access_review::create),
        )
        .route(
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            post(access_review::who_am_i),
        )
        .route("/debug/watches", get(open_watches))
        .route("/openapi/v2", get(openapi_v2))
        .route("/openapi/v3", get(openapi_index))
        .route("/openapi/v3/{*path}", get(openapi_v3))
        .fallback(handlers::resource)
        .layer(DefaultBodyLimit::max(handlers::MAX_BODY))
        .with_state(shared)
}

/// The router behind the authentication middleware. The middleware wraps the router rather
/// than being one of its layers because it rewrites `/token/{token}/...` paths, and a
/// router's own layers run after routing.
pub fn app(
    shared: Arc<Shared>,
) -> impl Clone
+ tower::Service<Request, Response = Response, Error = std::convert::Infallible, Future: Send>
+ Send
+ 'static {
    let auth = middleware::from_fn_with_state(shared.clone(), auth::middleware);
    tower::Layer::layer(&auth, router(shared))
}

/// `GET /debug/watches`: open watches per resource, `{"nodes": 1, …}`. The benchmark reads
/// it to show that watches stay one per kind however many browsers are open.
async fn open_watches(State(shared): State<Arc<Shared>>) -> Response {
    let counts: serde_json::Map<String, serde_json::Value> = shared
        .store
        .open_watches()
        .into_iter()
        .map(|(k, n)| (k.info().plural.to_string(), n.into()))
        .collect();
    responses::json(StatusCode::OK, &serde_json::Value::Object(counts))
}

async fn ok() -> &'static str {
    "ok"
}

async fn core_versions(State(shared): State<Arc<Shared>>) -> Response {
    responses::json(
        StatusCode::OK,
        &discovery::core_versions(&shared.addr.to_string()),
    )
}

async fn group_list(State(shared): State<Arc<Shared>>) -> Response {
    responses::json(
        StatusCode::OK,
        &discovery::group_list(&shared.store.kinds()),
    )
}

async fn core_resources(
    State(shared): State<Arc<Shared>>,
    Path(version): Path<String>,
) -> Response {
    match discovery::resource_list(&shared.store.kinds(), "", &version) {
        Some(list) => responses::json(StatusCode::OK, &list),
        None => ApiError::no_route(&format!("/api/{version}")).into_response(),
    }
}

async fn api_group(State(shared): State<Arc<Shared>>, Path(group): Path<String>) -> Response {
    match discovery::api_group(&shared.store.kinds(), &group) {
        Some(g) => responses::json(StatusCode::OK, &g),
        None => ApiError::no_route(&format!("/apis/{group}")).into_response(),
    }
}

async fn group_resources(
    State(shared): State<Arc<Shared>>,
    Path((group, version)): Path<(String, String)>,
) -> Response {
    match discovery::resource_list(&shared.store.kinds(), &group, &version) {
        Some(list) => responses::json(StatusCode::OK, &list),
        None => ApiError::no_route(&format!("/apis/{group}/{version}")).into_response(),
    }
}

async fn openapi_index(
    State(shared): State<Arc<Shared>>,
    Extension(prefix): Extension<auth::PathPrefix>,
) -> Response {
    responses::json(StatusCode::OK, &shared.openapi().v3_index(&prefix.0))
}

async fn openapi_v3(State(shared): State<Arc<Shared>>, Path(path): Path<String>) -> Response {
    match shared.openapi().v3_document(&path) {
        Some(doc) => responses::json(StatusCode::OK, doc),
        None => ApiError::no_route(&format!("/openapi/v3/{path}")).into_response(),
    }
}

async fn openapi_v2() -> Response {
    let mut resp = (StatusCode::OK, openapi::v2_protobuf()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
    );
    resp
}
