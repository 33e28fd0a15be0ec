//! Prometheus metrics on `/metrics` (prometheus-client, OpenMetrics text): the series a team
//! overlays on its own dashboards (`server/deploy/grafana/spotboard.json` uses every one).
//!
//! Counters move as preemptions are seen; the replacement latency histogram as the ledger
//! shows a replacement Ready (each once, from this process's start); the gauges (nodes, pools
//! with a problem, nodes under notice, the savings run rate) are set from the hub and the
//! ledger at each scrape.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use rust_decimal::prelude::ToPrimitive;
use spotboard_core::domain::preemption::rates::{RateBy, RateRow};
use spotboard_core::model::{Lifetime, PoolRow, QueueRow, RunRate, WaitingPool};
use spotboard_core::{CapacityType, Provider};

mod labels;

pub use labels::*;

/// Upper bounds of the replacement latency buckets, seconds: around the article's 60 s (amber)
/// and 90 s (red), and out to CKS's 7-minute notice window.
pub const LATENCY_BUCKETS_S: [f64; 10] = [
    15.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0, 420.0, 600.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS_S)
}

/// A gauge of a decimal quantity (USD per hour, a percent).
type FloatGauge = Gauge<f64, AtomicU64>;

/// The registry and its series.
pub struct Metrics {
    registry: Registry,
    pub preemptions: Family<PreemptionLabels, Counter>,
    pub waves: Family<WaveLabels, Counter>,
    pub eviction_errors: Family<EvictionLabels, Counter>,
    replacement_latency: Family<PoolLabels, Histogram, fn() -> Histogram>,
    /// Preempted nodes (uids) whose replacement latency is counted already; `None` until the
    /// first look, which only notes what the ledger already had (a restart must not count
    /// 30 days of replacements again as if they happened now).
    replaced: std::sync::Mutex<Option<std::collections::HashSet<String>>>,
    nodes: Family<NodeLabels, Gauge>,
    gpus: Family<GpuLabels, Gauge>,
    conditions: Family<ConditionLabels, Gauge>,
    rates: Family<RateLabels, FloatGauge>,
    pools_with_problem: Family<ClusterLabels, Gauge>,
    under_notice: Family<ClusterLabels, Gauge>,
    waiting_pods: Family<ClusterLabels, Gauge>,
    waiting_gpus: Family<ClusterLabels, Gauge>,
    waiting_gpu_oldest: Family<ClusterLabels, Gauge>,
    kueue_pending_workloads: Family<QueueLabels, Gauge>,
    kueue_pending_gpus: Family<QueueLabels, Gauge>,
    kueue_oldest_pending: Family<QueueLabels, Gauge>,
    kueue_admitted_gpus: Family<QueueCapacityLabels, Gauge>,
    savings: FloatGauge,
    spot_cost: FloatGauge,
    baseline: FloatGauge,
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
            "Waves of preemptions: preemptions in one cluster less than --wave-gap-seconds apart, counted once when they reach --wave-min-nodes nodes",
            waves.clone(),
        );
        let eviction_errors = Family::<EvictionLabels, Counter>::default();
        registry.register(
            "eviction_errors",
            "Eviction errors of Spot preemptions, per cluster, pool and kind: evictions a PodDisruptionBudget refused (refused: one per refusal event), pods terminating past their grace period (past-grace) and pods killed at removal (killed) as the node went",
            eviction_errors.clone(),
        );
        let replacement_latency: Family<PoolLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "replacement_latency_seconds",
            "Seconds from a preemption's T=0 until its pool's replacement node is Ready (the Ready condition's lastTransitionTime), per cluster and pool",
            replacement_latency.clone(),
        );
        let nodes = Family::<NodeLabels, Gauge>::default();
        registry.register(
            "nodes",
            "Current nodes (NodePool status.currentNodes), per cluster, provider and capacity type",
            nodes.clone(),
        );
        let gpus = Family::<GpuLabels, Gauge>::default();
        registry.register(
            "gpus",
            "GPUs on nodes (nvidia.com/gpu: the node's capacity, else the instance-type catalog), per cluster, provider, capacity type and state: requested by running pods, or idle",
            gpus.clone(),
        );
        let conditions = Family::<ConditionLabels, Gauge>::default();
        registry.register(
            "nodepool_condition",
            "The NodePool conditions as they are now (CoreWeave: Node Pool reference, status.conditions), 1 per condition with its status and reason",
            conditions.clone(),
        );
        let rates = Family::<RateLabels, FloatGauge>::default();
        registry.register(
            "preemption_rate_percent",
            "spotboard's preemption rate (spot nodes preempted in the window over spot nodes that ran in it, from the ledger), per pool still running spot nodes, over 24h, 7d and 30d",
            rates.clone(),
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
        let waiting_pods = Family::<ClusterLabels, Gauge>::default();
        registry.register(
            "waiting_pods",
            "Pods waiting for a node now (PodScheduled=False/Unschedulable, or scheduling gates), per cluster",
            waiting_pods.clone(),
        );
        let waiting_gpus = Family::<ClusterLabels, Gauge>::default();
        registry.register(
            "waiting_gpus",
            "GPUs (nvidia.com/gpu) requested by the pods waiting for a node now, per cluster",
            waiting_gpus.clone(),
        );
        let waiting_gpu_oldest = Family::<ClusterLabels, Gauge>::default();
        registry.register(
            "waiting_gpu_oldest_seconds",
            "Seconds the longest-waiting pod requesting GPUs has waited for a node (since its PodScheduled condition's lastTransitionTime), per cluster; 0 when none waits",
            waiting_gpu_oldest.clone(),
        );
        let kueue_pending_workloads = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "kueue_pending_workloads",
            "Kueue Workloads without quota reserved now, per cluster and ClusterQueue (none without Kueue)",
            kueue_pending_workloads.clone(),
        );
        let kueue_pending_gpus = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "kueue_pending_gpus",
            "GPUs (nvidia.com/gpu, each pod set's count times its pod's) of the Kueue Workloads without quota reserved now, per cluster and ClusterQueue",
            kueue_pending_gpus.clone(),
        );
        let kueue_oldest_pending = Family::<QueueLabels, Gauge>::default();
        registry.register(
            "kueue_oldest_pending_seconds",
            "Seconds the longest-waiting Kueue Workload of a ClusterQueue has waited for quota (since its QuotaReserved=False transition, else its creation); 0 when none waits",
            kueue_oldest_pending.clone(),
        );
        let kueue_admitted_gpus = Family::<QueueCapacityLabels, Gauge>::default();
        registry.register(
            "kueue_admitted_gpus",
            "GPUs of the admitted Kueue Workloads, per cluster, ClusterQueue and the capacity type of the ResourceFlavor their GPUs were given (spot, on-demand, other)",
            kueue_admitted_gpus.clone(),
        );
        let savings = FloatGauge::default();
        registry.register(
            "savings_usd_per_hour",
            "What spot saves now against on-demand for the running nodes, USD per hour",
            savings.clone(),
        );
        let spot_cost = FloatGauge::default();
        registry.register(
            "cost_usd_per_hour",
            "What the running priced nodes cost now at their capacity type's price, USD per hour",
            spot_cost.clone(),
        );
        let baseline = FloatGauge::default();
        registry.register(
            "on_demand_baseline_usd_per_hour",
            "What the same nodes would cost on-demand, USD per hour",
            baseline.clone(),
        );
        Metrics {
            registry,
            preemptions,
            waves,
            eviction_errors,
            replacement_latency,
            replaced: Default::default(),
            nodes,
            gpus,
            conditions,
            rates,
            pools_with_problem,
            under_notice,
            waiting_pods,
            waiting_gpus,
            waiting_gpu_oldest,
            kueue_pending_workloads,
            kueue_pending_gpus,
            kueue_oldest_pending,
            kueue_admitted_gpus,
            savings,
            spot_cost,
            baseline,
        }
    }
}

