//! GKE and Karpenter beside CKS: their pools on the dashboard, each provider's preemption
//! timeline played by the embedded cluster and recorded in the ledger, the blast radius with
//! replicas and budgets, a hand-made taint driving the same timeline, and the readiness audit.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use common::sim::eventually;

pub(crate) const CKS: &str = "US-EAST-04A";
pub(crate) const GKE: &str = "us-central1-a";
const AWS: &str = "us-east-1a";
pub(crate) const GKE_CLUSTER: &str = "spotboard-gke-us-central1-a";
pub(crate) const AWS_CLUSTER: &str = "spotboard-karpenter-us-east-1a";

pub(crate) async fn get(base: &str, path: &str) -> Value {
    common::json_of(reqwest::Client::new().get(format!("{base}{path}"))).await
}

pub(crate) fn pool<'a>(pools: &'a Value, cluster: &str, name: &str) -> Option<&'a Value> {
    pools["pools"]
        .as_array()?
        .iter()
        .find(|p| p["cluster"] == cluster && p["name"] == name)
}

fn preemption<'a>(p: &'a Value, node: &str) -> Option<&'a Value> {
    p["nodes"].as_array()?.iter().find(|n| n["node"] == node)
}

/// A node of `selector` under no provider notice yet.
async fn node_of(nodes: &Api<Node>, selector: &str) -> String {
    nodes
        .list(&ListParams::default().labels(selector))
        .await
        .unwrap()
        .items
        .iter()
        .find(|n| {
            n.spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                // GKE's own GPU taint is there from the start: any other is a notice.
                .is_none_or(|t| t.iter().all(|t| t.key == "nvidia.com/gpu"))
        })
        .map(|n| n.name_any())
        .expect("an untouched node")
}

