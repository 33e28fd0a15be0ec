//! The resource endpoint: one thin handler that parses the request, checks the verb against
//! the caller's role and hands the work to the [`Store`](super::store::Store).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Bytes, to_bytes};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::Shared;
use super::auth::User;
use super::eviction;
use super::object::Target;
use super::paging::ContinueToken;
use super::patch::PatchKind;
use super::request::{Params, ResourcePath, Verb, flag, parse_path};
use super::resources::Kind;
use super::responses;
use super::selectors::{FieldSelector, LabelSelector};
use super::status::{self, ApiError};
use super::store::{DeleteOptions, Deleted, ListQuery};
use super::table::{self, Format};
use super::validation;
use super::watch::{self, WatchSpec};

/// Largest request body accepted: the API server's own limit is 3 MiB.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Watch length when the client gives no `timeoutSeconds` (a real server picks 30–60 min).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Everything under `/api/v1/...` and `/apis/{group}/{version}/...` that names a resource.
pub async fn resource(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    handle(shared, req)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// The request's parts that the verb handlers read.
struct Call {
    user: User,
    path: ResourcePath,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
    format: Format,
}

impl Call {
    fn ns(&self) -> &str {
        self.path.namespace.as_deref().unwrap_or("")
    }

    fn name(&self) -> &str {
        self.path.name.as_deref().unwrap_or("")
    }

    fn target(&self) -> Target {
        if self.path.subresource.is_some() {
            Target::Status
        } else {
            Target::Main
        }
    }

    fn content_type(&self) -> &str {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The body as a JSON object (YAML when the content type says so). Errors: 400.
    fn json_body(&self) -> Result<Value, ApiError> {
        let parsed = if self.content_type().contains("yaml") {
            serde_yaml::from_slice::<Value>(&self.body).map_err(|e| e.to_string())
        } else {
            serde_json::from_slice::<Value>(&self.body).map_err(|e| e.to_string())
        };
        match parsed {
            Ok(v) if v.is_object() => Ok(v),
            Ok(_) => Err(ApiError::bad_request("the request body must be an object")),
            Err(e) => Err(ApiError::bad_request(format!(
                "error decoding the request body: {e}"
            ))),
        }
    }

    fn selectors(&self) -> Result<(LabelSelector, FieldSelector), ApiError> {
        let labels = LabelSelector::parse(self.params.label_selector.as_deref().unwrap_or(""))
            .map_err(ApiError::bad_request)?;
        let mut fields = self.params.field_selector.clone().unwrap_or_default();
        if let Some(name) = &self.path.name {
            // A watch on one object (`/watch/.../pods/x` or `.../pods/x?watch=1`).
            if !fields.is_empty() {
                fields.push(',');
            }
            fields.push_str(&format!("metadata.name={name}"));
        }
        let fields = FieldSelector::parse(&fields).map_err(ApiError::bad_request)?;
        Ok((labels, fields))
    }

    fn warnings(&self, kind: Kind, written: &Value) -> Vec<String> {
        if !self.params.warn_unknown_fields() {
            return Vec::new();
        }
        validation::unknown_fields(kind, written)
            .iter()
            .map(|f| validation::warning(f))
            .collect()
    }
}

async fn handle(shared: Arc<Shared>, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    if let Some(document) = shared.extra(parts.uri.path()) {
        if parts.method != axum::http::Method::GET {
            return Err(ApiError::read_only_route(parts.uri.path()));
        }
        return Ok(super::responses::json(StatusCode::OK, &document()));
    }
    let path = parse_path(&shared.store.kinds(), parts.uri.path())?;
    let Query(params) = Query::<Params>::try_from_uri(&parts.uri)
        .map_err(|e| ApiError::bad_request(format!("invalid query: {e}")))?;
    if path.subresource.as_deref() == Some("eviction") {
        return evict(&shared, parts, body, path, &params).await;
    }
    let verb = Verb::of(&parts.method, &path, flag(&params.watch))?;
    let rt = path.kind.info();
    let user = *parts
        .extensions
        .get::<User>()
        .ok_or_else(ApiError::unauthorized)?;
    if !user.may(verb, path.kind) {
        return Err(ApiError::forbidden(
            user.name(),
            verb.as_str(),
            rt,
            path.namespace.as_deref(),
            path.name.as_deref(),
        ));
    }
    if !verb.is_read() && !rt.writable {
        return Err(ApiError::method_not_allowed(verb.as_str(), rt));
    }
    // A namespaced object is addressed inside its namespace; `/api/v1/pods` only lists.
    let needs_namespace =
        rt.namespaced && !matches!(verb, Verb::List | Verb::Watch | Verb::DeleteCollection);
    if needs_namespace && path.namespace.is_none() {
        return Err(ApiError::no_route(parts.uri.path()));
    }
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let format = table::negotiate(accept, params.include_object.as_deref());
    let body = to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
    let call = Call {
        user,
        path,
        params,
        headers: parts.headers,
        body,
        format,
    };
    match verb {
        Verb::Get => get(&shared, &call),
        Verb::List => list(&shared, &call),
        Verb::Watch => watch(&shared, &call),
        Verb::Create => create(&shared, &call),
        Verb::Update => update(&shared, &call),
        Verb::Patch => patch(&shared, &call),
        Verb::Delete => delete(&shared, &call),
        Verb::DeleteCollection => delete_collection(&shared, &call),
    }
}

/// `POST .../pods/{name}/eviction`: the pod's budgets decide, then the pod is deleted with
/// its grace period (or the Eviction's `deleteOptions.gracePeriodSeconds`). Answers 201 and a
/// success `Status`, or 429 when a budget refuses (see [`eviction`]). Creating an eviction is
/// a write: the read-only user is refused 403.
async fn evict(
    shared: &Shared,
    parts: axum::http::request::Parts,
    body: axum::body::Body,
    path: ResourcePath,
    params: &Params,
) -> Result<Response, ApiError> {
    let rt = Kind::Pods.info();
    if parts.method != axum::http::Method::POST {
        return Err(ApiError::method_not_allowed(parts.method.as_str(), rt));
    }
    let (ns, name) = (
        path.namespace.as_deref().unwrap_or(""),
        path.name.as_deref().unwrap_or(""),
    );
    let user = *parts
        .extensions
        .get::<User>()
        .ok_or_else(ApiError::unauthorized)?;
    if !user.may(Verb::Create, Kind::Pods) {
        return Err(ApiError::forbidden(
            user.name(),
            "create",
            rt,
            Some(ns),
            Some(name),
        ));
    }
    let body = to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))?;
    let request: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad_request(format!("error decoding the Eviction: {e}")))?
    };
    let _one_at_a_time = shared.evictions.lock().unwrap_or_else(|e| e.into_inner());
    let pod = shared.store.get(Kind::Pods, ns, name)?.value();
    let in_namespace = |labels| ListQuery {
        namespace: Some(ns),
        labels,
        ..ListQuery::default()
    };
    let mut budgets = Vec::new();
    for b in shared
        .store
        .list(
            Kind::PodDisruptionBudgets,
            &in_namespace(LabelSelector::default()),
        )
        .items
    {
        let b = b.value();
        let Some(selector) = eviction::selector(&b).filter(|s| s.matches(&pod)) else {
            continue;
        };
        let selected = shared.store.list(Kind::Pods, &in_namespace(selector)).items;
        budgets.push((b, selected.iter().map(|p| p.value()).collect::<Vec<_>>()));
    }
    if let Some(refused) = eviction::error(&eviction::decide(&pod, &budgets)) {
        return Err(refused);
    }
    let opts = DeleteOptions {
        grace_period: eviction::requested_grace(&request),
        precondition_uid: request
            .pointer("/deleteOptions/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        precondition_resource_version: None,
        dry_run: params.dry_run()? || eviction::dry_run(&request),
    };
    shared.store.delete(Kind::Pods, ns, name, &opts)?;
    Ok(responses::json(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    ))
}

