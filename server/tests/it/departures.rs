//! Why each node went away, through kube-rs against the embedded cluster, whose behaviour
//! model makes each departure by its own rules: Karpenter consolidating and replacing a
//! drifted node (its `DisruptionTerminating` events), a CKS node sent to triage (its lifecycle
//! state label), GKE auto-repair of a node whose kubelet stopped (not Ready, then drained and
//! re-created under its name), and a node deleted by hand. The ledger records each reason with
//! its evidence, and the preemption rate leaves them out.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::common::sim::eventually;
use crate::common::untouched_node;
use crate::providers::{AWS_CLUSTER, CKS, GKE, GKE_CLUSTER, get, start};

async fn annotate(nodes: &Api<Node>, name: &str, key: &str, value: &str) {
    let patch = json!({"metadata": {"annotations": {key: value}}});
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

/// The ledger's row of node `name` once it has ended.
async fn ended(base: &str, name: &str) -> Value {
    eventually(
        Duration::from_secs(30),
        &format!("{name} ended in the ledger"),
        || async {
            let rows = get(base, "/api/v1/ledger?range=24h").await;
            rows.as_array()?
                .iter()
                .find(|r| r["node"] == name && !r["ended_at"].is_null())
                .cloned()
        },
    )
    .await
}

/// Node `n`'s `Ready` condition, if it reports one.
fn ready_condition(n: &Node) -> Option<k8s_openapi::api::core::v1::NodeCondition> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .cloned()
}

/// Pool `key`'s 24-hour rate row once `wanted` holds of it.
async fn pool_rate(base: &str, key: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    eventually(
        Duration::from_secs(20),
        &format!("{key}'s rate"),
        || async {
            let rates = get(base, "/api/v1/preemptions").await;
            rates["rates"]
                .as_array()?
                .iter()
                .find(|r| r["by"] == "pool" && r["window"] == "24h" && r["key"] == key && wanted(r))
                .cloned()
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_departure_is_recorded_with_its_reason_and_evidence_and_left_out_of_the_rate() {
    let d = start().await;
    let aws: Api<Node> = Api::all(d.admin("us-east-1a"));
    let cks: Api<Node> = Api::all(d.admin(CKS));

    let consolidated = untouched_node(&aws, "karpenter.sh/nodepool=spot-general", &[]).await;
    let drifted = untouched_node(
        &aws,
        "karpenter.sh/nodepool=spot-general",
        std::slice::from_ref(&consolidated),
    )
    .await;
    annotate(
        &aws,
        &consolidated,
        "sim.spotboard.dev/disrupt",
        "Underutilized",
    )
    .await;
    annotate(&aws, &drifted, "sim.spotboard.dev/disrupt", "Drifted").await;
    let triage = untouched_node(&cks, "compute.coreweave.com/node-pool", &[]).await;
    annotate(&cks, &triage, "sim.spotboard.dev/triage", "now").await;
    let by_hand = untouched_node(&aws, "karpenter.sh/nodepool=on-demand", &[]).await;
    aws.delete(&by_hand, &DeleteParams::default())
        .await
        .unwrap();

    let row = ended(&d.base, &consolidated).await;
    assert_eq!(row["end_reason"], "consolidated", "{row}");
    assert_eq!(
        row["end_evidence"],
        "Karpenter DisruptionTerminating: Disrupting Node: Underutilized/Replace"
    );
    assert!(row["preemption_t0"].is_null(), "no preemption: {row}");
    let row = ended(&d.base, &drifted).await;
    assert_eq!(row["end_reason"], "drifted", "{row}");
    let row = ended(&d.base, &triage).await;
    assert_eq!(row["end_reason"], "repaired", "{row}");
    assert_eq!(row["end_evidence"], "node.coreweave.cloud/state=triage");
    let row = ended(&d.base, &by_hand).await;
    assert_eq!(row["end_reason"], "deleted", "{row}");
    assert_eq!(row["end_evidence"], "no provider signal");

    // The rate of spot-general counts no preemption; its departures say what it left out.
    let rates = pool_rate(&d.base, &format!("{AWS_CLUSTER}/spot-general"), |r| {
        r["departures"]["consolidated"] == 1 && r["departures"]["drifted"] == 1
    })
    .await;
    assert_eq!(rates["preemptions"], 0, "{rates}");
}

/// GKE auto-repair as the embedded GKE zone plays it: the kubelet stops, the node turns
/// `Ready=Unknown` with the node lifecycle controller's reason and taints, is drained about
/// ten simulated minutes later and re-created under its name. The ledger ends the old node as
/// `repaired` with the time it was not Ready, opens a lifetime for the new one, and the rate
/// of its pool counts no preemption and one repair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gke_node_whose_kubelet_stopped_is_repaired_and_comes_back_under_its_name() {
    let d = start().await;
    let gke: Api<Node> = Api::all(d.admin(GKE));
    let name = untouched_node(&gke, "cloud.google.com/gke-nodepool=spot-batch", &[]).await;
    let old = gke.get(&name).await.unwrap().uid().unwrap();
    annotate(&gke, &name, "sim.spotboard.dev/kubelet", "stopped").await;

    // What kubectl shows of it meanwhile: the node lifecycle controller's marks.
    let node = eventually(Duration::from_secs(20), "Ready=Unknown", || async {
        let n = gke.get(&name).await.ok()?;
        let ready = ready_condition(&n)?;
        (ready.status == "Unknown").then_some((n, ready))
    })
    .await;
    assert_eq!(node.1.reason.as_deref(), Some("NodeStatusUnknown"));
    let taints = node.0.spec.and_then(|s| s.taints).unwrap_or_default();
    for effect in ["NoSchedule", "NoExecute"] {
        assert!(
            taints
                .iter()
                .any(|t| t.key == "node.kubernetes.io/unreachable" && t.effect == effect),
            "{taints:?}"
        );
    }

    let row = ended(&d.base, &name).await;
    assert_eq!(row["end_reason"], "repaired", "{row}");
    assert_eq!(row["uid"], old.as_str(), "{row}");
    let evidence = row["end_evidence"].as_str().unwrap();
    assert!(
        evidence.starts_with("not Ready since ")
            && evidence.ends_with("cordoned after: a repair's drain"),
        "{evidence}"
    );
    assert!(row["preemption_t0"].is_null(), "no preemption: {row}");

    // Re-created under its name: a new Node, Ready, with a lifetime of its own.
    let again = eventually(Duration::from_secs(30), "the node re-created", || async {
        let n = gke.get(&name).await.ok()?;
        let ready = ready_condition(&n).is_some_and(|c| c.status == "True");
        (ready && n.uid()? != old).then(|| n.uid().unwrap())
    })
    .await;
    eventually(Duration::from_secs(20), "the new lifetime", || async {
        let rows = get(&d.base, "/api/v1/ledger?range=24h").await;
        rows.as_array()?
            .iter()
            .find(|r| r["uid"] == again.as_str() && r["node"] == name.as_str())
            .filter(|r| r["ended_at"].is_null())
            .cloned()
    })
    .await;
    pool_rate(&d.base, &format!("{GKE_CLUSTER}/spot-batch"), |r| {
        r["departures"]["repaired"] == 1
    })
    .await;
}
