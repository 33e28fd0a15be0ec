//! Prometheus metrics on `/metrics` (prometheus-client, OpenMetrics text): the series a team
//! overlays on its own dashboards (`server/deploy/grafana/spotboard.json` uses every one).
//!
//! Counters move as preemptions are seen; the replacement latency histogram as the ledger
//! shows a replacement Ready (each once, from this process's start); the gauges (nodes, pools
//! with a problem, nodes under notice, the savings run rate) are set from the hub and the
//! ledger at each scrape.
//!
//! # Layout
//! - here: the registry, the preemption, fleet, rate and savings families;
//! - `waiting`: the waiting-work gauges (pods per cluster, Kueue per ClusterQueue) and
//!   Karpenter's refused launches;
//! - `labels`: the label sets, escaped.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use rust_decimal::prelude::ToPrimitive;
use spotboard_core::domain::preemption::rates::{RateBy, RateRow};
use spotboard_core::model::{Lifetime, PoolRow, RunRate};
use spotboard_core::{CapacityType, Provider};

mod labels;
mod waiting;

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
    launch_failures: Family<LaunchFailureLabels, Gauge>,
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
        let launch_failures = Family::<LaunchFailureLabels, Gauge>::default();
        registry.register(
            "karpenter_launch_failures",
            "Karpenter NodeClaim launches the cloud provider refused for want of capacity (InsufficientCapacityError events, kept by the ledger), per cluster, zone and instance type the provider's error names, over the trailing window (24h, 7d)",
            launch_failures.clone(),
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
            launch_failures,
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
mod tests;
