//! A measurement rather than a test: the scale benchmark's load held in one store.

use serde_json::json;

use super::*;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The scale benchmark's load (10k nodes, 50k pods shaped like the behaviour model's) held
/// in one store: prints the memory it takes. `cargo test -p server --lib store_at_scale --
/// --ignored --nocapture`.
#[test]
#[ignore = "measurement: run on demand"]
fn store_at_scale() {
    let s = Store::new(crate::embedded::api::DEFAULT_HISTORY);
    let before = rss_kib();
    let t0 = std::time::Instant::now();
    for i in 0..10_000 {
        let node = json!({"metadata": {"name": format!("gd-8xh100ib-i128-{i:05}"),
            "labels": {"compute.coreweave.com/node-pool": format!("pool-{}", i % 40),
                       "node.kubernetes.io/instance-type": "gd-8xh100ib-i128",
                       "topology.kubernetes.io/zone": "US-EAST-04A"}},
            "spec": {"providerID": format!("coreweave://{i}")},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "lastHeartbeatTime": "2026-11-21T10:00:00Z", "lastTransitionTime": "2026-11-21T10:00:00Z"}],
                "capacity": {"cpu": "128", "memory": "2Ti", "nvidia.com/gpu": "8"},
                "nodeInfo": {"kubeletVersion": "v1.33.1"}}});
        s.create(Kind::Nodes, "", node, false).unwrap();
    }
    for i in 0..50_000 {
        let pod = json!({"metadata": {"name": format!("train-{i:05}-x7k2p"),
            "labels": {"app.kubernetes.io/name": "train", "pod-template-hash": "7c9f8d6b5"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "train-7c9f8d6b5",
                                 "uid": "0b7e0d4c-8f0a-4c1e-9d3a-2b6f1e0a9c77", "controller": true}]},
            "spec": {"nodeName": format!("gd-8xh100ib-i128-{:05}", i / 5), "terminationGracePeriodSeconds": 30,
                "containers": [{"name": "main", "image": "ghcr.io/example/train:1.0",
                    "resources": {"requests": {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "1"}}}],
                "tolerations": [{"key": "is_gpu", "operator": "Exists", "effect": "NoSchedule"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
                    "image": "ghcr.io/example/train:1.0", "imageID": "", "started": true,
                    "state": {"running": {"startedAt": "2026-11-21T10:00:00Z"}}}]}});
        s.create(Kind::Pods, &format!("team-{}", i % 8), pod, false)
            .unwrap();
    }
    let took = t0.elapsed();
    let used = rss_kib().saturating_sub(before);
    println!(
        "60k objects stored in {took:?}; RSS +{} MiB ({} bytes/object)",
        used / 1024,
        used * 1024 / 60_000
    );
    let q = ListQuery {
        limit: Some(500),
        ..ListQuery::default()
    };
    let t1 = std::time::Instant::now();
    let page = s.list(Kind::Pods, &q);
    println!("first page of 500 pods in {:?}", t1.elapsed());
    assert_eq!(page.items.len(), 500);
}