impl Metrics {
    /// Sets the fleet gauges from the hub's pool rows; series of pools that are gone go too.
    /// The event families (preemptions, waves, eviction errors, replacement latency) get each
    /// existing pool's (and cluster's) series at zero, so rules and dashboards see 0 rather
    /// than no data until the first event (Prometheus' instrumentation guidance); counters
    /// are never removed, as a counter that vanished would read as a reset.
    pub fn set_fleet(&self, pools: &[PoolRow]) {
        self.nodes.clear();
        self.gpus.clear();
        self.conditions.clear();
        self.pools_with_problem.clear();
        self.under_notice.clear();
        for p in pools {
            let labels = NodeLabels {
                cluster: p.cluster.as_str().into(),
                provider: provider(p.provider).into(),
                capacity_type: capacity(p.capacity_type).into(),
            };
            self.nodes
                .get_or_create(&labels)
                .inc_by(i64::from(p.current_nodes.unwrap_or(0).max(0)));
            if p.gpus_allocatable > 0 {
                for (state, n) in [("requested", p.gpus_in_use()), ("idle", p.gpus_idle())] {
                    self.gpus
                        .get_or_create(&GpuLabels {
                            cluster: labels.cluster.clone(),
                            provider: labels.provider.clone(),
                            capacity_type: labels.capacity_type.clone(),
                            state: state.into(),
                        })
                        .inc_by(i64::from(n));
                }
            }
            for c in p.conditions.iter().filter(|c| !c.status.is_empty()) {
                self.conditions
                    .get_or_create(&ConditionLabels {
                        cluster: p.cluster.as_str().into(),
                        pool: p.name.as_str().into(),
                        condition: c.type_.as_str().into(),
                        status: c.status.as_str().into(),
                        reason: c.reason.as_str().into(),
                    })
                    .set(1);
            }
            let cluster = ClusterLabels {
                cluster: p.cluster.as_str().into(),
            };
            let problems = self.pools_with_problem.get_or_create(&cluster);
            if p.has_problem() {
                problems.inc();
            }
            self.under_notice
                .get_or_create(&cluster)
                .inc_by(i64::from(p.nodes_preempting));
            self.touch_event_series(p);
        }
    }

