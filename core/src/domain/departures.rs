//! Why each node went away: one end-reason taxonomy for every provider, decided from the
//! signals the watches saw before the node left, with the evidence that decided it.
//!
//! Only `preempted` is a spot preemption: rates, alerts, waves and survival curves count it
//! alone, and `/preemptions` shows the other departures beside the rate so a reader sees what
//! was left out (kubernetes-sigs/karpenter#1413 asks for exactly this split).

use serde::{Deserialize, Serialize};

/// The Normal event Karpenter records on a Node it disrupts, with the reason in its message:
/// "Disrupting Node: Underutilized/Delete", "Disrupting Node: Drifted/Replace" (Karpenter:
/// Disruption; kubernetes-sigs/karpenter `pkg/controllers/disruption/events`).
pub const KARPENTER_DISRUPTION_TERMINATING: &str = "DisruptionTerminating";

/// Why a node went away, as the ledger records it (`end_reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    /// The provider's preemption notice was seen (CKS `Preemption pending`, GKE's
    /// termination taint, Karpenter `SpotInterrupted`).
    Preempted,
    /// Its pool was being scaled down: a CKS NodePool's `targetNodes` below its
    /// `currentNodes` when the node left.
    ScaledDown,
    /// Karpenter consolidation (`Underutilized` or `Empty`).
    Consolidated,
    /// Karpenter drift (`Drifted`).
    Drifted,
    /// Karpenter expiry (`Expired`; `Expiration` in Karpenter before v1).
    Expired,
    /// Taken out for repair: a CKS node whose lifecycle state (`node.coreweave.cloud/state`)
    /// had left `production` for `triage` or `zap` (CoreWeave CKS: node lifecycle labels).
    Repaired,
    /// No provider signal: deleted by hand or by a controller spotboard does not read.
    Deleted,
    /// Deleted while a preemption drill's annotation was on it: its owner ended the drill.
    Drill,
    /// Went while spotboard was not watching; ends at the last heartbeat
    /// ([`crate::model::END_UNOBSERVED`]).
    Unobserved,
}

impl EndReason {
    /// Every reason, in the order pages list them.
    pub const ALL: [EndReason; 9] = [
        EndReason::Preempted,
        EndReason::ScaledDown,
        EndReason::Consolidated,
        EndReason::Drifted,
        EndReason::Expired,
        EndReason::Repaired,
        EndReason::Deleted,
        EndReason::Drill,
        EndReason::Unobserved,
    ];

    /// The ledger's and the API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Preempted => "preempted",
            EndReason::ScaledDown => "scaled-down",
            EndReason::Consolidated => "consolidated",
            EndReason::Drifted => "drifted",
            EndReason::Expired => "expired",
            EndReason::Repaired => "repaired",
            EndReason::Deleted => "deleted",
            EndReason::Drill => "drill",
            EndReason::Unobserved => crate::model::END_UNOBSERVED,
        }
    }

    /// The reason a ledger row names; `None` for text that is none of them. `scaled down`,
    /// the spelling before the taxonomy, still reads (an older replica may write it while a
    /// newer one has migrated the rows).
    pub fn parse(text: &str) -> Option<EndReason> {
        if text == "scaled down" {
            return Some(EndReason::ScaledDown);
        }
        EndReason::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

/// The reason a Karpenter `DisruptionTerminating` message names ("Disrupting Node:
/// Underutilized/Delete"); `None` for any other text.
pub fn karpenter_disruption(message: &str) -> Option<EndReason> {
    let rest = message.strip_prefix("Disrupting Node: ")?;
    let word = rest.split(['/', ' ']).next().unwrap_or_default();
    match word.to_ascii_lowercase().as_str() {
        "underutilized" | "empty" | "emptiness" | "consolidation" => Some(EndReason::Consolidated),
        "drifted" | "drift" => Some(EndReason::Drifted),
        "expired" | "expiration" => Some(EndReason::Expired),
        _ => None,
    }
}

/// Spot nodes that went away in a window for a reason other than a preemption (or a drill):
/// what a preemption rate leaves out, shown beside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DepartureCounts {
    pub scaled_down: u32,
    pub consolidated: u32,
    pub drifted: u32,
    pub expired: u32,
    pub repaired: u32,
    pub deleted: u32,
    pub unobserved: u32,
}

impl DepartureCounts {
    /// Counts one departure; preemptions and drills are not departures of this kind.
    pub fn add(&mut self, reason: EndReason) {
        if let Some(n) = self.slot(reason) {
            *n += 1;
        }
    }

    fn slot(&mut self, reason: EndReason) -> Option<&mut u32> {
        Some(match reason {
            EndReason::ScaledDown => &mut self.scaled_down,
            EndReason::Consolidated => &mut self.consolidated,
            EndReason::Drifted => &mut self.drifted,
            EndReason::Expired => &mut self.expired,
            EndReason::Repaired => &mut self.repaired,
            EndReason::Deleted => &mut self.deleted,
            EndReason::Unobserved => &mut self.unobserved,
            EndReason::Preempted | EndReason::Drill => return None,
        })
    }

