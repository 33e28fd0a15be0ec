//! A preemption's eviction errors, the third production signal of a Spot fleet (AWS: "Best
//! practices for handling EC2 Spot Instance interruptions"; Karpenter: Disruption): evictions
//! a PodDisruptionBudget refused, pods still terminating past their grace period when the
//! node went, and pods killed at removal while still running.
//!
//! Where each comes from:
//! - **refused**: Warning events on the Node. CKS: `CWNodeDrainingPDBViolation` (CoreWeave:
//!   Node Pool reference, "Events"); Karpenter: `FailedDraining` ("Failed to drain node, N
//!   pods are waiting to be evicted"); any tool's `FailedEviction`; or any event quoting the
//!   API server's refusal ("... would violate the pod's disruption budget"). GKE never asks a
//!   budget: its graceful node shutdown is involuntary ("Reclamation of Spot VMs is
//!   involuntary and is not covered by the guarantees of PodDisruptionBudgets", GKE: Spot
//!   VMs), so a GKE pool shows none.
//! - **past grace**: while the node is under notice, pods whose `deletionTimestamp` (the end
//!   of their grace period) has passed and that are still there (the server's Pod watch);
//!   once the node is gone, the same from the pod's outcome.
//! - **killed**: how the pods held at T=0 stood once the node was gone (read a second after
//!   it left, before the pod garbage collector deletes them): still running or terminating.
//!
//! Counts (the ledger's, `/metrics`') are taken when the node is gone, once per pod.
//!
//! Each error names the readiness check that foresees it (the pool's audit shows whether it
//! fired there): a refusal and a pod killed behind a budget, [`Check::PdbBlocksDrain`]; a pod
//! killed mid-shutdown, [`Check::GraceExceedsNotice`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::labels;
use crate::model::{Check, EventRow, PodImpact};

/// A pod's outcome when it still ran as the node left.
pub const OUTCOME_STILL_RUNNING: &str = "still running";
/// A pod's outcome when it was shutting down, within its grace period, as the node left.
pub const OUTCOME_TERMINATING: &str = "terminating";
/// A pod's outcome when its grace period had ended and it was still there as the node left.
pub const OUTCOME_PAST_GRACE: &str = "terminating past its grace period";

/// The three kinds of eviction error.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// A PodDisruptionBudget refused an eviction.
    #[default]
    Refused,
    /// A pod was still terminating past its grace period when the node went.
    PastGrace,
    /// A pod was killed at the node's removal while still running or shutting down.
    Killed,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 3] = [ErrorKind::Refused, ErrorKind::PastGrace, ErrorKind::Killed];

    /// The `kind` label of `spotboard_eviction_errors_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::PastGrace => "past-grace",
            ErrorKind::Killed => "killed",
        }
    }

    /// A short title.
    pub fn title(self) -> &'static str {
        match self {
            ErrorKind::Refused => "eviction refused by a PodDisruptionBudget",
            ErrorKind::PastGrace => "terminating past its grace period",
            ErrorKind::Killed => "killed at removal",
        }
    }
}

/// One eviction error of one preempted node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EvictionError {
    pub kind: ErrorKind,
    /// `namespace/name` of the pod, when known (Karpenter's `FailedDraining` names none).
    pub pod: Option<String>,
    /// The event's reason, or the pod's outcome.
    pub reason: String,
    /// The event's message, or what the pod was doing.
    pub detail: String,
    /// Times the event was seen (a drain retries refused evictions); 1 for a pod.
    pub count: u32,
    /// When it was last seen; for a pod, `None` (the node's removal time is on its card).
    pub at: Option<DateTime<Utc>>,
    /// The readiness check that foresees this error, if one does.
    pub finding: Option<Check>,
}

/// Eviction errors counted by kind: refusals (events), pods past grace, pods killed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictionCounts {
    pub refused: u32,
    pub past_grace: u32,
    pub killed: u32,
}

impl EvictionCounts {
    pub fn total(&self) -> u32 {
        self.refused + self.past_grace + self.killed
    }

    pub fn add(&mut self, other: &EvictionCounts) {
        self.refused += other.refused;
        self.past_grace += other.past_grace;
        self.killed += other.killed;
    }

    /// The count of `kind`.
    pub fn of(&self, kind: ErrorKind) -> u32 {
        match kind {
            ErrorKind::Refused => self.refused,
            ErrorKind::PastGrace => self.past_grace,
            ErrorKind::Killed => self.killed,
        }
    }
}

impl std::fmt::Display for EvictionCounts {
    /// `2 refused · 1 past grace · 3 killed`, zeros left out; `none` when all are zero.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            (self.refused, "refused"),
            (self.past_grace, "past grace"),
            (self.killed, "killed"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(" · "))
        }
    }
}

