//! Kueue's queues: each cluster's ClusterQueues with their pending and admitted workloads,
//! made from the hub's Kueue objects and pool rows (`spotboard_core::domain::kueue`) and
//! published on the stream as [`QueueRow`] rows.

use std::time::Duration;

use spotboard_core::domain::kueue::queues;
use spotboard_core::model::{KueueReport, PoolRow, QueueRow};

use crate::hub::Hub;

/// How often the rows are made again. Kueue admits in seconds; the publisher sends only the
/// rows that changed, and a cluster without Kueue costs one look at an empty store.
pub const EVERY: Duration = Duration::from_secs(2);

/// The Kueue queues and pending workloads of `cluster` (every cluster with `None`) now: rows
/// sorted by cluster and name, pending workloads longest waiting first.
pub fn now(hub: &Hub, cluster: Option<&str>) -> KueueReport {
    let objects = hub.kueue_objects(cluster);
    if objects.is_empty() {
        return KueueReport::default();
    }
    let rows = hub.shared_pool_rows();
    let mut report = KueueReport::default();
    for (name, o) in objects {
        let pools: Vec<&PoolRow> = rows
            .iter()
            .map(|p| &**p)
            .filter(|p| p.cluster == name)
            .collect();
        let found = queues(&name, &o, &pools);
        report.queues.extend(found.rows);
        report.pending.extend(found.pending);
        report.admitted.extend(found.admitted);
    }
    report.pending.sort_by_key(|p| (p.since.is_none(), p.since));
    report
}

/// Publishes every cluster's [`QueueRow`]s every [`EVERY`].
pub fn spawn_publisher(hub: Hub) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tick.tick().await;
            let rows: Vec<QueueRow> = now(&hub, None).queues;
            hub.publish(rows);
        }
    })
}