    /// Sets the waiting-work gauges from each cluster's row as last published: every cluster
    /// of `pools` gets its series, at 0 when nothing of it waits.
    pub fn set_waiting(
        &self,
        pools: &[PoolRow],
        waiting: &[WaitingPool],
        now: chrono::DateTime<chrono::Utc>,
    ) {
        self.waiting_pods.clear();
        self.waiting_gpus.clear();
        self.waiting_gpu_oldest.clear();
        let label = |cluster: &str| ClusterLabels {
            cluster: cluster.into(),
        };
        // Once per cluster, not per pool: a fleet has thousands of pools in a few clusters.
        let clusters: std::collections::BTreeSet<&str> =
            pools.iter().map(|p| p.cluster.as_str()).collect();
        for cluster in clusters {
            for family in [
                &self.waiting_pods,
                &self.waiting_gpus,
                &self.waiting_gpu_oldest,
            ] {
                drop(family.get_or_create(&label(cluster)));
            }
        }
        for w in waiting.iter().filter(|w| w.pool.is_none()) {
            let l = label(&w.cluster);
            self.waiting_pods.get_or_create(&l).set(i64::from(w.pods));
            self.waiting_gpus.get_or_create(&l).set(i64::from(w.gpus));
            let oldest = w
                .oldest_gpu_since
                .map_or(0, |s| (now - s).num_seconds().max(0));
            self.waiting_gpu_oldest.get_or_create(&l).set(oldest);
        }
    }

    /// Sets the Kueue gauges from the ClusterQueue rows as last published: every queue gets
    /// its series (at 0 when nothing waits), and a queue that is gone loses them.
    pub fn set_kueue(&self, queues: &[QueueRow], now: chrono::DateTime<chrono::Utc>) {
        self.kueue_pending_workloads.clear();
        self.kueue_pending_gpus.clear();
        self.kueue_oldest_pending.clear();
        self.kueue_admitted_gpus.clear();
        for q in queues {
            let l = QueueLabels {
                cluster: q.cluster.as_str().into(),
                cluster_queue: q.name.as_str().into(),
            };
            self.kueue_pending_workloads
                .get_or_create(&l)
                .set(i64::from(q.pending_workloads));
            self.kueue_pending_gpus
                .get_or_create(&l)
                .set(i64::from(q.pending_gpus));
            let oldest = q
                .oldest_pending_since
                .filter(|_| q.pending_workloads > 0)
                .map_or(0, |s| (now - s).num_seconds().max(0));
            self.kueue_oldest_pending.get_or_create(&l).set(oldest);
            for (capacity_type, gpus) in [
                ("spot", q.admitted_gpus_spot),
                ("on-demand", q.admitted_gpus_on_demand),
                ("other", q.admitted_gpus_other),
            ] {
                self.kueue_admitted_gpus
                    .get_or_create(&QueueCapacityLabels {
                        cluster: l.cluster.clone(),
                        cluster_queue: l.cluster_queue.clone(),
                        capacity_type: capacity_type.into(),
                    })
                    .set(i64::from(gpus));
            }
        }
    }