/// Whether an event reports a refused eviction (see the module's list of reasons).
pub fn is_refusal(reason: &str, message: &str) -> bool {
    matches!(
        reason,
        labels::REASON_CKS_PDB_VIOLATION
            | labels::REASON_KARPENTER_FAILED_DRAINING
            | labels::REASON_FAILED_EVICTION
    ) || message.contains(labels::PDB_REFUSAL_MESSAGE)
}

/// The error kind of a pod's outcome, if the outcome is one.
pub fn outcome_kind(outcome: &str) -> Option<ErrorKind> {
    match outcome {
        OUTCOME_PAST_GRACE => Some(ErrorKind::PastGrace),
        OUTCOME_STILL_RUNNING | OUTCOME_TERMINATING => Some(ErrorKind::Killed),
        _ => None,
    }
}

fn pod_key(p: &PodImpact) -> String {
    format!("{}/{}", p.namespace, p.name)
}

/// The eviction errors of one preempted node: its refusal events (about the Node, as
/// [`is_refusal`] tells them), its pods' outcomes once it is gone, and before that the pods
/// seen terminating past their grace period while it is under notice (`past_grace`,
/// `namespace/name`). Refusals come first, newest last; then pods by name.
pub fn of_node(
    refusals: &[&EventRow],
    pods: Option<&[PodImpact]>,
    past_grace: &[String],
) -> Vec<EvictionError> {
    let pods = pods.unwrap_or_default();
    let named = |message: &str| pods.iter().map(pod_key).find(|k| names(message, k));
    let mut refused: Vec<EvictionError> = refusals
        .iter()
        .map(|e| EvictionError {
            kind: ErrorKind::Refused,
            pod: named(&e.message),
            reason: e.reason.clone(),
            detail: e.message.clone(),
            count: u32::try_from(e.count.max(1)).unwrap_or(1),
            at: e.last_seen,
            finding: Some(Check::PdbBlocksDrain),
        })
        .collect();
    refused.sort_by_key(|e| e.at);
    let refused_pods: Vec<String> = refused.iter().filter_map(|e| e.pod.clone()).collect();
    let mut out = refused;
    // DaemonSet pods are never drained (`kubectl drain --ignore-daemonsets`): they die with
    // their node by design.
    for p in pods
        .iter()
        .filter(|p| p.owner_kind.as_deref() != Some("DaemonSet"))
    {
        let key = pod_key(p);
        let outcome = match p.outcome.as_deref() {
            Some(o) => o,
            None if past_grace.contains(&key) => OUTCOME_PAST_GRACE,
            None => continue,
        };
        let Some(kind) = outcome_kind(outcome) else {
            continue;
        };
        let finding = if p.fit.as_ref().is_some_and(|f| f.sigkill_risk) {
            Some(Check::GraceExceedsNotice)
        } else if p.pdb.is_some() || refused_pods.contains(&key) {
            Some(Check::PdbBlocksDrain)
        } else {
            None
        };
        out.push(EvictionError {
            kind,
            detail: match &p.outcome {
                Some(o) => format!(
                    "{o} when the node was removed (grace period {} s)",
                    p.grace_s
                ),
                None => format!(
                    "still terminating on the node under notice, past its grace period of {} s",
                    p.grace_s
                ),
            },
            reason: outcome.to_string(),
            pod: Some(key),
            count: 1,
            at: None,
            finding,
        });
    }
    out
}

/// Whether `message` names `key` as a whole word: `ns/web-1` is not named by a message
/// about `ns/web-10`.
fn names(message: &str, key: &str) -> bool {
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/');
    message.match_indices(key).any(|(at, _)| {
        let before = message[..at].chars().next_back();
        let mut after = message[at + key.len()..].chars();
        // A '.' continues a name only when more of the name follows it (not a full stop).
        let continues = match after.next() {
            Some('.') => after.next().is_some_and(|c| c.is_ascii_alphanumeric()),
            Some(c) => name_char(c),
            None => false,
        };
        !before.is_some_and(name_char) && !continues
    })
}

