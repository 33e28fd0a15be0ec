//! Cost savings on the wire: node lifetimes from the ledger, prices in force, and the report.
//! Money is `rust_decimal::Decimal`, serialized as a decimal string ("12.34"), USD.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::CapacityType;

/// The end reason of a node that went while spotboard was not watching (stopped, or another
/// run's nodes left open): it ends at the last heartbeat, the last time it was seen running,
/// and really ended some time after. Survival curves censor it there rather than count it.
pub const END_UNOBSERVED: &str = "unobserved";

/// The GPUs on spot nodes that no running pod requests, now, and what they cost
/// (`spotboard_core::domain::savings::idle::idle_spot_gpus`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IdleSpotGpus {
    /// GPUs on spot nodes.
    pub gpus: u32,
    /// Of them, requested by no running pod.
    pub idle: u32,
    /// The idle ones' cost, USD per hour, at their pools' spot prices (cents).
    pub usd_h: Decimal,
    /// Idle GPUs without a price (their pool's instance type is not priced, or its nodes
    /// differ in GPU count): left out of `usd_h`.
    pub unpriced_gpus: u32,
}

/// One node's life as the ledger recorded it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Lifetime {
    pub uid: String,
    pub cluster: String,
    pub node: String,
    pub pool: Option<String>,
    pub instance_type: Option<String>,
    pub zone: Option<String>,
    /// `spot`, `on-demand` or `unknown` (from the pool's computeClass; `default` counts as
    /// on-demand).
    pub capacity_type: CapacityType,
    /// GPUs per node (catalog).
    pub gpus: u32,
    /// The node's creationTimestamp.
    pub started_at: DateTime<Utc>,
    /// When the node left the cluster; `None` while it runs.
    pub ended_at: Option<DateTime<Utc>>,
    /// Why it went away, one of [`crate::domain::departures::EndReason`] as text
    /// (`preempted`, `scaled-down`, `consolidated`, `drifted`, `expired`, `repaired`,
    /// `deleted`, `drill`, [`END_UNOBSERVED`]); `None` while running.
    pub end_reason: Option<String>,
    /// What decided `end_reason` ("Karpenter DisruptionTerminating: Disrupting Node:
    /// Underutilized/Delete"); `None` while running and for rows recorded before it was kept.
    #[serde(default)]
    pub end_evidence: Option<String>,
    /// T=0 of a Spot preemption: when the node was first seen cordoned for preemption.
    pub preemption_t0: Option<DateTime<Utc>>,
    /// When the node's Ready condition first turned True (its lastTransitionTime); `None`
    /// until seen Ready. A replacement's ends its victim's replacement latency.
    #[serde(default)]
    pub ready_at: Option<DateTime<Utc>>,
    /// A preempted node's eviction errors: refusals recorded from its events, pods past
    /// grace and killed from its pods' outcomes. Zero for any other node.
    #[serde(default)]
    pub evictions: crate::domain::preemption::evictions::EvictionCounts,
    /// T=0 of a preemption drill on the node (spotboard's drill annotation seen with the
    /// notice); a drill is never a preemption, so `preemption_t0` stays `None` for it.
    #[serde(default)]
    pub drill_t0: Option<DateTime<Utc>>,
    /// GPU-seconds of work a preemption took from the pods the node held at T=0: each pod
    /// running then × its GPUs × (the node's end − the pod's last start). An upper bound on
    /// lost work (a checkpoint saves part of it); pods that Succeeded and DaemonSet pods
    /// aside. 0 for a node not preempted, and until a preempted node has ended.
    #[serde(default)]
    pub work_lost_gpu_s: u64,
}

/// One row of the price catalog in force: USD per instance-hour.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceEntry {
    /// Instance type, or `*` for a discount row that applies to every type.
    pub instance_type: String,
    /// A zone, region or zone prefix (`US-EAST-04A`, `US-EAST`, `EU`), or a pricing geography
    /// (`North America`, `Europe`); `None` for everywhere.
    pub region: Option<String>,
    /// A cluster this row is only for (negotiated prices); `None` for every cluster.
    pub cluster: Option<String>,
    pub on_demand_usd_h: Option<Decimal>,
    pub spot_usd_h: Option<Decimal>,
    /// Percent off the resolved price (a negotiated discount), for `*` rows.
    pub discount_pct: Option<Decimal>,
    pub source: String,
    pub as_of: String,
}

/// A resolved unit price with where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnitPrice {
    /// USD per instance-hour.
    pub usd_per_hour: Decimal,
    pub source: String,
    pub as_of: String,
}

/// Actual and on-demand cost of one group (a cluster, zone, pool, type or capacity type).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostRow {
    pub key: String,
    pub node_hours: Decimal,
    pub actual_usd: Decimal,
    pub baseline_usd: Decimal,
    pub savings_usd: Decimal,
    /// Nodes of this group left out for want of a price.
    pub unpriced_nodes: u32,
    /// Savings after what this group's preemptions cost.
    #[serde(default)]
    pub net: NetSavings,
}

