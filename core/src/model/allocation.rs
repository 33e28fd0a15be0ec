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
    /// Mean GPU utilisation over the range, percent (DCGM only).
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
}

/// `GET /api/v1/allocation`: the nodes and their pools, sorted by cluster, pool and node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Allocation {
    pub source: AllocationSource,
    pub nodes: Vec<NodeAllocation>,
    pub pools: Vec<PoolAllocation>,
}
