//! Removing a node from its pool when `targetNodes` drops (or the pool is deleted): cordon,
//! `CWNodeRemoval`, drain (interruptible pods at once, others with their grace), and once
//! drained or after the 3-minute drain timeout the Node is deleted and its instance goes back
//! to the zone's free capacity (CoreWeave: Workload scheduling on CKS, "Pod interruption and
//! eviction policies" and "Drain time differences").

use std::sync::Arc;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use spotboard_core::labels;
use spotboard_core::nodepool::{NodePool, ScaleDownStrategy};
use tokio::time::Instant;

use super::capacity::CapacityClass;
use super::clock::{mins, wall_time};
use super::controller::PoolRuntime;
use super::events::{Component, Involved, Severity};
use super::nodes::{removal_condition, set_condition};
use super::{Ctx, Removal, preemption};

/// Simulated time a scale-down waits for the drain before deleting the node anyway.
pub const DRAIN_TIMEOUT: Duration = mins(3);

/// Starts removing `node` unless it is already being removed. `pool_gone`: the pool was
/// deleted, so there is no pool to report to.
pub fn start(ctx: &Arc<Ctx>, node: &str, pool_gone: bool) {
    if ctx.claim_removal(node, Removal::ScaleDown) {
        ctx.spawn(run(ctx.clone(), node.to_string(), pool_gone));
    }
}

/// Removes `excess` nodes' worth from the pool: queued requests first, then boots that have
/// not registered, then nodes chosen by the scale-down strategy. Returns whether the strategy
/// found no node it may remove while some must go.
pub(crate) async fn shrink(
    ctx: &Arc<Ctx>,
    pool: &NodePool,
    nodes: &[Arc<Node>],
    rt: &mut PoolRuntime,
    mut excess: u32,
) -> bool {
    let cut = excess.min(rt.queued);
    rt.queued -= cut;
    excess -= cut;
    while excess > 0 {
        let Some(i) = rt
            .booting
            .iter()
            .rposition(|b| b.registering_since.is_none())
        else {
            break;
        };
        rt.booting.remove(i);
        if let Some(class) = rt.class {
            ctx.capacity().release(&pool.spec.instance_type, class, 1);
        }
        excess -= 1;
    }
    if excess == 0 {
        return false;
    }
    let strategy = pool
        .spec
        .lifecycle
        .as_ref()
        .and_then(|l| l.scale_down_strategy.clone())
        .unwrap_or_default();
    // Nodes hosting gracefully interruptible pods are never candidates, whatever the
    // strategy; a pool made only of them stalls (CoreWeave: Workload scheduling on CKS,
    // "Potential for scale-down stalls").
    let (idle, busy): (Vec<String>, Vec<String>) = {
        let index = ctx.pods();
        nodes
            .iter()
            .map(|n| n.name_any())
            .filter(|n| ctx.removal(n).is_none() && !index.hosts_graceful(n))
            .partition(|n| index.idle(n))
    };
    let mut chosen: Vec<String> = idle.into_iter().take(excess as usize).collect();
    if strategy == ScaleDownStrategy::PreferIdle {
        let more = excess as usize - chosen.len();
        chosen.extend(busy.into_iter().take(more));
    }
    if !chosen.is_empty() {
        let msg = format!(
            "Removing {} node(s) to reach targetNodes {} ({strategy}): {}.",
            chosen.len(),
            pool.spec.target_nodes,
            chosen.join(", ")
        );
        let about = Involved::of(pool);
        let op = Component::NodePoolOperator;
        ctx.events
            .record(&about, Severity::Normal, "CWNodePoolRemoveNodes", &msg, op)
            .await;
    }
    let stalled = chosen.len() < excess as usize;
    for node in chosen {
        start(ctx, &node, false);
    }
    stalled
}

async fn run(ctx: Arc<Ctx>, node: String, pool_gone: bool) {
    if let Err(e) = remove(&ctx, &node, pool_gone).await {
        tracing::warn!(zone = %ctx.zone, node, "scale-down: {e}");
    }
    ctx.release_removal(&node);
    ctx.wake.notify_one();
}

async fn remove(ctx: &Ctx, name: &str, pool_gone: bool) -> kube::Result<()> {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let Some(node) = ctx.node(name) else {
        return Ok(());
    };
    let about = Involved::of(node.as_ref());
    let pool_name = super::nodes::label(&node, labels::NODE_POOL);
    let instance = super::nodes::label(&node, labels::INSTANCE_TYPE);
    let pool: Option<Arc<NodePool>> = if pool_gone {
        None
    } else {
        ctx.pool(&pool_name)
    };
    let pool_about = pool.as_deref().map(Involved::of);
    let op = Component::NodePoolOperator;
    if let Some(p) = &pool_about {
        let msg = format!("Deletion of node {name} requested.");
        ctx.events
            .record(
                p,
                Severity::Normal,
                "CWNodeDeletionRequestSuccess",
                &msg,
                op,
            )
            .await;
    }

    let mut taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    if !taints
        .iter()
        .any(|t| t.key == "node.kubernetes.io/unschedulable")
    {
        taints.push(Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            effect: "NoSchedule".into(),
            time_added: Some(wall_time()),
            value: None,
        });
    }
    let patch = json!({"spec": {"unschedulable": true, "taints": taints}});
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    set_condition(&nodes, name, removal_condition(Some("ScaleDown"))).await?;
    let msg = format!("Node {name} cordoned for removal from NodePool {pool_name}.");
    ctx.events
        .record(&about, Severity::Normal, "CWNodeCordoned", &msg, op)
        .await;
    let msg = format!(
        "Draining node {name}: interruptible pods are deleted at once, others get their grace period."
    );
    ctx.events
        .record(&about, Severity::Normal, "CWNodeDraining", &msg, op)
        .await;
    preemption::drain(ctx, name, true).await;

    let deadline = Instant::now() + ctx.clock.real(DRAIN_TIMEOUT);
    while Instant::now() < deadline && !ctx.pods().drained(name) {
        let step = (deadline - Instant::now()).min(Duration::from_millis(200));
        let _ = tokio::time::timeout(step, ctx.pods_changed.notified()).await;
    }
    if !ctx.pods().drained(name) {
        let msg =
            format!("Drain of node {name} timed out; remaining pods are deleted with the node.");
        ctx.events
            .record(
                &about,
                Severity::Warning,
                "CWNodeDrainingForceDelete",
                &msg,
                op,
            )
            .await;
    }
    match nodes.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e),
    }
    // The instance goes back to CoreWeave: capacity for the next request.
    let class = pool.as_ref().map_or(CapacityClass::OnDemand, |p| {
        CapacityClass::of(&p.spec.compute_class)
    });
    ctx.capacity().release(&instance, class, 1);
    if let Some(p) = &pool_about {
        let msg = format!("Node {name} was deleted from NodePool {pool_name}.");
        ctx.events
            .record(p, Severity::Normal, "CWNodeDeleted", &msg, op)
            .await;
        let msg = format!("Removed node {name} from NodePool {pool_name}.");
        ctx.events
            .record(p, Severity::Normal, "CWNodePoolNodesRemoved", &msg, op)
            .await;
    }
    Ok(())
}
