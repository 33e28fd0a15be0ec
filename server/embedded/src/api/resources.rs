//! The kinds the embedded API server serves, with what discovery and storage need to know of
//! each.
//!
//! The core kinds (and `policy/v1` budgets, CRDs) are built in. Every other kind is a custom
//! resource: the behaviour model hands its `CustomResourceDefinition` to the API server at
//! start ([`Kind::from_crd`]), and discovery, OpenAPI, `kubectl get` columns and unknown-field
//! warnings are read from that definition, as a real API server reads an installed CRD. The
//! server itself names no vendor's group.

use std::sync::{PoisonError, RwLock};

use serde_json::{Value, json};

use super::jsonpath::JsonPath;

/// A resource type served. Built-in kinds are variants; a custom resource is a handle into a
/// process-wide table of the CRDs registered so far (`Custom(n)`), so a `Kind` stays `Copy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Namespaces,
    Nodes,
    Pods,
    Events,
    Crds,
    PodDisruptionBudgets,
    Leases,
    Custom(u16),
}

/// One `additionalPrinterColumns` entry of a CRD.
#[derive(Debug)]
pub struct PrinterColumnDef {
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
    /// The column's `jsonPath` (`.status.conditions[?(@.type=="Ready")].status`); `None` when
    /// this server's subset cannot read it, which prints an empty column, not an error.
    pub path: Option<JsonPath>,
}

/// What the API server knows of one resource type (one row of discovery).
#[derive(Debug)]
pub struct ResourceType {
    /// API group; `""` for core.
    pub group: &'static str,
    pub version: &'static str,
    /// `apiVersion` of objects: `v1` or `group/version`.
    pub api_version: &'static str,
    /// Plural name, the path segment (`nodepools`).
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Discovery categories (`kubectl get <category>`); from the CRD's `spec.names.categories`.
    pub categories: &'static [&'static str],
    /// Whether `/status` is a subresource. The main resource then ignores status changes
    /// on update and patch, and `/status` changes only status, as on a real API server.
    pub status_subresource: bool,
    /// False for the CRDs, which are served read-only: custom resources are registered at
    /// start, not by clients.
    pub writable: bool,
    /// The custom resource's definition as registered (`None` for built-in kinds): its
    /// `openAPIV3Schema` and `additionalPrinterColumns` are read from here.
    pub crd: Option<CrdParts>,
}

/// The parts of a registered CRD the API server reads after registration.
#[derive(Debug)]
pub struct CrdParts {
    /// The whole `CustomResourceDefinition`, as `GET customresourcedefinitions` serves it.
    pub object: Value,
    /// `spec.versions[0].schema.openAPIV3Schema`, or `Null`.
    pub schema: Value,
    pub printer_columns: Vec<PrinterColumnDef>,
}

/// Custom resources registered in this process, in registration order. Entries are leaked:
/// there is one per distinct CRD (a handful), and `&'static` lets callers of [`Kind::info`]
/// keep the type without holding the lock.
static CUSTOM: RwLock<Vec<&'static ResourceType>> = RwLock::new(Vec::new());

const BUILT_IN: [Kind; 7] = [
    Kind::Namespaces,
    Kind::Nodes,
    Kind::Pods,
    Kind::Events,
    Kind::Crds,
    Kind::PodDisruptionBudgets,
    Kind::Leases,
];

impl Kind {
    /// The kinds every API server serves, before any custom resource.
    pub const BUILT_IN: [Kind; 7] = BUILT_IN;

