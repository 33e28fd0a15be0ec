//! GPU, CPU and memory allocation on the wire: what each node offers pods against what the
//! pods running on it request (`GET /api/v1/allocation`).

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::CapacityType;

/// What an allocation figure is measured from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllocationSource {
    /// The running pods' requests against the nodes' allocatable: what is reserved, not
    /// what is used.
    #[default]
    Requests,
    /// GPU utilisation from DCGM exporter metrics beside the requests.
    Dcgm,
}

/// One node's allocation. CPU in cores (decimal strings, to the millicore), memory in bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeAllocation {
    pub cluster: String,
    pub node: String,
    /// The node's pool (CKS NodePool, GKE node pool, Karpenter NodePool), if labelled.
    pub pool: Option<String>,
    pub instance_type: Option<String>,
    pub zone: Option<String>,
    pub capacity_type: CapacityType,
    /// GPUs on the node (its `nvidia.com/gpu` capacity, else the catalog's count).
    pub gpus_allocatable: u32,
    /// GPUs the running pods on the node request.
    pub gpus_requested: u32,
    /// `gpus_allocatable − gpus_requested`, never below 0.
    pub idle_gpus: u32,
    /// `status.allocatable.cpu`, cores; `None` when the node does not report it.
    pub cpu_allocatable: Option<Decimal>,
    /// CPU the running pods request, cores.
    pub cpu_requested: Decimal,
    /// `status.allocatable.memory`, bytes.
    pub memory_allocatable: Option<u64>,
    /// Memory the running pods request, bytes.
    pub memory_requested: u64,
    /// What the idle part of the node costs, USD per hour, at the node's own price (its
    /// capacity type's): price × idle GPUs ÷ GPUs on a GPU node, price × the unrequested
    /// share of its allocatable CPU on a CPU node. `None` when the node has no price or a
    /// CPU node no allocatable CPU.
    pub idle_usd_h: Option<Decimal>,
    /// Mean GPU utilisation over [`DcgmStatus::range`], percent 0–100: DCGM exporter's
    /// `DCGM_FI_DEV_GPU_UTIL` averaged over the node's GPUs and the range, read from
    /// Prometheus. `None` without `--prometheus-url`, or for a node Prometheus has no series
    /// of (a CPU node, a GPU node without the exporter).
    pub utilisation: Option<Decimal>,
}

/// A pool's allocation: its nodes' figures summed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolAllocation {
    pub cluster: String,
    /// The pool; `(none)` for nodes without one.
    pub pool: String,
    pub nodes: u32,
    pub gpus_allocatable: u32,
    pub gpus_requested: u32,
    pub idle_gpus: u32,
    /// Summed over the nodes that report it.
    pub cpu_allocatable: Decimal,
    pub cpu_requested: Decimal,
    pub memory_allocatable: u64,
    pub memory_requested: u64,
    /// Summed over the priced nodes, USD per hour.
    pub idle_usd_h: Decimal,
    /// Nodes whose idle cost is unknown (no price, or a CPU node without allocatable CPU).
    pub unpriced_nodes: u32,
    /// Mean GPU utilisation of the pool's nodes that have a figure, percent 0–100, each node
    /// weighed by its GPUs ([`crate::domain::allocation::pools`]); `None` when none has one.
    pub utilisation: Option<Decimal>,
}

/// Where GPU utilisation is read from, and how that went (`--prometheus-url`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DcgmStatus {
    /// The Prometheus base URL, without credentials.
    pub prometheus: String,
    /// The range each node's utilisation is averaged over, a Prometheus duration (`1h`).
    pub range: String,
    /// The PromQL query sent.
    pub query: String,
    /// When the figures were last read; `None` before the first good answer.
    pub as_of: Option<chrono::DateTime<chrono::Utc>>,
    /// Nodes Prometheus had a figure for at `as_of`.
    pub nodes: u32,
    /// Why the last read failed (unreachable, HTTP status, a PromQL error, an answer over
    /// budget); the figures of `as_of` are kept meanwhile. `None` when the last read worked.
    pub error: Option<String>,
}

/// `GET /api/v1/allocation`: the nodes and their pools, sorted by cluster, pool and node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Allocation {
    /// `dcgm` once Prometheus has answered; `requests` without it or before.
    pub source: AllocationSource,
    /// The DCGM reader's state when `--prometheus-url` is set, `None` otherwise.
    pub dcgm: Option<DcgmStatus>,
    pub nodes: Vec<NodeAllocation>,
    pub pools: Vec<PoolAllocation>,
}

/// A pool's GPU utilisation for its page: the reader's status and each node's figure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolUtilisation {
    /// `None` without `--prometheus-url`: the page then says it shows requests only.
    pub dcgm: Option<DcgmStatus>,
    /// Mean GPU utilisation by node name, percent 0–100, for the pool's nodes Prometheus has
    /// a figure for.
    pub nodes: std::collections::BTreeMap<String, Decimal>,
}
