//! Each provider's preemption timeline in a fleet zone, and what follows it (the VM
//! recreated, the replacement node launched).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use spotboard_core::labels::{
    GKE_NODEPOOL, GKE_TERMINATION_TAINT, KARPENTER_DISRUPTED_TAINT, KARPENTER_NODEPOOL,
};

use super::super::clock::{rfc3339, secs};
use super::super::events::{Component, Involved, Severity};
use super::super::eviction::{self, Evicted};
use super::super::nodes::PREEMPT_ANNOTATION;
use super::super::notice::{AWS_NOTICE, GKE_NOTICE, GKE_POD_SHUTDOWN};
use super::super::pods::{PodRef, delete_pod};
use super::super::random::hash;
use super::{Fleet, add_node, objects, run_pod};

/// GKE: the managed instance group recreating the VM, until it registers.
pub(super) const GKE_RECREATE: Duration = secs(45);
/// Karpenter: launching the replacement until its node registers (with [`KUBELET_READY`],
/// under a minute to Ready on a well-configured cluster; a typical target, not a documented
/// figure).
const KARPENTER_REPLACE: Duration = secs(30);
/// kube-controller-manager's pod GC quarantine before it deletes a vanished node's pods.
const POD_GC_QUARANTINE: Duration = secs(40);
/// A registered replacement's kubelet and network coming up, until the Node is Ready: why
/// replacement latency ends at Ready, not at the Node's creation.
const KUBELET_READY: Duration = secs(15);

pub(super) async fn pods_on(f: &Fleet, node: &str) -> kube::Result<Vec<Pod>> {
    let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
    Ok(Api::<Pod>::all(f.client.clone()).list(&lp).await?.items)
}

fn owner(p: &Pod) -> Option<(String, String)> {
    p.owner_references()
        .first()
        .map(|o| (o.kind.clone(), o.name.clone()))
}

/// Marks the node with the provider's notice: its taint added to the node's own (a merge
/// patch writes the list whole), cordon, and drops the trigger annotation.
async fn notice(f: &Fleet, node: &Node, taint: &str, cordon: bool) -> kube::Result<()> {
    let mut taints: Vec<serde_json::Value> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|t| {
            t.iter()
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect()
        })
        .unwrap_or_default();
    taints.push(json!({"key": taint, "effect": "NoSchedule", "timeAdded": rfc3339(Utc::now())}));
    let patch = json!({
        "metadata": {"annotations": {PREEMPT_ANNOTATION: null}},
        "spec": {
            "unschedulable": cordon || node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false),
            "taints": taints,
        },
    });
    Api::<Node>::all(f.client.clone())
        .patch(
            &node.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    Ok(())
}

pub(super) async fn gke(f: &Arc<Fleet>, node: &Node) -> kube::Result<()> {
    let name = node.name_any();
    notice(f, node, GKE_TERMINATION_TAINT, false).await?;
    f.clock.sleep(GKE_POD_SHUTDOWN).await;
    let pods = pods_on(f, &name).await?;
    let system = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.priority_class_name.as_deref())
            .is_some_and(|c| c.starts_with("system-"))
    };
    for p in pods.iter().filter(|p| !system(p)) {
        shut_down(f, p).await;
    }
    f.clock.sleep(GKE_NOTICE - GKE_POD_SHUTDOWN).await;
    for p in pods.iter().filter(|p| system(p)) {
        shut_down(f, p).await;
    }
    remove_node(f, &name).await;
    let pool = node.labels().get(GKE_NODEPOOL).cloned();
    let f2 = f.clone();
    f.spawn(async move {
        f2.clock.sleep(GKE_RECREATE).await;
        replace(&f2, pool.as_deref(), &pods).await;
    });
    Ok(())
}

/// The kubelet's graceful node shutdown of one pod: Failed, reason `Terminated`.
async fn shut_down(f: &Fleet, p: &Pod) {
    let now = rfc3339(Utc::now());
    let status = json!({"status": {
        "phase": "Failed",
        "reason": "Terminated",
        "message": "Pod was terminated in response to imminent node shutdown.",
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
             "message": "Pod was terminated in response to imminent node shutdown.",
             "lastTransitionTime": now},
            {"type": "Ready", "status": "False", "lastTransitionTime": now},
        ],
    }});
    let api: Api<Pod> = Api::namespaced(f.client.clone(), &p.namespace().unwrap_or_default());
    if let Err(e) = api
        .patch_status(
            &p.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await
    {
        tracing::warn!(pod = %p.name_any(), "node shutdown: {e}");
    }
}

