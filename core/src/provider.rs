//! Who runs a node and what kind of capacity it is: the two provider-neutral facts every
//! view of the fleet groups by. A node's values are decided in one place on the server (its
//! projection, from the labels named in [`crate::labels`] and [`crate::domain::preemption`]);
//! everything else reads them.
//!
//! Sources (URLs in `docs/sources.md`): CoreWeave: Node Pool reference (`computeClass`
//! `default` or `spot`), GKE: Spot VMs, Karpenter: NodePools (`karpenter.sh/capacity-type`
//! `spot`, `on-demand`, `reserved`).

use serde::{Deserialize, Serialize};

/// Who runs a node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// CoreWeave CKS (`compute.coreweave.com/node-pool`).
    Cks,
    /// GKE (`cloud.google.com/gke-nodepool`).
    Gke,
    /// Karpenter on AWS (`karpenter.sh/nodepool`).
    Karpenter,
    /// Anything else, on the wire too (an unknown spelling reads as this).
    #[default]
    #[serde(other)]
    Unknown,
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Provider {
    /// Reads [`Provider::as_str`]'s spelling back; anything else is `Unknown`.
    pub fn parse(s: &str) -> Self {
        match s {
            "cks" => Provider::Cks,
            "gke" => Provider::Gke,
            "karpenter" => Provider::Karpenter,
            _ => Provider::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Cks => "cks",
            Provider::Gke => "gke",
            Provider::Karpenter => "karpenter",
            Provider::Unknown => "unknown",
        }
    }
}

/// A node's capacity type, provider-neutral.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapacityType {
    Spot,
    OnDemand,
    Reserved,
    /// A pool whose nodes (GKE) or requirements (Karpenter) allow more than one; never a
    /// node's.
    Mixed,
    /// Anything else, on the wire too (an unknown spelling reads as this).
    #[default]
    #[serde(other)]
    Unknown,
}

impl std::fmt::Display for CapacityType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CapacityType {
    /// A CKS NodePool's capacity type from its `spec.computeClass`: `spot` is spot,
    /// `default` on-demand (CoreWeave: Node Pool reference), anything newer unknown.
    pub fn of_compute_class(class: &crate::nodepool::ComputeClass) -> Self {
        match class {
            crate::nodepool::ComputeClass::Spot => CapacityType::Spot,
            crate::nodepool::ComputeClass::Default => CapacityType::OnDemand,
            _ => CapacityType::Unknown,
        }
    }

    /// `spot`, `on-demand` or `reserved` as the wire and the ledger spell them; anything else
    /// is `Unknown`.
    pub fn parse(s: &str) -> Self {
        match s {
            "spot" => CapacityType::Spot,
            "on-demand" => CapacityType::OnDemand,
            "reserved" => CapacityType::Reserved,
            "mixed" => CapacityType::Mixed,
            _ => CapacityType::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CapacityType::Spot => "spot",
            CapacityType::OnDemand => "on-demand",
            CapacityType::Reserved => "reserved",
            CapacityType::Mixed => "mixed",
            CapacityType::Unknown => "unknown",
        }
    }
}
