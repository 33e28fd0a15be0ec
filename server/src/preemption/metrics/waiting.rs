//! The waiting-work gauges: pods waiting for a node per cluster, Kueue's ClusterQueues
//! (pending workloads, their GPUs and wait, admitted GPUs by capacity type), and Karpenter's
//! refused launches, set from the rows the hub last published at each scrape.

use spotboard_core::model::{LaunchFailureRow, PoolRow, QueueRow, WaitingPool};

use super::{ClusterLabels, LaunchFailureLabels, Metrics, QueueCapacityLabels, QueueLabels};

impl Metrics {
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

    /// Sets `spotboard_karpenter_launch_failures` from the rows as last published: a row
    /// gone from the 7-day window loses its series.
    pub fn set_launch_failures(&self, rows: &[LaunchFailureRow]) {
        self.launch_failures.clear();
        for r in rows {
            for (window, n) in [("24h", r.failures_24h), ("7d", r.failures_7d)] {
                self.launch_failures
                    .get_or_create(&LaunchFailureLabels {
                        cluster: r.cluster.as_str().into(),
                        zone: r.zone.as_str().into(),
                        instance_type: r.instance_type.as_str().into(),
                        window: window.into(),
                    })
                    .set(i64::from(n));
            }
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
}
