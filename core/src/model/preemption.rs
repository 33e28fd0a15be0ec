//! Preemptions on the wire: each preempted node's timeline and what it hit.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::CapacityType;

use crate::domain::preemption::timeline::{GraceFit, Timeline};

/// A pod on a preempted node at T=0: the blast radius.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PodImpact {
    pub namespace: String,
    pub name: String,
    /// The first owner reference's kind and name (`ReplicaSet/api-7c9`, `Job/train`), if any.
    pub owner_kind: Option<String>,
    pub owner_name: Option<String>,
    /// Active pods of the same owner in the namespace at T=0 (`None` for a bare pod).
    #[serde(default)]
    pub replicas: Option<u32>,
    /// The PodDisruptionBudget that selects the pod, if any.
    #[serde(default)]
    pub pdb: Option<String>,
    /// How the pod ended, read once the node is gone: `Failed: Terminated` (GKE's graceful
    /// node shutdown), `Failed: <reason>`, `Succeeded`, `deleted` (evicted or drained; a pod
    /// of the same name with another uid counts as deleted); or, for a pod still there as the
    /// node went (killed at removal), `still running`, `terminating`, `terminating past its
    /// grace period`. `None` until the node is gone.
    #[serde(default)]
    pub outcome: Option<String>,
    /// `terminationGracePeriodSeconds`, seconds (Kubernetes' default 30 when unset).
    pub grace_s: i64,
    /// `priorityClassName` is `system-node-critical` or `system-cluster-critical`: GKE shuts
    /// these pods down last (GKE: Spot VMs).
    #[serde(default)]
    pub system: bool,
    /// The CKS eviction label: `interruptable`, `graceful-interruptible` or none
    /// (CoreWeave: Workload scheduling on CKS, "Pod interruption and eviction policies").
    pub eviction_label: Option<String>,
    /// SIGTERM, the end of the grace period, and whether it fits before removal.
    pub fit: Option<GraceFit>,
    /// GPUs the pod requested (`nvidia.com/gpu`, a limit standing for an absent request).
    #[serde(default)]
    pub gpus: u32,
    /// The pod's last start (its newest running container's `startedAt`, else the pod's
    /// `status.startTime`), for a pod running at T=0; `None` for a pod already finished then
    /// or not yet started. The work lost runs from here to the node's end.
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
}

/// A pod that a preemption hit, as the ledger keeps it: the node's lifetime (T=0, pool,
/// zone) and the pod's row with how it ended. `GET /api/v1/ledger/pod-hits`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PodHit {
    pub node: crate::model::Lifetime,
    pub pod: PodImpact,
}

/// One preempted (or being preempted) node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PreemptionView {
    pub cluster: String,
    pub node: String,
    pub uid: String,
    pub pool: Option<String>,
    pub zone: Option<String>,
    pub instance_type: Option<String>,
    pub capacity_type: CapacityType,
    pub timeline: Timeline,
    /// Pods on the node at T=0; `None` while they are being read.
    pub pods: Option<Vec<PodImpact>>,
    /// Why the pods could not be read, if they could not.
    pub pods_error: Option<String>,
    /// Refused evictions (from the node's events) and, once the node is gone, pods past
    /// their grace period or killed at removal (`domain::preemption::evictions`).
    #[serde(default)]
    pub evictions: Vec<crate::domain::preemption::evictions::EvictionError>,
    /// A preemption drill, not a preemption (`drill.spotboard.dev/started-at` on the node):
    /// shown with the same timeline, left out of rates, waves, alerts and savings.
    #[serde(default)]
    pub drill: bool,
}

/// Preemptions close together in one cluster: one notification, not one per node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Wave {
    pub cluster: String,
    pub started: Option<DateTime<Utc>>,
    pub last: Option<DateTime<Utc>>,
    /// The wave's nodes in the order they were preempted: all of them in the preemption
    /// tracker and the alert webhook's message; on the live stream and in
    /// `GET /api/v1/preemptions`, the first [`Wave::STREAM_NODES`] ([`Wave::for_stream`]).
    pub nodes: Vec<String>,
    /// How many nodes the wave took (all of them, wherever `nodes` is cut short).
    #[serde(default)]
    pub node_count: usize,
}

/// `GET /api/v1/preemptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Preemptions {
    pub now: Option<DateTime<Utc>>,
    /// Active first (by T=0), then recent (removed within the last hour).
    pub nodes: Vec<PreemptionView>,
    pub waves: Vec<Wave>,
    /// Preemption rates from the ledger per pool, zone and instance type over 24 h / 7 d / 30 d.
    #[serde(default)]
    pub rates: Vec<crate::domain::preemption::rates::RateRow>,
    /// Alerts firing now, by key.
    #[serde(default)]
    pub firing: Vec<super::Alert>,
    /// Alert messages the `--alert-webhook` did not take after every retry, newest first.
    #[serde(default)]
    pub undelivered: Vec<UndeliveredAlert>,
}

/// An alert message (firing or resolved) the webhook did not take.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UndeliveredAlert {
    /// The alert's key ([`super::Alert::key`]).
    #[serde(default)]
    pub alert: String,
    #[serde(default)]
    pub status: super::AlertStatus,
    #[serde(default)]
    pub summary: String,
    pub cluster: String,
    /// When the episode started (a wave's first T=0).
    pub started: Option<DateTime<Utc>>,
    /// A wave's nodes; 0 for other kinds.
    pub nodes: usize,
    /// Where it was sent: scheme and host only (a webhook URL's path is often its secret).
    pub destination: String,
    pub attempts: u32,
    /// The last attempt's error, without the URL.
    pub error: String,
    pub at: Option<DateTime<Utc>>,
}

impl Wave {
    /// Node names a wave carries on the live stream. Its row changes at each node it takes,
    /// and a patch carries a changed list whole: with every name, a 2,000-node wave sent
    /// 6.5 MB of names to each `/preemptions` tab (700 patches of up to 20 KB).
    pub const STREAM_NODES: usize = 10;

    /// How many nodes the wave took, whether `nodes` holds them all or is cut short.
    pub fn size(&self) -> usize {
        self.node_count.max(self.nodes.len())
    }

    /// The wave as the stream carries it: the first [`Self::STREAM_NODES`] names and the count.
    pub fn for_stream(mut self) -> Self {
        self.node_count = self.size();
        self.nodes.truncate(Self::STREAM_NODES);
        self
    }

    /// The wave's key on the live stream: its cluster and first T=0.
    pub fn key(&self) -> String {
        let started = self.started.map(|t| t.to_rfc3339()).unwrap_or_default();
        format!("{}/{started}", self.cluster)
    }
}

impl UndeliveredAlert {
    /// The row's key on the live stream: the alert, its episode's start, its status and
    /// the destination (two episodes of one alert are two rows).
    pub fn key(&self) -> String {
        let status = match self.status {
            super::AlertStatus::Firing => "firing",
            super::AlertStatus::Resolved => "resolved",
        };
        let started = self.started.map(|t| t.to_rfc3339()).unwrap_or_default();
        format!("{}/{started}/{status}/{}", self.alert, self.destination)
    }
}

impl PreemptionView {
    /// Active before removed, then newest T=0 first, then by node name: the order of the
    /// JSON API's preemptions.
    pub fn order(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.timeline
            .removed()
            .cmp(&b.timeline.removed())
            .then(b.timeline.t0.cmp(&a.timeline.t0))
            .then(a.node.cmp(&b.node))
    }
}
