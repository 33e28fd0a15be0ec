//! Spot preemption, exactly as the timeline of CoreWeave: Spot Node Pools ("Instance
//! preemption", "Detailed timeline"):
//!
//! - **T=0** warning and cordon: `spec.unschedulable`, label
//!   `qos.coreweave.cloud/pending-preemption=true`, Warning `Preemption pending` on the Node.
//!   Pods keep running.
//! - **T+2 min** drain: label `qos.coreweave.cloud/evicted-at=<timestamp>`, Warning
//!   `Preemption in progress`, every pod (but DaemonSet pods, as `kubectl drain` does)
//!   evicted through the Eviction API with its own `terminationGracePeriodSeconds`; the
//!   kubelet simulation removes each pod at the end of its grace period (SIGKILL). An
//!   eviction a PodDisruptionBudget refuses is asked again every 5 s and reported once per
//!   pod as Warning `CWNodeDrainingPDBViolation` on the Node and the NodePool.
//! - **Removal** when the node is drained or at **T+7 min**, whichever is first: the Node is
//!   deleted, Warning `Deleted for preemption`; pods still there (refused, or with a grace
//!   period longer than the window) die with it, reported as Warning
//!   `CWNodeDrainingForceDelete`. The NodePool stays; its controller requests a
//!   replacement, which waits for capacity (`QueuedAwaitingCapacity`) like any other request.
//!
//! Triggers: at random, only for nodes of `computeClass: spot` pools, with a mean of
//! [`MEAN_TIME_TO_PREEMPTION`] per node; and on demand for any node annotated
//! `sim.spotboard.dev/preempt=now`.
//!
//! The `evicted-at` value: label values allow only `[A-Za-z0-9_.-]`, so the RFC 3339 drain
//! time is written with `-` for `:` (`2026-11-21T10-04-05Z`), see [`evicted_at_value`].

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use rand::Rng;
use serde_json::json;
use spotboard_core::labels;
use spotboard_core::nodepool::ComputeClass;
use tokio::time::Instant;

use super::clock::rfc3339;
use super::events::{Component, Involved, Severity};
use super::eviction::{self, Evicted};
use super::nodes::{removal_condition, set_condition};
use super::notice::{CKS_DRAIN_AFTER, CKS_REMOVE_BY};
use super::pods::{PodRef, delete_pod};
use super::{Ctx, Removal};

/// Mean simulated time until a running Spot node is preempted at random: a day, so a pool is
/// hit now and then, not wiped (at speed 60, ~15 Spot nodes see one preemption every ~1.6 min).
pub const MEAN_TIME_TO_PREEMPTION: Duration = Duration::from_secs(24 * 3600);

/// Where a preemption is, by simulated time since T=0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Cordoned and labelled; pods run on (T=0 to T+2 min).
    Pending,
    /// Draining (T+2 min until drained or T+7 min).
    Draining,
    /// The window is over: the node must be gone.
    Expired,
}

/// The phase at `since_t0` simulated time after T=0.
pub fn phase_at(since_t0: Duration) -> Phase {
    if since_t0 < CKS_DRAIN_AFTER {
        Phase::Pending
    } else if since_t0 < CKS_REMOVE_BY {
        Phase::Draining
    } else {
        Phase::Expired
    }
}

/// Simulated time after T=0 at which the node is removed: when drained (`drained_at`, since
/// T=0), but never before the drain starts and never after T+7 min.
pub fn removal_at(drained_at: Option<Duration>) -> Duration {
    drained_at.map_or(CKS_REMOVE_BY, |d| d.clamp(CKS_DRAIN_AFTER, CKS_REMOVE_BY))
}

/// The `qos.coreweave.cloud/evicted-at` label value for a drain started at `t`: RFC 3339 with
/// `-` for `:`, because label values may not hold `:`.
pub fn evicted_at_value(t: DateTime<Utc>) -> String {
    rfc3339(t).replace(':', "-")
}

/// The chance that one node is preempted at random during `dt` simulated time.
pub fn chance_in(dt: Duration) -> f64 {
    1.0 - (-dt.as_secs_f64() / MEAN_TIME_TO_PREEMPTION.as_secs_f64()).exp()
}

/// Starts the preemption of `node` unless it is already being removed; returns whether it
/// started. The claim is taken at once so that no other removal picks the node meanwhile.
pub(crate) fn start(ctx: &Arc<Ctx>, node: &str) -> bool {
    if !ctx.claim_removal(node, Removal::Preemption) {
        return false;
    }
    ctx.spawn(run(ctx.clone(), node.to_string()));
    true
}

async fn run(ctx: Arc<Ctx>, node: String) {
    if let Err(e) = timeline(&ctx, &node).await {
        tracing::warn!(zone = %ctx.zone, node, "preemption: {e}");
    }
    ctx.release_removal(&node);
    ctx.wake.notify_one();
}