    /// Every reason with its count, in [`EndReason::ALL`]'s order, zeros left out.
    pub fn counts(&self) -> Vec<(EndReason, u32)> {
        let mut c = *self;
        EndReason::ALL
            .into_iter()
            .filter_map(|r| c.slot(r).map(|n| (r, *n)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    pub fn total(&self) -> u32 {
        self.counts().iter().map(|(_, n)| n).sum()
    }
}

impl std::fmt::Display for DepartureCounts {
    /// "2 scaled-down · 1 consolidated"; "none" when there were none.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts = self.counts();
        if counts.is_empty() {
            return f.write_str("none");
        }
        let parts: Vec<String> = counts
            .iter()
            .map(|(r, n)| format!("{n} {}", r.as_str()))
            .collect();
        f.write_str(&parts.join(" · "))
    }
}

/// What the watches saw of a node before it left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signals {
    /// The provider's preemption notice was seen.
    pub preempted: bool,
    /// A preemption drill's annotation was on it.
    pub drill: bool,
    /// The message of the last Karpenter `DisruptionTerminating` event about it.
    pub karpenter_disruption: Option<String>,
    /// Its last `node.coreweave.cloud/state` label.
    pub cks_state: Option<String>,
    /// Its CKS NodePool's `targetNodes` and `currentNodes` when it left, if it had one.
    pub pool_target: Option<(i32, i32)>,
}

/// The reason a node left, and the evidence that decided it (one line, for the ledger's
/// `end_evidence`). The first signal that applies wins, in this order: drill, preemption,
/// Karpenter's disruption, a CKS repair state, a CKS scale-down, else deleted.
pub fn decide(s: &Signals) -> (EndReason, String) {
    if s.drill {
        return (
            EndReason::Drill,
            "a preemption drill's annotation was on it".into(),
        );
    }
    if s.preempted {
        return (
            EndReason::Preempted,
            "the provider's preemption notice".into(),
        );
    }
    if let Some(m) = &s.karpenter_disruption
        && let Some(r) = karpenter_disruption(m)
    {
        let m = crate::domain::text::clip(m, 200);
        return (
            r,
            format!("Karpenter {KARPENTER_DISRUPTION_TERMINATING}: {m}"),
        );
    }
    if let Some(state) = s
        .cks_state
        .as_deref()
        .filter(|s| matches!(*s, "triage" | "zap"))
    {
        return (
            EndReason::Repaired,
            format!(
                "{}={}",
                crate::labels::NODE_STATE,
                crate::domain::text::clip(state, 32)
            ),
        );
    }
    if let Some((target, current)) = s.pool_target.filter(|(t, c)| t < c) {
        return (
            EndReason::ScaledDown,
            format!("its NodePool's targetNodes {target} below currentNodes {current}"),
        );
    }
    (EndReason::Deleted, "no provider signal".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn karpenters_messages_as_karpenter_writes_them() {
        for (m, r) in [
            (
                "Disrupting Node: Underutilized/Delete",
                Some(EndReason::Consolidated),
            ),
            (
                "Disrupting Node: Underutilized/Replace",
                Some(EndReason::Consolidated),
            ),
            (
                "Disrupting Node: Empty/Delete",
                Some(EndReason::Consolidated),
            ),
            ("Disrupting Node: Drifted/Replace", Some(EndReason::Drifted)),
            ("Disrupting Node: Expiration", Some(EndReason::Expired)),
            ("Disrupting NodeClaim: Drifted/Replace", None),
            ("Disrupting Node: Something/Else", None),
            (
                "Failed to drain node, 5 pods are waiting to be evicted",
                None,
            ),
        ] {
            assert_eq!(karpenter_disruption(m), r, "{m}");
        }
    }

    #[test]
    fn each_reason_from_its_signal_in_order() {
        let none = Signals::default();
        assert_eq!(decide(&none).0, EndReason::Deleted);
        let shrinking = Signals {
            pool_target: Some((2, 3)),
            ..none.clone()
        };
        let (r, why) = decide(&shrinking);
        assert_eq!(r, EndReason::ScaledDown);
        assert_eq!(why, "its NodePool's targetNodes 2 below currentNodes 3");
        // A pool at its target: a node that left is not a scale-down.
        let steady = Signals {
            pool_target: Some((3, 3)),
            ..none.clone()
        };
        assert_eq!(decide(&steady).0, EndReason::Deleted);
        let triage = Signals {
            cks_state: Some("triage".into()),
            ..shrinking.clone()
        };
        assert_eq!(
            decide(&triage),
            (
                EndReason::Repaired,
                "node.coreweave.cloud/state=triage".into()
            )
        );
        let production = Signals {
            cks_state: Some("production".into()),
            ..none.clone()
        };
        assert_eq!(decide(&production).0, EndReason::Deleted);
        let drifted = Signals {
            karpenter_disruption: Some("Disrupting Node: Drifted/Replace".into()),
            ..triage.clone()
        };
        let (r, why) = decide(&drifted);
        assert_eq!(r, EndReason::Drifted);
        assert!(why.contains("Drifted/Replace"), "{why}");
        let preempted = Signals {
            preempted: true,
            ..drifted.clone()
        };
        assert_eq!(decide(&preempted).0, EndReason::Preempted);
        let drill = Signals {
            drill: true,
            ..preempted
        };
        assert_eq!(decide(&drill).0, EndReason::Drill);
    }

    #[test]
    fn departure_counts_leave_preemptions_and_drills_out() {
        let mut c = DepartureCounts::default();
        assert_eq!(c.to_string(), "none");
        for r in [
            EndReason::ScaledDown,
            EndReason::ScaledDown,
            EndReason::Consolidated,
            EndReason::Preempted,
            EndReason::Drill,
        ] {
            c.add(r);
        }
        assert_eq!(c.total(), 3);
        assert_eq!(c.to_string(), "2 scaled-down · 1 consolidated");
    }

    #[test]
    fn every_reason_reads_back_from_its_spelling() {
        for r in EndReason::ALL {
            assert_eq!(EndReason::parse(r.as_str()), Some(r));
        }
        assert_eq!(EndReason::parse("scaled down"), Some(EndReason::ScaledDown));
        assert_eq!(EndReason::parse("gone"), None);
    }
}
