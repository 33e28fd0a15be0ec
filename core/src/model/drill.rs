//! The preemption drill on the wire: `POST /api/v1/drill` and the pool page's drill panel.
//!
//! A drill rehearses the provider's preemption sequence on one spot node with the user's own
//! identity (`crate::domain::preemption::drill` has the steps). It never deletes a node.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Provider;

/// What a drill request asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DrillMode {
    /// Plan only: who would be hit, their readiness findings, the budgets that would refuse,
    /// and what refuses the drill itself. Writes nothing.
    #[default]
    DryRun,
    /// Start the drill (needs `confirm` equal to the node's name).
    Run,
    /// Stop a running drill and restore the node (uncordon, remove the drill's labels, taints
    /// and annotations).
    Abort,
}

impl DrillMode {
    /// For log lines and the audit trail: `dry-run`, `run` or `abort`.
    pub fn as_str(self) -> &'static str {
        match self {
            DrillMode::DryRun => "dry-run",
            DrillMode::Run => "run",
            DrillMode::Abort => "abort",
        }
    }
}

/// `POST /api/v1/drill`'s body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillRequest {
    /// The cluster's name in the dashboard.
    pub cluster: String,
    /// The Node's name.
    pub node: String,
    #[serde(default)]
    pub mode: DrillMode,
    /// The node's name typed again; required by `run`.
    #[serde(default)]
    pub confirm: Option<String>,
}

/// One phase of the drill: its name and start, seconds since T=0 (the provider's notice
/// window, `crate::domain::preemption::window`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillPhase {
    pub name: String,
    pub at_s: i64,
}

/// A pod the drill would evict (or, for DaemonSet pods, leave alone as a drain does).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillPod {
    pub namespace: String,
    pub name: String,
    /// The controller's kind and name (`ReplicaSet`, `train-7c9`), if any.
    #[serde(default)]
    pub owner_kind: Option<String>,
    #[serde(default)]
    pub owner_name: Option<String>,
    /// The PodDisruptionBudget selecting the pod, if any.
    #[serde(default)]
    pub pdb: Option<String>,
    /// `terminationGracePeriodSeconds`, seconds.
    pub grace_s: i64,
    /// The grace period fits the provider's shutdown budget (seconds from SIGTERM to removal:
    /// CKS 300, GKE 15, AWS 120); `false`: the pod would be killed mid-shutdown.
    pub fits: bool,
    /// What the API server said to a dry-run eviction (`dryRun: ["All"]`) as the user: `None`
    /// when it would be evicted, else the refusal (a budget at its limit, a missing verb).
    #[serde(default)]
    pub refused: Option<String>,
}

/// What a drill would do on one node: `mode: dryRun`'s answer, and the plan a run follows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillPlan {
    pub cluster: String,
    pub node: String,
    pub provider: Provider,
    pub phases: Vec<DrillPhase>,
    /// Pods bound to the node now.
    pub pods: Vec<DrillPod>,
    /// The readiness findings for those pods, one sentence each.
    pub findings: Vec<String>,
    /// Why the drill may not start, one sentence each (a missing verb names it); empty when
    /// it may.
    pub refusals: Vec<String>,
}

/// Where a drill stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrillState {
    #[default]
    Running,
    /// The window ran out; the node is left cordoned for the user to delete or uncordon.
    Completed,
    /// Stopped by the user or by spotboard's shutdown; the node was restored.
    Aborted,
    /// A write was refused or failed; the reason is the log's last line.
    Failed,
}

/// One drill, started or finished.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drill {
    pub cluster: String,
    pub node: String,
    pub provider: Provider,
    /// Who the writes went out as.
    pub by: String,
    /// T=0.
    pub started_at: Option<DateTime<Utc>>,
    pub state: DrillState,
    /// The phase reached last (a [`DrillPhase::name`]).
    pub phase: String,
    /// Pods evicted so far.
    pub evicted: u32,
    /// Evictions refused so far (a budget at its limit; asked again until the window ends).
    pub refused: u32,
    /// What the drill did, one line each, oldest first (`T+120 s: evicted web/api-1`).
    pub log: Vec<String>,
}

/// Why a drill request was refused; the HTTP status it is sent with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrillRefusal {
    /// 400: a bad request (confirmation, a node that is not spot).
    Invalid,
    /// 403: `--read-only`, no identity, or a verb the user may not use (named).
    Forbidden,
    /// 404: no such cluster or node, or no drill to abort.
    NotFound,
    /// 409: the node is already under a preemption notice or a drill.
    Conflict,
    /// 429: the user's or client's rate limit.
    RateLimited,
    /// 502: the API server failed the call.
    Upstream,
    /// 503: spotboard is stopping (its drills are being aborted).
    Stopping,
}

impl DrillRefusal {
    /// The HTTP status of the refusal.
    pub fn status(self) -> u16 {
        match self {
            DrillRefusal::Invalid => 400,
            DrillRefusal::Forbidden => 403,
            DrillRefusal::NotFound => 404,
            DrillRefusal::Conflict => 409,
            DrillRefusal::RateLimited => 429,
            DrillRefusal::Upstream => 502,
            DrillRefusal::Stopping => 503,
        }
    }
}

/// `POST /api/v1/drill`'s answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillOutcome {
    /// The plan (every mode, once the node was found).
    #[serde(default)]
    pub plan: Option<DrillPlan>,
    /// The drill, once started (`run`, `abort`).
    #[serde(default)]
    pub drill: Option<Drill>,
    /// Set when the request was refused: what kind, and the sentence for the person.
    #[serde(default)]
    pub refusal: Option<DrillRefusal>,
    #[serde(default)]
    pub message: String,
}

impl DrillOutcome {
    /// A refusal of `kind` saying `message`.
    pub fn refused(kind: DrillRefusal, message: impl Into<String>) -> Self {
        DrillOutcome {
            refusal: Some(kind),
            message: message.into(),
            ..Default::default()
        }
    }
}
