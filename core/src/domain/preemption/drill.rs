//! The preemption drill's steps: each provider's notice sequence as writes spotboard makes to
//! one node with the user's identity, at seconds since T=0. Pure data, so the server's runner
//! only carries them out and the tests read the sequence here.
//!
//! Sources (URLs in `docs/sources.md`):
//! - CoreWeave: Spot Node Pools, "Detailed timeline": T=0 cordon, label
//!   `qos.coreweave.cloud/pending-preemption=true`, Warning `Preemption pending`; T+2 min
//!   label `qos.coreweave.cloud/evicted-at`, Warning `Preemption in progress`, drain; removal
//!   by T+7 min.
//! - GKE: Spot VMs: the node is tainted `cloud.google.com/impending-node-termination`; the
//!   kubelet gives ordinary pods 15 s, then system pods 15 s; gone at 30 s.
//! - Karpenter: Disruption, "Interruption": on AWS's two-minute warning Karpenter records
//!   `SpotInterrupted`, taints the node `karpenter.sh/disrupted:NoSchedule`, and drains it.
//!
//! What a drill does not do: delete the node. The last step ends the notice (labels, taint
//! and the drill's annotations off) and leaves the node cordoned for its owner to delete or
//! uncordon; abort restores it at any time. Every object written carries [`labels::DRILL`],
//! the node from the first write on (the cordon comes first for every provider).

use chrono::{DateTime, Utc};

use super::{Provider, window};
use crate::labels;
use crate::model::DrillPhase;

/// One write of a drill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `spec.unschedulable: true`, and the drill's annotations.
    Cordon,
    /// A node label; `Value::Now` is written as CKS writes `evicted-at` ([`label_time`]).
    Label(&'static str, LabelValue),
    /// A `NoSchedule` taint with this key.
    Taint(&'static str),
    /// A Warning event on the node with this reason and message.
    Event(&'static str, &'static str),
    /// Evict the node's pods through the Eviction API (budgets respected), DaemonSet pods
    /// left alone as `kubectl drain` does: `Pods::Ordinary` all but system-critical ones,
    /// `Pods::System` only those, `Pods::All` every one. A refused eviction is asked again
    /// until the window ends.
    Evict(Pods),
    /// The window is over: the provider's notice signals and the drill's annotations come
    /// off, the cordon stays for the node's owner to delete or uncordon.
    Stop,
}

/// A label's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelValue {
    True,
    /// The step's time, as [`label_time`] writes it.
    Now,
}

/// Which pods an eviction step takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pods {
    All,
    /// Pods whose `priorityClassName` is not `system-*` (GKE shuts them down first).
    Ordinary,
    /// `system-node-critical` / `system-cluster-critical` pods (GKE's last 15 s).
    System,
}

/// A write at seconds since T=0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub at_s: i64,
    pub action: Action,
}

/// The message of the drill's T=0 event (the reason is the provider's own).
pub const NOTICE_MESSAGE: &str = "Preemption drill started by spotboard: this node is cordoned and will be drained; it is not deleted";

/// The drill's writes for `provider`, in order. The last is [`Action::Stop`] at the end of the
/// provider's notice window ([`window`]).
pub fn steps(provider: Provider) -> Vec<Step> {
    let end = window(provider).last().map_or(0, |p| p.starts_at_s);
    let at = |at_s, action| Step { at_s, action };
    let mut s = match provider {
        Provider::Cks | Provider::Unknown => vec![
            at(0, Action::Cordon),
            at(
                0,
                Action::Label(labels::PENDING_PREEMPTION, LabelValue::True),
            ),
            at(
                0,
                Action::Event(labels::REASON_PREEMPTION_PENDING, NOTICE_MESSAGE),
            ),
            at(120, Action::Label(labels::EVICTED_AT, LabelValue::Now)),
            at(
                120,
                Action::Event(
                    labels::REASON_PREEMPTION_IN_PROGRESS,
                    "Preemption drill: draining the node",
                ),
            ),
            at(120, Action::Evict(Pods::All)),
        ],
        // The cordon comes first everywhere: it writes the drill's annotation, so no watcher
        // ever sees the provider's signal on the node without it (a taint alone would read
        // as a real preemption).
        Provider::Gke => vec![
            at(0, Action::Cordon),
            at(0, Action::Taint(labels::GKE_TERMINATION_TAINT)),
            at(0, Action::Evict(Pods::Ordinary)),
            at(15, Action::Evict(Pods::System)),
        ],
        Provider::Karpenter => vec![
            at(0, Action::Cordon),
            at(
                0,
                Action::Event(labels::KARPENTER_SPOT_INTERRUPTED, NOTICE_MESSAGE),
            ),
            at(0, Action::Taint(labels::KARPENTER_DISRUPTED_TAINT)),
            at(0, Action::Evict(Pods::All)),
        ],
    };
    s.push(at(end, Action::Stop));
    s
}