    pub fn info(self) -> &'static ResourceType {
        match self {
            Kind::Namespaces => &NAMESPACES,
            Kind::Nodes => &NODES,
            Kind::Pods => &PODS,
            Kind::Events => &EVENTS,
            Kind::Crds => &CRDS,
            Kind::PodDisruptionBudgets => &PDBS,
            Kind::Leases => &LEASES,
            Kind::Custom(n) => CUSTOM.read().unwrap_or_else(PoisonError::into_inner)[n as usize],
        }
    }

    /// Registers the custom resource a `CustomResourceDefinition` (`apiextensions.k8s.io/v1`)
    /// defines, served at its first version. Registering the same group, version and plural
    /// again returns the kind registered first (its definition is kept).
    ///
    /// Errors: a CRD without `spec.group`, `spec.names.plural`/`kind`, a version or a
    /// `Namespaced`/`Cluster` scope; the message names the missing field.
    pub fn from_crd(crd: &Value) -> Result<Kind, String> {
        let parsed = parse_crd(crd)?;
        let mut table = CUSTOM.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = table.iter().position(|t| {
            t.group == parsed.group && t.version == parsed.version && t.plural == parsed.plural
        }) {
            return Ok(Kind::Custom(n as u16));
        }
        let n = u16::try_from(table.len()).map_err(|_| "too many custom resources".to_string())?;
        table.push(Box::leak(Box::new(parsed)));
        Ok(Kind::Custom(n))
    }

    /// The kind among `served` at `group/version/plural`, if any.
    pub fn find(served: &[Kind], group: &str, version: &str, plural: &str) -> Option<Kind> {
        served.iter().copied().find(|k| {
            let i = k.info();
            i.group == group && i.version == version && i.plural == plural
        })
    }
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

fn leak_list(v: &Value) -> &'static [&'static str] {
    let items: Vec<&'static str> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(leak)
        .collect();
    Box::leak(items.into_boxed_slice())
}

fn parse_crd(crd: &Value) -> Result<ResourceType, String> {
    let field = |pointer: &str| {
        crd.pointer(pointer)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                format!(
                    "CRD has no {}",
                    pointer.trim_start_matches('/').replace('/', ".")
                )
            })
    };
    let group = field("/spec/group")?;
    let plural = field("/spec/names/plural")?;
    let kind = field("/spec/names/kind")?;
    let version = field("/spec/versions/0/name")?;
    let namespaced = match field("/spec/scope")? {
        "Namespaced" => true,
        "Cluster" => false,
        other => {
            return Err(format!(
                "CRD scope {other:?} is neither Namespaced nor Cluster"
            ));
        }
    };
    let singular = crd
        .pointer("/spec/names/singular")
        .and_then(Value::as_str)
        .map_or_else(|| kind.to_ascii_lowercase(), str::to_string);
    let served = &crd["spec"]["versions"][0];
    let printer_columns = served["additionalPrinterColumns"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| PrinterColumnDef {
            name: c["name"].as_str().unwrap_or_default().to_string(),
            type_: c["type"].as_str().unwrap_or("string").to_string(),
            format: c["format"].as_str().unwrap_or_default().to_string(),
            description: c["description"].as_str().unwrap_or_default().to_string(),
            priority: c["priority"].as_i64().unwrap_or(0) as i32,
            path: JsonPath::parse(c["jsonPath"].as_str().unwrap_or_default()).ok(),
        })
        .collect();
    Ok(ResourceType {
        group: leak(group),
        version: leak(version),
        api_version: leak(&format!("{group}/{version}")),
        plural: leak(plural),
        singular: leak(&singular),
        kind: leak(kind),
        namespaced,
        short_names: leak_list(&crd["spec"]["names"]["shortNames"]),
        categories: leak_list(&crd["spec"]["names"]["categories"]),
        status_subresource: served["subresources"]["status"].is_object(),
        writable: true,
        crd: Some(CrdParts {
            object: established(crd, version),
            schema: served["schema"]["openAPIV3Schema"].clone(),
            printer_columns,
        }),
    })
}

/// The CRD as served, with the status of an established CRD.
fn established(crd: &Value, version: &str) -> Value {
    let mut crd = crd.clone();
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    crd["kind"] = json!("CustomResourceDefinition");
    crd["status"] = json!({
        "acceptedNames": crd["spec"]["names"].clone(),
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"}
        ],
        "storedVersions": [version],
    });
    crd
}

