//! Prometheus metrics on `/metrics` (prometheus-client, OpenMetrics text): the series a team
//! overlays on its own dashboards (`server/deploy/grafana/spotboard.json` uses every one).
//!
//! Counters move as preemptions are seen; the gauges (nodes, pools with a problem, nodes under
//! notice, the savings run rate) are set from the hub and the ledger at each scrape.

use std::sync::atomic::AtomicU64;

use app::domain::preemption::{CapacityType, Provider};
use app::model::{PoolRow, RunRate};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rust_decimal::prelude::ToPrimitive;

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

/// Labels of the per-cluster gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabels {
    pub cluster: String,
}

/// A gauge of USD per hour.
type UsdPerHour = Gauge<f64, AtomicU64>;

/// The registry and its series.
pub struct Metrics {
    registry: Registry,
    pub preemptions: Family<PreemptionLabels, Counter>,
    pub waves: Family<WaveLabels, Counter>,
    nodes: Family<NodeLabels, Gauge>,
    pools_with_problem: Family<ClusterLabels, Gauge>,
    under_notice: Family<ClusterLabels, Gauge>,
    savings: UsdPerHour,
    spot_cost: UsdPerHour,
    baseline: UsdPerHour,
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
        let nodes = Family::<NodeLabels, Gauge>::default();
        registry.register(
            "nodes",
            "Current nodes (NodePool status.currentNodes), per cluster, provider and capacity type",
            nodes.clone(),
        );
        let pools_with_problem = Family::<ClusterLabels, Gauge>::default();
        registry.register(
            "pools_with_problem",
            "NodePools with a condition that needs attention or a malformed object, per cluster",
            pools_with_problem.clone(),
        );
        let under_notice = Family::<ClusterLabels, Gauge>::default();
        registry.register(
            "nodes_under_notice",
            "Nodes under their provider's preemption notice now, per cluster",
            under_notice.clone(),
        );
        let savings = UsdPerHour::default();
        registry.register(
            "savings_usd_per_hour",
            "What spot saves now against on-demand for the running nodes, USD per hour",
            savings.clone(),
        );
        let spot_cost = UsdPerHour::default();
        registry.register(
            "cost_usd_per_hour",
            "What the running priced nodes cost now at their capacity type's price, USD per hour",
            spot_cost.clone(),
        );
        let baseline = UsdPerHour::default();
        registry.register(
            "on_demand_baseline_usd_per_hour",
            "What the same nodes would cost on-demand, USD per hour",
            baseline.clone(),
        );
        Metrics {
            registry,
            preemptions,
            waves,
            nodes,
            pools_with_problem,
            under_notice,
            savings,
            spot_cost,
            baseline,
        }
    }
}

impl Metrics {
    /// Sets the fleet gauges from the hub's pool rows; series of pools that are gone go too.
    pub fn set_fleet(&self, pools: &[PoolRow]) {
        self.nodes.clear();
        self.pools_with_problem.clear();
        self.under_notice.clear();
        for p in pools {
            let labels = NodeLabels {
                cluster: p.cluster.clone(),
                provider: provider(p.provider).into(),
                capacity_type: capacity(p.capacity_type).into(),
            };
            self.nodes
                .get_or_create(&labels)
                .inc_by(i64::from(p.current_nodes.unwrap_or(0).max(0)));
            let cluster = ClusterLabels {
                cluster: p.cluster.clone(),
            };
            let problems = self.pools_with_problem.get_or_create(&cluster);
            if p.has_problem() {
                problems.inc();
            }
            self.under_notice
                .get_or_create(&cluster)
                .inc_by(i64::from(p.nodes_preempting));
        }
    }

    /// Sets the savings gauges from the run rate (see `app::domain::savings`).
    pub fn set_run_rate(&self, r: &RunRate) {
        let f = |d: rust_decimal::Decimal| d.to_f64().unwrap_or(0.0);
        self.savings.set(f(r.difference_usd_h));
        self.spot_cost.set(f(r.actual_usd_h));
        self.baseline.set(f(r.baseline_usd_h));
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Encoding into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Label values as Prometheus users write them (`on_demand`, not `on-demand`).
fn capacity(c: CapacityType) -> &'static str {
    match c {
        CapacityType::Spot => "spot",
        CapacityType::OnDemand => "on_demand",
        CapacityType::Reserved => "reserved",
        CapacityType::Mixed => "mixed",
        CapacityType::Unknown => "unknown",
    }
}

fn provider(p: Provider) -> &'static str {
    p.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(cluster: &str, capacity_type: CapacityType, nodes: i32) -> PoolRow {
        PoolRow {
            cluster: cluster.into(),
            provider: Provider::Cks,
            capacity_type,
            current_nodes: Some(nodes),
            ..Default::default()
        }
    }

    #[test]
    fn fleet_gauges_sum_per_label_set_and_forget_what_is_gone() {
        let m = Metrics::default();
        let mut troubled = pool("c1", CapacityType::Spot, 3);
        troubled.problems = vec!["Capacity: NoneAvailable".into()];
        troubled.nodes_preempting = 1;
        m.set_fleet(&[
            troubled,
            pool("c1", CapacityType::Spot, 2),
            pool("c1", CapacityType::OnDemand, 1),
            pool("gone", CapacityType::Spot, 9),
        ]);
        m.set_fleet(&m_rows());
        let text = m.encode();
        assert!(
            text.contains(r#"spotboard_nodes{cluster="c1",provider="cks",capacity_type="spot"} 5"#),
            "{text}"
        );
        assert!(text.contains(
            r#"spotboard_nodes{cluster="c1",provider="cks",capacity_type="on_demand"} 1"#
        ));
        assert!(text.contains(r#"spotboard_pools_with_problem{cluster="c1"} 1"#));
        assert!(text.contains(r#"spotboard_nodes_under_notice{cluster="c1"} 1"#));
        assert!(
            !text.contains("gone"),
            "a cluster that left has no series: {text}"
        );
    }

    fn m_rows() -> Vec<PoolRow> {
        let mut troubled = pool("c1", CapacityType::Spot, 3);
        troubled.problems = vec!["Capacity: NoneAvailable".into()];
        troubled.nodes_preempting = 1;
        vec![
            troubled,
            pool("c1", CapacityType::Spot, 2),
            pool("c1", CapacityType::OnDemand, 1),
        ]
    }

    #[test]
    fn run_rate_gauges_are_usd_per_hour() {
        let m = Metrics::default();
        m.set_run_rate(&RunRate {
            running_nodes: 2,
            unpriced_nodes: 0,
            actual_usd_h: rust_decimal::Decimal::new(965, 2),
            baseline_usd_h: rust_decimal::Decimal::new(2160, 2),
            difference_usd_h: rust_decimal::Decimal::new(1195, 2),
        });
        let text = m.encode();
        assert!(
            text.contains("spotboard_savings_usd_per_hour 11.95"),
            "{text}"
        );
        assert!(text.contains("spotboard_cost_usd_per_hour 9.65"));
        assert!(text.contains("spotboard_on_demand_baseline_usd_per_hour 21.6"));
    }
}