fn get(shared: &Shared, call: &Call) -> Result<Response, ApiError> {
    let kind = call.path.kind;
    let obj = shared.store.get(kind, call.ns(), call.name())?;
    Ok(responses::object(StatusCode::OK, kind, &obj, call.format))
}

fn list(shared: &Shared, call: &Call) -> Result<Response, ApiError> {
    let (labels, fields) = call.selectors()?;
    let continue_token = match call.params.continue_token.as_deref() {
        None | Some("") => None,
        Some(t) => Some(ContinueToken::decode(t).map_err(ApiError::bad_request)?),
    };
    let q = ListQuery {
        namespace: call.path.namespace.as_deref(),
        labels,
        fields,
        limit: call.params.limit.filter(|l| *l > 0).map(|l| l as usize),
        continue_token,
    };
    let listing = shared.store.list(call.path.kind, &q);
    Ok(responses::list(call.path.kind, &listing, call.format))
}

fn watch(shared: &Shared, call: &Call) -> Result<Response, ApiError> {
    let (labels, fields) = call.selectors()?;
    let spec = WatchSpec {
        kind: call.path.kind,
        namespace: call.path.namespace.clone(),
        labels,
        fields,
        resource_version: watch::parse_resource_version(call.params.resource_version.as_deref())?,
        send_initial_events: flag(&call.params.send_initial_events),
        bookmarks: flag(&call.params.allow_watch_bookmarks),
        timeout: call
            .params
            .timeout_seconds
            .filter(|t| *t > 0)
            .map_or(DEFAULT_WATCH_TIMEOUT, Duration::from_secs),
        format: call.format,
    };
    if spec.send_initial_events {
        use std::sync::atomic::Ordering;
        if !shared.watch_list.load(Ordering::Relaxed) {
            // kube-apiserver's answer with the WatchList feature gate off.
            return Err(ApiError::watch_list_forbidden());
        }
        shared.streaming_lists.fetch_add(1, Ordering::Relaxed);
    }
    let body = watch::stream(
        shared.store.clone(),
        spec,
        shared.stops(Some(call.user)),
        shared.options.bookmark_interval,
    );
    let mut resp = (StatusCode::OK, body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

fn create(shared: &Shared, call: &Call) -> Result<Response, ApiError> {
    let kind = call.path.kind;
    let body = call.json_body()?;
    let warnings = call.warnings(kind, &body);
    let obj = shared
        .store
        .create(kind, call.ns(), body, call.params.dry_run()?)?;
    let resp = responses::object(StatusCode::CREATED, kind, &obj, call.format);
    Ok(responses::with_warnings(resp, &warnings))
}

fn update(shared: &Shared, call: &Call) -> Result<Response, ApiError> {
    let kind = call.path.kind;
    let body = call.json_body()?;
    let warnings = call.warnings(kind, &body);
    let dry_run = call.params.dry_run()?;
    let obj = shared
        .store
        .update(kind, call.ns(), call.name(), body, call.target(), dry_run)?;
    let resp = responses::object(StatusCode::OK, kind, &obj, call.format);
    Ok(responses::with_warnings(resp, &warnings))
}

fn patch(shared: &Shared, call: &Call) -> Result<Response, ApiError> {
    let kind = call.path.kind;
    let patch_kind = PatchKind::from_content_type(call.content_type())
        .ok_or_else(|| ApiError::unsupported_media_type(call.content_type()))?;
    let warnings = match patch_kind {
        PatchKind::Json => Vec::new(),
        // Merge-style patches have the object's shape: check the fields they set.
        _ => super::patch::parse_body(patch_kind, &call.body)
            .map(|b| call.warnings(kind, &b))
            .unwrap_or_default(),
    };
    let dry_run = call.params.dry_run()?;
    let (obj, created) = shared.store.patch(
        kind,
        call.ns(),
        call.name(),
        patch_kind,
        &call.body,
        call.target(),
        dry_run,
    )?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let resp = responses::object(code, kind, &obj, call.format);
    Ok(responses::with_warnings(resp, &warnings))
}

/// The parts of a `DeleteOptions` body this server honours.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteBody {
    grace_period_seconds: Option<i64>,
    #[serde(default)]
    preconditions: Preconditions,
    #[serde(default)]
    dry_run: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Preconditions {
    uid: Option<String>,
    resource_version: Option<String>,
}

fn delete_options(call: &Call) -> Result<DeleteOptions, ApiError> {
    let body: DeleteBody = if call.body.iter().all(u8::is_ascii_whitespace) {
        DeleteBody::default()
    } else {
        serde_json::from_slice(&call.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?
    };
    Ok(DeleteOptions {
        grace_period: call
            .params
            .grace_period_seconds
            .or(body.grace_period_seconds),
        precondition_uid: body.preconditions.uid,
        precondition_resource_version: body.preconditions.resource_version,
        dry_run: call.params.dry_run()? || body.dry_run.iter().any(|d| d == "All"),
    })
}

fn delete(shared: &Shared, call: &Call) -> Result<Response, ApiError> {
    let kind = call.path.kind;
    let opts = delete_options(call)?;
    let resp = match shared.store.delete(kind, call.ns(), call.name(), &opts)? {
        // Like a real server: pods come back as the deleted object, other kinds as a
        // Status once gone; anything still terminating comes back as the object.
        Deleted::Gone(obj) if kind != Kind::Pods => responses::json(
            StatusCode::OK,
            &status::success(kind.info(), call.name(), obj.uid()),
        ),
        Deleted::Gone(obj) | Deleted::Pending(obj) => {
            responses::object(StatusCode::OK, kind, &obj, call.format)
        }
    };
    Ok(resp)
}

fn delete_collection(shared: &Shared, call: &Call) -> Result<Response, ApiError> {
    let kind = call.path.kind;
    let opts = delete_options(call)?;
    let (labels, fields) = call.selectors()?;
    let q = ListQuery {
        namespace: call.path.namespace.as_deref(),
        labels,
        fields,
        ..ListQuery::default()
    };
    let listing = shared.store.list(kind, &q);
    let mut deleted = Vec::new();
    for obj in &listing.items {
        let (ns, name) = (obj.namespace(), obj.name());
        match shared.store.delete(kind, ns, name, &opts) {
            Ok(Deleted::Gone(o) | Deleted::Pending(o)) => deleted.push(o),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let rt = kind.info();
    let meta = json!({"resourceVersion": shared.store.current_rv().to_string()});
    Ok(responses::json_bytes(
        StatusCode::OK,
        responses::plain_list(&rt.list_kind(), rt.api_version, &meta, &deleted),
    ))
}
