//! Streaming lists (issue 40, S4): spotboard lists each kind with `sendInitialEvents=true`
//! where the API server serves it, and falls back to a paged LIST where it is refused (a
//! kube-apiserver with the WatchList feature gate off answers 422), losing nothing.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use crate::common::sim::eventually;
use crate::providers::{CKS, get};

const CLUSTER: &str = "spotboard-us-east-04a";

async fn waiting_names(base: &str) -> Vec<String> {
    let w = get(base, &format!("/api/v1/waiting?cluster={CLUSTER}")).await;
    w["pods"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_stream_where_served_and_fall_back_to_list_where_refused() {
    let d = crate::common::start(&[CKS], 60.0).await;
    let embedded = d.running.embedded.as_ref().unwrap();
    // Every kind of the zone was listed by streaming: NodePools, Nodes, Pods, Events and
    // Kueue's four (the behaviour model's own watches list the old way).
    let streamed = embedded.streaming_lists_served(CKS);
    assert!(streamed >= 8, "{streamed} streaming lists served");

    // The API server stops serving them, and every watch is expired: kube-rs relists, is
    // refused, and spotboard lists with LIST from then on.
    embedded.set_watch_list(CKS, false);
    embedded.expire_watches(CKS);
    let pods: Api<Pod> = Api::namespaced(d.admin(CKS), "default");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "after-fallback", "namespace": "default"},
        "spec": {
            "nodeSelector": {"node.kubernetes.io/instance-type": "gd-8xh100-nowhere"},
            "containers": [{"name": "main", "image": "registry.example/train:1",
                "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
        },
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    // Nothing is lost: the pod created after the fallback reaches the dashboard, and the
    // seeded waiting pods are still there.
    eventually(
        Duration::from_secs(20),
        "the pod after the fallback",
        || async {
            let names = waiting_names(&d.base).await;
            (names.iter().any(|n| n == "after-fallback") && names.len() >= 2).then_some(())
        },
    )
    .await;
    assert_eq!(
        embedded.streaming_lists_served(CKS),
        streamed,
        "no streaming list was served after they were refused"
    );
    let links = get(&d.base, "/api/v1/pools").await;
    assert!(
        links["pools"].as_array().is_some_and(|p| !p.is_empty()),
        "{links}"
    );
}
