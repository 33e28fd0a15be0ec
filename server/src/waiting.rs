//! Waiting work: the pods the scheduler has not placed (kept by the hub's pod watch), placed
//! on the pools they could land on (`spotboard_core::domain::waiting::pools`), summed per
//! cluster and per pool, and published on the stream as [`WaitingPool`] rows so that no page
//! polls for them.

use std::time::Duration;

use spotboard_core::domain::waiting::pools::{per_pool, place};
use spotboard_core::model::{PoolRow, Waiting, WaitingPool};

use crate::hub::Hub;

/// How often the rows are made again. The sums change with pods and pool conditions that a
/// person reads in seconds; the publisher sends only the rows that changed.
pub const EVERY: Duration = Duration::from_secs(1);

/// The waiting work of `cluster` (every cluster with `None`) now: its pods, longest waiting
/// first, each with the pools it could land on and its cause, and the per-cluster and
/// per-pool rows.
pub fn now(hub: &Hub, cluster: Option<&str>) -> Waiting {
    let mut pods = hub.waiting(cluster);
    let rows = hub.shared_pool_rows();
    let pools: Vec<&PoolRow> = rows
        .iter()
        .map(|p| &**p)
        .filter(|p| cluster.is_none_or(|c| c == p.cluster))
        .collect();
    place(&mut pods, &pools);
    Waiting {
        pools: per_pool(&pods, &pools),
        pods,
    }
}

/// Publishes every cluster's and pool's [`WaitingPool`] row every [`EVERY`].
pub fn spawn_publisher(hub: Hub) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        loop {
            tick.tick().await;
            let rows: Vec<WaitingPool> = now(&hub, None).pools;
            hub.publish(rows);
        }
    })
}
