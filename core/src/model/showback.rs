//! Showback on the wire: what each namespace, team or pool ran on the fleet's nodes, what that
//! cost, and what preemptions took from it (`spotboard_core::domain::showback`). Money is USD
//! in cents as decimal strings ("12.34"); hours are decimal strings too.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// One pod's stay on one node with one set of requests and one team, as the ledger keeps it
/// (table `pod_intervals`). A pod whose team label or requests change mid-stay gets a new
/// interval from that moment, so a range is attributed by interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PodInterval {
    pub cluster: String,
    /// The node's `metadata.uid` (the lifetime's `uid` in `node_lifetimes`).
    pub node_uid: String,
    pub namespace: String,
    /// Its workload: the controlling owner as `Kind/name` (`ReplicaSet/api-7c9`, `Job/train`),
    /// or `Pod/<name>` for a bare pod (`PodFacts::workload`). The hub keeps no name per
    /// replica, and a killed pod's team is found by it.
    pub workload: String,
    /// The pod's `metadata.uid`.
    pub pod_uid: String,
    /// The value of the team label (`--team-label`, default `team`) on the pod; `None`
    /// without one.
    pub team: Option<String>,
    /// `nvidia.com/gpu` requested, summed over the pod's containers (a limit standing for an
    /// absent request).
    pub gpus: u32,
    /// CPU requested, millicores.
    pub cpu_m: u64,
    /// Memory requested, bytes.
    pub memory_b: u64,
    /// The node's GPUs (`status.capacity["nvidia.com/gpu"]`, else the catalog's) when the
    /// interval began; 0 on a CPU node.
    pub node_gpus: u32,
    /// The node's `status.allocatable.cpu`, millicores; `None` when it did not report one.
    pub node_cpu_m: Option<u64>,
    /// The node's `status.allocatable.memory`, bytes.
    pub node_memory_b: Option<u64>,
    /// When spotboard first saw the pod running on the node with these requests and team.
    pub started_at: DateTime<Utc>,
    /// When it was last seen so; `None` while it runs.
    pub ended_at: Option<DateTime<Utc>>,
}

/// A pod a preempted node held at T=0 (a `preemption_pods` row), as showback counts it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KilledPod {
    pub node_uid: String,
    pub namespace: String,
    pub pod: String,
    pub owner_kind: Option<String>,
    pub owner_name: Option<String>,
    /// How it stood when the node went (`still running`, `terminating`, `Succeeded`, …).
    pub outcome: Option<String>,
    pub gpus: u32,
    /// Its last start (the newest running container's `startedAt`, else `status.startTime`).
    pub started_at: Option<DateTime<Utc>>,
}

/// A pod's workload: its controlling owner as `Kind/name`, or `Pod/<name>` for a bare pod.
/// [`PodInterval::workload`] and `PodFacts::workload` both name workloads this way, so a
/// killed pod finds its interval's team.
pub fn workload_name(owner_kind: Option<&str>, owner_name: Option<&str>, pod: &str) -> String {
    match (owner_kind, owner_name) {
        (Some(k), Some(n)) => format!("{k}/{n}"),
        _ => format!("Pod/{pod}"),
    }
}

impl KilledPod {
    /// Its workload as [`PodInterval::workload`] names it.
    pub fn workload(&self) -> String {
        workload_name(
            self.owner_kind.as_deref(),
            self.owner_name.as_deref(),
            &self.pod,
        )
    }
}

/// What showback groups by.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum ShowbackBy {
    /// A namespace: key its name.
    #[default]
    #[serde(rename = "namespace")]
    Namespace,
    /// A value of the team label: key the value, or [`NO_TEAM`].
    #[serde(rename = "team")]
    Team,
    /// A NodePool: key `cluster/pool`.
    #[serde(rename = "pool")]
    Pool,
}

/// The team key of pods without the team label.
pub const NO_TEAM: &str = "(no team label)";

impl ShowbackBy {
    /// Every grouping.
    pub const ALL: [ShowbackBy; 3] = [ShowbackBy::Namespace, ShowbackBy::Team, ShowbackBy::Pool];

