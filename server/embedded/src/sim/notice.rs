//! Every provider's Spot notice window as the behaviour model plays it: the one place its
//! timings are written. `preemption` (CKS) and `fleet::timeline` (GKE, Karpenter on AWS) read
//! them from here.
//!
//! The product keeps its own copy of these windows (the phases it draws on a preemption's
//! timeline). The two are written apart on purpose, so the fixture never plays a window it
//! learnt from the code under test; the embedded crate's `agreement` integration test holds
//! them equal, provider by provider.
//!
//! All durations are simulated time since the notice (T=0); divide by the clock's speed for
//! real time.

use std::time::Duration;

use super::clock::{mins, secs};

/// CKS: the drain starts two minutes after the warning, with the
/// `qos.coreweave.cloud/evicted-at` label (CoreWeave: Spot Node Pools, "Detailed timeline",
/// "Two minutes after the initial warning",
/// <https://docs.coreweave.com/platform/capacity-plans/spot-node-pools>).
pub const CKS_DRAIN_AFTER: Duration = mins(2);

/// CKS: the node is gone at the latest seven minutes after the warning (CoreWeave: Spot Node
/// Pools, "seven-minute window (maximum)").
pub const CKS_REMOVE_BY: Duration = mins(7);

/// GKE: the kubelet's graceful node shutdown gives ordinary pods the first 15 s of the
/// notice; system-critical pods get the next 15 s (GKE: Spot VMs, GKE later than
/// 1.22.8-gke.200, <https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms>).
pub const GKE_POD_SHUTDOWN: Duration = secs(15);

/// GKE: the whole termination notice, after which the VM is gone (GKE: Spot VMs, "30
/// seconds").
pub const GKE_NOTICE: Duration = secs(30);

/// AWS: the two-minute Spot Instance interruption warning, during which Karpenter drains the
/// node (AWS: Spot Instance interruption notices,
/// <https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html>;
/// Karpenter: Disruption, <https://karpenter.sh/docs/concepts/disruption/>).
pub const AWS_NOTICE: Duration = secs(120);
