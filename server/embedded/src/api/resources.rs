//! The kinds the embedded API server serves, with what discovery and storage need to know of
//! each.

/// The resource types served. The discriminant indexes the store's collections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Namespaces,
    Nodes,
    Pods,
    Events,
    NodePools,
    Crds,
    PodDisruptionBudgets,
    KarpenterNodePools,
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
    /// Whether `/status` is a subresource. The main resource then ignores status changes
    /// on update and patch, and `/status` changes only status, as on a real API server.
    pub status_subresource: bool,
    /// False for the CRDs, which are served read-only: the embedded cluster has exactly one.
    pub writable: bool,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Namespaces,
        Kind::Nodes,
        Kind::Pods,
        Kind::Events,
        Kind::NodePools,
        Kind::Crds,
        Kind::PodDisruptionBudgets,
        Kind::KarpenterNodePools,
    ];

    /// Position in [`Kind::ALL`], for indexing per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn info(self) -> &'static ResourceType {
        match self {
            Kind::Namespaces => &NAMESPACES,
            Kind::Nodes => &NODES,
            Kind::Pods => &PODS,
            Kind::Events => &EVENTS,
            Kind::NodePools => &NODEPOOLS,
            Kind::Crds => &CRDS,
            Kind::PodDisruptionBudgets => &PDBS,
            Kind::KarpenterNodePools => &KARPENTER_NODEPOOLS,
        }
    }

    /// The kind served at `group/version/plural`, if any.
    pub fn find(group: &str, version: &str, plural: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| {
            let i = k.info();
            i.group == group && i.version == version && i.plural == plural
        })
    }
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
};

static NODEPOOLS: ResourceType = ResourceType {
    group: app::nodepool::GROUP,
    version: app::nodepool::VERSION,
    api_version: "compute.coreweave.com/v1alpha1",
    plural: "nodepools",
    singular: "nodepool",
    kind: "NodePool",
    namespaced: false,
    short_names: &["np"],
    status_subresource: true,
    writable: true,
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
};

// Karpenter's NodePool (Karpenter: NodePools), served by every zone as a CRD-backed kind would
// be; only the Karpenter zones have objects. Schema-less: the embedded cluster stores it as
// sent.
static KARPENTER_NODEPOOLS: ResourceType = ResourceType {
    group: "karpenter.sh",
    version: "v1",
    api_version: "karpenter.sh/v1",
    plural: "nodepools",
    singular: "nodepool",
    kind: "NodePool",
    namespaced: false,
    short_names: &[],
    status_subresource: true,
    writable: true,
};

/// The API groups served under `/apis`, each with its one version.
pub const GROUPS: [(&str, &str); 4] = [
    ("apiextensions.k8s.io", "v1"),
    (app::nodepool::GROUP, app::nodepool::VERSION),
    ("policy", "v1"),
    ("karpenter.sh", "v1"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_match_all_order_and_find_round_trips() {
        for (i, k) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(k.index(), i);
            let info = k.info();
            assert_eq!(Kind::find(info.group, info.version, info.plural), Some(k));
            let expected_api_version = if info.group.is_empty() {
                info.version.to_string()
            } else {
                format!("{}/{}", info.group, info.version)
            };
            assert_eq!(info.api_version, expected_api_version);
        }
        assert_eq!(Kind::find("", "v1", "nodepools"), None);
    }

    #[test]
    fn names_for_messages() {
        assert_eq!(Kind::Pods.info().group_resource(), "pods");
        assert_eq!(
            Kind::NodePools.info().group_resource(),
            "nodepools.compute.coreweave.com"
        );
        assert_eq!(
            Kind::NodePools.info().group_kind(),
            "NodePool.compute.coreweave.com"
        );
        assert_eq!(Kind::Crds.info().verbs(), &["get", "list", "watch"]);
    }
}
