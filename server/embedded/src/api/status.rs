//! Failures as Kubernetes `Status` objects, so that kube-rs reports
//! `kube::Error::Api(ErrorResponse)` and kubectl prints the familiar messages.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::resources::ResourceType;

/// A failed request: HTTP code, machine-readable `reason` and a message worded like the
/// real API server's (kubectl shows it verbatim).
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    /// `Status.details` (`name`, `group`, `kind` = the resource's plural).
    pub details: Option<Value>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, rt: &ResourceType, name: &str) -> Self {
        self.details = Some(json!({"name": name, "group": rt.group, "kind": rt.plural}));
        self
    }

    /// 404 `pods "x" not found`.
    pub fn not_found(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", rt.group_resource()),
        )
        .with_details(rt, name)
    }

    /// 404 for a path that names no resource this server knows.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// 409 `... "x" already exists`.
    pub fn already_exists(rt: &ResourceType, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", rt.group_resource()),
        )
        .with_details(rt, name)
    }

    /// 409 for a stale `resourceVersion` (or a failed uid precondition).
    pub fn conflict(rt: &ResourceType, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                rt.group_resource()
            ),
        )
        .with_details(rt, name)
    }

    /// The `Conflict` of an update whose `resourceVersion` is not the stored one.
    pub fn stale(rt: &ResourceType, name: &str) -> Self {
        Self::conflict(
            rt,
            name,
            "the object has been modified; please apply your changes to the latest version and \
             try again",
        )
    }

    /// 422 `Kind.group "x" is invalid: <field>: <why>`.
    pub fn invalid(rt: &ResourceType, name: &str, why: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {why}", rt.group_kind()),
        )
        .with_details(rt, name)
    }

    /// 422 for `sendInitialEvents=true` on a server without the WatchList feature, worded as
    /// kube-apiserver words it (its validation of `ListOptions`).
    pub fn watch_list_forbidden() -> Self {
        Self::new(
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: \
             sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        )
    }

    /// 400 with the given message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 403 for impersonation by a user without the `impersonate` verb, worded like RBAC's.
    pub fn forbidden_impersonation(user: &str, as_user: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!(
                "users \"{as_user}\" is forbidden: User \"{user}\" cannot impersonate resource \
                 \"users\" in API group \"\" at the cluster scope"
            ),
        )
    }

    /// 401 for a missing or unknown bearer token.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 worded like RBAC's denial, naming user, verb, resource and scope.
    pub fn forbidden(
        user: &str,
        verb: &str,
        rt: &ResourceType,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Self {
        let subject = match name {
            Some(n) => format!("{} \"{n}\"", rt.group_resource()),
            None => rt.group_resource(),
        };
        let scope = match namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_string(),
        };
        let mut e = Self::new(
            403,
            "Forbidden",
            format!(
                "{subject} is forbidden: User \"{user}\" cannot {verb} resource \"{}\" in API \
                 group \"{}\" {scope}",
                rt.plural, rt.group
            ),
        );
        if let Some(n) = name {
            e = e.with_details(rt, n);
        }
        e
    }

    /// 405 for a verb a resource does not support (writes to the read-only CRDs).
    pub fn method_not_allowed(verb: &str, rt: &ResourceType) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "the server does not allow this method on the requested resource ({verb} {})",
                rt.group_resource()
            ),
        )
    }

    /// 405 for a write to a read-only route the behaviour model registered.
    pub fn read_only_route(path: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({path})"),
        )
    }

    /// 410 `Expired`: a watch asked for history older than what is retained.
    pub fn expired(requested: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 415 for a PATCH content type this server does not know.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml, application/strategic-merge-patch+json; got \
                 {content_type:?}"
            ),
        )
    }

    /// 503 while the server plays an outage.
    pub fn unavailable() -> Self {
        Self::new(
            503,
            "ServiceUnavailable",
            "the embedded API server is in a simulated outage",
        )
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            status["details"] = d.clone();
        }
        status
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

/// The error kube-rs would report for this answer, for the writes that skip HTTP
/// ([`super::Loader`]): callers handle both paths' errors alike (`e.code == 409`).
impl From<ApiError> for kube::Error {
    fn from(e: ApiError) -> Self {
        kube::Error::Api(Box::new(kube::core::Status {
            status: Some(kube::core::response::StatusSummary::Failure),
            code: e.code,
            message: e.message,
            reason: e.reason.to_string(),
            ..Default::default()
        }))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self.to_status()).unwrap_or_default();
        let mut resp = (code, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        resp
    }
}

/// A `Status` of success, as a delete of a kind that does not return the deleted object
/// answers.
pub fn success(rt: &ResourceType, name: &str, uid: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "group": rt.group, "kind": rt.plural, "uid": uid},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resources::{Kind, test_nodepools};

    #[test]
    fn status_shape_matches_kubernetes() {
        let s = ApiError::not_found(test_nodepools().info(), "a").to_status();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["status"], "Failure");
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(
            s["message"],
            "nodepools.compute.coreweave.com \"a\" not found"
        );
        assert_eq!(s["details"]["kind"], "nodepools");
    }

    #[test]
    fn forbidden_reads_like_rbac() {
        let e = ApiError::forbidden("reader", "patch", Kind::Nodes.info(), None, Some("n1"));
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "nodes \"n1\" is forbidden: User \"reader\" cannot patch resource \"nodes\" in API \
             group \"\" at the cluster scope"
        );
        let e = ApiError::forbidden("reader", "create", Kind::Pods.info(), Some("default"), None);
        assert!(e.message.starts_with("pods is forbidden"));
        assert!(e.message.ends_with("in the namespace \"default\""));
    }
}
