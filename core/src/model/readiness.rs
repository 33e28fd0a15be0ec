//! The spot readiness audit on the wire (`GET /api/v1/readiness`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Provider;

/// One readiness check. Each says why it matters in [`Check::why`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// Only one replica of the workload runs.
    SingleReplica,
    /// No PodDisruptionBudget selects the workload's pods.
    NoPdb,
    /// The pod's `terminationGracePeriodSeconds` is longer than the time between SIGTERM and
    /// the node's removal in the provider's notice window.
    GraceExceedsNotice,
    /// Every replica runs in one zone.
    OneZone,
    /// A StatefulSet pod.
    StatefulSet,
    /// The pod carries `qos.coreweave.com/graceful-interruptible` (CoreWeave: Workload
    /// scheduling on CKS, eviction policies).
    GracefulInterruptible,
    /// No container has a preStop hook.
    NoPreStop,
    /// The workload's PodDisruptionBudget allows fewer disruptions than the pods it has on
    /// one spot node: that node's drain is refused for the rest, and on Spot the node goes
    /// anyway at the end of the notice window.
    PdbBlocksDrain,
}

impl Check {
    pub const ALL: [Check; 8] = [
        Check::SingleReplica,
        Check::NoPdb,
        Check::GraceExceedsNotice,
        Check::OneZone,
        Check::StatefulSet,
        Check::GracefulInterruptible,
        Check::NoPreStop,
        Check::PdbBlocksDrain,
    ];

    /// A short title for the check.
    pub fn title(self) -> &'static str {
        match self {
            Check::SingleReplica => "one replica",
            Check::NoPdb => "no PodDisruptionBudget",
            Check::GraceExceedsNotice => "grace period longer than the notice window",
            Check::OneZone => "all replicas in one zone",
            Check::StatefulSet => "StatefulSet",
            Check::GracefulInterruptible => "graceful-interruptible",
            Check::NoPreStop => "no preStop hook",
            Check::PdbBlocksDrain => "PodDisruptionBudget blocks a drain",
        }
    }

    /// Why the finding matters on spot capacity.
    pub fn why(self) -> &'static str {
        match self {
            Check::SingleReplica => {
                "A preemption takes the whole workload down until a replacement pod is scheduled and ready."
            }
            Check::NoPdb => {
                "Nothing limits how many replicas a drain may evict at once; a wave of preemptions can take them all."
            }
            Check::GraceExceedsNotice => {
                "The node is gone before the grace period ends: the pod is killed (SIGKILL) mid-shutdown."
            }
            Check::OneZone => {
                "Spot capacity is reclaimed per zone; one reclaim can hit every replica together."
            }
            Check::StatefulSet => {
                "Its replacement keeps the same identity and volume, so it waits until the old pod is gone; expect the longest recovery."
            }
            Check::GracefulInterruptible => {
                "CKS waits for these pods to finish before removing a node, so they stall scale-down (CoreWeave CKS docs: eviction policies)."
            }
            Check::NoPreStop => {
                "Without a preStop hook, endpoints can keep sending traffic while the pod shuts down."
            }
            Check::PdbBlocksDrain => {
                "The drain of a preempted node is refused for the pods above the budget; they keep running until the node is removed and are killed with it, without a graceful shutdown."
            }
        }
    }
}

/// One finding: a workload (or a bare pod) in a pool that fails one check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub check: Check,
    pub namespace: String,
    /// `ReplicaSet/web-7c9`, `StatefulSet/cache`, `Pod/debug` for a pod without owner.
    pub workload: String,
    /// Pods of the workload on the pool's spot nodes.
    pub pods: u32,
    /// The figures behind the finding ("grace 600 s, 300 s from SIGTERM to removal").
    pub detail: String,
}

/// The audit of one pool's spot nodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolReadiness {
    pub cluster: String,
    pub pool: String,
    /// `cks`, `gke` or `karpenter`.
    pub provider: Provider,
    /// Spot nodes of the pool audited.
    pub nodes: u32,
    /// Pods audited (DaemonSet pods and finished pods are not).
    pub pods: u32,
    pub findings: Vec<Finding>,
}

impl PoolReadiness {
    /// The key of a pool's audit on the live stream: `cluster/pool`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.cluster, self.pool)
    }
}

/// When one cluster was last audited and what could not be read there, as the live stream
/// carries it (keyed by cluster). Its pools' audits are rows of their own
/// ([`PoolReadiness`], keyed by [`PoolReadiness::key`]): an audit every 15 s of a cluster of
/// 2,000 spot pools sends only the pools whose findings changed, and a pool page receives
/// only its pool's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterAudit {
    pub cluster: String,
    pub generated_at: Option<DateTime<Utc>>,
    /// Why the cluster's pods or PodDisruptionBudgets could not be read, if they could not.
    pub errors: Vec<String>,
}

/// `GET /api/v1/readiness`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Readiness {
    pub generated_at: Option<DateTime<Utc>>,
    pub pools: Vec<PoolReadiness>,
    /// Clusters whose pods or PodDisruptionBudgets could not be read, with the reason.
    pub errors: Vec<String>,
}
