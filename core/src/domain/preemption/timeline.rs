//! A node's path through its provider's notice window, from observed signals alone.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::{Provider, effective_grace_s, sigterm_at_s, window};

/// What was observed about a node at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    pub at: DateTime<Utc>,
    /// The provider's notice signal is on the node (see [`super::notice`]).
    pub notice: bool,
    /// CKS: `qos.coreweave.cloud/evicted-at` is set (the drain began).
    pub draining: bool,
    /// The node object is gone.
    pub gone: bool,
}

/// One phase of a timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    pub name: String,
    /// When the notice window says it starts.
    pub planned: DateTime<Utc>,
    /// When it was observed to start, if it has.
    pub observed: Option<DateTime<Utc>>,
}

/// A node's preemption timeline: when each phase was planned and when it was observed. It
/// does not change with the clock, so the server publishes it only when a signal changes and
/// the browser's countdown ticks locally ([`Timeline::current_at`], [`Timeline::next_in_s`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub provider: Provider,
    /// T=0: the first observation with the notice signal.
    pub t0: DateTime<Utc>,
    pub phases: Vec<Phase>,
}

impl Timeline {
    /// Index into `phases` of the phase the node is in at `now`. A phase is current from its
    /// observed start, or its planned start when not observed; the last phase (removed) only
    /// once the node's disappearance was observed.
    pub fn current_at(&self, now: DateTime<Utc>) -> usize {
        let last = self.phases.len() - 1;
        if self.removed() {
            return last;
        }
        (0..last)
            .rev()
            .find(|&i| self.phases[i].starts() <= now)
            .unwrap_or(0)
    }

    /// The current phase's name at `now`.
    pub fn phase_at(&self, now: DateTime<Utc>) -> &str {
        &self.phases[self.current_at(now)].name
    }

    /// The next phase's name and seconds from `now` to its start (0 when overdue); `None`
    /// once removed.
    pub fn next_in_s(&self, now: DateTime<Utc>) -> Option<(&str, i64)> {
        let current = self.current_at(now);
        let next = self.phases.get(current + 1)?;
        Some((&next.name, (next.starts() - now).num_seconds().max(0)))
    }

    /// Whether the node was observed gone.
    pub fn removed(&self) -> bool {
        self.phases.last().is_some_and(|p| p.observed.is_some())
    }

    /// When the node is (or was) gone: observed, else planned.
    pub fn removal(&self) -> DateTime<Utc> {
        self.phases[self.phases.len() - 1].starts()
    }
}

impl Phase {
    /// When the phase starts: observed, else planned.
    pub fn starts(&self) -> DateTime<Utc> {
        self.observed.unwrap_or(self.planned)
    }
}

/// The timeline of a node whose observations (oldest first) are `history`; `None` when the
/// notice signal was never seen.
///
/// T=0 is the first observation with the signal. A CKS drain observed early or late moves the
/// draining phase to when it was seen; the node's disappearance marks "removed" whenever it
/// happens.
pub fn derive(provider: Provider, history: &[Observation]) -> Option<Timeline> {
    let t0 = history.iter().find(|o| o.notice)?.at;
    let specs = window(provider);
    let drain_seen = history
        .iter()
        .find(|o| o.at >= t0 && o.draining)
        .map(|o| o.at);
    let gone_seen = history.iter().find(|o| o.at >= t0 && o.gone).map(|o| o.at);
    let last = specs.len() - 1;
    let phases: Vec<Phase> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| Phase {
            name: s.name.to_string(),
            planned: t0 + Duration::seconds(s.starts_at_s),
            observed: if i == 0 {
                Some(t0)
            } else if i == last {
                gone_seen
            } else if s.name == "draining" {
                drain_seen
            } else {
                None
            },
        })
        .collect();
    Some(Timeline {
        provider,
        t0,
        phases,
    })
}

/// When a pod on the node gets SIGTERM and when its grace period ends, and whether that end
/// falls after the node's removal (SIGKILL risk).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraceFit {
    pub sigterm: DateTime<Utc>,
    pub grace_end: DateTime<Utc>,
    /// The grace period does not fit in the time left: the pod is killed before it is done.
    pub sigkill_risk: bool,
}

/// The fit of a pod with `grace_s` seconds of termination grace period on `t`'s node.
/// `system` marks a `system-node-critical` / `system-cluster-critical` pod, which GKE's
/// kubelet shuts down only in the last 15 s (GKE: Spot VMs).
pub fn grace_fit(t: &Timeline, grace_s: i64, system: bool) -> GraceFit {
    let drain = t
        .phases
        .iter()
        .find(|p| p.name == "draining")
        .and_then(|p| p.observed);
    let system_phase = (system && t.provider == super::Provider::Gke)
        .then(|| {
            t.phases
                .iter()
                .find(|p| p.name == "shutting down system pods")
        })
        .flatten()
        .map(|p| p.observed.unwrap_or(p.planned));
    let sigterm = system_phase
        .or(drain)
        .unwrap_or(t.t0 + Duration::seconds(sigterm_at_s(t.provider)));
    let grace_end = sigterm + Duration::seconds(effective_grace_s(t.provider, grace_s));
    let planned_removal = t.phases[t.phases.len() - 1].planned;
    GraceFit {
        sigterm,
        grace_end,
        sigkill_risk: grace_end > planned_removal
            || effective_grace_s(t.provider, grace_s) < grace_s,
    }
}
