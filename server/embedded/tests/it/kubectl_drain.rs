//! `kubectl drain` against the embedded API server's `pods/eviction`.

use std::time::Duration;

use crate::common::objects::{api_code, node, pod};
use crate::kubectl::{Kubectl, path_str};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use serde_json::json;

/// `kubectl drain` asks for evictions (it finds `pods/eviction` in discovery): a budget that
/// keeps every pod refuses with the API server's words, and kubectl retries until its
/// timeout; a pod no budget selects is evicted, and the drain cordons the node first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drain_is_refused_by_a_budget_and_evicts_what_none_protects() {
    let k = Kubectl::start().await;
    let admin = k.admin();
    let nodes: Api<Node> = Api::all(admin.clone());
    for n in ["n1", "n2"] {
        nodes
            .create(&PostParams::default(), &node(n, json!({})))
            .await
            .unwrap();
    }
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let ready = |name: &str, node_name: &str, app: &str| -> Pod {
        let mut p = pod(name, node_name, "Running");
        p.labels_mut().insert("app".into(), app.into());
        p.status.as_mut().unwrap().conditions = Some(vec![
            serde_json::from_value(json!({"type": "Ready", "status": "True"})).unwrap(),
        ]);
        p
    };
    for (name, n, app) in [
        ("web-a", "n1", "web"),
        ("web-b", "n1", "web"),
        ("web-c", "n2", "web"),
        ("solo", "n2", "solo"),
    ] {
        pods.create(&PostParams::default(), &ready(name, n, app))
            .await
            .unwrap();
    }
    let budget = k.write(
        "pdb.yaml",
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: web\n  \
         namespace: default\nspec:\n  minAvailable: 3\n  selector:\n    matchLabels:\n      \
         app: web\n",
    );
    k.run(&["apply", "-f", path_str(&budget)]).await;

    let out = tokio::time::timeout(
        Duration::from_secs(60),
        k.command(&[
            "drain",
            "n1",
            "--force",
            "--pod-selector=app=web",
            "--timeout=7s",
        ])
        .output(),
    )
    .await
    .expect("kubectl finishes")
    .expect("kubectl runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the drain cannot finish:\n{stderr}");
    assert!(
        stderr.contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{stderr}"
    );
    assert_eq!(
        nodes.get("n1").await.unwrap().spec.unwrap().unschedulable,
        Some(true),
        "drain cordons first"
    );
    for name in ["web-a", "web-b"] {
        let p = pods.get(name).await.unwrap();
        assert!(p.metadata.deletion_timestamp.is_none(), "{name} was kept");
    }

    let (out, _) = k
        .run(&[
            "drain",
            "n2",
            "--force",
            "--pod-selector=app=solo",
            "--grace-period=0",
            "--timeout=20s",
        ])
        .await;
    assert!(out.contains("pod/solo evicted"), "{out}");
    assert_eq!(
        api_code(pods.get("solo").await.unwrap_err()),
        404,
        "evicted with no grace: gone"
    );
    assert!(
        pods.get("web-c").await.is_ok(),
        "the selector kept web-c out"
    );
}
