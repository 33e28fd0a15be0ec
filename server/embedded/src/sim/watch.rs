//! The Node and NodePool watches: they keep the shared caches current and turn changes into
//! work (wake the controller, start an annotated preemption, collect a deleted node's pods).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::store::Writer;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, ResourceExt};
use spotboard_core::nodepool::NodePool;

use super::nodes::PREEMPT_ANNOTATION;
use super::pods::delete_pod;
use super::{Ctx, preemption, repair};

/// Watches Nodes into `ctx.nodes`.
pub async fn nodes(ctx: Arc<Ctx>, writer: Writer<Node>) {
    let api: Api<Node> = Api::all(ctx.client.clone());
    let stream = reflector(
        writer,
        watcher(api, watcher::Config::default())
            .default_backoff()
            .modify(trim),
    );
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Apply(node) | watcher::Event::InitApply(node)) => {
                if wants_preemption(&node) {
                    preemption::start(&ctx, &node.name_any());
                } else if repair::wanted(&node) {
                    repair::start(&ctx, &node.name_any());
                }
                ctx.wake.notify_one();
                ctx.wake_scheduler.notify_one();
            }
            Ok(watcher::Event::Delete(node)) => {
                let (gc, name) = (ctx.clone(), node.name_any());
                ctx.spawn(async move { collect_pods(&gc, &name).await });
                ctx.wake.notify_one();
            }
            Ok(watcher::Event::InitDone) => ctx.wake.notify_one(),
            Ok(watcher::Event::Init) => {}
            Err(e) => tracing::warn!(zone = %ctx.zone, "node watch: {e}"),
        }
    }
}

/// Watches NodePools into `ctx.pools`.
pub async fn pools(ctx: Arc<Ctx>, writer: Writer<NodePool>) {
    let api: Api<NodePool> = Api::all(ctx.client.clone());
    let stream = reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    );
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(_) => ctx.wake.notify_one(),
            Err(e) => tracing::warn!(zone = %ctx.zone, "nodepool watch: {e}"),
        }
    }
}

/// Drops from the cached copy what the behaviour model never reads of a cached Node: system
/// info, capacity (the scheduler reads allocatable), addresses after the first, condition
/// messages and heartbeats. At 10k nodes that is about half of the cache. Whatever writes a
/// Node reads it from the API server first, so nothing trimmed here is written back.
fn trim(node: &mut Node) {
    node.metadata.managed_fields = None;
    if let Some(s) = node.status.as_mut() {
        s.node_info = None;
        s.capacity = None;
        s.images = None;
        if let Some(a) = s.addresses.as_mut() {
            a.truncate(1);
        }
        for c in s.conditions.iter_mut().flatten() {
            c.message = None;
            c.last_heartbeat_time = None;
        }
    }
}

fn wants_preemption(node: &Node) -> bool {
    node.annotations()
        .get(PREEMPT_ANNOTATION)
        .is_some_and(|v| v == "now")
}

/// How long the pod garbage collector leaves the pods of a vanished node before it deletes
/// them (kube-controller-manager's pod GC quarantine is 40 s). Until then they stay bound to a
/// node that is gone, still `Running` or `Terminating` as they were: what a watcher sees of
/// pods killed at a node's removal.
const POD_GC_QUARANTINE: std::time::Duration = super::clock::secs(40);
/// At high speeds the quarantine still lasts this long in real time, so that a watcher that
/// reads a removed node's pods a second or two after it left finds them.
const POD_GC_QUARANTINE_MIN_REAL: std::time::Duration = std::time::Duration::from_secs(5);

/// The pod garbage collector's part: pods bound to a node that no longer exists are deleted
/// after [`POD_GC_QUARANTINE`], whatever their grace period (their containers died with the
/// machine).
async fn collect_pods(ctx: &Ctx, node: &str) {
    let wait = ctx
        .clock
        .real(POD_GC_QUARANTINE)
        .max(POD_GC_QUARANTINE_MIN_REAL);
    tokio::time::sleep(wait).await;
    let orphans = ctx.pods().bound_to(node);
    futures::stream::iter(orphans)
        .for_each_concurrent(16, |pod| async move {
            delete_pod(&ctx.client, &pod, Some(0), "pod gc").await;
        })
        .await;
}
