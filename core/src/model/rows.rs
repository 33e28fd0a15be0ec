use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::nodepool::{ComputeClass, ConditionType};
use crate::{CapacityType, Provider};

/// How healthy the watch of one cluster is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// The first list has not finished yet.
    #[default]
    Connecting,
    /// Every watch of the cluster is established and current.
    Live,
    /// A watch failed and is being retried with backoff; data shown is as of `since`.
    Stale,
}

impl LinkState {
    /// The CSS/visual variant name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connecting => "connecting",
            Self::Live => "live",
            Self::Stale => "stale",
        }
    }
}

/// One watched cluster (on CKS, one zone).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterRow {
    /// The cluster name (kubeconfig context, or the embedded zone's context name).
    pub name: String,
    /// The zone the cluster is in, when known.
    #[serde(default)]
    pub zone: Option<String>,
    pub state: LinkState,
    /// When `state` began (for `Stale`: the time of the last good data).
    #[serde(default)]
    pub since: Option<DateTime<Utc>>,
    /// The last watch error, if any.
    #[serde(default)]
    pub message: Option<String>,
    /// A lasting remark about the cluster that is not an error of the link, e.g. that it does
    /// not serve the NodePool CRD.
    #[serde(default)]
    pub note: Option<String>,
    /// Nodes of the cluster under their provider's preemption notice now: the sum of its
    /// pools' `nodes_preempting` as published, kept by the hub. Every page's header counts
    /// these: a pool page receives only its own pool's row.
    #[serde(default)]
    pub nodes_preempting: u32,
}

impl ClusterRow {
    /// The key of a cluster row: its name.
    pub fn key(&self) -> &str {
        &self.name
    }
}

/// How a condition should look: derived from type, status and reason by
/// [`crate::domain::conditions::severity`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Healthy.
    Ok,
    /// Normal transition (e.g. scaling towards target).
    Progressing,
    /// Needs attention; will likely resolve on its own (e.g. queued for capacity).
    Warning,
    /// Will not resolve without action (e.g. invalid spec, zero quota).
    Error,
    /// Not reported, or a value this build does not know.
    #[default]
    Unknown,
}

impl Severity {
    /// The CSS/visual variant name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Progressing => "progressing",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Unknown => "unknown",
        }
    }
}

/// One NodePool condition, ready to show.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConditionView {
    /// Condition type, e.g. `Capacity` (GKE and Karpenter pools: `Ready`, kept as `Other`).
    #[serde(rename = "type")]
    pub type_: ConditionType,
    /// `True`, `False`, `Unknown`, or absent (empty) when the pool does not report it.
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    /// When the condition last changed status.
    #[serde(default)]
    pub last_transition: Option<DateTime<Utc>>,
    pub severity: Severity,
}

/// One NodePool, as the Node Pools dashboard shows it. Keyed by the NodePool's uid.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolRow {
    /// The NodePool's `metadata.uid`; for GKE and Karpenter pools seen through their nodes,
    /// `provider:cluster:name`.
    pub key: String,
    /// `cks` for CoreWeave NodePools, `gke` for GKE node pools (nodes grouped by
    /// `cloud.google.com/gke-nodepool`), `karpenter` for Karpenter NodePools (nodes grouped by
    /// `karpenter.sh/nodepool`).
    pub provider: Provider,
    /// `spot`, `on-demand`, `reserved`, `mixed` (nodes of several types) or `unknown`. CKS:
    /// from `computeClass` (`default` pools run reserved or on-demand capacity and show as
    /// `on-demand`); GKE and Karpenter: from the nodes' labels.
    #[serde(default)]
    pub capacity_type: CapacityType,
    /// The spot pools this on-demand NodePool stands in for: its `spotboard.dev/fallback-for`
    /// annotation ([`super::FALLBACK_FOR_ANNOTATION`]), split at commas; empty without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_for: Vec<String>,
    /// A Karpenter NodePool whose requirements allow both `spot` and `on-demand`
    /// (`karpenter.sh/capacity-type`); false for every other pool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allows_spot_and_on_demand: bool,
    pub cluster: String,
    #[serde(default)]
    pub zone: Option<String>,
    pub name: String,
    /// `spec.computeClass` (`default`, `spot`, or an unknown value verbatim); `None` for a
    /// GKE or Karpenter pool, which has none, or a NodePool whose spec could not be read.
    /// Serialized as the text, `""` for `None` (the stream's format before it was typed).
    #[serde(with = "class_text")]
    pub compute_class: Option<ComputeClass>,
    pub instance_type: String,
    /// GPUs per node from the shipped catalog; `None` for an unknown instance type.
    #[serde(default)]
    pub gpus_per_node: Option<u32>,
    pub target_nodes: i32,
    #[serde(default)]
    pub min_nodes: Option<i32>,
    #[serde(default)]
    pub max_nodes: Option<i32>,
    pub autoscaling: bool,
    /// `status.queuedNodes`, `None` when the pool has no status yet.
    #[serde(default)]
    pub queued_nodes: Option<i32>,
    #[serde(default)]
    pub in_progress: Option<i32>,
    #[serde(default)]
    pub current_nodes: Option<i32>,
    /// The five CoreWeave conditions in fixed order, then any others the pool reports.
    pub conditions: Vec<ConditionView>,
    /// Nodes of this pool seen in the cluster that are cordoned.
    #[serde(default)]
    pub nodes_cordoned: u32,
    /// Nodes of this pool under their provider's preemption notice (CKS:
    /// `qos.coreweave.cloud/pending-preemption=true`).
    #[serde(default)]
    pub nodes_preempting: u32,
    /// GPUs on the pool's nodes (each node's `gpus`: its capacity, else the catalog's).
    #[serde(default)]
    pub gpus_allocatable: u32,
    /// GPUs the running pods on the pool's nodes request; idle GPUs are
    /// `gpus_allocatable - gpus_requested`.
    #[serde(default)]
    pub gpus_requested: u32,
    #[serde(default)]
    pub created: Option<DateTime<Utc>>,
    /// Why this pool needs attention, one sentence each; empty when healthy.
    #[serde(default)]
    pub problems: Vec<String>,
    /// Set when the object could not be read as a NodePool: the reason, shown in place of
    /// the fields that could not be read.
    #[serde(default)]
    pub malformed: Option<String>,
    /// Details shown on the pool page.
    #[serde(default)]
    pub detail: PoolDetail,
}