pub(super) async fn karpenter(f: &Arc<Fleet>, node: &Node) -> kube::Result<()> {
    let name = node.name_any();
    notice(f, node, KARPENTER_DISRUPTED_TAINT, true).await?;
    f.events
        .record(
            &Involved::of(node),
            Severity::Warning,
            "SpotInterrupted",
            "Spot interruption warning was triggered",
            Component::Karpenter,
        )
        .await;
    let pods = pods_on(f, &name).await?;
    let deadline = f.clock.deadline(AWS_NOTICE);
    let pool = node.labels().get(KARPENTER_NODEPOOL).cloned();
    let f2 = f.clone();
    let evicted = pods.clone();
    f.spawn(async move {
        f2.clock.sleep(KARPENTER_REPLACE).await;
        replace(&f2, pool.as_deref(), &evicted).await;
    });
    // Evictions a budget refuses are asked again until the instance is reclaimed.
    let mut waiting = pods;
    loop {
        let mut left = Vec::new();
        let mut refused = 0;
        for p in waiting {
            match eviction::evict(&f.evictions, &pod_ref(&p)).await {
                Evicted::Done => kubelet_stops(f, &p, deadline),
                Evicted::Refused(_) => {
                    refused += 1;
                    left.push(p);
                }
                Evicted::Failed => left.push(p),
            }
        }
        waiting = left;
        if refused > 0 {
            f.events
                .record(
                    &Involved::of(node),
                    Severity::Warning,
                    spotboard_core::labels::REASON_KARPENTER_FAILED_DRAINING,
                    &format!(
                        "Failed to drain node, {refused} pods are waiting to be evicted \
                         (Cannot evict pod as it would violate the pod's disruption budget.)"
                    ),
                    Component::Karpenter,
                )
                .await;
        }
        let now = tokio::time::Instant::now();
        if waiting.is_empty() || now >= deadline {
            break;
        }
        tokio::time::sleep_until((now + f.clock.real(eviction::RETRY)).min(deadline)).await;
    }
    tokio::time::sleep_until(deadline).await;
    // The instance is reclaimed: the Node goes, and whatever still ran died with it; the pod
    // garbage collector deletes those pods after its quarantine.
    remove_node(f, &name).await;
    collect_pods(f, name);
    Ok(())
}

/// The pod garbage collector: the pods still bound to vanished node `name` are deleted after
/// its quarantine.
pub(super) fn collect_pods(f: &Arc<Fleet>, name: String) {
    let f2 = f.clone();
    f.spawn(async move {
        tokio::time::sleep(f2.clock.real(POD_GC_QUARANTINE).max(Duration::from_secs(5))).await;
        for p in pods_on(&f2, &name).await.unwrap_or_default() {
            delete_pod(&f2.client, &pod_ref(&p), Some(0), "pod gc").await;
        }
    });
}

/// How long a disrupted node's drain may take before the node goes anyway (Karpenter v1's
/// `terminationGracePeriod`, set here for the zone's NodePools).
const DISRUPTION_DRAIN_LIMIT: Duration = secs(120);

/// Karpenter disrupting a node of its own accord (Karpenter: Disruption, "Consolidation" and
/// "Drift"): Normal `DisruptionTerminating` on the Node ("Disrupting Node:
/// Underutilized/Replace"), the replacement launched and its pods started first, then the
/// disruption taint and cordon, every pod evicted through the Eviction API (refusals asked
/// again every 5 s, up to [`DISRUPTION_DRAIN_LIMIT`]), and the Node deleted. No
/// `SpotInterrupted`: this is no preemption.
pub(super) async fn disrupt(
    f: &Arc<Fleet>,
    node: &Node,
    reason: objects::Disruption,
) -> kube::Result<()> {
    let name = node.name_any();
    // Taken first, so a failure below does not disrupt the node again at the next look.
    let taken = json!({"metadata": {"annotations": {objects::DISRUPT_ANNOTATION: null}}});
    Api::<Node>::all(f.client.clone())
        .patch(&name, &PatchParams::default(), &Patch::Merge(&taken))
        .await?;
    f.events
        .record(
            &Involved::of(node),
            Severity::Normal,
            spotboard_core::domain::departures::KARPENTER_DISRUPTION_TERMINATING,
            &format!("Disrupting Node: {}/Replace", reason.as_str()),
            Component::Karpenter,
        )
        .await;
    let pods = pods_on(f, &name).await?;
    // The replacement and its pods first; a StatefulSet's pod only once its old one has been
    // evicted below (its name is taken until then).
    let stateful = |p: &Pod| owner(p).is_some_and(|(kind, _)| kind == "StatefulSet");
    let (sets, movable): (Vec<Pod>, Vec<Pod>) = pods.into_iter().partition(|p| stateful(p));
    let pool = node.labels().get(KARPENTER_NODEPOOL).map(String::as_str);
    let replacement = launch(f, pool).await;
    if let Some(r) = &replacement {
        restart(f, r, &movable).await;
    }
    notice(f, node, KARPENTER_DISRUPTED_TAINT, true).await?;
    let deadline = f.clock.deadline(DISRUPTION_DRAIN_LIMIT);
    let mut waiting = pods_on(f, &name).await?;
    while !waiting.is_empty() && tokio::time::Instant::now() < deadline {
        let mut left = Vec::new();
        for p in waiting {
            match eviction::evict(&f.evictions, &pod_ref(&p)).await {
                Evicted::Done => kubelet_stops(f, &p, deadline),
                Evicted::Refused(_) | Evicted::Failed => left.push(p),
            }
        }
        waiting = left;
        if !waiting.is_empty() {
            tokio::time::sleep(f.clock.real(eviction::RETRY)).await;
        }
    }
    remove_node(f, &name).await;
    if let Some(r) = &replacement {
        restart(f, r, &sets).await;
    }
    collect_pods(f, name);
    Ok(())
}