    /// Creates `p`'s series of the event families at zero (no-op when they exist). Each
    /// `get_or_create` returns a read guard on its family: dropped at once, as nothing is
    /// counted here.
    fn touch_event_series(&self, p: &PoolRow) {
        let cluster: LabelText = p.cluster.as_str().into();
        let pool: LabelText = p.name.as_str().into();
        drop(self.preemptions.get_or_create(&PreemptionLabels {
            cluster: cluster.clone(),
            pool: pool.clone(),
            zone: p.zone.as_deref().unwrap_or_default().into(),
            instance_type: p.instance_type.as_str().into(),
        }));
        drop(self.waves.get_or_create(&WaveLabels {
            cluster: cluster.clone(),
        }));
        for kind in spotboard_core::domain::preemption::evictions::ErrorKind::ALL {
            drop(self.eviction_errors.get_or_create(&EvictionLabels {
                cluster: cluster.clone(),
                pool: pool.clone(),
                kind: kind.as_str().into(),
            }));
        }
        drop(
            self.replacement_latency
                .get_or_create(&PoolLabels { cluster, pool }),
        );
    }

    /// Counts the replacement latencies in `lifetimes` (the ledger) not counted before; the
    /// first call only notes those already there. Returns how many were counted.
    pub fn observe_replacements(&self, lifetimes: &[Lifetime]) -> usize {
        use spotboard_core::domain::preemption::replacement;
        let mut replaced = self.replaced.lock().unwrap_or_else(|p| p.into_inner());
        let first = replaced.is_none();
        let seen = replaced.get_or_insert_default();
        let mut counted = 0;
        for (l, seconds) in replacement::latencies(lifetimes) {
            if !seen.insert(l.uid.clone()) || first {
                continue;
            }
            self.replacement_latency
                .get_or_create(&PoolLabels {
                    cluster: l.cluster.as_str().into(),
                    pool: l.pool.as_deref().unwrap_or_default().into(),
                })
                .observe(seconds);
            counted += 1;
        }
        counted
    }

    /// Sets the rate gauges from the ledger's rate rows (`spotboard_core::domain::preemption::rates`):
    /// the pool rows of pools still running spot nodes, the ones an alert can act on.
    pub fn set_rates(&self, rows: &[RateRow]) {
        self.rates.clear();
        for r in rows
            .iter()
            .filter(|r| r.by == RateBy::Pool && r.running_spot_nodes > 0)
        {
            let Some((cluster, pool)) = r.key.split_once('/') else {
                continue;
            };
            self.rates
                .get_or_create(&RateLabels {
                    cluster: cluster.into(),
                    pool: pool.into(),
                    window: r.window.as_str().into(),
                })
                .set(r.rate_pct);
        }
    }