impl PoolRow {
    /// GPUs of the pool's nodes held by running pods: their requests, never more than the
    /// nodes have (a count caught mid-change that asks for more allocates all of them).
    pub fn gpus_in_use(&self) -> u32 {
        self.gpus_requested.min(self.gpus_allocatable)
    }

    /// GPUs of the pool's nodes no running pod requests.
    pub fn gpus_idle(&self) -> u32 {
        self.gpus_allocatable - self.gpus_in_use()
    }

    /// `spec.computeClass` as text, `""` when the pool has none.
    pub fn compute_class_text(&self) -> &str {
        self.compute_class.as_ref().map_or("", ComputeClass::as_str)
    }

    /// Whether the dashboard's "has a problem" filter keeps this pool.
    pub fn has_problem(&self) -> bool {
        !self.problems.is_empty() || self.malformed.is_some()
    }
}

/// The rest of a NodePool's spec and status, for the pool page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolDetail {
    #[serde(default)]
    pub node_labels: BTreeMap<String, String>,
    /// Labels a GKE or Karpenter pool's nodes carry, each with the values they may have:
    /// a Karpenter NodePool's `In` requirements beyond capacity type, instance type and zone
    /// (e.g. `karpenter.k8s.aws/instance-gpu-name: [a10g]`), and the GPU model its nodes are
    /// labelled with (GKE `cloud.google.com/gke-accelerator`, Karpenter
    /// `karpenter.k8s.aws/instance-gpu-name`). A waiting pod's selector is judged against
    /// them as against `node_labels`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_label_values: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub node_annotations: BTreeMap<String, String>,
    /// Taints as `key=value:Effect`.
    #[serde(default)]
    pub node_taints: Vec<String>,
    /// `image.name` / kernel / release train, as one line; `None` when unset.
    #[serde(default)]
    pub image: Option<String>,
    /// `gpu.version`; note that it is ignored when `image` is set.
    #[serde(default)]
    pub gpu_version: Option<String>,
    #[serde(default)]
    pub scale_down_strategy: Option<String>,
    #[serde(default)]
    pub update_strategy: Option<String>,
    #[serde(default)]
    pub node_profile: Option<String>,
    /// Summary lines of `status.pendingNodeConfiguration`.
    #[serde(default)]
    pub pending_configuration: Vec<String>,
    /// Spec or status fields this build does not know, as `path = JSON`.
    #[serde(default)]
    pub unknown_fields: Vec<String>,
    /// GKE and Karpenter pools: what their provider's object says, as `(field, value)` lines
    /// (Karpenter: requirements, limits, disruption). Empty for CKS NodePools.
    #[serde(default)]
    pub provider_spec: Vec<(String, String)>,
    /// `metadata.generation`.
    #[serde(default)]
    pub generation: Option<i64>,
}

