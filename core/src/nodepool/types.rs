use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::open_enum;

/// The API group of CoreWeave's NodePool.
pub const GROUP: &str = "compute.coreweave.com";
/// The served version of CoreWeave's NodePool.
pub const VERSION: &str = "v1alpha1";

open_enum! {
    /// `spec.computeClass`: `default` (reserved and on-demand instances) or `spot`
    /// (CoreWeave: Node Pool reference; Spot Node Pools).
    ComputeClass, default = Default {
        Default = "default",
        Spot = "spot",
    }
}

open_enum! {
    /// `spec.lifecycle.scaleDownStrategy`: which nodes go first when scaling down.
    ScaleDownStrategy, default = IdleOnly {
        /// Remove only idle nodes.
        IdleOnly = "IdleOnly",
        /// Remove idle nodes first, then active ones if needed.
        PreferIdle = "PreferIdle",
    }
}

open_enum! {
    /// `spec.nodeConfigurationUpdateStrategy.type`: how configuration updates are staged.
    UpdateStrategyType, default = OnSpecUpdate {
        Manual = "Manual",
        OnSpecUpdate = "OnSpecUpdate",
        Always = "Always",
    }
}

open_enum! {
    /// `spec.image.releaseTrain`.
    ReleaseTrain, default = Stable {
        Stable = "stable",
        Latest = "latest",
    }
}

open_enum! {
    /// A Kubernetes taint effect.
    TaintEffect, default = NoSchedule {
        NoSchedule = "NoSchedule",
        PreferNoSchedule = "PreferNoSchedule",
        NoExecute = "NoExecute",
    }
}

open_enum! {
    /// The condition types CoreWeave sets on a NodePool (CoreWeave: Node Pool reference,
    /// "Node Pool Conditions").
    ConditionType, default = Validated {
        Validated = "Validated",
        AtTarget = "AtTarget",
        Capacity = "Capacity",
        Quota = "Quota",
        NodeReconfigurationRequired = "NodeReconfigurationRequired",
        /// Only while a pool is being deleted.
        NodesRemoved = "NodesRemoved",
    }
}

open_enum! {
    /// A condition's `status`.
    ConditionStatus, default = Unknown {
        True = "True",
        False = "False",
        Unknown = "Unknown",
    }
}

/// The five conditions every NodePool carries once CoreWeave has seen it, in the order the
/// dashboard shows them.
pub const FIVE_CONDITIONS: [ConditionType; 5] = [
    ConditionType::Validated,
    ConditionType::Capacity,
    ConditionType::Quota,
    ConditionType::AtTarget,
    ConditionType::NodeReconfigurationRequired,
];