    /// Its name, as serialized (`namespace`, `team`, `pool`).
    pub fn as_str(self) -> &'static str {
        match self {
            ShowbackBy::Namespace => "namespace",
            ShowbackBy::Team => "team",
            ShowbackBy::Pool => "pool",
        }
    }

    /// The grouping named `text`.
    ///
    /// Errors: any other text, with the names that are accepted.
    pub fn parse(text: &str) -> crate::Result<ShowbackBy> {
        ShowbackBy::ALL
            .into_iter()
            .find(|b| b.as_str() == text)
            .ok_or_else(|| {
                crate::Error::Invalid(format!(
                    "unknown by \"{text}\": use namespace, team or pool"
                ))
            })
    }
}

/// One namespace's, team's or pool's share of the fleet over a range.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShowbackRow {
    pub key: String,
    /// Its pods' share of their nodes' cost at the prices paid, USD.
    pub cost_usd: Decimal,
    /// The same shares of the same nodes at the on-demand price of their types, USD.
    pub on_demand_usd: Decimal,
    /// `on_demand_usd − cost_usd`, USD.
    pub savings_usd: Decimal,
    /// Pod-hours run (each interval's hours in the range, whatever it requested).
    pub pod_hours: Decimal,
    /// GPU-hours requested: each pod's GPUs × its hours.
    pub gpu_hours: Decimal,
    /// Of `gpu_hours`, on spot nodes.
    pub spot_gpu_hours: Decimal,
    /// Pod-hours on nodes without a price: left out of the money (never counted as $0).
    pub unpriced_pod_hours: Decimal,
    /// Pods seen requesting nothing (no GPU, CPU or memory): they run, cost 0 and are counted
    /// here so a reader knows.
    pub pods_without_requests: u32,
    /// Preemptions with T=0 in the range that hit at least one of its pods.
    pub preemptions: u32,
    /// Its pods still running or terminating when their preempted node went (DaemonSet pods
    /// aside).
    pub pods_killed: u32,
    /// GPU-hours the killed pods lost: GPUs × (the node's end − the pod's last start). An upper
    /// bound on lost work: a checkpoint saves part of it.
    pub gpu_hours_lost: Decimal,
}

/// What no pod requested of one pool's nodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleRow {
    pub cluster: String,
    /// The NodePool; `(none)` for nodes of no pool.
    pub pool: String,
    /// The unrequested share of the pool's nodes' cost, USD.
    pub cost_usd: Decimal,
    /// The same at on-demand prices, USD.
    pub on_demand_usd: Decimal,
    pub savings_usd: Decimal,
    /// GPU-hours no pod requested.
    pub gpu_hours: Decimal,
    /// Node-hours of the pool's nodes without a price.
    pub unpriced_node_hours: Decimal,
}

/// The fleet's figures over the range: the rows and the idle rows add up to these, to the cent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShowbackTotal {
    /// The priced nodes' cost, USD: the savings report's `actual_usd` over the same range.
    pub cost_usd: Decimal,
    /// The savings report's `baseline_usd`.
    pub on_demand_usd: Decimal,
    pub savings_usd: Decimal,
    /// Of the cost, what pods requested (the rows' sum).
    pub allocated_usd: Decimal,
    /// Of the cost, what no pod requested (the idle rows' sum).
    pub idle_usd: Decimal,
    pub gpu_hours: Decimal,
    pub idle_gpu_hours: Decimal,
    /// Nodes left out for want of a price.
    pub unpriced_nodes: u32,
}

/// `GET /api/v1/showback`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShowbackReport {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub by: ShowbackBy,
    /// The label read for teams (`--team-label`).
    pub team_label: String,
    /// By cost, highest first.
    pub rows: Vec<ShowbackRow>,
    /// By cost, highest first.
    pub idle: Vec<IdleRow>,
    pub total: ShowbackTotal,
    /// The ledger held more pod intervals in the range than one report reads
    /// (`spotboard_core::domain::showback::MAX_INTERVALS`): they are read in node-uid order,
    /// so the pods of the nodes past the bound are not read, and those nodes' cost counts as
    /// idle.
    pub truncated: bool,
}