async fn timeline(ctx: &Ctx, name: &str) -> kube::Result<()> {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let Some(node) = ctx.node(name) else {
        return Ok(());
    };
    let about = Involved::of(node.as_ref());
    let pool = super::nodes::label(&node, labels::NODE_POOL);
    let t0 = Instant::now();
    let now = Utc::now();
    // Wall-clock times the phases will happen at: the simulated minutes at this speed.
    let wall =
        |sim: Duration| now + chrono::Duration::from_std(ctx.clock.real(sim)).unwrap_or_default();
    let drain_at = wall(CKS_DRAIN_AFTER);
    let remove_by = wall(CKS_REMOVE_BY);

    // T=0: cordon and warn. The taint is the one `kubectl cordon` leads to.
    let mut taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    if !taints
        .iter()
        .any(|t| t.key == "node.kubernetes.io/unschedulable")
    {
        taints.push(k8s_openapi::api::core::v1::Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            effect: "NoSchedule".into(),
            time_added: Some(super::clock::wall_time()),
            value: None,
        });
    }
    let patch = json!({
        "metadata": {"labels": {labels::PENDING_PREEMPTION: "true"}},
        "spec": {"unschedulable": true, "taints": taints},
    });
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    set_condition(&nodes, name, removal_condition(Some("Preemption"))).await?;
    ctx.events
        .record(
            &about,
            Severity::Warning,
            labels::REASON_PREEMPTION_PENDING,
            &format!(
                "Instance selected for Spot preemption: node cordoned. Drain starts at {} and the \
                 node leaves NodePool {pool} by {} at the latest.",
                rfc3339(drain_at),
                rfc3339(remove_by)
            ),
            Component::PreemptionController,
        )
        .await;
    ctx.wake.notify_one();

    // T+2 min: drain.
    tokio::time::sleep_until(t0 + ctx.clock.real(CKS_DRAIN_AFTER)).await;
    let drain_started = Utc::now();
    let patch =
        json!({"metadata": {"labels": {labels::EVICTED_AT: evicted_at_value(drain_started)}}});
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    ctx.events
        .record(
            &about,
            Severity::Warning,
            labels::REASON_PREEMPTION_IN_PROGRESS,
            &format!(
                "Draining node for Spot preemption: pods are terminated with their \
                 terminationGracePeriodSeconds; the node is removed when drained or at {}.",
                rfc3339(remove_by)
            ),
            Component::PreemptionController,
        )
        .await;
    // Removal: drained, or the window is over. Evictions a budget refuses are asked again
    // until then; what is still there at the end is killed with the machine.
    let deadline = t0 + ctx.clock.real(CKS_REMOVE_BY);
    evict_until(ctx, name, &pool, &about, deadline).await;
    let killed: Vec<String> = ctx
        .pods()
        .evictable_or_terminating(name)
        .into_iter()
        .map(|p| format!("{}/{}", p.namespace, p.name))
        .collect();
    if !killed.is_empty() {
        let msg = format!(
            "Pods stopped ungracefully: the Spot preemption window ended before they did, and they go with the node: {}.",
            killed.join(", ")
        );
        ctx.events
            .record(
                &about,
                Severity::Warning,
                labels::REASON_CKS_FORCE_DELETE,
                &msg,
                Component::PreemptionController,
            )
            .await;
        ctx.record_on_pool_as(
            &pool,
            Severity::Warning,
            labels::REASON_CKS_FORCE_DELETE,
            &msg,
        )
        .await;
    }
    match nodes.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e),
    }
    ctx.events
        .record(
            &about,
            Severity::Warning,
            labels::REASON_DELETED_FOR_PREEMPTION,
            &format!("Node removed from NodePool {pool} and the cluster after Spot preemption."),
            Component::PreemptionController,
        )
        .await;
    let msg = format!("Node {name} was deleted from NodePool {pool} (Spot preemption).");
    ctx.record_on_pool(&pool, "CWNodeDeleted", &msg).await;
    Ok(())
}

/// Deletes every pod on `node` except DaemonSet pods, concurrently, each with its own
/// grace period; with `hurry_interruptible`, pods labelled interruptible go at once
/// (CoreWeave: Workload scheduling on CKS says CKS "terminates Pods ... without waiting for
/// their full terminationGracePeriodSeconds").
pub(crate) async fn drain(ctx: &Ctx, node: &str, hurry_interruptible: bool) {
    let victims = ctx.pods().evictable(node);
    futures::stream::iter(victims)
        .for_each_concurrent(16, |(pod, interruptible)| async move {
            let grace = (hurry_interruptible && interruptible).then_some(0);
            delete_pod(&ctx.client, &pod, grace, "drain").await;
        })
        .await;
}

