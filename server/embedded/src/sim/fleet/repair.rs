//! GKE auto-repair in a GKE fleet zone, by this zone's own rules: a node whose kubelet stops
//! posting status turns `Ready=Unknown` after the node monitor's grace period, and after
//! about ten minutes of that GKE drains the node and re-creates it under the same name (GKE:
//! Auto-repair nodes, "Repair criteria" and "Node repair process").
//!
//! Started by annotating a node of a GKE zone `sim.spotboard.dev/kubelet=stopped` (how tests
//! and the curious break a node). In order:
//! 1. the annotation is taken off, and the kubelet posts no more status;
//! 2. after [`NODE_MONITOR_GRACE`], the node lifecycle controller sets `Ready` to `Unknown`
//!    (reason `NodeStatusUnknown`, "Kubelet stopped posting node status.") and adds the
//!    `node.kubernetes.io/unreachable` taints, `NoSchedule` and `NoExecute`;
//! 3. after [`GKE_REPAIR_AFTER`] not Ready, auto-repair drains it: cordon, then every pod
//!    evicted through the Eviction API (a budget's refusals asked again every 5 s, up to
//!    [`GKE_DRAIN_LIMIT`]). Nothing confirms an evicted pod's end: its kubelet is gone;
//! 4. the VM is re-created: the Node is deleted (the pod GC collects its pods after its
//!    quarantine), and [`super::timeline::GKE_RECREATE`] later a Node of the same name
//!    registers, turns Ready, and the replicated workloads' pods start on it.
//!
//! GKE records a repair in its operations log only (`gcloud container operations list`),
//! never as a Kubernetes event, so this zone writes none.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use spotboard_core::labels::{GKE_NODEPOOL, INSTANCE_TYPE, ZONE};

use super::super::clock::{mins, rfc3339, secs};
use super::super::eviction::{self, Evicted};
use super::timeline::{
    GKE_RECREATE, collect_pods, kubelet_ready, pod_ref, pods_on, remove_node, restart,
};
use super::{Fleet, create, objects};

/// Annotation that stops a node's kubelet now (value `stopped`).
pub const KUBELET_ANNOTATION: &str = "sim.spotboard.dev/kubelet";

/// kube-controller-manager's `--node-monitor-grace-period` (50 s since Kubernetes 1.32):
/// how long a node may post no status before its conditions turn Unknown.
const NODE_MONITOR_GRACE: Duration = secs(50);

/// GKE repairs a node that reports NotReady, or no status, on consecutive checks for about
/// 10 minutes (GKE: Auto-repair nodes, "Repair criteria").
const GKE_REPAIR_AFTER: Duration = mins(10);

/// GKE waits an hour for a repair's drain before it shuts the node down anyway.
const GKE_DRAIN_LIMIT: Duration = mins(60);

/// The taint the node lifecycle controller puts on a node whose kubelet stopped posting.
const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";

/// Whether `node` asks for its kubelet to stop.
pub fn wanted(node: &Node) -> bool {
    node.annotations()
        .get(KUBELET_ANNOTATION)
        .is_some_and(|v| v == "stopped")
}

/// The kubelet of GKE node `node` stops; the node is repaired as described above.
pub(super) async fn kubelet_stops(f: &Arc<Fleet>, node: &Node) -> kube::Result<()> {
    let name = node.name_any();
    let api: Api<Node> = Api::all(f.client.clone());
    let taken = json!({"metadata": {"annotations": {KUBELET_ANNOTATION: null}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&taken))
        .await?;
    f.clock.sleep(NODE_MONITOR_GRACE).await;
    unreachable(&api, node).await?;
    f.clock.sleep(GKE_REPAIR_AFTER).await;
    let cordon = json!({"spec": {"unschedulable": true}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&cordon))
        .await?;
    let pods = pods_on(f, &name).await?;
    let deadline = f.clock.deadline(GKE_DRAIN_LIMIT);
    let mut waiting = pods.clone();
    while !waiting.is_empty() && tokio::time::Instant::now() < deadline {
        let mut left = Vec::new();
        for p in waiting {
            match eviction::evict(&f.evictions, &pod_ref(&p)).await {
                Evicted::Done => {}
                Evicted::Refused(_) | Evicted::Failed => left.push(p),
            }
        }
        waiting = left;
        if !waiting.is_empty() {
            tokio::time::sleep(f.clock.real(eviction::RETRY)).await;
        }
    }
    remove_node(f, &name).await;
    collect_pods(f, name.clone());
    f.clock.sleep(GKE_RECREATE).await;
    if let Some(plan) = node
        .labels()
        .get(GKE_NODEPOOL)
        .and_then(|p| objects::pools(f.flavor).iter().find(|x| x.name == p))
    {
        let label = |k: &str| node.labels().get(k).cloned().unwrap_or_default();
        let again = objects::node(
            f.flavor,
            &label(ZONE),
            plan,
            &name,
            &label(INSTANCE_TYPE),
            false,
        );
        create(&api, again).await?;
        kubelet_ready(f, &name).await;
        restart(f, &name, &pods).await;
    }
    Ok(())
}

/// The node lifecycle controller's marks on a node that stopped posting: `Ready=Unknown`
/// with its reason and message, and the unreachable taints beside the node's own.
async fn unreachable(api: &Api<Node>, node: &Node) -> kube::Result<()> {
    let now = rfc3339(Utc::now());
    let mut taints: Vec<Value> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|t| serde_json::to_value(t).ok())
        .collect();
    taints.push(json!({"key": UNREACHABLE_TAINT, "effect": "NoSchedule", "timeAdded": now}));
    taints.push(json!({"key": UNREACHABLE_TAINT, "effect": "NoExecute", "timeAdded": now}));
    let name = node.name_any();
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"taints": taints}})),
    )
    .await?;
    let status = json!({"status": {"conditions": [{
        "type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.", "lastTransitionTime": now,
    }]}});
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}
