//! Kueue on the wire: each ClusterQueue with its pending and admitted workloads and the
//! ResourceFlavors it admits into (`GET /api/v1/kueue`, and the stream's `queue` rows).
//!
//! Source: Kueue's API reference for `kueue.x-k8s.io/v1beta1` (ClusterQueue, LocalQueue,
//! ResourceFlavor, Workload) and its concepts pages (Kueue: Cluster Queue, Kueue: Resource
//! Flavor, Kueue: Workload); URLs in `docs/sources.md`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::CapacityType;

/// One ResourceFlavor of a ClusterQueue, as the queue's row shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueFlavor {
    /// The ResourceFlavor's name.
    pub name: String,
    /// What its nodes are: the capacity type of the pools its `nodeLabels` select (one type,
    /// or `mixed` when they differ), else what the labels say themselves (GKE
    /// `cloud.google.com/gke-spot`, `karpenter.sh/capacity-type`), else `unknown`.
    pub capacity_type: CapacityType,
    /// The pools of the cluster whose nodes carry every one of its `nodeLabels`, sorted. Empty:
    /// no pool gives its nodes those labels, so what Kueue admits into it has nowhere to run.
    #[serde(default)]
    pub pools: Vec<String>,
    /// The ClusterQueue's `nominalQuota` of `nvidia.com/gpu` in this flavor, in GPUs; `None`
    /// when the queue covers no GPUs in it.
    #[serde(default)]
    pub gpu_quota: Option<u32>,
    /// GPUs of the queue's admitted (and quota-reserving) workloads in this flavor.
    pub gpus_admitted: u32,
}

impl QueueFlavor {
    /// What its nodes are, as the pages write it after its name: ` (spot)`; empty when
    /// unknown.
    pub fn kind_suffix(&self) -> String {
        match self.capacity_type {
            CapacityType::Unknown => String::new(),
            t => format!(" ({t})"),
        }
    }
}

/// One ClusterQueue of one cluster now. Keyed on the stream by [`QueueRow::key`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueRow {
    pub cluster: String,
    /// The ClusterQueue's name.
    pub name: String,
    /// `spec.cohort`: queues of a cohort borrow each other's unused quota.
    #[serde(default)]
    pub cohort: Option<String>,
    /// Whether its `Active` condition is `True` (Kueue admits nothing into an inactive queue,
    /// e.g. one naming a ResourceFlavor that does not exist).
    pub active: bool,
    /// `reason: message` of the `Active` condition when it is not `True`.
    #[serde(default)]
    pub inactive_reason: Option<String>,
    /// Its ResourceFlavors in the queue's order (the order Kueue tries them).
    #[serde(default)]
    pub flavors: Vec<QueueFlavor>,
    /// Workloads of its LocalQueues without quota reserved (not finished, not deactivated).
    pub pending_workloads: u32,
    /// Their `nvidia.com/gpu` requests: each pod set's count × its pod's GPUs, summed.
    pub pending_gpus: u32,
    /// When the longest-waiting one started waiting: its `QuotaReserved=False` condition's
    /// `lastTransitionTime` (a workload evicted and requeued waits from then), else its
    /// creation.
    #[serde(default)]
    pub oldest_pending_since: Option<DateTime<Utc>>,
    /// That workload, `namespace/name`.
    #[serde(default)]
    pub oldest_pending: Option<String>,
    /// Kueue's message on that workload's `QuotaReserved` condition, e.g. "couldn't assign
    /// flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor
    /// h100-spot, 8 more needed". Empty when Kueue wrote none yet.
    #[serde(default)]
    pub pending_message: String,
    /// Workloads with quota reserved and not yet `Admitted` (admission checks pending).
    pub reserving_workloads: u32,
    /// `Admitted` workloads, unfinished, by the capacity type of the flavor their GPUs (else
    /// their first resource) were assigned.
    pub admitted_spot: u32,
    pub admitted_on_demand: u32,
    /// ... in a flavor of another or unknown capacity type.
    pub admitted_other: u32,
    /// The GPUs of those admitted workloads, the same three ways.
    pub admitted_gpus_spot: u32,
    pub admitted_gpus_on_demand: u32,
    pub admitted_gpus_other: u32,
}

impl QueueRow {
    /// The stream key: `cluster/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.cluster, self.name)
    }

    /// Admitted workloads, every capacity type.
    pub fn admitted(&self) -> u32 {
        self.admitted_spot + self.admitted_on_demand + self.admitted_other
    }

    /// GPU quota over every flavor (`None` when no flavor covers GPUs) and GPUs admitted.
    pub fn gpu_quota(&self) -> Option<(u32, u32)> {
        let quota: Option<u32> = self
            .flavors
            .iter()
            .filter_map(|f| f.gpu_quota)
            .reduce(|a, b| a + b);
        quota.map(|q| (q, self.flavors.iter().map(|f| f.gpus_admitted).sum()))
    }
}

/// A Workload waiting for quota, for `GET /api/v1/kueue`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PendingWorkload {
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    /// `spec.queueName`: its LocalQueue.
    pub queue: String,
    /// The ClusterQueue that LocalQueue points at; `None` when no such LocalQueue exists
    /// in the namespace (Kueue then leaves the workload pending for ever).
    #[serde(default)]
    pub cluster_queue: Option<String>,
    /// GPUs it asks for (each pod set's count × its pod's `nvidia.com/gpu`).
    pub gpus: u32,
    /// Waiting since, as [`QueueRow::oldest_pending_since`] reads it.
    #[serde(default)]
    pub since: Option<DateTime<Utc>>,
    /// Kueue's `QuotaReserved` message (or, with no LocalQueue, spotboard's).
    #[serde(default)]
    pub message: String,
}

/// A Workload with quota reserved, for `GET /api/v1/kueue`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AdmittedWorkload {
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    /// `status.admission.clusterQueue`.
    pub cluster_queue: String,
    /// The ResourceFlavor its GPUs were assigned (else its first resource's).
    #[serde(default)]
    pub flavor: Option<String>,
    /// That flavor's capacity type ([`QueueFlavor::capacity_type`]).
    pub capacity_type: CapacityType,
    pub gpus: u32,
    /// `true` while quota is reserved and `Admitted` is not yet `True` (admission checks).
    #[serde(default)]
    pub reserving: bool,
}

/// `GET /api/v1/kueue`: every ClusterQueue's row, every pending workload (longest waiting
/// first) and every admitted one (by namespace and name). All empty on clusters without
/// Kueue.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KueueReport {
    pub queues: Vec<QueueRow>,
    pub pending: Vec<PendingWorkload>,
    #[serde(default)]
    pub admitted: Vec<AdmittedWorkload>,
}
