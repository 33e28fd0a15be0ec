//! Live preemptions against the embedded cluster: the CKS timeline from signals, the blast
//! radius read at T=0, a hand-made label driving the same timeline, waves and metrics.

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use common::sim::eventually;

const ZONE: &str = "US-EAST-04A";

async fn preemptions(base: &str) -> Value {
    reqwest::get(format!("{base}/api/v1/preemptions"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn find<'a>(p: &'a Value, node: &str) -> Option<&'a Value> {
    p["nodes"].as_array()?.iter().find(|n| n["node"] == node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cks_preemption_plays_its_phases_with_its_blast_radius() {
    let d = common::start(&[ZONE], 120.0).await;
    let nodes = Api::<Node>::all(d.admin(ZONE));
    let spot: Vec<Node> = nodes
        .list(&ListParams::default().labels("compute.coreweave.com/node-pool=h100-spot-train"))
        .await
        .unwrap()
        .items;
    let (victim, by_hand) = (spot[0].name_any(), spot[1].name_any());
    let patch = json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
    nodes
        .patch(&victim, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();

    let first = eventually(Duration::from_secs(5), "T=0 with pods", || async {
        let p = preemptions(&d.base).await;
        find(&p, &victim).filter(|n| n["pods"].is_array()).cloned()
    })
    .await;
    assert_eq!(first["timeline"]["provider"], "cks");
    assert_eq!(first["capacity_type"], "spot");
    assert_eq!(first["pool"], "h100-spot-train");
    let pods = first["pods"].as_array().unwrap();
    assert!(!pods.is_empty(), "the blast radius lists the node's pods");
    for p in pods {
        let fit = &p["fit"];
        assert!(
            !fit["sigterm"].is_null() && !fit["grace_end"].is_null(),
            "{p}"
        );
    }
    assert!(pods.iter().any(|p| p["namespace"] == "ml-training"));

    // At speed 120 the 7-minute window takes 3.5 s: draining, then removed.
    eventually(Duration::from_secs(10), "draining observed", || async {
        let p = preemptions(&d.base).await;
        find(&p, &victim)
            .filter(|n| n["timeline"]["phases"][1]["observed"].is_string())
            .cloned()
    })
    .await;
    let removed = eventually(Duration::from_secs(15), "removed", || async {
        let p = preemptions(&d.base).await;
        find(&p, &victim)
            .filter(|n| n["timeline"]["current"] == 2)
            .cloned()
    })
    .await;
    assert!(removed["timeline"]["next_in_s"].is_null());

    // A label set by hand on another node drives the same timeline (signals, not the sim).
    let label = json!({"metadata": {"labels": {"qos.coreweave.cloud/pending-preemption": "true"}}});
    nodes
        .patch(&by_hand, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    let hand = eventually(Duration::from_secs(5), "hand-labelled node", || async {
        let p = preemptions(&d.base).await;
        find(&p, &by_hand).cloned()
    })
    .await;
    assert_eq!(hand["timeline"]["phases"][0]["name"], "notice");

    let metrics = reqwest::get(format!("{}/metrics", d.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("spotboard_preemptions_total{cluster=\"spotboard-us-east-04a\",pool=\"h100-spot-train\",zone=\"US-EAST-04A\",instance_type=\"gd-8xh100ib-i128\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("spotboard_preemption_waves_total"),
        "{metrics}"
    );
}