/// The phases a drill's card and plan show: the provider's notice window.
pub fn phases(provider: Provider) -> Vec<DrillPhase> {
    window(provider)
        .iter()
        .map(|p| DrillPhase {
            name: if p.name == "removed" {
                // A drill removes nothing: its window ends with the node left cordoned.
                "window ends".into()
            } else {
                p.name.into()
            },
            at_s: p.starts_at_s,
        })
        .collect()
}

/// A time as a label value: RFC 3339 with `-` for `:` (`2026-11-21T10-04-05Z`), as label
/// values allow only `[A-Za-z0-9_.-]` (Kubernetes: Labels and Selectors, "Syntax and
/// character set").
pub fn label_time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H-%M-%SZ").to_string()
}

/// The phase a drill started `elapsed_s` seconds ago is in.
pub fn phase_at(provider: Provider, elapsed_s: i64) -> String {
    phases(provider)
        .into_iter()
        .rev()
        .find(|p| p.at_s <= elapsed_s)
        .map(|p| p.name)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CKS's sequence as CoreWeave documents it, written out by hand rather than from
    /// `window`: cordon, label and event at T=0; label, event and drain at T+120 s; the
    /// drill stops at T+420 s.
    #[test]
    fn cks_follows_coreweaves_timeline() {
        let s = steps(Provider::Cks);
        let at: Vec<(i64, &Action)> = s.iter().map(|s| (s.at_s, &s.action)).collect();
        assert_eq!(
            at,
            vec![
                (0, &Action::Cordon),
                (
                    0,
                    &Action::Label("qos.coreweave.cloud/pending-preemption", LabelValue::True)
                ),
                (0, &Action::Event("Preemption pending", NOTICE_MESSAGE)),
                (
                    120,
                    &Action::Label("qos.coreweave.cloud/evicted-at", LabelValue::Now)
                ),
                (
                    120,
                    &Action::Event(
                        "Preemption in progress",
                        "Preemption drill: draining the node"
                    )
                ),
                (120, &Action::Evict(Pods::All)),
                (420, &Action::Stop),
            ]
        );
    }

    #[test]
    fn gke_and_karpenter_use_their_own_signals_and_windows() {
        let gke = steps(Provider::Gke);
        assert_eq!(
            gke[1].action,
            Action::Taint("cloud.google.com/impending-node-termination")
        );
        assert_eq!(gke.last().unwrap().at_s, 30);
        assert!(gke.contains(&Step {
            at_s: 15,
            action: Action::Evict(Pods::System)
        }));
        let aws = steps(Provider::Karpenter);
        assert_eq!(
            aws[1].action,
            Action::Event("SpotInterrupted", NOTICE_MESSAGE)
        );
        assert!(aws.contains(&Step {
            at_s: 0,
            action: Action::Taint("karpenter.sh/disrupted")
        }));
        assert_eq!(aws.last().unwrap().at_s, 120);
        for p in [Provider::Cks, Provider::Gke, Provider::Karpenter] {
            let s = steps(p);
            assert!(
                s.windows(2).all(|w| w[0].at_s <= w[1].at_s),
                "{p:?} in order"
            );
            assert_eq!(s.iter().filter(|s| s.action == Action::Stop).count(), 1);
            // The cordon writes the drill's annotation: before any provider signal.
            assert_eq!(s[0].action, Action::Cordon, "{p:?}: the annotation first");
        }
    }

    #[test]
    fn phases_and_label_times() {
        assert_eq!(phase_at(Provider::Cks, 0), "notice");
        assert_eq!(phase_at(Provider::Cks, 119), "notice");
        assert_eq!(phase_at(Provider::Cks, 120), "draining");
        assert_eq!(phase_at(Provider::Cks, 999), "window ends");
        assert_eq!(phase_at(Provider::Gke, 16), "shutting down system pods");
        let t = DateTime::parse_from_rfc3339("2026-11-21T10:04:05Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(label_time(t), "2026-11-21T10-04-05Z");
    }
}
