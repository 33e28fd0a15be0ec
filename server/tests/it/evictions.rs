//! Eviction errors, the third production signal of a Spot fleet, through the embedded cluster
//! per provider: evictions a PodDisruptionBudget refused (CKS `CWNodeDrainingPDBViolation`,
//! Karpenter `FailedDraining`), pods killed at removal, each on its preemption card with the
//! readiness finding that predicted it, counted per pool in the ledger's rows and on
//! `/metrics`. GKE asks no budget at preemption: its cards show none.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::Value;

use common::preempt_one;
use common::sim::eventually;

async fn get(base: &str, path: &str) -> Value {
    common::json_of(reqwest::Client::new().get(format!("{base}{path}"))).await
}

/// The card of `node` on `/preemptions`, once `ready` holds for it.
async fn card(base: &str, node: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    eventually(Duration::from_secs(60), what, || async {
        let p = get(base, "/api/v1/preemptions").await;
        p["nodes"]
            .as_array()?
            .iter()
            .find(|n| n["node"] == node && ready(n))
            .cloned()
    })
    .await
}

fn of_kind<'a>(card: &'a Value, kind: &str) -> Vec<&'a Value> {
    card["evictions"]
        .as_array()
        .map(|e| e.iter().filter(|e| e["kind"] == kind).collect())
        .unwrap_or_default()
}

fn removed(card: &Value) -> bool {
    card["pods"]
        .as_array()
        .is_some_and(|p| p.iter().all(|p| !p["outcome"].is_null()))
}

