//! The trimmed objects the hub stores: only what the projections read.
//!
//! A Kubernetes `Pod` decodes to several kilobytes; its record here is a node name and a
//! shared copy of its workload's facts. Trimming
//! at the watch keeps 10k nodes and 50k pods within the dashboard's memory budget
//! (generic dashboards that keep whole objects collapse on big clusters).

use chrono::{DateTime, Utc};
use spotboard_core::domain::preemption::readiness::PodFacts;
use spotboard_core::nodepool::{NodePoolSpec, NodePoolStatus};
use spotboard_core::{CapacityType, Provider};
use std::sync::Arc;

/// A NodePool as stored: its spec and status, or why they could not be read.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolRecord {
    pub uid: String,
    pub name: String,
    pub generation: Option<i64>,
    pub created: Option<DateTime<Utc>>,
    /// The spot pools named by its `spotboard.dev/fallback-for` annotation, trimmed, empty
    /// names dropped.
    pub fallback_for: Vec<String>,
    /// The parsed spec and status, or the reason (with the JSON path) the object is malformed.
    pub parsed: Result<(NodePoolSpec, NodePoolStatus), String>,
}

/// A Karpenter NodePool (`karpenter.sh/v1`) as stored: what its spec allows and its status
/// conditions (Karpenter: NodePools).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KarpenterPoolRecord {
    pub uid: String,
    pub name: String,
    pub created: Option<DateTime<Utc>>,
    /// `spec.template.spec.requirements` values for `karpenter.sh/capacity-type` (Karpenter
    /// defaults to on-demand when absent).
    pub capacity_types: Vec<String>,
    /// ... for `node.kubernetes.io/instance-type` (empty: any).
    pub instance_types: Vec<String>,
    /// ... for `topology.kubernetes.io/zone` (empty: any).
    pub zones: Vec<String>,
    /// Its other `In` requirements (key, values), e.g.
    /// `karpenter.k8s.aws/instance-gpu-name` → `[a10g]`: at most 32 keys of 32 values.
    pub requirements: Vec<(String, Vec<String>)>,
    /// `spec.limits`, e.g. `cpu` → `1000`.
    pub limits: Vec<(String, String)>,
    /// `spec.disruption.consolidationPolicy`.
    pub consolidation: Option<String>,
    /// `spec.disruption.budgets`, one line each (`nodes 20% (0 9 * * 1-5 for 8h)`).
    pub budgets: Vec<String>,
    /// `status.conditions`.
    pub conditions: Vec<spotboard_core::nodepool::Condition>,
    /// Why the object could not be read, if it could not (the row still shows).
    pub malformed: Option<String>,
}

/// A Node as stored. The values its pool's other nodes repeat are shared copies
/// ([`super::names::shared`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeRecord {
    /// Shared by the hub's maps of the node (by uid, by name, by pool).
    pub uid: Arc<str>,
    pub name: Arc<str>,
    /// `compute.coreweave.com/node-pool` (CKS), `cloud.google.com/gke-nodepool` (GKE) or
    /// `karpenter.sh/nodepool` (Karpenter).
    pub pool: Option<Arc<str>>,
    pub instance_type: Option<Arc<str>>,
    pub zone: Option<Arc<str>>,
    /// `node.coreweave.cloud/state`.
    pub state: Option<Arc<str>>,
    pub ready: Option<bool>,
    /// When the `Ready` condition last changed status (its lastTransitionTime): since when
    /// the node is Ready, or not; `None` when the kubelet gave no time.
    pub ready_changed: Option<DateTime<Utc>>,
    /// `spec.unschedulable`.
    pub cordoned: bool,
    /// `qos.coreweave.cloud/pending-preemption == "true"`.
    pub pending_preemption: bool,
    /// `qos.coreweave.cloud/evicted-at`.
    pub evicted_at: Option<String>,
    pub created: Option<DateTime<Utc>>,
    /// From the labels: CKS, GKE or Karpenter (`spotboard_core::domain::preemption::classify`).
    pub provider: Provider,
    /// What the node's own labels say (GKE, Karpenter); `Unknown` for a CKS node, whose
    /// capacity type is its NodePool's `computeClass`. The node row's capacity type is
    /// decided from this by `projection::capacity_type`.
    pub capacity: CapacityType,
    /// The provider's preemption signal is on the node itself
    /// (`spotboard_core::domain::preemption::notice`). The node row's `notice` is decided
    /// from this by `projection::notice`.
    pub notice: bool,
    /// spotboard's drill annotation (`drill.spotboard.dev/started-at`) is on the node.
    pub drill: bool,
    /// `status.capacity["nvidia.com/gpu"]` when a positive whole number: the GPUs the NVIDIA
    /// device plugin advertises (absent or 0 while the plugin starts, and on CPU nodes).
    pub gpus: Option<u32>,
    /// The GPU model label of a GKE (`cloud.google.com/gke-accelerator`) or Karpenter
    /// (`karpenter.k8s.aws/instance-gpu-name`) node, shared.
    pub accelerator: Option<Arc<str>>,
    /// `status.allocatable.cpu`, millicores: what pods may request (capacity less the
    /// provider's reservations); `None` when not reported or not a quantity.
    pub cpu_allocatable_m: Option<u64>,
    /// `status.allocatable.memory`, bytes.
    pub memory_allocatable_b: Option<u64>,
}

