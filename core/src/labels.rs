//! Well-known label, annotation, taint and event names on CKS, GKE and Karpenter nodes and
//! pods.
//!
//! Sources (URLs in `docs/sources.md`): CoreWeave: Spot Node Pools (Spot preemption
//! timeline), CoreWeave: Node Pool reference (NodePool events), CoreWeave: Workload scheduling
//! on CKS (node lifecycle labels and eviction policies); GKE: Spot VMs; Karpenter: NodePools
//! and Disruption.

/// Node label naming the NodePool a node belongs to.
pub const NODE_POOL: &str = "compute.coreweave.com/node-pool";
/// Node label carrying the instance type ID (e.g. `gd-8xa100-i128`).
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// Node label carrying the availability zone (e.g. `US-EAST-04A`).
pub const ZONE: &str = "topology.kubernetes.io/zone";
/// The extended resource NVIDIA's device plugin advertises in a Node's `status.capacity` and
/// `status.allocatable`, one per GPU (Kubernetes: Schedule GPUs,
/// <https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/>).
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
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

/// Event reason on a Node and its NodePool when a drain cannot evict some pods because of a
/// PodDisruptionBudget (CoreWeave: Node Pool reference, "Events").
pub const REASON_CKS_PDB_VIOLATION: &str = "CWNodeDrainingPDBViolation";
/// Event reason on a Node and its NodePool when a drain deleted pods ungracefully
/// (CoreWeave: Node Pool reference, "Events").
pub const REASON_CKS_FORCE_DELETE: &str = "CWNodeDrainingForceDelete";
/// Karpenter's Warning on a Node whose pods wait to be evicted ("Failed to drain node, N pods
/// are waiting to be evicted"; Karpenter: Disruption, termination controller).
pub const REASON_KARPENTER_FAILED_DRAINING: &str = "FailedDraining";
/// The generic reason drain tools use for a refused eviction.
pub const REASON_FAILED_EVICTION: &str = "FailedEviction";
/// What the API server answers a refused eviction (Kubernetes: API-initiated Eviction); an
/// event whose message holds it is an eviction error whatever its reason.
pub const PDB_REFUSAL_MESSAGE: &str = "violate the pod's disruption budget";

/// Label domains users may not put labels or annotations in (CoreWeave: Workload scheduling on
/// CKS, "User-provided labels").
pub const RESERVED_DOMAINS: [&str; 2] = ["coreweave.cloud", "coreweave.com"];

// GKE and Karpenter.

/// GKE's pool label.
pub const GKE_NODEPOOL: &str = "cloud.google.com/gke-nodepool";
/// GKE's Spot labels (GKE: Spot VMs).
pub const GKE_SPOT: &str = "cloud.google.com/gke-spot";
pub const GKE_PROVISIONING: &str = "cloud.google.com/gke-provisioning";
/// The taint GKE puts on a node that received a termination notice.
pub const GKE_TERMINATION_TAINT: &str = "cloud.google.com/impending-node-termination";
/// The GPU model GKE labels its GPU nodes with, e.g. `nvidia-l4` (GKE: "Run GPUs in Standard
/// node pools"); pods select it to get that GPU.
pub const GKE_ACCELERATOR: &str = "cloud.google.com/gke-accelerator";
/// The GPU model Karpenter's AWS provider labels its nodes with, e.g. `a10g` (Karpenter:
/// Scheduling, "Well-Known Labels").
pub const KARPENTER_GPU_NAME: &str = "karpenter.k8s.aws/instance-gpu-name";
/// Karpenter's labels (Karpenter: NodePools).
pub const KARPENTER_NODEPOOL: &str = "karpenter.sh/nodepool";
pub const KARPENTER_CAPACITY_TYPE: &str = "karpenter.sh/capacity-type";
/// The taint Karpenter v1 puts on a node it is disrupting (interruption included).
pub const KARPENTER_DISRUPTED_TAINT: &str = "karpenter.sh/disrupted";
/// The Warning event reason Karpenter records on a node when AWS's interruption warning
/// arrives through its interruption queue (Karpenter: Disruption, "Interruption").
/// Consolidation, drift and expiry set the same taint
/// but not this event, so the dashboard requires both for a Karpenter preemption.
pub const KARPENTER_SPOT_INTERRUPTED: &str = "SpotInterrupted";
/// The Warning event reason Karpenter records on a NodeClaim whose launch the cloud provider
/// refused for want of capacity (kubernetes-sigs/karpenter, `pkg/events/reason.go`; the
/// NodeClaim is then deleted and the pods are scheduled again). Its message is
/// `NodeClaim <name> event: <the provider's error>`.
pub const KARPENTER_INSUFFICIENT_CAPACITY: &str = "InsufficientCapacityError";

// spotboard's own.

/// Annotation spotboard's preemption drill puts on every object it writes (the node, its
/// events): the drill's T=0, RFC 3339. An object carrying it is a rehearsal, never a
/// preemption: the ledger records the node's notice as `drill`, and preemption rates, alerts,
/// waves and savings leave it out.
pub const DRILL: &str = "drill.spotboard.dev/started-at";
/// Annotation beside [`DRILL`]: the identity the drill's writes went out as.
pub const DRILL_BY: &str = "drill.spotboard.dev/by";