/// The kubelet stopping an evicted pod at the end of its grace period, if that comes before
/// the instance is reclaimed at `reclaimed`; otherwise the pod dies with the instance.
fn kubelet_stops(f: &Arc<Fleet>, p: &Pod, reclaimed: tokio::time::Instant) {
    let grace = p
        .spec
        .as_ref()
        .and_then(|s| s.termination_grace_period_seconds)
        .unwrap_or(30);
    let end = f.clock.deadline(secs(grace.max(0) as u64));
    if end >= reclaimed {
        return;
    }
    let (f2, r) = (f.clone(), pod_ref(p));
    f.spawn(async move {
        tokio::time::sleep_until(end).await;
        delete_pod(&f2.client, &r, Some(0), "kubelet").await;
    });
}

pub(super) fn pod_ref(p: &Pod) -> PodRef {
    PodRef {
        namespace: p.namespace().unwrap_or_default(),
        name: p.name_any(),
        uid: p.uid().unwrap_or_default(),
    }
}

pub(super) async fn remove_node(f: &Fleet, name: &str) {
    match Api::<Node>::all(f.client.clone())
        .delete(name, &DeleteParams::default())
        .await
    {
        Ok(_) | Err(kube::Error::Api(_)) => {}
        Err(e) => tracing::warn!(node = %name, "removing a preempted node: {e}"),
    }
}

/// A new node for `pool` and new pods for the replicated workloads the old node held (a
/// StatefulSet's pod keeps its name: the failed one is deleted first).
async fn replace(f: &Fleet, pool: Option<&str>, lost: &[Pod]) {
    if let Some(node) = launch(f, pool).await {
        restart(f, &node, lost).await;
    }
}

/// A new node for `pool`, once it is Ready; `None` when the pool is unknown or the node
/// could not be created.
async fn launch(f: &Fleet, pool: Option<&str>) -> Option<String> {
    let plan = pool.and_then(|p| objects::pools(f.flavor).iter().find(|x| x.name == p))?;
    let n = f.seq.load(std::sync::atomic::Ordering::Relaxed) as usize;
    let t = plan.instance_types[n % plan.instance_types.len()];
    let node = match add_node(f, plan, t, false).await {
        Ok(n) => n,
        Err(e) => {
            tracing::warn!(pool = plan.name, "launching a replacement node: {e}");
            return None;
        }
    };
    kubelet_ready(f, &node).await;
    Some(node)
}

/// A registered node's kubelet coming up: Ready after [`KUBELET_READY`].
pub(super) async fn kubelet_ready(f: &Fleet, node: &str) {
    f.clock.sleep(KUBELET_READY).await;
    let ready =
        json!({"status": {"conditions": [objects::ready_condition(true, &rfc3339(Utc::now()))]}});
    let set = Api::<Node>::all(f.client.clone())
        .patch_status(node, &PatchParams::default(), &Patch::Merge(&ready))
        .await;
    if let Err(e) = set {
        tracing::warn!(node = %node, "turning a replacement Ready: {e}");
    }
}

/// New pods on `node` for the replicated workloads among `lost`.
pub(super) async fn restart(f: &Fleet, node: &str, lost: &[Pod]) {
    for p in lost {
        let Some((kind, owner)) = owner(p) else {
            continue;
        };
        let Some(w) = objects::workloads(f.flavor)
            .iter()
            .find(|w| w.kind == kind && w.name == owner && kind != "Job")
        else {
            continue;
        };
        let index = p
            .name_any()
            .rsplit_once('-')
            .and_then(|(_, i)| i.parse().ok())
            .unwrap_or(0);
        if kind == "StatefulSet" {
            delete_pod(&f.client, &pod_ref(p), Some(0), "statefulset controller").await;
        }
        let suffix = format!("{:05x}", hash(&format!("{node}{}", p.name_any())) & 0xfffff);
        if let Err(e) = run_pod(f, objects::pod(f.flavor, w, index, &suffix, node)).await {
            tracing::warn!(pod = %p.name_any(), "replacing a pod: {e}");
        }
    }
}