/// The drain of a preempted node: every pod but DaemonSet pods evicted through the Eviction
/// API, concurrently, refused ones asked again every [`eviction::RETRY`] until the node is
/// drained or `deadline`. Each refused pod is reported once, as a Warning
/// `CWNodeDrainingPDBViolation` on the Node and on its NodePool (CoreWeave: Node Pool
/// reference, "Events").
async fn evict_until(ctx: &Ctx, node: &str, pool: &str, about: &Involved, deadline: Instant) {
    let mut reported: HashSet<String> = HashSet::new();
    loop {
        let victims = ctx.pods().evictable(node);
        let refused: Vec<(PodRef, String)> = futures::stream::iter(victims)
            .map(|(pod, _)| async move {
                match eviction::evict(&ctx.evictions, &pod).await {
                    Evicted::Refused(why) => Some((pod, why)),
                    _ => None,
                }
            })
            .buffer_unordered(16)
            .filter_map(|r| async move { r })
            .collect()
            .await;
        for (pod, why) in refused {
            if !reported.insert(pod.uid.clone()) {
                continue;
            }
            let msg = format!(
                "Cannot evict pod {}/{} while draining for Spot preemption: {why}",
                pod.namespace, pod.name
            );
            ctx.events
                .record(
                    about,
                    Severity::Warning,
                    labels::REASON_CKS_PDB_VIOLATION,
                    &msg,
                    Component::PreemptionController,
                )
                .await;
            ctx.record_on_pool_as(
                pool,
                Severity::Warning,
                labels::REASON_CKS_PDB_VIOLATION,
                &msg,
            )
            .await;
        }
        let retry_at = (Instant::now() + ctx.clock.real(eviction::RETRY)).min(deadline);
        while Instant::now() < retry_at && !ctx.pods().drained(node) {
            let step = (retry_at - Instant::now()).min(Duration::from_millis(200));
            let _ = tokio::time::timeout(step, ctx.pods_changed.notified()).await;
        }
        if Instant::now() >= deadline || ctx.pods().drained(node) {
            return;
        }
    }
}

/// Starts random preemptions for `dt` of simulated time: each node of a Spot pool that is not
/// already leaving is preempted with [`chance_in`]; at most one in fifty Spot
/// nodes (at least two) are in preemption at once, as capacity is reclaimed a few nodes at a
/// time.
pub(crate) fn random(ctx: &Arc<Ctx>, dt: Duration) {
    let chance = chance_in(dt);
    if chance <= 0.0 {
        return;
    }
    let spot: HashSet<String> = ctx
        .pools
        .state()
        .iter()
        .filter(|p| p.spec.compute_class == ComputeClass::Spot)
        .map(|p| p.name_any())
        .collect();
    let candidates: Vec<String> = ctx
        .nodes
        .state()
        .iter()
        .filter(|n| {
            n.labels()
                .get(labels::NODE_POOL)
                .is_some_and(|p| spot.contains(p))
        })
        .map(|n| n.name_any())
        .collect();
    let limit = (candidates.len() / 50).max(2);
    let mut running = candidates
        .iter()
        .filter(|n| ctx.removal(n) == Some(Removal::Preemption))
        .count();
    for node in candidates {
        if running >= limit {
            break;
        }
        if ctx.removal(&node).is_none()
            && super::lock(&ctx.rng).random_bool(chance)
            && start(ctx, &node)
        {
            running += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::clock::{mins, secs};

    #[test]
    fn phases_follow_the_spot_node_pools_timeline() {
        let cases = [
            (secs(0), Phase::Pending),
            (secs(119), Phase::Pending),
            (secs(120), Phase::Draining),
            (secs(419), Phase::Draining),
            (secs(420), Phase::Expired),
        ];
        for (t, want) in cases {
            assert_eq!(phase_at(t), want, "{t:?}");
        }
    }

    #[test]
    fn removal_is_when_drained_within_the_window() {
        assert_eq!(removal_at(None), mins(7));
        assert_eq!(
            removal_at(Some(secs(150))),
            secs(150),
            "30 s pods drain at T+2:30"
        );
        assert_eq!(
            removal_at(Some(secs(10))),
            mins(2),
            "never before the drain"
        );
        assert_eq!(
            removal_at(Some(mins(12))),
            mins(7),
            "600 s pods outlive the window"
        );
    }

    #[test]
    fn evicted_at_is_a_valid_label_value() {
        let t: DateTime<Utc> = "2026-11-21T10:04:05Z".parse().unwrap();
        let v = evicted_at_value(t);
        assert_eq!(v, "2026-11-21T10-04-05Z");
        assert!(
            crate::sim::admission::label_value(&v),
            "{v} is a Kubernetes label value"
        );
    }

    #[test]
    fn random_rate_is_low() {
        let per_minute = chance_in(mins(1));
        assert!(per_minute > 0.0 && per_minute < 0.001, "{per_minute}");
        // 15 Spot nodes for a simulated hour: well under one preemption on average.
        assert!(15.0 * chance_in(mins(60)) < 1.0);
        assert_eq!(chance_in(Duration::ZERO), 0.0);
    }
}