/// One Kubernetes Node. Keyed by the Node's uid.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeRow {
    pub key: String,
    pub cluster: String,
    pub name: String,
    /// The NodePool from `compute.coreweave.com/node-pool`; `None` when the label is missing.
    #[serde(default)]
    pub pool: Option<String>,
    #[serde(default)]
    pub instance_type: Option<String>,
    #[serde(default)]
    pub zone: Option<String>,
    /// `node.coreweave.cloud/state`, e.g. `production`.
    #[serde(default)]
    pub state: Option<String>,
    /// The `Ready` condition; `None` when not reported.
    #[serde(default)]
    pub ready: Option<bool>,
    /// When the `Ready` condition last changed status (its lastTransitionTime): see
    /// [`NodeRow::ready_since`] and [`NodeRow::not_ready_since`]. Server-side only: no view
    /// shows it, so it stays off the wire (a change of readiness also changes `ready`, which
    /// is sent).
    #[serde(skip)]
    pub ready_changed: Option<DateTime<Utc>>,
    /// `spec.unschedulable`.
    pub cordoned: bool,
    /// `qos.coreweave.cloud/pending-preemption=true` is set (T=0 of a preemption).
    pub pending_preemption: bool,
    /// `qos.coreweave.cloud/evicted-at` as sent (T+2 min: the drain has started).
    #[serde(default)]
    pub evicted_at: Option<String>,
    /// Pods bound to the node.
    pub pods: u32,
    #[serde(default)]
    pub created: Option<DateTime<Utc>>,
    /// `cks`, `gke`, `karpenter` or `unknown`, from the node's labels.
    #[serde(default)]
    pub provider: Provider,
    /// `spot`, `on-demand`, `reserved` or `unknown` (CKS: from the pool's computeClass).
    #[serde(default)]
    pub capacity_type: CapacityType,
    /// The provider's preemption notice is on the node.
    #[serde(default)]
    pub notice: bool,
    /// The node carries spotboard's drill annotation (`drill.spotboard.dev/started-at`): its
    /// notice is a rehearsal, not a preemption.
    #[serde(default)]
    pub drill: bool,
    /// GPUs on the node (`nvidia.com/gpu`), from where [`NodeRow::gpus_from`] says; `None`
    /// when neither the node nor the catalog knows (a CPU machine type of GKE or AWS).
    #[serde(default)]
    pub gpus: Option<u32>,
    #[serde(default)]
    pub gpus_from: GpuSource,
    /// GPUs requested by the running pods bound to the node (`nvidia.com/gpu`, requests or
    /// else limits); the node's idle GPUs are `gpus` less this.
    #[serde(default)]
    pub gpus_requested: u32,
}

impl NodeRow {
    /// When it last turned Ready (the `Ready` condition's lastTransitionTime): the ledger's
    /// replacement latency ends there. `None` while not Ready or when the kubelet gave no
    /// time.
    pub fn ready_since(&self) -> Option<DateTime<Utc>> {
        self.ready_changed.filter(|_| self.ready == Some(true))
    }

    /// Since when it reports not Ready (`Ready` False or Unknown, its lastTransitionTime);
    /// `None` while Ready, when no Ready condition is reported, or when no time was given.
    pub fn not_ready_since(&self) -> Option<DateTime<Utc>> {
        self.ready_changed.filter(|_| self.ready == Some(false))
    }
}

/// Where a node's GPU count comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GpuSource {
    /// Neither source knows the count.
    #[default]
    Unknown,
    /// The Node's `status.capacity["nvidia.com/gpu"]`: what the NVIDIA device plugin
    /// advertises, the truth for every provider once the plugin runs.
    Capacity,
    /// spotboard's instance-type catalog (CoreWeave's published instance types), for a node
    /// whose capacity gives no GPU count yet (the device plugin still starting).
    Catalog,
}

crate::open_enum! {
    /// A Kubernetes Event's `type` (Kubernetes API reference: Event v1).
    EventType, default = Normal {
        Normal = "Normal",
        Warning = "Warning",
    }
}

/// One Kubernetes Event about a NodePool or a Node. Keyed by the Event's uid.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    pub key: String,
    pub cluster: String,
    /// The NodePool the event concerns: the involved NodePool, or the involved node's pool.
    #[serde(default)]
    pub pool: Option<String>,
    /// `Kind/name` of the involved object.
    pub object: String,
    /// `Normal` or `Warning` (an unknown type is kept verbatim).
    pub type_: EventType,
    pub reason: String,
    pub message: String,
    pub count: i32,
    /// Last time the event was seen.
    #[serde(default)]
    pub last_seen: Option<DateTime<Utc>>,
    /// The event carries spotboard's drill annotation: written by a preemption drill.
    #[serde(default)]
    pub drill: bool,
}

/// [`PoolRow::compute_class`] on the wire: the class's text, `""` for none.
mod class_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::nodepool::ComputeClass;

    pub fn serialize<S: Serializer>(class: &Option<ComputeClass>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(class.as_ref().map_or("", ComputeClass::as_str))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ComputeClass>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok((!text.is_empty()).then(|| ComputeClass::from(text.as_ref())))
    }
}
