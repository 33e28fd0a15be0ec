//! The label sets of spotboard's series, named as Prometheus users expect them.

use prometheus_client::encoding::EncodeLabelSet;

/// Labels of `spotboard_preemptions_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PreemptionLabels {
    pub cluster: String,
    pub pool: String,
    pub zone: String,
    pub instance_type: String,
}

/// Labels of `spotboard_preemption_waves_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WaveLabels {
    pub cluster: String,
}

/// Labels of `spotboard_nodes`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabels {
    pub cluster: String,
    pub provider: String,
    pub capacity_type: String,
}

/// Labels of `spotboard_replacement_latency_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PoolLabels {
    pub cluster: String,
    pub pool: String,
}

/// Labels of `spotboard_nodepool_condition` (kube-state-metrics' style: one series per
/// condition with its status, value 1).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConditionLabels {
    pub cluster: String,
    pub pool: String,
    pub condition: String,
    pub status: String,
    pub reason: String,
}

/// Labels of `spotboard_preemption_rate_percent`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RateLabels {
    pub cluster: String,
    pub pool: String,
    pub window: String,
}

/// Labels of the per-cluster gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabels {
    pub cluster: String,
}

/// Labels of `spotboard_eviction_errors_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EvictionLabels {
    pub cluster: String,
    pub pool: String,
    /// `refused`, `past-grace` or `killed` (`app::domain::preemption::evictions::ErrorKind`).
    pub kind: String,
}
