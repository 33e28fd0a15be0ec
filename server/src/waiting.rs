//! Waiting work: the pods the scheduler has not placed (kept by the hub's pod watch), placed
//! on the pools they could land on (`spotboard_core::domain::waiting::pools`), summed per
//! cluster and per pool, and published on the stream as [`WaitingPool`] rows so that no page
//! polls for them.

use std::time::Duration;

use spotboard_core::domain::allocation::cores;
use spotboard_core::domain::preemption::readiness::PodFacts;
use spotboard_core::domain::waiting::pools::{per_pool, place};
use spotboard_core::domain::waiting::scheduler_message;
use spotboard_core::model::{PoolRow, WaitKind, Waiting, WaitingPod, WaitingPool};

use crate::hub::Hub;
use crate::watch::records::PendingRecord;

/// How often the rows are made again. The sums change with pods and pool conditions that a
/// person reads in seconds; the publisher sends only the rows that changed.
pub const EVERY: Duration = Duration::from_secs(1);

/// The waiting work of `cluster` (every cluster with `None`) now: its pods, longest waiting
/// first, each with the pools it could land on and its cause, and the per-cluster and
/// per-pool rows.
pub fn now(hub: &Hub, cluster: Option<&str>) -> Waiting {
    let mut pods: Vec<WaitingPod> = hub
        .waiting(cluster)
        .into_iter()
        .map(|w| WaitingPod {
            events: w.events,
            ..pod(w.cluster, &w.facts, &w.pending)
        })
        .collect();
    pods.sort_by(|a, b| {
        (
            a.since.is_none(),
            a.since,
            &a.cluster,
            &a.namespace,
            &a.name,
        )
            .cmp(&(
                b.since.is_none(),
                b.since,
                &b.cluster,
                &b.namespace,
                &b.name,
            ))
    });
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
        queues: Vec::new(),
    }
}

/// One waiting pod as the API and the placing read it: its scheduler message read into
/// reasons (none for a gated pod).
fn pod(cluster: String, facts: &PodFacts, p: &PendingRecord) -> WaitingPod {
    WaitingPod {
        cluster,
        namespace: p.namespace.clone(),
        name: p.name.clone(),
        owner_kind: facts.owner_kind.clone(),
        owner_name: facts.owner_name.clone(),
        kind: p.kind,
        gpus: facts.gpus,
        cpu: cores(facts.cpu_m),
        memory: facts.memory_b,
        since: p.since,
        reasons: match p.kind {
            WaitKind::Unschedulable => scheduler_message::parse(&p.message).reasons,
            WaitKind::SchedulingGated => Vec::new(),
        },
        message: p.message.clone(),
        node_selector: p.node_selector.clone(),
        node_affinity: p.node_affinity.clone(),
        gates: p.gates.clone(),
        tolerations: p.tolerations.clone(),
        ..Default::default()
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