    /// Sets the savings gauges from the run rate (see `spotboard_core::domain::savings`).
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
    use spotboard_core::domain::preemption::rates::Window;

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
        // The fleet gauges forget a cluster that left; its counters stay (at zero here): a
        // counter that vanished would read as a reset.
        for gauge in [
            "spotboard_nodes{",
            "spotboard_pools_with_problem{",
            "spotboard_nodes_under_notice{",
        ] {
            assert!(
                !text
                    .lines()
                    .any(|l| l.starts_with(gauge) && l.contains(r#"cluster="gone""#)),
                "a cluster that left has no {gauge}: {text}"
            );
        }
        assert!(text.contains(r#"spotboard_preemption_waves_total{cluster="gone"} 0"#));
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

    #[test]
    fn replacement_latencies_count_once_and_not_the_ledger_s_past_at_start() {
        use chrono::{Duration, TimeZone, Utc};
        let t =
            |s: i64| Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 0).unwrap() + Duration::seconds(s);
        let node = |uid: &str, start: i64, t0: Option<i64>, ready: Option<i64>| Lifetime {
            uid: uid.into(),
            cluster: "c1".into(),
            pool: Some("spot-a".into()),
            started_at: t(start),
            preemption_t0: t0.map(t),
            ready_at: ready.map(t),
            ..Default::default()
        };
        let m = Metrics::default();
        // At start the ledger already has one replacement (50 s): noted, not counted.
        let mut ledger = vec![
            node("old", -900, Some(-600), Some(-890)),
            node("r0", -590, None, Some(-550)),
        ];
        assert_eq!(m.observe_replacements(&ledger), 0);
        // Then a preemption at 0 s whose replacement is Ready at 75 s.
        ledger.push(node("v", -900, Some(0), Some(-890)));
        ledger.push(node("r", 20, None, None));
        assert_eq!(m.observe_replacements(&ledger), 0, "not Ready yet");
        ledger[3].ready_at = Some(t(75));
        assert_eq!(m.observe_replacements(&ledger), 1);
        assert_eq!(m.observe_replacements(&ledger), 0, "once");
        let text = m.encode();
        assert!(
            text.contains(
                r#"spotboard_replacement_latency_seconds_sum{cluster="c1",pool="spot-a"} 75.0"#
            ),
            "{text}"
        );
        assert!(text.contains(
            r#"spotboard_replacement_latency_seconds_count{cluster="c1",pool="spot-a"} 1"#
        ));
        assert!(text.contains(r#"spotboard_replacement_latency_seconds_bucket{le="60.0",cluster="c1",pool="spot-a"} 0"#));
        assert!(text.contains(r#"spotboard_replacement_latency_seconds_bucket{le="90.0",cluster="c1",pool="spot-a"} 1"#));
    }

    #[test]
    fn conditions_and_rates_of_pools_in_use_are_exported() {
        use spotboard_core::model::ConditionView;
        let m = Metrics::default();
        let mut p = pool("c1", CapacityType::Spot, 3);
        p.name = "spot-a".into();
        p.conditions = vec![ConditionView {
            type_: spotboard_core::nodepool::ConditionType::Capacity,
            status: "False".into(),
            reason: "NoneAvailable".into(),
            ..Default::default()
        }];
        m.set_fleet(&[p]);
        let rate = |key: &str, running: u32| RateRow {
            by: RateBy::Pool,
            key: key.into(),
            window: Window::Last24h,
            rate_pct: 12.5,
            running_spot_nodes: running,
            ..Default::default()
        };
        m.set_rates(&[rate("c1/spot-a", 3), rate("c1/idle", 0)]);
        let text = m.encode();
        assert!(
            text.contains(r#"spotboard_nodepool_condition{cluster="c1",pool="spot-a",condition="Capacity",status="False",reason="NoneAvailable"} 1"#),
            "{text}"
        );
        assert!(text.contains(
            r#"spotboard_preemption_rate_percent{cluster="c1",pool="spot-a",window="24h"} 12.5"#
        ));
        assert!(
            !text.contains("idle"),
            "a pool running no spot nodes has no rate series"
        );
    }

    /// One sample of a text exposition: metric name, labels (unescaped), value.
    type Sample = (String, Vec<(String, String)>, f64);

    /// A strict reader of the text exposition (the OpenMetrics / Prometheus 0.0.4 grammar
    /// for samples: `name{label="value",…} number`, label values with only `\\`, `\"` and
    /// `\n` escapes, as Prometheus' own parser accepts). Panics naming the line it cannot read.
    fn parse_exposition(text: &str) -> Vec<Sample> {
        let mut samples = Vec::new();
        for line in text.split('\n').filter(|l| !l.is_empty()) {
            if let Some(comment) = line.strip_prefix('#') {
                let known = ["# HELP ", "# TYPE ", "# UNIT ", "# EOF"];
                assert!(
                    known.iter().any(|k| line.starts_with(k)),
                    "not a descriptor: {comment:?}"
                );
                continue;
            }
            let mut chars = line.char_indices().peekable();
            let name_end = line
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(line.len());
            let name = &line[..name_end];
            assert!(!name.is_empty(), "no metric name: {line:?}");
            while chars.peek().is_some_and(|(i, _)| *i < name_end) {
                chars.next();
            }
            let mut labels = Vec::new();
            if chars.peek().map(|(_, c)| *c) == Some('{') {
                chars.next();
                loop {
                    let mut key = String::new();
                    for (_, c) in chars.by_ref() {
                        if c == '=' {
                            break;
                        }
                        assert!(
                            c.is_ascii_alphanumeric() || c == '_',
                            "label name: {line:?}"
                        );
                        key.push(c);
                    }
                    assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "{line:?}");
                    let mut value = String::new();
                    loop {
                        match chars.next().map(|(_, c)| c) {
                            Some('"') => break,
                            Some('\\') => match chars.next().map(|(_, c)| c) {
                                Some('\\') => value.push('\\'),
                                Some('"') => value.push('"'),
                                Some('n') => value.push('\n'),
                                other => panic!("escape {other:?} in {line:?}"),
                            },
                            Some(c) => value.push(c),
                            None => panic!("unterminated value: {line:?}"),
                        }
                    }
                    labels.push((key, value));
                    match chars.next().map(|(_, c)| c) {
                        Some(',') => continue,
                        Some('}') => break,
                        other => panic!("{other:?} after a label in {line:?}"),
                    }
                }
            }
            assert_eq!(chars.next().map(|(_, c)| c), Some(' '), "{line:?}");
            let rest: String = chars.map(|(_, c)| c).collect();
            let value = rest
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("value: {line:?}"));
            samples.push((name.to_string(), labels, value));
        }
        samples
    }

    #[test]
    fn label_values_are_escaped_so_a_reason_cannot_add_series() {
        use spotboard_core::model::ConditionView;
        let reason = "Bad\"} 1\nspotboard_injected_probe_total 1\n# \\ \r\"";
        let m = Metrics::default();
        let mut p = pool("c\\1\"", CapacityType::Spot, 3);
        p.name = "spot-a\n".into();
        p.conditions = vec![ConditionView {
            type_: spotboard_core::nodepool::ConditionType::Capacity,
            status: "False".into(),
            reason: reason.into(),
            ..Default::default()
        }];
        m.set_fleet(&[p]);
        let text = m.encode();
        let samples = parse_exposition(&text);
        assert!(
            samples.iter().all(
                |(n, _, _)| n.starts_with("spotboard_") && !n.starts_with("spotboard_injected")
            ),
            "{text}"
        );
        let conditions: Vec<&Sample> = samples
            .iter()
            .filter(|(n, _, _)| n == "spotboard_nodepool_condition")
            .collect();
        assert_eq!(conditions.len(), 1, "{text}");
        let got = |k: &str| {
            conditions[0]
                .1
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        // What was written reads back as it was (a carriage return as a line feed).
        assert_eq!(
            got("reason").as_deref(),
            Some(reason.replace('\r', "\n").as_str())
        );
        assert_eq!(got("cluster").as_deref(), Some("c\\1\""));
        assert_eq!(got("pool").as_deref(), Some("spot-a\n"));
    }

    #[test]
    fn event_families_start_at_zero_for_the_pools_that_exist() {
        let m = Metrics::default();
        let mut p = pool("c1", CapacityType::Spot, 3);
        p.name = "spot-a".into();
        p.zone = Some("US-EAST-04A".into());
        p.instance_type = "gd-8xh100ib-i128".into();
        m.set_fleet(&[p]);
        let text = m.encode();
        for series in [
            r#"spotboard_preemptions_total{cluster="c1",pool="spot-a",zone="US-EAST-04A",instance_type="gd-8xh100ib-i128"} 0"#,
            r#"spotboard_preemption_waves_total{cluster="c1"} 0"#,
            r#"spotboard_eviction_errors_total{cluster="c1",pool="spot-a",kind="refused"} 0"#,
            r#"spotboard_eviction_errors_total{cluster="c1",pool="spot-a",kind="past-grace"} 0"#,
            r#"spotboard_eviction_errors_total{cluster="c1",pool="spot-a",kind="killed"} 0"#,
            r#"spotboard_replacement_latency_seconds_count{cluster="c1",pool="spot-a"} 0"#,
        ] {
            assert!(text.contains(series), "{series} missing from {text}");
        }
        parse_exposition(&text);
    }
}
