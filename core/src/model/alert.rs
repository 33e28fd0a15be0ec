//! Alerts on the wire, one shape for the header on every page, the list on `/preemptions` and
//! the `--alert-webhook` POST body (the webhook's documented schema, [`ALERT_SCHEMA`]).
//!
//! An alert is one episode of something wrong with one subject (a cluster's preemption
//! wave, a pool's preemption rate, ...): it is announced once when it starts (`firing`) and
//! once when it ends (`resolved`), never again in between; its figures may move while it
//! fires. Kinds and thresholds: [`crate::domain::alerts`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The value of [`Alert::schema`]: the webhook body's version. A change that removes or
/// renames a field gets a new version.
pub const ALERT_SCHEMA: &str = "spotboard.dev/alert/v1";

/// What an alert is about.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum AlertKind {
    /// Preemptions in one cluster less than `--wave-gap-seconds` apart, at least
    /// `--wave-min-nodes` of them.
    #[default]
    Wave,
    /// A pool still running spot nodes preempted above `--rate-alert-pct` over 24 h.
    Rate,
    /// A pool's replacement latency p95 over 24 h above 90 s.
    ReplacementLatency,
    /// Eviction errors in a pool's preemptions of the last 15 minutes.
    EvictionErrors,
    /// A NodePool's `Quota` or `Capacity` condition False for longer than
    /// `--alert-condition-minutes`.
    Condition,
    /// Pods requesting GPUs waiting for a node (unschedulable or gated) in one cluster for
    /// longer than `--alert-pending-minutes`.
    PendingWork,
}

impl AlertKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Wave => "wave",
            AlertKind::Rate => "rate",
            AlertKind::ReplacementLatency => "replacement-latency",
            AlertKind::EvictionErrors => "eviction-errors",
            AlertKind::Condition => "condition",
            AlertKind::PendingWork => "pending-work",
        }
    }
}

/// Whether an episode is going on or over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertStatus {
    #[default]
    Firing,
    Resolved,
}

/// One alert episode, as announced and as shown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// Always [`ALERT_SCHEMA`].
    pub schema: String,
    pub status: AlertStatus,
    pub kind: AlertKind,
    /// The episode's subject, the same in its `firing` and `resolved` messages:
    /// `wave/<cluster>/<first T=0>`, `rate/<cluster>/<pool>`,
    /// `replacement-latency/<cluster>/<pool>`, `eviction-errors/<cluster>/<pool>`,
    /// `condition/<cluster>/<pool>/<Quota|Capacity>`.
    pub key: String,
    pub cluster: String,
    /// The NodePool; `None` for a wave (a cluster's).
    pub pool: Option<String>,
    /// One line for a person ("3 spot nodes preempted within 60 s of each other").
    pub summary: String,
    /// The figure judged, in the kind's unit: nodes in the wave, percent of spot nodes
    /// preempted, seconds (p95), eviction errors, minutes False.
    pub value: f64,
    /// What `value` was judged against, in the same unit.
    pub threshold: f64,
    /// When the episode started (a wave's first T=0, a condition's lastTransitionTime, else
    /// when spotboard first saw it).
    pub started: Option<DateTime<Utc>>,
    /// When it ended; `None` while firing.
    pub resolved: Option<DateTime<Utc>>,
    /// A wave's nodes, in the order they were preempted; empty for the other kinds. The
    /// webhook's message has them all; the live stream's firing rows the first
    /// [`super::Wave::STREAM_NODES`] ([`Alert::for_stream`]; `value` counts them all).
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Where to look, a path on spotboard (`/preemptions`, `/pools/<cluster>/<pool>`).
    pub path: String,
}

impl Alert {
    /// The alert as the live stream carries it: a wave's first [`super::Wave::STREAM_NODES`]
    /// nodes (its row changes at each node the wave takes, and each patch carries the list
    /// whole).
    pub fn for_stream(mut self) -> Self {
        self.nodes.truncate(super::Wave::STREAM_NODES);
        self
    }
}