/// `errors` counted by kind; a refusal counts once whatever its event's `count`.
pub fn counts(errors: &[EvictionError]) -> EvictionCounts {
    let mut c = EvictionCounts::default();
    for e in errors {
        match e.kind {
            ErrorKind::Refused => c.refused += 1,
            ErrorKind::PastGrace => c.past_grace += 1,
            ErrorKind::Killed => c.killed += 1,
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::preemption::timeline::GraceFit;

    fn event(reason: &str, message: &str, count: i32) -> EventRow {
        EventRow {
            key: format!("{reason}-{count}"),
            cluster: "c1".into(),
            object: "Node/n1".into(),
            reason: reason.into(),
            message: message.into(),
            count,
            ..Default::default()
        }
    }

    fn pod(name: &str, outcome: Option<&str>, pdb: Option<&str>, sigkill_risk: bool) -> PodImpact {
        let t = DateTime::<Utc>::default();
        PodImpact {
            namespace: "inference".into(),
            name: name.into(),
            pdb: pdb.map(Into::into),
            outcome: outcome.map(Into::into),
            grace_s: 120,
            fit: Some(GraceFit {
                sigterm: t,
                grace_end: t,
                sigkill_risk,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn refusals_are_known_by_reason_or_by_the_api_servers_words() {
        assert!(is_refusal("CWNodeDrainingPDBViolation", ""));
        assert!(is_refusal(
            "FailedDraining",
            "Failed to drain node, 2 pods are waiting"
        ));
        assert!(is_refusal("FailedEviction", ""));
        assert!(names("Cannot evict pod ns/web-1: x", "ns/web-1"));
        assert!(!names("Cannot evict pod ns/web-10: x", "ns/web-1"));
        assert!(
            names("pods: ns/a, ns/web-1.", "ns/web-1"),
            "a sentence's full stop ends it"
        );
        assert!(is_refusal(
            "DrainFailed",
            "Cannot evict pod as it would violate the pod's disruption budget."
        ));
        assert!(!is_refusal("Preemption pending", "node cordoned"));
    }

    #[test]
    fn a_cks_drain_refused_twice_then_killed_counts_two_refusals_and_three_kills() {
        let refused = [
            event(
                "CWNodeDrainingPDBViolation",
                "Cannot evict pod inference/vllm-b while draining: Cannot evict pod as it would violate the pod's disruption budget.",
                4,
            ),
            event(
                "CWNodeDrainingPDBViolation",
                "Cannot evict pod inference/vllm-c while draining: ...",
                3,
            ),
        ];
        let refs: Vec<&EventRow> = refused.iter().collect();
        let pods = [
            pod("vllm-a", Some("deleted"), Some("vllm"), false),
            pod("vllm-b", Some(OUTCOME_STILL_RUNNING), Some("vllm"), false),
            pod("vllm-c", Some(OUTCOME_STILL_RUNNING), Some("vllm"), false),
            pod("trainer-0", Some(OUTCOME_TERMINATING), None, true),
            pod("stuck", Some(OUTCOME_PAST_GRACE), None, false),
            PodImpact {
                owner_kind: Some("DaemonSet".into()),
                ..pod("cilium-x", Some(OUTCOME_STILL_RUNNING), None, false)
            },
        ];
        let errors = of_node(&refs, Some(&pods), &[]);
        assert_eq!(
            counts(&errors),
            EvictionCounts {
                refused: 2,
                past_grace: 1,
                killed: 3
            }
        );
        let b = &errors[0];
        assert_eq!(
            (b.kind, b.pod.as_deref(), b.count, b.finding),
            (
                ErrorKind::Refused,
                Some("inference/vllm-b"),
                4,
                Some(Check::PdbBlocksDrain)
            )
        );
        let trainer = errors
            .iter()
            .find(|e| e.pod.as_deref() == Some("inference/trainer-0"))
            .unwrap();
        assert_eq!(trainer.finding, Some(Check::GraceExceedsNotice));
        let stuck = errors
            .iter()
            .find(|e| e.pod.as_deref() == Some("inference/stuck"))
            .unwrap();
        assert_eq!((stuck.kind, stuck.finding), (ErrorKind::PastGrace, None));
        assert_eq!(counts(&errors).total(), 6);
        assert_eq!(
            counts(&errors).to_string(),
            "2 refused · 1 past grace · 3 killed"
        );
        assert_eq!(EvictionCounts::default().to_string(), "none");
    }

    #[test]
    fn karpenters_refusal_names_no_pod_and_pods_not_yet_read_add_nothing() {
        let e = event(
            "FailedDraining",
            "Failed to drain node, 1 pods are waiting to be evicted",
            2,
        );
        let errors = of_node(&[&e], None, &[]);
        // Before the node is gone: a pod seen past its grace counts, one without does not.
        let pods = [
            pod("stuck", None, None, false),
            pod("fine", None, None, false),
        ];
        let live = of_node(&[], Some(&pods), &["inference/stuck".to_string()]);
        assert_eq!(live.len(), 1);
        assert_eq!(
            (live[0].kind, live[0].pod.as_deref()),
            (ErrorKind::PastGrace, Some("inference/stuck"))
        );
        assert!(
            live[0]
                .detail
                .starts_with("still terminating on the node under notice")
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].pod, None);
        assert_eq!(counts(&errors).refused, 1);
    }
}
