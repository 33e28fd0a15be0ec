//! Waiting work through the embedded cluster: a pod no node can take, created with kube-rs as
//! a user would with kubectl, is listed by `/api/v1/waiting` within 5 s with the scheduler's
//! reason and the same condition the API server holds, and leaves the list when deleted; a
//! gated pod is listed as gated and never scheduled.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::{Value, json};

use crate::common::sim::eventually;
use crate::providers::{CKS, get, start};

const CLUSTER: &str = "spotboard-us-east-04a";

/// Creates pod `name` in `default` with `spec`, as `kubectl apply` would.
async fn create(pods: &Api<Pod>, name: &str, spec: Value) {
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
}

fn waiting_pod<'a>(w: &'a Value, name: &str) -> Option<&'a Value> {
    w["pods"].as_array()?.iter().find(|p| p["name"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_no_node_can_take_is_listed_with_its_reason_until_deleted() {
    let d = start().await;
    let pods: Api<Pod> = Api::namespaced(d.admin(CKS), "default");
    // An instance type no pool has: the selector matches no node.
    create(
        &pods,
        "train-nowhere",
        json!({
            "nodeSelector": {"node.kubernetes.io/instance-type": "gd-8xh100-nowhere"},
            "containers": [{"name": "main", "image": "registry.example/train:1",
                "resources": {"requests": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8"},
                              "limits": {"nvidia.com/gpu": "8"}}}],
        }),
    )
    .await;
    let url = format!("/api/v1/waiting?cluster={CLUSTER}");
    let seen = eventually(
        Duration::from_secs(5),
        "the pod in /api/v1/waiting",
        || async { waiting_pod(&get(&d.base, &url).await, "train-nowhere").cloned() },
    )
    .await;
    assert_eq!(seen["kind"], "unschedulable");
    assert_eq!(
        (seen["gpus"].as_u64(), seen["cpu"].as_str()),
        (Some(8), Some("16"))
    );
    assert_eq!(seen["memory"].as_u64(), Some(64 << 30));
    assert_eq!(
        seen["node_selector"]["node.kubernetes.io/instance-type"],
        "gd-8xh100-nowhere"
    );
    // The same condition the API server holds (what `kubectl describe pod` shows).
    let held = pods.get("train-nowhere").await.unwrap();
    let condition = held
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")
        .unwrap();
    assert_eq!(condition.status, "False");
    assert_eq!(condition.reason.as_deref(), Some("Unschedulable"));
    assert_eq!(seen["message"].as_str(), condition.message.as_deref());
    // Every node gave one reason (the selector, or first a taint the pod does not tolerate,
    // as kube-scheduler's filters run), and the counts add up to the message's total.
    let reasons = seen["reasons"].as_array().unwrap();
    assert!(
        reasons
            .iter()
            .any(|r| r["reason"] == "node(s) didn't match Pod's node affinity/selector"),
        "{reasons:?}"
    );
    let total: u64 = condition.message.as_deref().unwrap()["0/".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let counted: u64 = reasons.iter().filter_map(|r| r["nodes"].as_u64()).sum();
    assert_eq!(counted, total, "{reasons:?}");
    // No pool gives its nodes that instance type: the answer says so.
    assert_eq!(seen["pools"], json!([]));
    assert_eq!(
        seen["cause"],
        "selector node.kubernetes.io/instance-type=gd-8xh100-nowhere matches no pool"
    );
    // A pod for a pool that exists but has no room: the pool is named, with the waiting work.
    create(
        &pods,
        "train-huge",
        json!({
        "nodeSelector": {"compute.coreweave.com/node-pool": "h100-spot-train"},
        "containers": [{"name": "main", "image": "registry.example/train:1",
            "resources": {"requests": {"nvidia.com/gpu": "64"}, "limits": {"nvidia.com/gpu": "64"}}}],
    }),
    )
    .await;
    let (huge, per_pool) = eventually(Duration::from_secs(5), "the big pod", || async {
        let w = get(&d.base, &url).await;
        let pod = waiting_pod(&w, "train-huge").cloned()?;
        let pool = w["pools"]
            .as_array()?
            .iter()
            .find(|p| p["pool"] == "h100-spot-train")
            .cloned()?;
        Some((pod, pool))
    })
    .await;
    assert_eq!(huge["pools"], json!(["h100-spot-train"]));
    assert!(
        huge["cause"].as_str().unwrap().contains("nvidia.com/gpu")
            || huge["cause"]
                .as_str()
                .unwrap()
                .starts_with("waiting for spot capacity"),
        "{huge}"
    );
    assert!(per_pool["pods"].as_u64() >= Some(1) && per_pool["gpus"].as_u64() >= Some(64));
    assert_eq!(per_pool["cluster"], CLUSTER);

    // Other clusters do not list it; an unknown cluster is a 404.
    let gke = get(
        &d.base,
        "/api/v1/waiting?cluster=spotboard-gke-us-central1-a",
    )
    .await;
    assert!(waiting_pod(&gke, "train-nowhere").is_none());
    let missing = reqwest::get(format!("{}/api/v1/waiting?cluster=nope", d.base))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    // A gated pod waits as gated: the scheduler leaves it alone.
    create(
        &pods,
        "gated-job",
        json!({
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "containers": [{"name": "main", "image": "registry.example/train:1"}],
        }),
    )
    .await;
    let g = eventually(Duration::from_secs(5), "the gated pod", || async {
        waiting_pod(&get(&d.base, &url).await, "gated-job").cloned()
    })
    .await;
    assert_eq!(g["kind"], "scheduling-gated");
    assert_eq!(g["gates"], json!(["kueue.x-k8s.io/admission"]));
    assert_eq!(g["reasons"], json!([]));

    // Deleted: gone from the list within 5 s.
    pods.delete("train-nowhere", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        Duration::from_secs(5),
        "the pod leaves /api/v1/waiting",
        || async {
            waiting_pod(&get(&d.base, &url).await, "train-nowhere")
                .is_none()
                .then_some(())
        },
    )
    .await;
    let still = pods.get("gated-job").await.unwrap();
    assert!(
        still.spec.unwrap().node_name.is_none(),
        "a gated pod is never bound"
    );
}

/// The embedded cluster's own waiting job: a training pod for the B200 spot pool, which is
/// queued for capacity, shows with the pool's condition as its cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeded_training_job_waits_for_spot_capacity() {
    let d = crate::common::start_with(&["US-EAST-04A", "US-CENTRAL-07A"], 60.0, |_| {}).await;
    let url = "/api/v1/waiting?cluster=spotboard-us-central-07a";
    let pod = eventually(Duration::from_secs(10), "the seeded job's pod", || async {
        let w = get(&d.base, url).await;
        waiting_pod(&w, "flux-video-pretrain-0-x7k2p")
            .filter(|p| {
                p["cause"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("waiting for spot capacity"))
            })
            .cloned()
    })
    .await;
    assert_eq!(pod["pools"], json!(["b200-spot-burst"]));
    assert_eq!(
        (pod["gpus"].as_u64(), pod["owner_kind"].as_str()),
        (Some(8), Some("Job"))
    );
    let cause = pod["cause"].as_str().unwrap();
    assert!(
        cause.starts_with("waiting for spot capacity in US-CENTRAL-07A since ")
            && cause.ends_with("(Capacity: QueuedAwaitingCapacity)"),
        "{cause}"
    );
    // kube-scheduler's FailedScheduling event on the pod comes with it (written through
    // events.k8s.io: no `source`, so its writer is read from `reportingComponent`), and says
    // what the pod's condition says.
    let pod = eventually(
        Duration::from_secs(10),
        "the pod's FailedScheduling event",
        || async {
            let w = get(&d.base, url).await;
            waiting_pod(&w, "flux-video-pretrain-0-x7k2p")
                .filter(|p| p["events"].as_array().is_some_and(|e| !e.is_empty()))
                .cloned()
        },
    )
    .await;
    let event = &pod["events"][0];
    assert_eq!(
        (event["source"].as_str(), event["reason"].as_str()),
        (Some("default-scheduler"), Some("FailedScheduling"))
    );
    assert_eq!(event["message"], pod["message"]);
    assert!(event["last_seen"].is_string(), "{event}");
}

/// The embedded cluster's tainted-pool case: an evaluation pod selects the inference pool
/// without tolerating its `dedicated=inference:NoSchedule` taint. The embedded scheduler
/// (by its own rules) reports the taint, and spotboard names it as the cause, with no pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeded_pod_without_the_pools_toleration_waits_on_the_taint() {
    let d = crate::common::start_with(&["US-EAST-04A", "US-CENTRAL-07A"], 60.0, |_| {}).await;
    let url = "/api/v1/waiting?cluster=spotboard-us-central-07a";
    let pod = eventually(
        Duration::from_secs(10),
        "the seeded evaluation pod",
        || async { waiting_pod(&get(&d.base, url).await, "llm-eval-0-q4m9z").cloned() },
    )
    .await;
    assert_eq!(pod["pools"], json!([]));
    assert_eq!(
        pod["cause"],
        "no pool tolerates taint dedicated=inference:NoSchedule"
    );
    let taint = pod["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["reason"] == "node(s) had untolerated taint {dedicated: inference}")
        .unwrap_or_else(|| panic!("{pod}"));
    // The inference pool has two nodes, both with the taint.
    assert_eq!(taint["nodes"].as_u64(), Some(2));
    // The cluster's row counts it among the pods no pool can take.
    let w = get(&d.base, url).await;
    let row = w["pools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pool"].is_null())
        .cloned()
        .unwrap();
    assert!(row["no_pool"].as_u64() >= Some(1), "{row}");
}

/// The `pending-work` alert through the embedded cluster: a bare pod requesting GPUs that no
/// pool can take, created as a user would, waits; with `--alert-pending-minutes 0` its
/// cluster's episode fires (POSTed to the webhook, one episode per cluster), `/metrics` gives the waiting gauges, and
/// deleting the pod (no controller brings a bare pod back) resolves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpu_work_pending_past_the_minutes_alerts_and_resolves_when_it_leaves() {
    let (hook, received) = crate::common::webhook_sink().await;
    // Two zones: the scenario's own waiting pods go to the second (group 1), so nothing
    // else waits in the first.
    let d = crate::common::start_with(&[CKS, "US-CENTRAL-07A"], 60.0, |a| {
        a.alert_webhook = Some(hook);
        a.alert_pending_minutes = 0;
    })
    .await;
    let started = std::time::Instant::now();
    let pods: Api<Pod> = Api::namespaced(d.admin(CKS), "default");
    create(
        &pods,
        "train-b300",
        json!({
            "nodeSelector": {"node.kubernetes.io/instance-type": "gd-8xb300-nowhere"},
            "containers": [{"name": "main", "image": "registry.example/train:1",
                "resources": {"requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}}],
        }),
    )
    .await;
    let firing = eventually(Duration::from_secs(20), "pending-work firing", || async {
        received
            .lock()
            .unwrap()
            .iter()
            .find(|a| a["key"] == format!("pending-work/{CLUSTER}") && a["status"] == "firing")
            .cloned()
    })
    .await;
    assert_eq!(
        (&firing["cluster"], &firing["path"]),
        (&json!(CLUSTER), &json!("/"))
    );
    let summary = firing["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(&format!("{CLUSTER}: pods requesting GPUs waiting for "))
            && summary.contains("matches no pool"),
        "{summary}"
    );
    let metrics = crate::common::text_of(&format!("{}/metrics", d.base)).await;
    let gauge = |name: &str| -> f64 {
        let prefix = format!("{name}{{cluster=\"{CLUSTER}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no {prefix}:\n{metrics}"))
            .parse()
            .unwrap()
    };
    assert!(gauge("spotboard_waiting_gpus") >= 8.0);
    assert!(gauge("spotboard_waiting_pods") >= 1.0);
    // Seconds since the pod was found unschedulable, in this test: not an epoch, not negative.
    let oldest = gauge("spotboard_waiting_gpu_oldest_seconds");
    assert!(
        (0.0..=started.elapsed().as_secs_f64() + 2.0).contains(&oldest),
        "{oldest}"
    );
    pods.delete("train-b300", &DeleteParams::default())
        .await
        .unwrap();
    eventually(Duration::from_secs(20), "pending-work resolved", || async {
        received
            .lock()
            .unwrap()
            .iter()
            .any(|a| a["key"] == firing["key"] && a["status"] == "resolved")
            .then_some(())
    })
    .await;
    // The other cluster's seeded GPU work still waits, and its episode goes on.
    let other = received
        .lock()
        .unwrap()
        .iter()
        .filter(|a| a["key"] == "pending-work/spotboard-us-central-07a")
        .map(|a| a["status"].clone())
        .collect::<Vec<_>>();
    assert_eq!(other, [json!("firing")]);
}

/// Pending pods as kubectl, a client spotboard did not write, lists them from the same
/// cluster: `{namespace/name: (kind, message, since)}` for pods on no node that the scheduler
/// reported Unschedulable or that carry scheduling gates.
async fn pending_per_kubectl(
    kubeconfig: &std::path::Path,
) -> std::collections::BTreeMap<String, (String, String, String)> {
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(kubeconfig.with_file_name("kubectl-cache"))
        .args(["get", "pods", "--all-namespaces", "-o", "json"])
        .output()
        .await
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl get pods: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut pending = std::collections::BTreeMap::new();
    for p in list["items"].as_array().unwrap() {
        if p["spec"]["nodeName"].is_string() || p["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        let key = format!(
            "{}/{}",
            p["metadata"]["namespace"].as_str().unwrap(),
            p["metadata"]["name"].as_str().unwrap()
        );
        let gated = p["spec"]["schedulingGates"]
            .as_array()
            .is_some_and(|g| !g.is_empty());
        let scheduled = p["status"]["conditions"].as_array().and_then(|c| {
            c.iter()
                .find(|c| c["type"] == "PodScheduled" && c["status"] == "False")
        });
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        if gated {
            pending.insert(
                key,
                ("scheduling-gated".into(), String::new(), String::new()),
            );
        } else if let Some(c) = scheduled.filter(|c| c["reason"] == "Unschedulable") {
            pending.insert(
                key,
                (
                    "unschedulable".into(),
                    text(&c["message"]),
                    text(&c["lastTransitionTime"]),
                ),
            );
        }
    }
    pending
}

/// The done-when of issue 36: kubectl against the embedded cluster shows the same Pending
/// pods, with the same scheduler messages and since-times, as `/api/v1/waiting`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_lists_the_same_pending_pods_and_conditions() {
    let d = crate::common::start_with(&[CKS], 60.0, |_| {}).await;
    // The scenario's two waiting pods are there first; then both sides are read in turn until
    // they agree (a preempted node's pods may wait for a moment between the two reads).
    eventually(
        Duration::from_secs(10),
        "kubectl and spotboard agree",
        || async {
            let kubectl = pending_per_kubectl(&d.kubeconfig).await;
            let w = get(&d.base, &format!("/api/v1/waiting?cluster={CLUSTER}")).await;
            let spotboard: std::collections::BTreeMap<String, (String, String, String)> = w["pods"]
                .as_array()?
                .iter()
                .map(|p| {
                    let since = p["since"]
                        .as_str()
                        .map(|s| {
                            chrono::DateTime::parse_from_rfc3339(s)
                                .unwrap()
                                .to_utc()
                                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                        })
                        .unwrap_or_default();
                    (
                        format!(
                            "{}/{}",
                            p["namespace"].as_str().unwrap(),
                            p["name"].as_str().unwrap()
                        ),
                        (
                            p["kind"].as_str().unwrap().to_string(),
                            p["message"].as_str().unwrap().to_string(),
                            since,
                        ),
                    )
                })
                .collect();
            let seeded = [
                "ml-training/flux-video-pretrain-0-x7k2p",
                "inference/llm-eval-0-q4m9z",
            ];
            (seeded.iter().all(|k| kubectl.contains_key(*k)) && kubectl == spotboard).then_some(())
        },
    )
    .await;
}

/// A GKE pod selecting its GPU model (`cloud.google.com/gke-accelerator`, as GKE's GPU guide
/// has pods do) could land on the pool whose nodes carry that model, and on no other; a model
/// no node has matches no pool. (Before the pools carried the label, both matched no pool.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gke_pod_selecting_its_gpu_model_finds_the_pool_with_that_model() {
    let d = start().await;
    let pods: Api<Pod> = Api::namespaced(d.admin(crate::providers::GKE), "default");
    let spec = |model: &str| {
        json!({
            "nodeSelector": {"cloud.google.com/gke-accelerator": model},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "registry.example/train:1",
                "resources": {"limits": {"nvidia.com/gpu": "64"}}}],
        })
    };
    // The GKE-style zone runs no scheduler: the test reports each pod unschedulable as
    // kube-scheduler would.
    for (name, model, why) in [
        ("l4-too-big", "nvidia-l4", "Insufficient nvidia.com/gpu"),
        (
            "t4-nowhere",
            "nvidia-tesla-t4",
            "node(s) didn't match Pod's node affinity/selector",
        ),
    ] {
        create(&pods, name, spec(model)).await;
        let status = json!({"status": {"conditions": [{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "lastTransitionTime": "2026-11-28T09:00:00Z",
            "message": format!("0/7 nodes are available: 7 {why}.")}]}});
        pods.patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&status),
        )
        .await
        .unwrap();
    }
    let url = format!("/api/v1/waiting?cluster={}", crate::providers::GKE_CLUSTER);
    let w = eventually(Duration::from_secs(10), "both GKE pods waiting", || async {
        let w = get(&d.base, &url).await;
        (waiting_pod(&w, "l4-too-big").is_some() && waiting_pod(&w, "t4-nowhere").is_some())
            .then_some(w)
    })
    .await;
    assert_eq!(
        waiting_pod(&w, "l4-too-big").unwrap()["pools"],
        json!(["spot-l4"])
    );
    let nowhere = waiting_pod(&w, "t4-nowhere").unwrap();
    assert_eq!(nowhere["pools"], json!([]));
    assert_eq!(
        nowhere["cause"],
        "selector cloud.google.com/gke-accelerator=nvidia-tesla-t4 matches no pool"
    );
}
