//! The label sets of spotboard's series, named as Prometheus users expect them.
//!
//! Every label value is a [`LabelText`], escaped as the text formats require: prometheus-client
//! 0.24 writes label values as they are, and some come from objects anyone with write access to
//! a cluster can set (a NodePool condition's `reason` is a free string). An unescaped `"` makes
//! Prometheus reject the whole scrape (every alert rule goes silent); `"` and a newline let a
//! value close the series and add series of its own.

use std::fmt::Write;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

/// A label value, written escaped per the OpenMetrics and Prometheus text formats: `\` as
/// `\\`, `"` as `\"`, a line feed as `\n`. A carriage return, which the formats have no
/// escape for (Prometheus refuses a `\r` in a scrape) and some readers take for a line end,
/// is written as a line feed (`\n`), so no value can end its line.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub struct LabelText(pub String);

impl From<String> for LabelText {
    fn from(s: String) -> Self {
        LabelText(s)
    }
}

impl From<&str> for LabelText {
    fn from(s: &str) -> Self {
        LabelText(s.to_string())
    }
}

impl EncodeLabelValue for LabelText {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        escape_into(&self.0, encoder)
    }
}

/// Writes `value` escaped (see [`LabelText`]) to `out`.
pub fn escape_into(value: &str, out: &mut impl Write) -> std::fmt::Result {
    let mut rest = value;
    while let Some(i) = rest.find(['\\', '"', '\n', '\r']) {
        out.write_str(&rest[..i])?;
        out.write_str(match rest.as_bytes()[i] {
            b'\\' => "\\\\",
            b'"' => "\\\"",
            // A line feed, or a carriage return (see above).
            _ => "\\n",
        })?;
        rest = &rest[i + 1..];
    }
    out.write_str(rest)
}

/// Labels of `spotboard_preemptions_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PreemptionLabels {
    pub cluster: LabelText,
    pub pool: LabelText,
    pub zone: LabelText,
    pub instance_type: LabelText,
}

/// Labels of `spotboard_preemption_waves_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WaveLabels {
    pub cluster: LabelText,
}

/// Labels of `spotboard_nodes`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabels {
    pub cluster: LabelText,
    pub provider: LabelText,
    pub capacity_type: LabelText,
}

/// Labels of `spotboard_gpus`: [`NodeLabels`] and `state`, `requested` or `idle`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GpuLabels {
    pub cluster: LabelText,
    pub provider: LabelText,
    pub capacity_type: LabelText,
    pub state: LabelText,
}

/// Labels of `spotboard_replacement_latency_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolLabels {
    pub cluster: LabelText,
    pub pool: LabelText,
}

/// Labels of `spotboard_nodepool_condition` (kube-state-metrics' style: one series per
/// condition with its status, value 1).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConditionLabels {
    pub cluster: LabelText,
    pub pool: LabelText,
    pub condition: LabelText,
    pub status: LabelText,
    pub reason: LabelText,
}

/// Labels of `spotboard_preemption_rate_percent`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RateLabels {
    pub cluster: LabelText,
    pub pool: LabelText,
    pub window: LabelText,
}

/// Labels of the per-ClusterQueue gauges (Kueue).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub cluster: LabelText,
    pub cluster_queue: LabelText,
}

/// Labels of `spotboard_kueue_admitted_gpus`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueCapacityLabels {
    pub cluster: LabelText,
    pub cluster_queue: LabelText,
    /// `spot`, `on-demand` or `other`.
    pub capacity_type: LabelText,
}

/// Labels of `spotboard_karpenter_launch_failures`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LaunchFailureLabels {
    pub cluster: LabelText,
    /// The zone the provider's error names; empty when it names none.
    pub zone: LabelText,
    /// The instance type the provider's error names; empty when it names none.
    pub instance_type: LabelText,
    /// `24h` or `7d`.
    pub window: LabelText,
}

/// Labels of the per-cluster gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabels {
    pub cluster: LabelText,
}

/// Labels of `spotboard_eviction_errors_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EvictionLabels {
    pub cluster: LabelText,
    pub pool: LabelText,
    /// `refused`, `past-grace` or `killed` (`spotboard_core::domain::preemption::evictions::ErrorKind`).
    pub kind: LabelText,
}
