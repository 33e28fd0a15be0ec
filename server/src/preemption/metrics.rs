//! Prometheus metrics on `/metrics` (prometheus-client, text format).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

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

/// The registry and its counters.
pub struct Metrics {
    registry: Registry,
    pub preemptions: Family<PreemptionLabels, Counter>,
    pub waves: Family<WaveLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("spotboard");
        let preemptions = Family::<PreemptionLabels, Counter>::default();
        let waves = Family::<WaveLabels, Counter>::default();
        registry.register(
            "preemptions",
            "Spot preemptions seen (T=0 observed), per cluster, pool, zone and instance type",
            preemptions.clone(),
        );
        registry.register(
            "preemption_waves",
            "Waves of preemptions: preemptions in one cluster less than 60 s apart count once",
            waves.clone(),
        );
        Metrics {
            registry,
            preemptions,
            waves,
        }
    }
}

impl Metrics {
    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Encoding into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
