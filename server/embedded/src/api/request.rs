//! What a resource request asks for: the resource path (kind, namespace, name,
//! subresource), the verb, and the query parameters.

use axum::http::Method;
use serde::Deserialize;

use super::resources::Kind;
use super::status::ApiError;

/// A parsed resource URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePath {
    pub kind: Kind,
    /// The namespace in the URL; `None` for cluster-scoped kinds and all-namespace lists.
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// `status` (kinds that declare it) and pods' `eviction`.
    pub subresource: Option<String>,
    /// The deprecated `/api/v1/watch/...` form.
    pub legacy_watch: bool,
}

/// Parses `/api/v1[/watch][/namespaces/{ns}]/{plural}[/{name}[/{sub}]]` and the same under
/// `/apis/{group}/{version}`, naming one of the `served` kinds. Errors: 404 for paths that
/// name nothing served.
pub fn parse_path(served: &[Kind], path: &str) -> Result<ResourcePath, ApiError> {
    let not_found = || ApiError::no_route(path);
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, mut rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(not_found()),
    };
    let legacy_watch = rest.first() == Some(&"watch");
    if legacy_watch {
        rest = &rest[1..];
    }
    let mut namespace = None;
    if let ["namespaces", ns, tail @ ..] = rest
        && !tail.is_empty()
        && !matches!(tail[0], "status" | "finalize")
    {
        namespace = Some(ns.to_string());
        rest = tail;
    }
    let (plural, name, subresource) = match rest {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(n.to_string()), None),
        [p, n, s] => (*p, Some(n.to_string()), Some(s.to_string())),
        _ => return Err(not_found()),
    };
    let kind = Kind::find(served, group, version, plural).ok_or_else(not_found)?;
    let rt = kind.info();
    if namespace.is_some() && !rt.namespaced {
        return Err(not_found());
    }
    let served = |s: &str| match s {
        "status" => rt.status_subresource,
        "eviction" => kind == Kind::Pods && namespace.is_some(),
        _ => false,
    };
    if let Some(s) = &subresource
        && !served(s)
    {
        return Err(not_found());
    }
    Ok(ResourcePath {
        kind,
        namespace,
        name,
        subresource,
        legacy_watch,
    })
}

/// Kubernetes API verbs, as RBAC names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    /// Whether the verb only reads.
    pub fn is_read(self) -> bool {
        matches!(self, Verb::Get | Verb::List | Verb::Watch)
    }

    /// The verb of `method` on `path`. Errors: 405 for methods the API does not define.
    pub fn of(method: &Method, path: &ResourcePath, watch: bool) -> Result<Verb, ApiError> {
        let item = path.name.is_some();
        let verb = match *method {
            Method::GET | Method::HEAD if watch || path.legacy_watch => Verb::Watch,
            Method::GET | Method::HEAD if item => Verb::Get,
            Method::GET | Method::HEAD => Verb::List,
            Method::POST if !item => Verb::Create,
            Method::PUT if item => Verb::Update,
            Method::PATCH if item => Verb::Patch,
            Method::DELETE if item => Verb::Delete,
            Method::DELETE => Verb::DeleteCollection,
            _ => {
                return Err(ApiError::method_not_allowed(
                    method.as_str(),
                    path.kind.info(),
                ));
            }
        };
        Ok(verb)
    }
}

/// The query parameters the server reads (others are ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Params {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<i64>,
    #[serde(rename = "continue")]
    pub continue_token: Option<String>,
    pub watch: Option<String>,
    pub resource_version: Option<String>,
    pub allow_watch_bookmarks: Option<String>,
    pub send_initial_events: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub dry_run: Option<String>,
    pub field_validation: Option<String>,
    pub grace_period_seconds: Option<i64>,
    pub include_object: Option<String>,
}

/// `true`/`1` as the API server reads boolean parameters.
pub fn flag(value: &Option<String>) -> bool {
    matches!(value.as_deref(), Some("true" | "1"))
}

