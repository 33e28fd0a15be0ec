//! Kueue through the embedded cluster: a CKS zone serves Kueue's four kinds, its behaviour
//! model admits the scenario's workloads by quota (spot flavor first, on-demand after), and
//! `/api/v1/kueue` reads them back per ClusterQueue with the flavors' pools and capacity
//! types. A workload created through kube-rs into a LocalQueue that does not exist waits with
//! Kueue's message; deleting an admitted one frees quota for the one that waited. The GKE
//! zone serves no Kueue and has no queue.

use std::time::Duration;

use kube::Api;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::common::{self, sim::eventually};
use crate::providers::{CKS, GKE, GKE_CLUSTER, get};

fn queue<'a>(r: &'a Value, name: &str) -> Option<&'a Value> {
    r["queues"].as_array()?.iter().find(|q| q["name"] == name)
}

fn pending<'a>(r: &'a Value, name: &str) -> Option<&'a Value> {
    r["pending"].as_array()?.iter().find(|w| w["name"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_show_pending_and_admitted_work_by_capacity_type() {
    let d = common::start_with(&[CKS], 60.0, |a| a.gke_zones = vec![GKE.into()]).await;
    // Three workloads fill the 32 spot GPUs; the fourth (16 GPUs) fits neither flavor; the
    // fifth (4) goes on-demand.
    let r = eventually(
        Duration::from_secs(30),
        "the ml-training queue with its workloads admitted",
        || async {
            let r = get(&d.base, "/api/v1/kueue").await;
            let q = queue(&r, "ml-training")?;
            // The queue's Active condition is written after its workloads' admission.
            (q["admitted_spot"] == 3 && q["admitted_on_demand"] == 1 && q["active"] == true)
                .then(|| r.clone())
        },
    )
    .await;
    let q = queue(&r, "ml-training").unwrap();
    assert_eq!(q["active"], true);
    assert_eq!(q["cohort"], "ml");
    assert_eq!(
        (
            q["admitted_gpus_spot"].as_u64(),
            q["admitted_gpus_on_demand"].as_u64()
        ),
        (Some(32), Some(4))
    );
    assert_eq!(
        (q["pending_workloads"].as_u64(), q["pending_gpus"].as_u64()),
        (Some(1), Some(16))
    );
    assert_eq!(q["oldest_pending"], "ml-training/pretrain-dit-xl");
    assert_eq!(
        q["pending_message"],
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in \
         flavor h100-spot, 16 more needed, insufficient quota for nvidia.com/gpu in flavor \
         a100-on-demand, request > maximum capacity (16 > 8)"
    );
    // Each admitted workload with its ClusterQueue, flavor and that flavor's capacity type.
    let admitted: Vec<(&str, &str, &str)> = r["admitted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap(),
                w["flavor"].as_str().unwrap(),
                w["capacity_type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        admitted,
        [
            ("eval-sweep", "h100-spot", "spot"),
            ("finetune-mistral-7b", "h100-spot", "spot"),
            ("pretrain-llama-70b", "h100-spot", "spot"),
            ("rlhf-reward-model", "a100-on-demand", "on-demand"),
        ]
    );
    let flavors: Vec<(&str, &str, Vec<&str>)> = q["flavors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap(),
                f["capacity_type"].as_str().unwrap(),
                f["pools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        flavors,
        [
            ("h100-spot", "spot", vec!["h100-spot-train"]),
            ("a100-on-demand", "on-demand", vec!["example-nodepool"]),
        ]
    );
    // The same figures on /metrics, per ClusterQueue and capacity type, once the queue's row
    // is published (every 2 s).
    let cluster = q["cluster"].as_str().unwrap().to_string();
    let series = |name: &str, extra: &str| {
        format!(
            "spotboard_kueue_{name}{{cluster=\"{cluster}\",cluster_queue=\"ml-training\"{extra}}} "
        )
    };
    let want = [
        (series("pending_gpus", ""), "16"),
        (series("pending_workloads", ""), "1"),
        (series("admitted_gpus", ",capacity_type=\"spot\""), "32"),
        (series("admitted_gpus", ",capacity_type=\"on-demand\""), "4"),
    ];
    let metrics = eventually(Duration::from_secs(10), "the Kueue series", || async {
        let m = common::text_of(&format!("{}/metrics", d.base)).await;
        want.iter()
            .all(|(s, v)| m.lines().any(|l| l.strip_prefix(s.as_str()) == Some(*v)))
            .then_some(m)
    })
    .await;
    assert!(!metrics.contains(&format!("cluster=\"{GKE_CLUSTER}\",cluster_queue")));

    // /api/v1/waiting carries the same queues beside the pods.
    let waiting = get(&d.base, "/api/v1/waiting").await;
    assert!(
        waiting["queues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|q| q["name"] == "ml-training" && q["pending_gpus"] == 16),
        "{waiting}"
    );

    // The GKE cluster serves no Kueue: nothing of it shows.
    assert!(
        r["queues"]
            .as_array()
            .unwrap()
            .iter()
            .all(|q| q["cluster"] != GKE_CLUSTER),
        "{r}"
    );
    let gke = get(&d.base, &format!("/api/v1/kueue?cluster={GKE_CLUSTER}")).await;
    assert_eq!(gke, json!({"queues": [], "pending": [], "admitted": []}));

    // A workload of a LocalQueue that does not exist waits in no queue, with Kueue's message.
    let client = d.admin(CKS);
    let ar = kube::api::ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta1".into(),
        api_version: "kueue.x-k8s.io/v1beta1".into(),
        kind: "Workload".into(),
        plural: "workloads".into(),
    };
    let workloads: Api<DynamicObject> = Api::namespaced_with(client, "ml-training", &ar);
    let stray: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"name": "typo-queue", "namespace": "ml-training"},
        "spec": {"queueName": "team-b", "podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"containers": [{"name": "c",
                "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}}]}
    }))
    .unwrap();
    workloads
        .create(&PostParams::default(), &stray)
        .await
        .unwrap();
    let r = eventually(
        Duration::from_secs(30),
        "the stray workload with Kueue's message",
        || async {
            let r = get(&d.base, "/api/v1/kueue").await;
            let w = pending(&r, "typo-queue")?;
            (w["message"] == "LocalQueue team-b doesn't exist").then(|| r.clone())
        },
    )
    .await;
    let w = pending(&r, "typo-queue").unwrap();
    assert_eq!(w["cluster_queue"], Value::Null);
    assert_eq!(w["gpus"], 2);
    assert_eq!(queue(&r, "ml-training").unwrap()["pending_workloads"], 1);

    // Deleting an admitted 16-GPU workload frees spot quota for the one that waited.
    workloads
        .delete("pretrain-llama-70b", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        Duration::from_secs(30),
        "pretrain-dit-xl admitted on spot",
        || async {
            let r = get(&d.base, "/api/v1/kueue").await;
            let q = queue(&r, "ml-training")?;
            (q["pending_workloads"] == 0
                && q["admitted_spot"] == 3
                && q["admitted_gpus_spot"] == 32)
                .then_some(())
        },
    )
    .await;
}
