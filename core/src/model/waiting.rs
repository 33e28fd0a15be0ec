//! Waiting work on the wire: pods the scheduler has not placed, with its reasons
//! (`GET /api/v1/waiting`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

pub use crate::domain::waiting::scheduler_message::ReasonCount;

/// Why a pod is not on a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitKind {
    /// `PodScheduled=False`, reason `Unschedulable`: the scheduler found no node.
    #[default]
    Unschedulable,
    /// The pod has `spec.schedulingGates`: the scheduler does not look at it until they are
    /// removed (Kueue and other admission controllers gate pods this way).
    SchedulingGated,
}

/// A pod waiting for a node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitingPod {
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    pub owner_kind: Option<String>,
    pub owner_name: Option<String>,
    pub kind: WaitKind,
    /// GPUs requested (`nvidia.com/gpu`).
    pub gpus: u32,
    /// CPU requested, cores.
    pub cpu: Decimal,
    /// Memory requested, bytes.
    pub memory: u64,
    /// Since when: the `PodScheduled` condition's `lastTransitionTime`; `None` when absent.
    pub since: Option<DateTime<Utc>>,
    /// The scheduler's reasons with their node counts (one `unknown` when its message does
    /// not parse; none for a gated pod).
    pub reasons: Vec<ReasonCount>,
    /// The condition's message as sent (at most 8 KB).
    pub message: String,
    /// The pod's `spec.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// The pod's required node affinity
    /// (`requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`): the terms are
    /// ORed, each term's requirements ANDed; empty when it has none. `matchFields` (node
    /// names) is not judged; an expression that does not read is left out.
    #[serde(default)]
    pub node_affinity: Vec<crate::domain::selector::Selector>,
    /// The scheduling gates' names, for a gated pod.
    pub gates: Vec<String>,
    /// The pod's `spec.tolerations`.
    pub tolerations: Vec<Toleration>,
    /// The pools of its cluster whose nodes it could land on (its nodeSelector against the
    /// labels a pool gives its nodes, its tolerations against the pool's taints); empty when
    /// none: an answer of its own, and usually the bug.
    pub pools: Vec<String>,
    /// Why it waits, in one sentence (`spotboard_core::domain::waiting::pools::cause`).
    pub cause: String,
    /// The scheduler's and the autoscalers' events about it, newest first, at most
    /// [`SCHEDULING_EVENTS_PER_POD`]: kube-scheduler's `FailedScheduling`, Karpenter's
    /// `FailedScheduling` ("incompatible with nodepool …") and `Nominated`, the cluster
    /// autoscaler's `NotTriggerScaleUp` and `TriggeredScaleUp` (GKE). Empty when the cluster
    /// wrote none, or they expired (Kubernetes keeps events an hour).
    #[serde(default)]
    pub events: Vec<SchedulingEvent>,
}

/// The longest scheduling event message kept, in bytes.
pub const SCHEDULING_EVENT_MESSAGE_BYTES: usize = 1024;

/// The most events kept per waiting pod.
pub const SCHEDULING_EVENTS_PER_POD: usize = 4;

/// The event reasons about a pod that say why it is not placed, or what an autoscaler does
/// about it (kube-scheduler, Karpenter: Troubleshooting, the cluster autoscaler FAQ).
pub const SCHEDULING_EVENT_REASONS: [&str; 4] = [
    "FailedScheduling",
    "Nominated",
    "NotTriggerScaleUp",
    "TriggeredScaleUp",
];

/// One event about a waiting pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulingEvent {
    /// Who wrote it: `source.component`, else `reportingComponent` (`default-scheduler`,
    /// `karpenter`, `cluster-autoscaler`).
    pub source: String,
    pub reason: String,
    /// As written, at most 1 KB.
    pub message: String,
    /// How many times it was seen (`count`, aggregated by the writer).
    pub count: i32,
    #[serde(default)]
    pub last_seen: Option<DateTime<Utc>>,
}

/// A pod's toleration (Kubernetes: Taints and Tolerations).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toleration {
    /// Empty with `Exists`: tolerates every taint.
    pub key: String,
    /// `Exists` ignores the value; `Equal` (the default) compares it.
    pub exists: bool,
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule`, `NoExecute`; empty: every effect.
    pub effect: String,
}

/// The work waiting for one pool, or (`pool: None`) all the waiting work of a cluster, each
/// pod once. Keyed on the stream by [`WaitingPool::key`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitingPool {
    pub cluster: String,
    pub pool: Option<String>,
    /// Waiting pods that could land on the pool (of the cluster: all of them).
    pub pods: u32,
    /// Their GPUs.
    pub gpus: u32,
    /// The longest wait's start.
    pub oldest_since: Option<DateTime<Utc>>,
    /// The longest wait's start among the pods requesting GPUs (what the `pending-work`
    /// alert is judged by); `None` when none requests a GPU or none says since when.
    #[serde(default)]
    pub oldest_gpu_since: Option<DateTime<Utc>>,
    /// Why, in one sentence, from the pool's conditions and the pods' reasons (of a
    /// cluster: its commonest pod's cause).
    pub cause: String,
    /// Of a cluster: its waiting pods that no pool can take.
    #[serde(default)]
    pub no_pool: u32,
}

impl WaitingPool {
    /// `cluster/pool`, or `cluster` for a cluster's row.
    pub fn key(&self) -> String {
        match &self.pool {
            Some(p) => format!("{}/{p}", self.cluster),
            None => self.cluster.clone(),
        }
    }
}

/// `GET /api/v1/waiting`: every waiting pod, longest waiting first, and per cluster and pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Waiting {
    pub pods: Vec<WaitingPod>,
    /// One row per cluster with waiting pods (`pool: null`), then one per pool they could
    /// land on.
    pub pools: Vec<WaitingPool>,
    /// The Kueue ClusterQueues (work Kueue holds back has no pods yet), as
    /// `GET /api/v1/kueue` gives them; empty without Kueue, and on the stream's rows.
    #[serde(default)]
    pub queues: Vec<super::QueueRow>,
}