/// `spotboard_eviction_errors_total` for one pool and kind.
async fn counted(base: &str, cluster: &str, pool: &str, kind: &str) -> f64 {
    let text = common::text_of(&format!("{base}/metrics")).await;
    let series = format!(
        "spotboard_eviction_errors_total{{cluster=\"{cluster}\",pool=\"{pool}\",kind=\"{kind}\"}} "
    );
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cks_drain_refused_by_a_budget_is_on_the_card_in_the_ledger_and_on_metrics() {
    let d = common::start(&["US-EAST-04A"], 60.0).await;
    let (cluster, pool) = ("spotboard-us-east-04a", "l40s-spot-inference");
    let nodes = Api::<Node>::all(d.admin("US-EAST-04A"));
    let victim = preempt_one(&nodes, &format!("compute.coreweave.com/node-pool={pool}")).await;

    // The drain at T+2 min (2 s here): one eviction goes (maxUnavailable 1), three are
    // refused, each reported once on the Node.
    let c = card(&d.base, &victim, "three refusals on the card", |c| {
        of_kind(c, "refused").len() == 3
    })
    .await;
    let held: Vec<String> = c["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p["namespace"].as_str().unwrap(),
                p["name"].as_str().unwrap()
            )
        })
        .collect();
    for e in of_kind(&c, "refused") {
        assert_eq!(e["reason"], "CWNodeDrainingPDBViolation", "{e}");
        assert_eq!(e["finding"], "pdb-blocks-drain", "{e}");
        let pod = e["pod"].as_str().expect("CKS names the pod");
        assert!(held.iter().any(|h| h == pod), "{pod} is one of {held:?}");
    }

    // Removed at T+7 min with the three still running: killed, and the same three.
    let c = card(&d.base, &victim, "the pods' outcomes", removed).await;
    let killed: Vec<&str> = of_kind(&c, "killed")
        .iter()
        .filter_map(|e| e["pod"].as_str())
        .collect();
    for e in of_kind(&c, "refused") {
        let pod = e["pod"].as_str().unwrap();
        assert!(
            killed.contains(&pod),
            "refused {pod} was killed at removal: {killed:?}"
        );
    }
    assert_eq!(killed.len(), 3, "{:#}", c["evictions"]);

    // The readiness audit predicted it, for the same workload.
    let audit = get(&d.base, "/api/v1/readiness").await;
    let finding = audit["pools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pool"] == pool)
        .flat_map(|p| p["findings"].as_array().unwrap().iter())
        .find(|f| f["check"] == "pdb-blocks-drain")
        .cloned()
        .expect("a pdb-blocks-drain finding");
    assert!(
        finding["detail"]
            .as_str()
            .unwrap()
            .starts_with("PodDisruptionBudget vllm-mistral-7b allows 1 disruption(s) of 8 replicas; 4 pods share node"),
        "{finding}"
    );

    // The ledger's rows for the pool count them, and so does /metrics.
    let row = eventually(Duration::from_secs(60), "the pool's 24 h row", || async {
        let p = get(&d.base, "/api/v1/preemptions").await;
        p["rates"]
            .as_array()?
            .iter()
            .find(|r| {
                r["by"] == "pool"
                    && r["window"] == "24h"
                    && r["key"] == format!("{cluster}/{pool}")
                    && r["evictions"]["killed"].as_u64() >= Some(3)
                    && r["evictions"]["refused"].as_u64() >= Some(3)
            })
            .cloned()
    })
    .await;
    println!("EVICTIONS|{cluster}/{pool}: {}", row["evictions"]);
    assert!(counted(&d.base, cluster, pool, "refused").await >= 3.0);
    assert!(counted(&d.base, cluster, pool, "killed").await >= 3.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn karpenter_refuses_during_a_cascade_kills_a_long_grace_pod_and_gke_asks_no_budget() {
    let d = common::start_with(&["US-EAST-04A"], 20.0, |a| {
        a.gke_zones = vec!["us-central1-a".into()];
        a.karpenter_zones = vec!["us-east-1a".into()];
    })
    .await;
    let aws = "spotboard-karpenter-us-east-1a";
    let nodes = Api::<Node>::all(d.admin("us-east-1a"));
    // Two of spot-general's three nodes at once (the article's cascade): api-6f7b has one
    // replica on each and a budget of minAvailable 2, so the second eviction is refused until
    // a replacement is Ready.
    let general: Vec<String> = nodes
        .list(&ListParams::default().labels("karpenter.sh/nodepool=spot-general"))
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let (first, second) = (general[0].clone(), general[1].clone());
    for n in [&first, &second] {
        common::sim::preempt(&nodes, n).await;
    }
    let refusals = eventually(
        Duration::from_secs(60),
        "a FailedDraining refusal",
        || async {
            let p = get(&d.base, "/api/v1/preemptions").await;
            let cards = p["nodes"].as_array()?.clone();
            let refused: Vec<Value> = cards
                .iter()
                .filter(|c| c["node"] == first || c["node"] == second)
                .flat_map(|c| of_kind(c, "refused").into_iter().cloned())
                .collect();
            (!refused.is_empty()).then_some(refused)
        },
    )
    .await;
    assert_eq!(refusals[0]["reason"], "FailedDraining", "{}", refusals[0]);
    assert_eq!(refusals[0]["finding"], "pdb-blocks-drain");

    // worker-59c4's grace period (300 s) outlives AWS's 2 minutes: killed at removal.
    let gpu = preempt_one(&nodes, "karpenter.sh/nodepool=gpu-spot").await;
    let c = card(&d.base, &gpu, "the gpu node's outcomes", removed).await;
    let killed = of_kind(&c, "killed");
    assert_eq!(killed.len(), 1, "{:#}", c["evictions"]);
    assert!(
        killed[0]["pod"]
            .as_str()
            .unwrap()
            .starts_with("web/worker-59c4")
    );
    assert_eq!(killed[0]["finding"], "grace-exceeds-notice");
    assert!(counted(&d.base, aws, "gpu-spot", "killed").await >= 1.0);

    // GKE's graceful node shutdown asks no budget and ends the pods itself: no errors.
    let gke_nodes = Api::<Node>::all(d.admin("us-central1-a"));
    let victim = preempt_one(&gke_nodes, "cloud.google.com/gke-nodepool=spot-l4").await;
    let c = card(&d.base, &victim, "the GKE node's outcomes", removed).await;
    assert_eq!(c["evictions"], Value::Array(vec![]), "{c:#}");
    let audit = get(&d.base, "/api/v1/readiness").await;
    let gke_checks: Vec<&Value> = audit["pools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["provider"] == "gke")
        .flat_map(|p| p["findings"].as_array().unwrap().iter())
        .map(|f| &f["check"])
        .collect();
    assert!(
        !gke_checks.iter().any(|c| *c == "pdb-blocks-drain"),
        "{gke_checks:?}"
    );
}

/// A pod a finalizer holds after its grace period (its containers stopped, the object stays
/// `Terminating`): shown on the card while the node is under notice, from the Pod watch, and
/// counted as past its grace period once the node is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_held_past_its_grace_period_shows_while_under_notice_and_counts_at_removal() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Patch, PatchParams, PostParams};
    let d = common::start(&["US-EAST-04A"], 60.0).await;
    let (cluster, pool) = ("spotboard-us-east-04a", "h100-spot-train");
    let admin = d.admin("US-EAST-04A");
    let nodes = Api::<Node>::all(admin.clone());
    let victim = nodes
        .list(&ListParams::default().labels(&format!("compute.coreweave.com/node-pool={pool}")))
        .await
        .unwrap()
        .items
        .iter()
        .find(|n| n.spec.as_ref().and_then(|s| s.unschedulable) != Some(true))
        .map(ResourceExt::name_any)
        .expect("a spot node");
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "batch");
    let held: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "checkpoint-uploader", "finalizers": ["example.com/upload-checkpoint"]},
        "spec": {"nodeName": victim, "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Running"}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &held).await.unwrap();
    common::sim::preempt(&nodes, &victim).await;

    // The drain (T+2 min, 2 s here) evicts it; a second later its grace has ended and the
    // finalizer still holds it, while the node waits for T+7 min.
    let c = card(&d.base, &victim, "the held pod past its grace", |c| {
        !of_kind(c, "past-grace").is_empty()
    })
    .await;
    let e = of_kind(&c, "past-grace")[0].clone();
    assert_eq!(e["pod"], "batch/checkpoint-uploader", "{e}");
    assert!(!removed(&c), "seen while the node is under notice: {c:#}");
    assert!(
        e["detail"]
            .as_str()
            .unwrap()
            .starts_with("still terminating on the node under notice"),
        "{e}"
    );

    // Gone: its outcome says the same, and it counts once.
    let c = card(&d.base, &victim, "the outcomes", removed).await;
    let e = of_kind(&c, "past-grace")[0].clone();
    assert_eq!(e["reason"], "terminating past its grace period", "{e}");
    assert_eq!(counted(&d.base, cluster, pool, "past-grace").await, 1.0);
    // The finalizer's owner lets it go.
    let release = serde_json::json!({"metadata": {"finalizers": null}});
    pods.patch(
        "checkpoint-uploader",
        &PatchParams::default(),
        &Patch::Merge(&release),
    )
    .await
    .unwrap();
}