/// A Pod as stored: which node it is bound to, while it terminates when its grace period
/// ends, and what the readiness audit reads of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodRecord {
    pub uid: String,
    pub node: Option<String>,
    /// `metadata.deletionTimestamp`: the API server sets it to the delete's time plus the
    /// grace period, so a pod still there after it is terminating past its grace period.
    pub grace_ends: Option<DateTime<Utc>>,
    /// The facts its workload's replicas share ([`PodFacts::template`]), one copy for all.
    pub facts: Arc<PodFacts>,
    /// Why it waits for a node, while it does (`None` for nearly every pod).
    pub pending: Option<Box<PendingRecord>>,
}

/// A pod waiting for a node: what the hub keeps of it beyond its shared facts (its own
/// message and selector, a few hundred bytes, for waiting pods only).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PendingRecord {
    pub namespace: String,
    pub name: String,
    pub kind: spotboard_core::model::WaitKind,
    /// The `PodScheduled` condition's `lastTransitionTime`.
    pub since: Option<DateTime<Utc>>,
    /// Its message, at most [`spotboard_core::domain::waiting::scheduler_message::MAX_MESSAGE`]
    /// bytes.
    pub message: String,
    pub node_selector: std::collections::BTreeMap<String, String>,
    /// Required node affinity's terms (see [`spotboard_core::model::WaitingPod::node_affinity`]).
    pub node_affinity: Vec<spotboard_core::domain::selector::Selector>,
    pub gates: Vec<String>,
    pub tolerations: Vec<spotboard_core::model::Toleration>,
}

/// A Namespace as stored: its labels, shared by the pods read with them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NamespaceRecord {
    pub uid: String,
    pub name: String,
    /// At most [`super::trim::namespaces::MAX_LABELS`].
    pub labels: Arc<std::collections::BTreeMap<String, String>>,
}

/// An Event about a NodePool or a Node, as stored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventRecord {
    pub uid: String,
    /// `NodePool`, `Node`, or `Pod` (only the reasons of
    /// `spotboard_core::model::SCHEDULING_EVENT_REASONS`).
    pub kind: String,
    /// The involved object's namespace (a pod's; empty for cluster-scoped objects).
    pub namespace: String,
    pub object_name: String,
    /// Who wrote it: `source.component`, else `reportingComponent`.
    pub source: String,
    pub type_: String,
    pub reason: String,
    pub message: String,
    pub count: i32,
    pub last_seen: Option<DateTime<Utc>>,
    /// spotboard's drill annotation is on the event.
    pub drill: bool,
}

/// A change seen by one watch of one cluster.
#[derive(Clone, Debug)]
pub enum Observed<R> {
    /// An object was added or changed.
    Apply(R),
    /// An object was deleted (by uid).
    Delete(String),
    /// A full re-list finished: these are all the objects of the kind.
    Resync(Vec<R>),
}
