//! Well-known label, annotation and event names on CKS nodes and pods.
//!
//! Sources (URLs in `docs/sources.md`): CoreWeave: Spot Node Pools (Spot preemption
//! timeline), CoreWeave: Node Pool reference (NodePool events), CoreWeave: Workload scheduling
//! on CKS (node lifecycle labels and eviction policies).

/// Node label naming the NodePool a node belongs to.
pub const NODE_POOL: &str = "compute.coreweave.com/node-pool";
/// Node label carrying the instance type ID (e.g. `gd-8xa100-i128`).
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// Node label carrying the availability zone (e.g. `US-EAST-04A`).
pub const ZONE: &str = "topology.kubernetes.io/zone";
/// Node label carrying the region.
pub const REGION: &str = "topology.kubernetes.io/region";
/// Node lifecycle state: `production`, `zap`, `triage`, … (CoreWeave: Workload scheduling on
/// CKS, "Node lifecycle labels").
pub const NODE_STATE: &str = "node.coreweave.cloud/state";
/// Node reservation: the customer org ID when `state=production` (same page).
pub const NODE_RESERVED: &str = "node.coreweave.cloud/reserved";
/// Set to `true` on a spot node at T=0 of a preemption (CoreWeave: Spot Node Pools,
/// "Detailed timeline").
pub const PENDING_PREEMPTION: &str = "qos.coreweave.cloud/pending-preemption";
/// Set at T+2 min of a preemption, when the drain starts; the value is a timestamp (CoreWeave:
/// Spot Node Pools).
pub const EVICTED_AT: &str = "qos.coreweave.cloud/evicted-at";
/// Pod label: interruptible (historical spelling; CoreWeave: Workload scheduling on CKS).
pub const POD_INTERRUPTABLE: &str = "qos.coreweave.cloud/interruptable";
/// Pod label: gracefully interruptible; stalls scale-down (CoreWeave: Workload scheduling on
/// CKS, "Potential for scale-down stalls").
pub const POD_GRACEFUL_INTERRUPTIBLE: &str = "qos.coreweave.com/graceful-interruptible";

/// Warning event reason at T=0 of a spot preemption (CoreWeave: Spot Node Pools).
pub const REASON_PREEMPTION_PENDING: &str = "Preemption pending";
/// Warning event reason at T+2 min, when the drain starts (CoreWeave: Spot Node Pools).
pub const REASON_PREEMPTION_IN_PROGRESS: &str = "Preemption in progress";
/// Warning event reason when the node has left the pool (CoreWeave: Spot Node Pools).
pub const REASON_DELETED_FOR_PREEMPTION: &str = "Deleted for preemption";

/// Label domains users may not put labels or annotations in (CoreWeave: Workload scheduling on
/// CKS, "User-provided labels").
pub const RESERVED_DOMAINS: [&str; 2] = ["coreweave.cloud", "coreweave.com"];