/// Savings after preemptions (`spotboard_core::domain::savings::net`): gross savings, minus
/// the capacity gap (node-hours from T=0 until the replacement was Ready, at the preempted
/// node's price), minus the work the preempted pods lost (their GPU-hours at the on-demand
/// price per GPU-hour of their node's type: an upper bound). Money USD in cents, percents
/// with two decimals; priced nodes only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetSavings {
    /// On-demand baseline − actual, USD.
    pub gross_usd: Decimal,
    /// `gross_usd` as a percent of the baseline.
    pub gross_pct: Decimal,
    /// Preemptions with T=0 in the range.
    pub preemptions: u32,
    /// The capacity gap: node-hours from T=0 until the replacement was Ready.
    pub gap_node_hours: Decimal,
    /// The gap at the preempted node's own price, USD.
    pub gap_usd: Decimal,
    /// GPU-hours the preempted pods lost (see [`Lifetime::work_lost_gpu_s`]): an upper bound.
    pub lost_work_gpu_hours: Decimal,
    /// `lost_work_gpu_hours` at the on-demand price per GPU-hour (the node type's on-demand
    /// price ÷ its GPUs), USD: an upper bound.
    pub lost_work_usd: Decimal,
    /// `gross_usd − gap_usd − lost_work_usd`.
    pub net_usd: Decimal,
    /// `net_usd` as a percent of the baseline.
    pub net_pct: Decimal,
    /// GPU-hours run in the range by priced nodes.
    pub gpu_hours: Decimal,
    /// `lost_work_gpu_hours` as a percent of `gpu_hours`: the loss observed.
    pub lost_work_pct: Decimal,
    /// The percent of GPU-hours lost at which spot stops beating on-demand (net savings 0),
    /// the capacity gap as observed; 0 when spot loses even with no work lost, 100 when it
    /// wins with all of it lost. `None` without GPU-hours.
    pub break_even_pct: Option<Decimal>,
    /// The reserved discount compared with, percent off on-demand
    /// (`--reserved-discount-pct`); `None` when none is configured.
    pub reserved_discount_pct: Option<Decimal>,
    /// The percent of GPU-hours lost above which that reserved price would be cheaper than
    /// spot, clamped to 0–100. `None` without GPU-hours or a reserved discount.
    pub reserved_break_even_pct: Option<Decimal>,
}

/// Actual and on-demand cost in one time bucket, for the chart.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CostBucket {
    pub start: DateTime<Utc>,
    pub actual_usd: Decimal,
    pub baseline_usd: Decimal,
}

/// One priced lifetime: the inputs behind every figure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PricedLine {
    pub uid: String,
    pub node: String,
    pub cluster: String,
    pub capacity_type: CapacityType,
    pub instance_type: Option<String>,
    /// Hours of the lifetime inside the range.
    pub hours: Decimal,
    /// The price paid, USD per instance-hour; `None` when unknown.
    pub unit_usd_h: Option<Decimal>,
    /// The on-demand price of the same node, USD per instance-hour.
    pub on_demand_usd_h: Option<Decimal>,
    pub source: Option<String>,
    pub as_of: Option<String>,
}

/// What running the fleet now costs per hour.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRate {
    pub running_nodes: u32,
    pub unpriced_nodes: u32,
    pub actual_usd_h: Decimal,
    pub baseline_usd_h: Decimal,
    pub difference_usd_h: Decimal,
}

/// Running nodes of one instance type and capacity type, priced, for the hybrid what-if.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetGroup {
    pub instance_type: String,
    pub nodes: u32,
    pub on_demand_usd_h: Decimal,
    pub spot_usd_h: Decimal,
}

/// Node-hours lost to Spot preemptions: from T=0 until the pool's next node started.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PreemptionCost {
    pub preemptions: u32,
    pub lost_node_hours: Decimal,
    pub lost_gpu_hours: Decimal,
    pub lost_usd: Decimal,
}

/// The savings report's one line on the Node Pools page: its totals without its rows. The
/// report of a 10,000-node fleet carries a priced line per node (3 MB of JSON), which the
/// page would otherwise embed for hydration and parse before it answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SavingsHeadline {
    /// USD saved over the range against the same node-hours on-demand.
    pub savings_usd: Decimal,
    /// Lifetimes left out because a price is unknown.
    pub unpriced_nodes: u32,
    pub run_rate: RunRate,
    #[serde(default)]
    pub idle_spot_gpus: IdleSpotGpus,
}

impl From<&SavingsReport> for SavingsHeadline {
    fn from(r: &SavingsReport) -> Self {
        Self {
            savings_usd: r.savings_usd,
            unpriced_nodes: r.unpriced_nodes,
            run_rate: r.run_rate.clone(),
            idle_spot_gpus: r.idle_spot_gpus.clone(),
        }
    }
}

/// `GET /api/v1/savings?from=…&to=…`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SavingsReport {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub hours: Decimal,
    pub node_hours: Decimal,
    pub actual_usd: Decimal,
    /// The same node-hours at on-demand prices.
    pub baseline_usd: Decimal,
    pub savings_usd: Decimal,
    /// Savings as a percent of the baseline, two decimals; 0 with no baseline.
    pub savings_pct: Decimal,
    /// Actual cost per hour of the range (from the first recorded node on) × 730.
    pub projected_month_usd: Decimal,
    pub projected_month_baseline_usd: Decimal,
    /// Lifetimes left out of every total because a price is unknown.
    pub unpriced_nodes: u32,
    /// The spot GPUs no running pod requests now, and their cost per hour (from the live
    /// pools, not the ledger: empty where the report is made without them).
    #[serde(default)]
    pub idle_spot_gpus: IdleSpotGpus,
    pub preemption: PreemptionCost,
    /// Savings after preemptions, for the whole fleet.
    #[serde(default)]
    pub net: NetSavings,
    /// Fallback to on-demand over the range: each pair's on-demand node-hours while its spot
    /// side was short and their cost beyond spot (needs the live pools: empty where the
    /// report is made without them).
    #[serde(default)]
    pub fallback: super::FallbackReport,
    pub run_rate: RunRate,
    pub fleet: Vec<FleetGroup>,
    /// `cluster`, `zone`, `pool`, `instance type`, `capacity type` → rows.
    pub breakdowns: Vec<(String, Vec<CostRow>)>,
    pub series: Vec<CostBucket>,
    pub lines: Vec<PricedLine>,
    /// Distinct `source (as of)` of the prices used.
    pub price_sources: Vec<String>,
}
