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

/// A node's preemption timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub provider: Provider,
    /// T=0: the first observation with the notice signal.
    pub t0: DateTime<Utc>,
    pub phases: Vec<Phase>,
    /// Index into `phases` of the phase the node is in now.
    pub current: usize,
    /// Seconds until the next phase's planned start; `None` once removed.
    pub next_in_s: Option<i64>,
}

impl Timeline {
    /// The current phase's name.
    pub fn phase(&self) -> &str {
        &self.phases[self.current].name
    }

    /// Whether the node is gone.
    pub fn removed(&self) -> bool {
        self.current + 1 == self.phases.len()
    }

    /// When the node is (or was) gone: observed, else planned.
    pub fn removal(&self) -> DateTime<Utc> {
        let last = &self.phases[self.phases.len() - 1];
        last.observed.unwrap_or(last.planned)
    }
}

/// The timeline of a node whose observations (oldest first) are `history`, as of `now`;
/// `None` when the notice signal was never seen.
///
/// T=0 is the first observation with the signal. A CKS drain observed early or late moves the
/// draining phase to when it was seen; the node's disappearance marks "removed" whenever it
/// happens. A phase is current from its observed start, or its planned start when not observed
/// (the signals of the last phase are the node's removal only).
pub fn derive(provider: Provider, history: &[Observation], now: DateTime<Utc>) -> Option<Timeline> {
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
    let current = if gone_seen.is_some() {
        last
    } else {
        // Before removal is observed, the node is never shown as removed.
        (0..last)
            .rev()
            .find(|&i| phases[i].observed.unwrap_or(phases[i].planned) <= now)
            .unwrap_or(0)
    };
    let next_in_s = (current < last).then(|| {
        let next = &phases[current + 1];
        (next.observed.unwrap_or(next.planned) - now)
            .num_seconds()
            .max(0)
    });
    Some(Timeline {
        provider,
        t0,
        phases,
        current,
        next_in_s,
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
