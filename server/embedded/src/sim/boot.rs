//! The end of a node's boot: the kubelet registers the Node (Ready, idle) and CoreWeave
//! records `CWNodeRegistered` on the Node and its NodePool (CoreWeave: Node Pool reference,
//! "Events").

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use spotboard_core::nodepool::NodePoolSpec;

use super::Ctx;
use super::events::{Component, Involved, Severity};
use super::nodes::{NewNode, node_object};
use super::podspec::pod_object;
use super::workloads;

/// The DaemonSet controller's part: its pods on a node that joined, running at once.
async fn start_daemons(ctx: &Ctx, node: &Node) {
    let (host_ip, cidr) = super::nodes::host_ip_and_cidr(node);
    let plans = workloads::daemon_pods(ctx.seed, &node.name_any(), &mut rand::rng());
    for (i, p) in plans.iter().enumerate() {
        let pod = pod_object(
            p,
            &host_ip,
            &format!("{}{}", cidr.trim_end_matches("0/24"), i + 2),
        );
        let api: Api<Pod> = Api::namespaced(ctx.client.clone(), p.namespace);
        if let Err(e) = api.create(&PostParams::default(), &pod).await {
            tracing::debug!(node = %node.name_any(), "daemon pod: {e}");
        }
    }
}

/// Creates the Node `node` of pool `pool`. A Node of that name that exists already counts as
/// registered (a retry after a lost response).
pub async fn register(ctx: Arc<Ctx>, pool: String, spec: NodePoolSpec, node: String) {
    let obj = node_object(&NewNode {
        name: &node,
        pool: &pool,
        spec: &spec,
        zone: &ctx.zone,
        zone_index: ctx.zone_index,
        org_id: &ctx.org_id,
        active: false,
    });
    let api: Api<Node> = Api::all(ctx.client.clone());
    let created = match api.create(&PostParams::default(), &obj).await {
        Ok(n) => n,
        Err(kube::Error::Api(e)) if e.code == 409 => return,
        Err(e) => {
            tracing::warn!(zone = %ctx.zone, node, "registering node: {e}");
            return;
        }
    };
    let msg = format!(
        "Node {node} registered in NodePool {pool} (instance type {}).",
        spec.instance_type
    );
    ctx.events
        .record(
            &Involved::of(&created),
            Severity::Normal,
            "CWNodeRegistered",
            &msg,
            Component::NodePoolOperator,
        )
        .await;
    ctx.record_on_pool(&pool, "CWNodeRegistered", &msg).await;
    if !ctx.is_bulk(&pool) {
        start_daemons(&ctx, &created).await;
    }
    tracing::debug!(zone = %ctx.zone, node = %created.name_any(), pool, "node registered");
    ctx.wake_scheduler.notify_one();
}