impl Params {
    /// `dryRun=All` → true. Errors: 400 for any other value.
    pub fn dry_run(&self) -> Result<bool, ApiError> {
        match self.dry_run.as_deref() {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "Invalid dry run value: {other:?}; supported values: \"All\""
            ))),
        }
    }

    /// Whether unknown fields are reported (`Warn`, the default, and `Strict`).
    pub fn warn_unknown_fields(&self) -> bool {
        self.field_validation.as_deref() != Some("Ignore")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served() -> Vec<Kind> {
        Kind::BUILT_IN
            .into_iter()
            .chain([crate::api::resources::test_nodepools()])
            .collect()
    }

    fn p(path: &str) -> ResourcePath {
        parse_path(&served(), path).unwrap()
    }

    #[test]
    fn core_and_group_paths() {
        let r = p("/api/v1/nodes");
        assert_eq!((r.kind, r.namespace, r.name), (Kind::Nodes, None, None));
        let r = p("/api/v1/namespaces/default/pods/web-1");
        assert_eq!(r.kind, Kind::Pods);
        assert_eq!(r.namespace.as_deref(), Some("default"));
        assert_eq!(r.name.as_deref(), Some("web-1"));
        let r = p("/apis/compute.coreweave.com/v1alpha1/nodepools/np-a/status");
        assert_eq!(r.kind, crate::api::resources::test_nodepools());
        assert_eq!(r.subresource.as_deref(), Some("status"));
        let r = p("/api/v1/pods");
        assert_eq!((r.kind, r.namespace), (Kind::Pods, None));
    }

    #[test]
    fn namespaces_are_both_a_resource_and_a_scope() {
        let r = p("/api/v1/namespaces/team-a");
        assert_eq!(
            (r.kind, r.name.as_deref(), r.namespace),
            (Kind::Namespaces, Some("team-a"), None)
        );
        let r = p("/api/v1/namespaces/team-a/status");
        assert_eq!(
            (r.kind, r.subresource.as_deref()),
            (Kind::Namespaces, Some("status"))
        );
        let r = p("/api/v1/namespaces/team-a/events");
        assert_eq!(
            (r.kind, r.namespace.as_deref()),
            (Kind::Events, Some("team-a"))
        );
        assert_eq!(p("/api/v1/namespaces").kind, Kind::Namespaces);
    }

    #[test]
    fn legacy_watch_and_unknown_paths() {
        let r = p("/api/v1/watch/namespaces/default/pods");
        assert!(r.legacy_watch);
        assert_eq!(r.kind, Kind::Pods);
        for bad in [
            "/api/v2/nodes",
            "/apis/apps/v1/deployments",
            "/api/v1/namespaces/default/nodes",
            "/api/v1/events/e/status",
            "/api/v1/nodes/n/proxy",
            "/api/v1/nodes/a/b/c",
            "/healthz",
        ] {
            assert_eq!(parse_path(&served(), bad).unwrap_err().code, 404, "{bad}");
        }
    }

    #[test]
    fn verbs_from_methods() {
        let list = p("/api/v1/nodes");
        let item = p("/api/v1/nodes/n");
        assert_eq!(Verb::of(&Method::GET, &list, false).unwrap(), Verb::List);
        assert_eq!(Verb::of(&Method::GET, &list, true).unwrap(), Verb::Watch);
        assert_eq!(Verb::of(&Method::GET, &item, false).unwrap(), Verb::Get);
        assert_eq!(Verb::of(&Method::POST, &list, false).unwrap(), Verb::Create);
        assert_eq!(Verb::of(&Method::PUT, &item, false).unwrap(), Verb::Update);
        assert_eq!(Verb::of(&Method::PATCH, &item, false).unwrap(), Verb::Patch);
        assert_eq!(
            Verb::of(&Method::DELETE, &item, false).unwrap(),
            Verb::Delete
        );
        assert_eq!(
            Verb::of(&Method::DELETE, &list, false).unwrap(),
            Verb::DeleteCollection
        );
        assert_eq!(Verb::of(&Method::POST, &item, false).unwrap_err().code, 405);
        assert!(Verb::Watch.is_read() && !Verb::Patch.is_read());
    }

    #[test]
    fn params() {
        assert!(flag(&Some("1".into())) && flag(&Some("true".into())) && !flag(&None));
        let dry = Params {
            dry_run: Some("All".into()),
            ..Default::default()
        };
        assert!(dry.dry_run().unwrap());
        let bad = Params {
            dry_run: Some("Some".into()),
            ..Default::default()
        };
        assert_eq!(bad.dry_run().unwrap_err().code, 400);
        assert!(Params::default().warn_unknown_fields());
    }
}
