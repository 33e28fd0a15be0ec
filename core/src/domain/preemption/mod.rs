//! Spot preemption, provider-neutral: which provider a node belongs to, its capacity type,
//! whether the provider's preemption signal is on it, and each provider's notice window as
//! data. `timeline` derives a node's phases from the signals observed over time alone, so a
//! `kubectl label` by hand drives the same timeline as a real preemption.
//!
//! Sources (URLs in `docs/sources.md`): CoreWeave: Spot Node Pools, "Instance preemption"
//! (CKS: T=0 cordon + `qos.coreweave.cloud/pending-preemption=true`, T+2 min
//! `qos.coreweave.cloud/evicted-at` and drain, removal by T+7 min); GKE: Spot VMs (nodes
//! labelled `cloud.google.com/gke-spot=true` / `cloud.google.com/gke-provisioning=spot`,
//! terminated 30 s after the notice, 15 s for ordinary pods then 15 s for system pods); AWS:
//! Spot Instance interruption notices (a two-minute warning) with Karpenter: NodePools
//! (`karpenter.sh/capacity-type=spot`, `karpenter.sh/nodepool`) and Karpenter: Disruption
//! (on the warning Karpenter taints, cordons and drains the node).

pub mod budget;
pub mod drill;
pub mod evictions;
pub mod rates;
pub mod readiness;
#[cfg(test)]
mod readiness_tests;
pub mod replacement;
pub mod timeline;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::labels;

// Provider and capacity type are the core's, at its top (`crate::provider`); re-exported
// here for the modules of this one that read them beside the notice windows.
pub use crate::provider::{CapacityType, Provider};

// The GKE and Karpenter label and taint names are in `crate::labels`, beside CoreWeave's.
use crate::labels::{
    GKE_NODEPOOL, GKE_PROVISIONING, GKE_SPOT, GKE_TERMINATION_TAINT, KARPENTER_CAPACITY_TYPE,
    KARPENTER_DISRUPTED_TAINT, KARPENTER_NODEPOOL,
};

/// What a node's labels say about its provider, pool and (for GKE and Karpenter) capacity
/// type. CKS capacity comes from the pool's computeClass, which the labels do not carry.
pub fn classify(l: &BTreeMap<String, String>) -> (Provider, Option<String>, CapacityType) {
    if let Some(pool) = l.get(labels::NODE_POOL) {
        return (Provider::Cks, Some(pool.clone()), CapacityType::Unknown);
    }
    if let Some(pool) = l.get(GKE_NODEPOOL) {
        let spot = l.get(GKE_SPOT).is_some_and(|v| v == "true")
            || l.get(GKE_PROVISIONING).is_some_and(|v| v == "spot");
        let cap = if spot {
            CapacityType::Spot
        } else {
            CapacityType::OnDemand
        };
        return (Provider::Gke, Some(pool.clone()), cap);
    }
    if let Some(pool) = l.get(KARPENTER_NODEPOOL) {
        let cap = match l.get(KARPENTER_CAPACITY_TYPE).map(String::as_str) {
            Some("spot") => CapacityType::Spot,
            Some("on-demand") => CapacityType::OnDemand,
            Some("reserved") => CapacityType::Reserved,
            _ => CapacityType::Unknown,
        };
        return (Provider::Karpenter, Some(pool.clone()), cap);
    }
    (Provider::Unknown, None, CapacityType::Unknown)
}

/// Whether the provider's preemption notice is on the node: CKS's pending-preemption label,
/// GKE's termination taint, or Karpenter's disruption taint on a spot node.
pub fn notice(
    provider: Provider,
    l: &BTreeMap<String, String>,
    taint_keys: &[String],
    capacity: CapacityType,
) -> bool {
    let tainted = |k: &str| taint_keys.iter().any(|t| t == k);
    match provider {
        Provider::Cks => l
            .get(labels::PENDING_PREEMPTION)
            .is_some_and(|v| v == "true"),
        Provider::Gke => tainted(GKE_TERMINATION_TAINT),
        Provider::Karpenter => capacity == CapacityType::Spot && tainted(KARPENTER_DISRUPTED_TAINT),
        Provider::Unknown => false,
    }
}

/// One phase of a notice window: its name and when it starts, seconds since T=0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PhaseSpec {
    pub name: &'static str,
    pub starts_at_s: i64,
}

/// The provider's notice window as phases; the last phase is "removed".
pub fn window(provider: Provider) -> &'static [PhaseSpec] {
    const CKS: &[PhaseSpec] = &[
        PhaseSpec {
            name: "notice",
            starts_at_s: 0,
        },
        PhaseSpec {
            name: "draining",
            starts_at_s: 120,
        },
        PhaseSpec {
            name: "removed",
            starts_at_s: 420,
        },
    ];
    const GKE: &[PhaseSpec] = &[
        PhaseSpec {
            name: "shutting down pods",
            starts_at_s: 0,
        },
        PhaseSpec {
            name: "shutting down system pods",
            starts_at_s: 15,
        },
        PhaseSpec {
            name: "removed",
            starts_at_s: 30,
        },
    ];
    const AWS: &[PhaseSpec] = &[
        PhaseSpec {
            name: "draining",
            starts_at_s: 0,
        },
        PhaseSpec {
            name: "removed",
            starts_at_s: 120,
        },
    ];
    match provider {
        Provider::Cks | Provider::Unknown => CKS,
        Provider::Gke => GKE,
        Provider::Karpenter => AWS,
    }
}

/// When SIGTERM reaches ordinary pods, seconds since T=0: at the drain (CKS T+2 min), at once
/// on GKE and on Karpenter.
pub fn sigterm_at_s(provider: Provider) -> i64 {
    match provider {
        Provider::Cks | Provider::Unknown => 120,
        Provider::Gke | Provider::Karpenter => 0,
    }
}

/// The grace period a pod really gets, seconds: its own, but on GKE capped at the 15 s the
/// kubelet grants ordinary pods (GKE: Spot VMs).
pub fn effective_grace_s(provider: Provider, pod_grace_s: i64) -> i64 {
    match provider {
        Provider::Gke => pod_grace_s.min(15),
        _ => pod_grace_s,
    }
}

#[cfg(test)]
mod tests;