/// `NodePoolSpec`: the desired state of a NodePool (CoreWeave: Node Pool reference).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(kube::CustomResource, schemars::JsonSchema))]
#[cfg_attr(
    feature = "kube",
    kube(
        group = "compute.coreweave.com",
        version = "v1alpha1",
        kind = "NodePool",
        plural = "nodepools",
        singular = "nodepool",
        shortname = "np",
        status = "NodePoolStatus",
        printcolumn = r#"{"name":"Instance Type","type":"string","jsonPath":".spec.instanceType"}"#,
        printcolumn = r#"{"name":"Target","type":"integer","jsonPath":".spec.targetNodes"}"#,
        printcolumn = r#"{"name":"Queued","type":"integer","jsonPath":".status.queuedNodes"}"#,
        printcolumn = r#"{"name":"InProgress","type":"integer","jsonPath":".status.inProgress"}"#,
        printcolumn = r#"{"name":"Current","type":"integer","jsonPath":".status.currentNodes"}"#,
        printcolumn = r#"{"name":"Validated","type":"string","jsonPath":".status.conditions[?(@.type==\"Validated\")].reason"}"#,
        printcolumn = r#"{"name":"Capacity","type":"string","jsonPath":".status.conditions[?(@.type==\"Capacity\")].reason"}"#,
        printcolumn = r#"{"name":"Quota","type":"string","jsonPath":".status.conditions[?(@.type==\"Quota\")].reason"}"#,
        printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
    )
)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolSpec {
    /// `default` (reserved and on-demand) or `spot`. Default `default`.
    #[serde(default)]
    pub compute_class: ComputeClass,
    /// The instance type ID, e.g. `gd-8xh100ib-i128`. Immutable after creation.
    pub instance_type: String,
    /// Desired number of nodes.
    pub target_nodes: i32,
    /// Lowest targetNodes the autoscaler may set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_nodes: Option<i32>,
    /// Highest targetNodes the autoscaler may set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_nodes: Option<i32>,
    /// Labels put on every node of the pool.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_labels: BTreeMap<String, String>,
    /// Annotations put on every node of the pool.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_annotations: BTreeMap<String, String>,
    /// Taints put on every node of the pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_taints: Vec<Taint>,
    /// Boot image. Mutually exclusive with `gpu`: when both are set, `image` wins and `gpu`
    /// is ignored (CoreWeave: Node Pool reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    /// GPU driver configuration; ignored when `image` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Gpu>,
    /// Whether the cluster autoscaler may move targetNodes between minNodes and maxNodes.
    #[serde(default)]
    pub autoscaling: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_configuration_update_strategy: Option<NodeConfigurationUpdateStrategy>,
    /// Fields this build does not know, kept as they came.
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "kube", schemars(skip))]
    pub extra: BTreeMap<String, Value>,
}

impl NodePoolSpec {
    /// A spec with the three fields every pool needs; everything else defaulted.
    pub fn new(compute_class: &str, instance_type: &str, target_nodes: i32) -> Self {
        NodePoolSpec {
            compute_class: compute_class.into(),
            instance_type: instance_type.into(),
            target_nodes,
            ..Default::default()
        }
    }
}

/// A node taint (`key`, optional `value`, `effect`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default)]
    pub effect: TaintEffect,
}

/// `spec.image`: only when directed by CoreWeave support (CoreWeave: Node Pool reference).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Image {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_train: Option<ReleaseTrain>,
}

/// `spec.gpu`: the GPU driver's major version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Gpu {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `spec.lifecycle`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Lifecycle {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down_strategy: Option<ScaleDownStrategy>,
    /// Seen in `kubectl describe` output (CoreWeave Node Pool reference), not in the field table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_unhealthy_node_eviction: Option<bool>,
}

/// `spec.nodeConfigurationUpdateStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct NodeConfigurationUpdateStrategy {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<UpdateStrategyType>,
}

/// `NodePoolStatus`: the observed state (CoreWeave: Node Pool reference).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct NodePoolStatus {
    /// Nodes requested and waiting to be assigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_nodes: Option<i32>,
    /// Nodes assigned but not yet booted into the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<i32>,
    /// Nodes of this pool present in the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_nodes: Option<i32>,
    /// The active node configuration's identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_node_configuration: Option<PendingNodeConfiguration>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_configuration_revisions: Vec<NodeConfigurationRevision>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Fields this build does not know, kept as they came.
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(feature = "kube", schemars(skip))]
    pub extra: BTreeMap<String, Value>,
}

/// `status.pendingNodeConfiguration`: a staged configuration awaiting adoption.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PendingNodeConfiguration {
    /// RFC 3339 timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_profile: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
}

/// One entry of `status.nodeConfigurationRevisions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct NodeConfigurationRevision {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_nodes: Option<i32>,
    /// RFC 3339 timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_profile: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
}

/// A NodePool condition (Kubernetes `metav1.Condition` shape).
///
/// `last_transition_time` stays the raw RFC 3339 string so that one malformed timestamp does
/// not make the whole pool unreadable; the projection parses it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "kube", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: ConditionType,
    #[serde(default)]
    pub status: ConditionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