async fn preempt(nodes: &Api<Node>, name: &str) {
    let patch = json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

pub(crate) async fn start() -> common::Dashboard {
    common::start_with(&[CKS], 60.0, |a| {
        a.gke_zones = vec![GKE.into()];
        a.karpenter_zones = vec![AWS.into()];
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gke_and_karpenter_pools_sit_beside_cks_pools() {
    let d = start().await;
    let pools = eventually(Duration::from_secs(10), "all three providers", || async {
        let p = get(&d.base, "/api/v1/pools").await;
        // arm-spot has no node: it shows once the Karpenter NodePool watch has listed.
        pool(&p, AWS_CLUSTER, "arm-spot").map(|_| p.clone())
    })
    .await;
    let row = |c: &str, n: &str| pool(&pools, c, n).unwrap_or_else(|| panic!("{c}/{n}"));
    let l4 = row(GKE_CLUSTER, "spot-l4");
    assert_eq!(
        (l4["provider"].as_str(), l4["capacity_type"].as_str()),
        (Some("gke"), Some("spot"))
    );
    assert_eq!(l4["instance_type"], "g2-standard-24");
    assert_eq!(
        (l4["target_nodes"].as_i64(), l4["current_nodes"].as_i64()),
        (Some(3), Some(3))
    );
    assert_eq!(l4["zone"], GKE);
    assert_eq!(
        row(GKE_CLUSTER, "default-pool")["capacity_type"],
        "on-demand"
    );
    let general = row(AWS_CLUSTER, "spot-general");
    assert_eq!(general["provider"], "karpenter");
    assert_eq!(general["capacity_type"], "spot");
    assert_eq!(
        general["instance_type"],
        "c6i.2xlarge, m5.xlarge, m6i.xlarge"
    );
    assert_eq!(row(AWS_CLUSTER, "on-demand")["capacity_type"], "on-demand");
    // The Karpenter NodePool objects (karpenter.sh/v1) add their conditions and spec, and a
    // NodePool without nodes still shows.
    let ready = general["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .expect("Karpenter's Ready condition");
    assert_eq!(ready["status"], "True");
    let spec = general["detail"]["provider_spec"].to_string();
    assert!(
        spec.contains("limits.cpu") && spec.contains("WhenEmptyOrUnderutilized"),
        "{spec}"
    );
    let idle = row(AWS_CLUSTER, "arm-spot");
    assert_eq!(idle["current_nodes"], 0);
    assert_eq!(idle["capacity_type"], "spot");
    assert_eq!(idle["instance_type"], "c7g.2xlarge, m7g.xlarge");
    let cks = row("spotboard-us-east-04a", "h100-spot-train");
    assert_eq!(
        (cks["provider"].as_str(), cks["capacity_type"].as_str()),
        (Some("cks"), Some("spot"))
    );

    // The fleets are not CKS zones: no capacity-grid column and no create target.
    let grid = get(&d.base, "/api/v1/capacity").await;
    let zones = grid["zones"].to_string();
    assert!(!zones.contains(GKE) && !zones.contains(AWS), "{zones}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gke_preemption_shuts_pods_down_in_30_seconds_and_is_recorded() {
    let d = start().await;
    let nodes = Api::<Node>::all(d.admin(GKE));
    let victim = node_of(&nodes, "cloud.google.com/gke-nodepool=spot-l4").await;
    let before: Vec<Pod> = Api::<Pod>::all(d.admin(GKE))
        .list(&ListParams::default().fields(&format!("spec.nodeName={victim}")))
        .await
        .unwrap()
        .items;
    assert!(!before.is_empty());
    preempt(&nodes, &victim).await;

    let seen = eventually(Duration::from_secs(10), "the GKE timeline", || async {
        let p = get(&d.base, "/api/v1/preemptions").await;
        preemption(&p, &victim).cloned()
    })
    .await;
    assert_eq!(seen["timeline"]["provider"], "gke");
    assert_eq!(seen["cluster"], GKE_CLUSTER);
    assert_eq!(seen["capacity_type"], "spot");
    let phases = common::names(&seen["timeline"]["phases"]);
    assert_eq!(
        phases,
        ["shutting down pods", "shutting down system pods", "removed"]
    );

    // 30 s simulated is half a second: the node is gone and its pods ended Failed, reason
    // Terminated, as GKE's kubelet leaves them.
    eventually(Duration::from_secs(10), "the node removed", || async {
        let p = get(&d.base, "/api/v1/preemptions").await;
        let n = preemption(&p, &victim)?;
        n["timeline"]["phases"][2]["observed"]
            .is_string()
            .then_some(())
    })
    .await;
    let pods = Api::<Pod>::all(d.admin(GKE));
    for p in &before {
        let ns_pods: Api<Pod> = Api::namespaced(d.admin(GKE), &p.namespace().unwrap());
        if p.owner_references()
            .first()
            .is_some_and(|o| o.kind == "StatefulSet")
        {
            continue; // replaced under the same name once the VM is back
        }
        let now = ns_pods.get(&p.name_any()).await.unwrap();
        let status = now.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Failed"), "{}", p.name_any());
        assert_eq!(status.reason.as_deref(), Some("Terminated"));
    }
    drop(pods);

    // The ledger records the lifetime as a spot preemption, with the pods linked.
    let uid = seen["uid"].as_str().unwrap().to_string();
    let row = eventually(Duration::from_secs(10), "the ledger row", || async {
        let l = get(&d.base, "/api/v1/ledger?range=24h").await;
        l.as_array()?
            .iter()
            .find(|r| r["uid"] == uid.as_str() && !r["ended_at"].is_null())
            .cloned()
    })
    .await;
    assert_eq!(row["capacity_type"], "spot");
    assert_eq!(row["end_reason"], "preempted", "{row}");
    assert!(!row["preemption_t0"].is_null(), "{row}");
    // A g2-standard-24 has 2 L4s (Compute Engine: G2), which the node's capacity says and
    // the catalog (CoreWeave's types) does not know: the lost GPU-hours count them.
    assert_eq!(row["gpus"], 2, "{row}");
    // Each pod is linked with how it ended: GKE's kubelet left them Failed, reason
    // Terminated. A StatefulSet's pod may already be replaced under its name when the
    // outcome is read a second later (60 s simulated): then it reads as deleted.
    let linked = eventually(Duration::from_secs(15), "the pods' outcomes", || async {
        let v = get(&d.base, &format!("/api/v1/ledger/pods?uid={uid}")).await;
        let all = v.as_array()?.clone();
        all.iter().all(|p| !p["outcome"].is_null()).then_some(all)
    })
    .await;
    assert_eq!(linked.len(), before.len());
    for p in &linked {
        let ok = p["outcome"] == "Failed: Terminated"
            || (p["owner_kind"] == "StatefulSet" && p["outcome"] == "deleted");
        assert!(ok, "{p}");
    }

    // The work those pods lost, worked here from the API server's pods (each pod's GPU
    // request × (the node's end in the ledger − the pod's startTime)), against the ledger's.
    let row = eventually(Duration::from_secs(10), "the ledger row", || async {
        let l = get(&d.base, "/api/v1/ledger?range=24h").await;
        l.as_array()?
            .iter()
            .find(|r| r["uid"] == uid.as_str())
            .cloned()
    })
    .await;
    let ended = chrono::DateTime::parse_from_rfc3339(row["ended_at"].as_str().unwrap())
        .unwrap()
        .timestamp();
    let expected: i64 = before
        .iter()
        .filter(|p| {
            p.owner_references()
                .first()
                .is_none_or(|o| o.kind != "DaemonSet")
        })
        .map(|p| {
            let gpus: i64 = p
                .spec
                .as_ref()
                .unwrap()
                .containers
                .iter()
                .filter_map(|c| {
                    c.resources
                        .as_ref()?
                        .requests
                        .as_ref()?
                        .get("nvidia.com/gpu")?
                        .0
                        .parse::<i64>()
                        .ok()
                })
                .sum();
            let started = p
                .status
                .as_ref()
                .unwrap()
                .start_time
                .as_ref()
                .unwrap()
                .0
                .as_second();
            gpus * (ended - started)
        })
        .sum();
    assert!(expected > 0, "the L4 pool's pods request GPUs");
    assert_eq!(row["work_lost_gpu_s"], expected, "{row}");

    // "Why did my pod stop?": a pod looked up by name prefix finds this preemption.
    let first = &before[0];
    let (ns, name) = (first.namespace().unwrap(), first.name_any());
    let prefix = &name[..name.len() - 2];
    let hits = get(
        &d.base,
        &format!("/api/v1/ledger/pod-hits?namespace={ns}&name={prefix}"),
    )
    .await;
    let hit = hits
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["pod"]["name"] == name.as_str())
        .unwrap_or_else(|| panic!("{name} in {hits}"));
    assert_eq!(hit["node"]["node"], victim.as_str());
    assert_eq!(hit["node"]["end_reason"], "preempted");
    assert!(!hit["pod"]["outcome"].is_null());
    let bad = reqwest::get(format!(
        "{}/api/v1/ledger/pod-hits?namespace={ns}&name=a%25",
        d.base
    ))
    .await
    .unwrap();
    assert_eq!(bad.status(), 400, "a LIKE wildcard is not a pod name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_karpenter_interruption_drains_in_two_minutes_with_replicas_and_budgets() {
    let d = start().await;
    let nodes = Api::<Node>::all(d.admin(AWS));
    // The victim is a spot-general node running one of the api Deployment's pods (3
    // replicas, PodDisruptionBudget `api`), so the blast radius must show them.
    let spot_general: Vec<String> = nodes
        .list(&ListParams::default().labels("karpenter.sh/nodepool=spot-general"))
        .await
        .unwrap()
        .items
        .iter()
        .filter(|n| {
            n.spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_none_or(|t| t.is_empty())
        })
        .map(|n| n.name_any())
        .collect();
    let victim = Api::<Pod>::all(d.admin(AWS))
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| p.name_any().starts_with("api-6f7b"))
        .filter_map(|p| p.spec.as_ref()?.node_name.clone())
        .find(|n| spot_general.contains(n))
        .unwrap_or_else(|| panic!("an api-6f7b pod on an untouched spot-general node"));
    preempt(&nodes, &victim).await;

    let seen = eventually(Duration::from_secs(10), "T=0 with pods", || async {
        let p = get(&d.base, "/api/v1/preemptions").await;
        preemption(&p, &victim)
            .filter(|n| n["pods"].is_array())
            .cloned()
    })
    .await;
    assert_eq!(seen["timeline"]["provider"], "karpenter");
    let api = seen["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["owner_name"] == "api-6f7b")
        .unwrap_or_else(|| panic!("the api pod in the blast radius: {}", seen["pods"]));
    assert_eq!(api["pdb"], "api", "{api}");
    assert_eq!(api["replicas"], 3, "{api}");
    // Karpenter's own event on the node.
    let events: Vec<Event> = Api::<Event>::namespaced(d.admin(AWS), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("SpotInterrupted")
                && e.involved_object.name.as_deref() == Some(victim.as_str())),
        "SpotInterrupted on the node"
    );
    // Cordoned with the disruption taint, then gone at T+2 min (2 s), replaced.
    eventually(Duration::from_secs(15), "the node reclaimed", || async {
        nodes.get_opt(&victim).await.ok()?.is_none().then_some(())
    })
    .await;
    eventually(Duration::from_secs(15), "a replacement node", || async {
        let p = get(&d.base, "/api/v1/pools").await;
        let row = pool(&p, AWS_CLUSTER, "spot-general")?;
        (row["current_nodes"] == 3 && row["nodes_preempting"] == 0).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_made_taint_drives_the_gke_timeline_and_the_audit_speaks_per_provider() {
    let d = start().await;
    // `kubectl taint node X cloud.google.com/impending-node-termination:NoSchedule` by hand,
    // on an on-demand node the simulation never preempts: the signal alone drives the timeline.
    let nodes = Api::<Node>::all(d.admin(GKE));
    let by_hand = node_of(&nodes, "cloud.google.com/gke-nodepool=default-pool").await;
    let patch = json!({"spec": {"taints": [
        {"key": "cloud.google.com/impending-node-termination", "effect": "NoSchedule"}
    ]}});
    nodes
        .patch(&by_hand, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let seen = eventually(Duration::from_secs(10), "the hand-made notice", || async {
        let p = get(&d.base, "/api/v1/preemptions").await;
        preemption(&p, &by_hand).cloned()
    })
    .await;
    assert_eq!(seen["timeline"]["provider"], "gke");
    assert_eq!(seen["capacity_type"], "on-demand");

    let audit = get(&d.base, "/api/v1/readiness").await;
    assert_eq!(audit["errors"], json!([]));
    let findings = |cluster: &str, pool: &str| -> Vec<(String, String)> {
        audit["pools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["cluster"] == cluster && p["pool"] == pool)
            .unwrap_or_else(|| panic!("{cluster}/{pool} audited"))["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["check"].as_str().unwrap().into(),
                    f["workload"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    let has = |f: &[(String, String)], c: &str, w: &str| f.iter().any(|(a, b)| a == c && b == w);
    let l4 = findings(GKE_CLUSTER, "spot-l4");
    // 60 s of grace against GKE's 15 s; one replica; a StatefulSet.
    assert!(
        has(&l4, "grace-exceeds-notice", "StatefulSet/vector-index"),
        "{l4:?}"
    );
    assert!(has(&l4, "single-replica", "StatefulSet/vector-index"));
    assert!(has(&l4, "stateful-set", "StatefulSet/vector-index"));
    // The inference Deployment has a budget and a preStop hook: neither finding.
    assert!(!has(&l4, "no-pdb", "ReplicaSet/inference-7c9d"));
    assert!(!has(&l4, "no-pre-stop", "ReplicaSet/inference-7c9d"));
    let gpu = findings(AWS_CLUSTER, "gpu-spot");
    // 300 s of grace against AWS's 120 s.
    assert!(
        has(&gpu, "grace-exceeds-notice", "ReplicaSet/worker-59c4"),
        "{gpu:?}"
    );
    let general = findings(AWS_CLUSTER, "spot-general");
    // Spread over three zones, with a budget: the api is ready; the bare pod is not.
    assert!(
        !general.iter().any(|(_, w)| w == "ReplicaSet/api-6f7b"),
        "{general:?}"
    );
    assert!(has(&general, "single-replica", "Pod/debug-shell"));
    // On-demand pools are not audited.
    assert!(
        !audit["pools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["pool"] == "on-demand"),
        "on-demand pools are not audited"
    );
}

/// A Node made by hand, as `kubectl create` would: its labels, and Ready.
fn hand_node(name: &str, labels: Value) -> Node {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap()
}

/// The pool row of `cluster/name` once it shows, as (provider, capacity type).
async fn pool_kind(d: &common::Dashboard, cluster: &str, name: &str) -> (String, String) {
    let what = format!("{cluster}/{name} on the dashboard");
    eventually(Duration::from_secs(10), &what, || async {
        let p = get(&d.base, "/api/v1/pools").await;
        let row = pool(&p, cluster, name)?;
        Some((
            row["provider"].as_str()?.to_string(),
            row["capacity_type"].as_str()?.to_string(),
        ))
    })
    .await
}

/// The preemption of `node` once it shows, as (provider, capacity type, cluster, pool).
async fn preemption_of(d: &common::Dashboard, node: &str) -> Value {
    eventually(
        Duration::from_secs(10),
        &format!("{node} preempted"),
        || async {
            let p = get(&d.base, "/api/v1/preemptions").await;
            preemption(&p, node).cloned()
        },
    )
    .await
}

/// Each provider's labels, taints and event written by hand as the provider documents them,
/// as string literals and not through `spotboard_core::labels`, so a misspelt constant fails
/// here: Karpenter (Karpenter: NodePools, `karpenter.sh/nodepool` and
/// `karpenter.sh/capacity-type`; Karpenter: Disruption, the `karpenter.sh/disrupted` taint
/// with the `SpotInterrupted` event), GKE (GKE: Spot VMs, `cloud.google.com/gke-nodepool`,
/// `cloud.google.com/gke-spot` or `cloud.google.com/gke-provisioning=spot`, and the
/// `cloud.google.com/impending-node-termination` taint) and CKS (CoreWeave: Spot Node Pools,
/// `compute.coreweave.com/node-pool` and `qos.coreweave.cloud/pending-preemption=true`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_taints_and_events_written_as_each_provider_documents_them_are_read() {
    use kube::api::PostParams;
    let d = start().await;
    let pp = PostParams::default();

    // Karpenter: a spot node of a pool of its own, then AWS's interruption as Karpenter
    // shows it: the disruption taint and its SpotInterrupted event.
    let aws = Api::<Node>::all(d.admin(AWS));
    let karpenter_labels = json!({
        "karpenter.sh/nodepool": "hand-spot",
        "karpenter.sh/capacity-type": "spot",
        "node.kubernetes.io/instance-type": "m5.xlarge",
        "topology.kubernetes.io/zone": AWS,
    });
    aws.create(&pp, &hand_node("hand-karpenter", karpenter_labels))
        .await
        .unwrap();
    assert_eq!(
        pool_kind(&d, AWS_CLUSTER, "hand-spot").await,
        ("karpenter".into(), "spot".into())
    );
    let taint = json!({"spec": {"unschedulable": true, "taints": [
        {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
    ]}});
    aws.patch(
        "hand-karpenter",
        &PatchParams::default(),
        &Patch::Merge(&taint),
    )
    .await
    .unwrap();
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": "hand-karpenter.spot-interrupted", "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": "hand-karpenter"},
        "reason": "SpotInterrupted", "type": "Warning",
        "message": "Spot interruption warning was triggered",
        "source": {"component": "karpenter"}
    }))
    .unwrap();
    Api::<Event>::namespaced(d.admin(AWS), "default")
        .create(&pp, &event)
        .await
        .unwrap();
    let seen = preemption_of(&d, "hand-karpenter").await;
    assert_eq!(seen["timeline"]["provider"], "karpenter", "{seen}");
    assert_eq!(
        (&seen["cluster"], &seen["pool"], &seen["capacity_type"]),
        (&json!(AWS_CLUSTER), &json!("hand-spot"), &json!("spot")),
        "{seen}"
    );

    // GKE: a node labelled gke-spot, another provisioned as spot; the first gets the
    // termination notice's taint.
    let gke = Api::<Node>::all(d.admin(GKE));
    for (name, pool_name, spot_label) in [
        (
            "hand-gke-spot",
            "hand-spot",
            ("cloud.google.com/gke-spot", "true"),
        ),
        (
            "hand-gke-provisioned",
            "hand-provisioned",
            ("cloud.google.com/gke-provisioning", "spot"),
        ),
    ] {
        let labels = json!({
            "cloud.google.com/gke-nodepool": pool_name,
            (spot_label.0): spot_label.1,
            "node.kubernetes.io/instance-type": "g2-standard-24",
            "topology.kubernetes.io/zone": GKE,
        });
        gke.create(&pp, &hand_node(name, labels)).await.unwrap();
        assert_eq!(
            pool_kind(&d, GKE_CLUSTER, pool_name).await,
            ("gke".into(), "spot".into()),
            "{name}"
        );
    }
    let taint = json!({"spec": {"taints": [
        {"key": "cloud.google.com/impending-node-termination", "effect": "NoSchedule"}
    ]}});
    gke.patch(
        "hand-gke-spot",
        &PatchParams::default(),
        &Patch::Merge(&taint),
    )
    .await
    .unwrap();
    let seen = preemption_of(&d, "hand-gke-spot").await;
    assert_eq!(seen["timeline"]["provider"], "gke", "{seen}");
    assert_eq!(
        (&seen["cluster"], &seen["pool"], &seen["capacity_type"]),
        (&json!(GKE_CLUSTER), &json!("hand-spot"), &json!("spot")),
        "{seen}"
    );

    // CKS: a node of the spot pool, found by CKS's pool label, labelled pending-preemption.
    // (CKS's capacity type is its NodePool's computeClass, not a node label.)
    let cks = Api::<Node>::all(d.admin(CKS));
    let by_hand = cks
        .list(&ListParams::default().labels("compute.coreweave.com/node-pool=h100-spot-train"))
        .await
        .unwrap()
        .items
        .iter()
        .find(|n| {
            n.spec.as_ref().and_then(|s| s.unschedulable) != Some(true)
                && !n
                    .labels()
                    .contains_key("qos.coreweave.cloud/pending-preemption")
        })
        .map(|n| n.name_any())
        .expect("a spot node not under notice");
    let label = json!({"metadata": {"labels": {"qos.coreweave.cloud/pending-preemption": "true"}}});
    cks.patch(&by_hand, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    let seen = preemption_of(&d, &by_hand).await;
    assert_eq!(seen["timeline"]["provider"], "cks", "{seen}");
    assert_eq!(
        (&seen["cluster"], &seen["pool"], &seen["capacity_type"]),
        (
            &json!("spotboard-us-east-04a"),
            &json!("h100-spot-train"),
            &json!("spot")
        ),
        "{seen}"
    );
}
