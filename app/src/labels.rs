//! Well-known label, annotation and event names on CKS nodes and pods.
//!
//! Sources: seed 000 (Spot preemption timeline), seed 001 (NodePool events), seed 002 (CKS
//! node lifecycle labels and eviction policies).

/// Node label naming the NodePool a node belongs to.
pub const NODE_POOL: &str = "compute.coreweave.com/node-pool";
/// Node label carrying the instance type ID (e.g. `gd-8xa100-i128`).
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// Node label carrying the availability zone (e.g. `US-EAST-04A`).
pub const ZONE: &str = "topology.kubernetes.io/zone";
/// Node label carrying the region.
pub const REGION: &str = "topology.kubernetes.io/region";
/// Node lifecycle state: `production`, `zap`, `triage`, … (seed 002).
pub const NODE_STATE: &str = "node.coreweave.cloud/state";
/// Node reservation: the customer org ID when `state=production` (seed 002).
pub const NODE_RESERVED: &str = "node.coreweave.cloud/reserved";
/// Set to `true` on a spot node at T=0 of a preemption (seed 000).
pub const PENDING_PREEMPTION: &str = "qos.coreweave.cloud/pending-preemption";
/// Set at T+2 min of a preemption, when the drain starts; the value is a timestamp (seed 000).
pub const EVICTED_AT: &str = "qos.coreweave.cloud/evicted-at";
/// Pod label: interruptible (historical spelling, seed 002).
pub const POD_INTERRUPTABLE: &str = "qos.coreweave.cloud/interruptable";
/// Pod label: gracefully interruptible; stalls scale-down (seed 002).
pub const POD_GRACEFUL_INTERRUPTIBLE: &str = "qos.coreweave.com/graceful-interruptible";

/// Warning event reason at T=0 of a spot preemption (seed 000).
pub const REASON_PREEMPTION_PENDING: &str = "Preemption pending";
/// Warning event reason at T+2 min, when the drain starts (seed 000).
pub const REASON_PREEMPTION_IN_PROGRESS: &str = "Preemption in progress";
/// Warning event reason when the node has left the pool (seed 000).
pub const REASON_DELETED_FOR_PREEMPTION: &str = "Deleted for preemption";

/// Label domains users may not put labels or annotations in (seed 002).
pub const RESERVED_DOMAINS: [&str; 2] = ["coreweave.cloud", "coreweave.com"];
