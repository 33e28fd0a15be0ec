//! A runaway Job's pending pods: `--pending-pods` pods of one Job, requesting GPUs, created
//! through the API server as a controller would, and waited for on `/api/v1/waiting`.
//!
//! They carry Kueue's admission gate (`kueue.x-k8s.io/admission`), as a Job's pods do while
//! Kueue holds its Workload: the dashboard keeps and places them as it does pods the
//! scheduler reported `Unschedulable` (less the reading of a message), while the embedded
//! cluster's scheduler, in a process of its own on the same cores, leaves gated pods alone
//! instead of judging 10,000 pods against 10,000 nodes every second. The dashboard's cost is
//! what is measured; the embedded cluster's is not the product's.

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, api::PostParams};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The Job the pods belong to, in `default`.
pub const JOB: &str = "runaway-pretrain";

/// Creates `n` gated pods of [`JOB`], 32 requests at a time; returns how long it took.
pub async fn create(client: &Client, n: usize) -> Res<Duration> {
    let api = Api::<Pod>::namespaced(client.clone(), "default");
    let start = Instant::now();
    let results: Vec<kube::Result<Pod>> = futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let pod: Pod = serde_json::from_value(serde_json::json!({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {
                        "name": format!("{JOB}-{i}"),
                        "labels": {"batch.kubernetes.io/job-name": JOB},
                        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": JOB,
                            "uid": format!("bench-{JOB}"), "controller": true}],
                    },
                    "spec": {
                        "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                        "nodeSelector": {"node.kubernetes.io/instance-type": "gd-8xh100ib-i128"},
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "registry.example/train:1",
                            "resources": {"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"},
                                          "limits": {"nvidia.com/gpu": "1"}}}],
                    },
                }))
                .expect("a Pod");
                api.create(&PostParams::default(), &pod).await
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
        return Err(format!("creating the pending pods: {e}").into());
    }
    Ok(start.elapsed())
}

/// Waits until the dashboard's `/api/v1/waiting` counts at least `n` waiting pods in
/// `cluster`'s row (120 s at most); returns how long it took.
pub async fn wait_listed(base: &str, cluster: &str, n: usize) -> Res<Duration> {
    let start = Instant::now();
    loop {
        let w: serde_json::Value = reqwest::get(format!("{base}/api/v1/waiting?cluster={cluster}"))
            .await?
            .json()
            .await?;
        let listed = w["pools"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["pool"].is_null()))
            .and_then(|r| r["pods"].as_u64())
            .unwrap_or(0) as usize;
        if listed >= n {
            return Ok(start.elapsed());
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err(format!("only {listed} of {n} pending pods listed after 120 s").into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
