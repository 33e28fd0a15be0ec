//! Why each node went away: one end-reason taxonomy for every provider, decided from the
//! signals the watches saw before the node left, with the evidence that decided it.
//!
//! Only `preempted` is a spot preemption: rates, alerts, waves and survival curves count it
//! alone, and `/preemptions` shows the other departures beside the rate so a reader sees what
//! was left out (kubernetes-sigs/karpenter#1413 asks for exactly this split).

use chrono::{DateTime, SecondsFormat, Utc};
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
    /// had left `production` for `triage` or `zap` (CoreWeave CKS: node lifecycle labels), or
    /// any node cordoned after it stopped being Ready and gone while still not Ready
    /// ([`DrainedNotReady`]: how GKE auto-repair looks from the Kubernetes API).
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

/// A node that stopped being Ready and was cordoned afterwards, still not Ready when it left:
/// a repair's drain as the Kubernetes API shows it. GKE auto-repair drains and re-creates a
/// node that reported NotReady, or no status, for about 10 minutes, and records the repair
/// only in its own operations log, never as a Kubernetes event (GKE: Auto-repair nodes);
/// Karpenter's node repair (Ready False or Unknown for 30 minutes, AWS: EKS automatic node
/// repair) marks the node with its `karpenter.sh/disrupted` taint rather than a cordon, so
/// its repairs still read as `deleted`.
///
/// The order tells it from a drain that came first: a node drained by hand, or by a
/// scale-down, and then shut down turns NotReady only after its cordon, and is no repair.
/// The time not Ready is evidence, not a threshold: a repair's threshold is the provider's
/// to choose and differs between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainedNotReady {
    /// When its `Ready` condition left True (its lastTransitionTime), or when spotboard
    /// first saw it not Ready if the kubelet gave no time.
    pub since: DateTime<Utc>,
    /// When it left the cluster.
    pub left: DateTime<Utc>,
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
    /// It was cordoned after it stopped being Ready, and was still not Ready when it left.
    pub drained_not_ready: Option<DrainedNotReady>,
}

/// The reason a node left, and the evidence that decided it (one line, for the ledger's
/// `end_evidence`). The first signal that applies wins, in this order: drill, preemption,
/// Karpenter's disruption, a CKS repair state, a CKS scale-down, a drain while not Ready,
/// else deleted. A shrinking pool comes before a drain while not Ready: the pool's target
/// is the operator's own word, the order of a cordon and a NotReady only an inference.
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
    if let Some(d) = s.drained_not_ready {
        let for_s = (d.left - d.since).num_seconds().max(0) as u64;
        return (
            EndReason::Repaired,
            format!(
                "not Ready since {} ({} before it left), cordoned after: a repair's drain",
                d.since.to_rfc3339_opts(SecondsFormat::Secs, true),
                crate::domain::capacity::score::human(for_s),
            ),
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
    fn a_drain_while_not_ready_is_a_repair_after_the_pools_own_word() {
        let since = "2026-11-28T14:02:10Z".parse().unwrap();
        let left = "2026-11-28T14:13:40Z".parse().unwrap();
        let repaired = Signals {
            drained_not_ready: Some(DrainedNotReady { since, left }),
            ..Signals::default()
        };
        assert_eq!(
            decide(&repaired),
            (
                EndReason::Repaired,
                "not Ready since 2026-11-28T14:02:10Z (11 min before it left), cordoned after: \
                 a repair's drain"
                    .into()
            )
        );
        // Under two minutes reads in seconds; a clock that ran backwards reads 0 s.
        let quick = Signals {
            drained_not_ready: Some(DrainedNotReady {
                since,
                left: since + chrono::Duration::seconds(52),
            }),
            ..Signals::default()
        };
        assert!(
            decide(&quick).1.contains("(52 s before"),
            "{:?}",
            decide(&quick)
        );
        let backwards = Signals {
            drained_not_ready: Some(DrainedNotReady {
                since: left,
                left: since,
            }),
            ..Signals::default()
        };
        assert!(decide(&backwards).1.contains("(0 s before"));
        // A pool being scaled down, a CKS state, Karpenter's disruption and a notice win.
        let shrinking = Signals {
            pool_target: Some((1, 2)),
            ..repaired.clone()
        };
        assert_eq!(decide(&shrinking).0, EndReason::ScaledDown);
        let consolidated = Signals {
            karpenter_disruption: Some("Disrupting Node: Empty/Delete".into()),
            ..repaired.clone()
        };
        assert_eq!(decide(&consolidated).0, EndReason::Consolidated);
        let preempted = Signals {
            preempted: true,
            ..repaired
        };
        assert_eq!(decide(&preempted).0, EndReason::Preempted);
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