impl ResourceType {
    /// `NodeList`, `NodePoolList`, ...
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// `pods` or `nodepools.compute.coreweave.com`, as in API error messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Pod` or `NodePool.compute.coreweave.com`, as in `Invalid` error messages.
    pub fn group_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// The verbs discovery advertises.
    pub fn verbs(&self) -> &'static [&'static str] {
        if self.writable {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        } else {
            &["get", "list", "watch"]
        }
    }
}

pub const CORE_GROUP_VERSION: &str = "v1";

static NAMESPACES: ResourceType = ResourceType {
    group: "",
    version: "v1",
    api_version: "v1",
    plural: "namespaces",
    singular: "namespace",
    kind: "Namespace",
    namespaced: false,
    short_names: &["ns"],
    status_subresource: true,
    writable: true,
    categories: &[],
    crd: None,
};

static NODES: ResourceType = ResourceType {
    group: "",
    version: "v1",
    api_version: "v1",
    plural: "nodes",
    singular: "node",
    kind: "Node",
    namespaced: false,
    short_names: &["no"],
    status_subresource: true,
    writable: true,
    categories: &[],
    crd: None,
};

static PODS: ResourceType = ResourceType {
    group: "",
    version: "v1",
    api_version: "v1",
    plural: "pods",
    singular: "pod",
    kind: "Pod",
    namespaced: true,
    short_names: &["po"],
    status_subresource: true,
    writable: true,
    categories: &[],
    crd: None,
};

static EVENTS: ResourceType = ResourceType {
    group: "",
    version: "v1",
    api_version: "v1",
    plural: "events",
    singular: "event",
    kind: "Event",
    namespaced: true,
    short_names: &["ev"],
    status_subresource: false,
    writable: true,
    categories: &[],
    crd: None,
};

static CRDS: ResourceType = ResourceType {
    group: "apiextensions.k8s.io",
    version: "v1",
    api_version: "apiextensions.k8s.io/v1",
    plural: "customresourcedefinitions",
    singular: "customresourcedefinition",
    kind: "CustomResourceDefinition",
    namespaced: false,
    short_names: &["crd", "crds"],
    status_subresource: true,
    writable: false,
    categories: &[],
    crd: None,
};

// The readiness audit and the blast radius read budgets; workloads in the embedded cluster
// declare them as they would on a real one.
static PDBS: ResourceType = ResourceType {
    group: "policy",
    version: "v1",
    api_version: "policy/v1",
    plural: "poddisruptionbudgets",
    singular: "poddisruptionbudget",
    kind: "PodDisruptionBudget",
    namespaced: true,
    short_names: &["pdb"],
    status_subresource: true,
    writable: true,
    categories: &[],
    crd: None,
};

// Leader election (`coordination.k8s.io/v1` Leases): replicas of a controller, spotboard's
// among them, hold one by updating it with the resourceVersion they read; a stale one gets 409.
static LEASES: ResourceType = ResourceType {
    group: "coordination.k8s.io",
    version: "v1",
    api_version: "coordination.k8s.io/v1",
    plural: "leases",
    singular: "lease",
    kind: "Lease",
    namespaced: true,
    short_names: &[],
    status_subresource: false,
    writable: true,
    categories: &[],
    crd: None,
};

/// The API groups served under `/apis` among `served`, each with its one version, in the
/// order of `served`.
pub fn groups(served: &[Kind]) -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for k in served {
        let i = k.info();
        if !i.group.is_empty() && !out.contains(&(i.group, i.version)) {
            out.push((i.group, i.version));
        }
    }
    out
}

/// A custom resource for the API server's own tests: the CoreWeave NodePool CRD as the product
/// declares it (any CRD would do; this one has a schema, a status subresource and columns).
#[cfg(test)]
pub fn test_nodepools() -> Kind {
    use kube::CustomResourceExt;
    let crd =
        serde_json::to_value(spotboard_core::nodepool::NodePool::crd()).expect("CRD serializes");
    Kind::from_crd(&crd).expect("the NodePool CRD registers")
}

#[cfg(test)]
mod tests;
