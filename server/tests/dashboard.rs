//! The whole dashboard against the embedded cluster, through kube-rs, kubectl and HTTP.

mod common;

use std::time::Duration;

use app::{
    model::{LinkState, PoolRow, Scope},
    nodepool::NodePool,
};
use common::{sse_until, start, wait_for};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;

const ZONE: &str = "US-EAST-04A";

fn pool_named(rows: &[PoolRow], name: &str) -> Option<PoolRow> {
    rows.iter().find(|p| p.name == name).cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_pools_are_served_with_five_conditions() {
    let d = start(&[ZONE, "EU-SOUTH-04A"], 60.0).await;
    let body: serde_json::Value = reqwest::get(format!("{}/api/v1/pools", d.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let pools: Vec<PoolRow> = serde_json::from_value(body["pools"].clone()).unwrap();
    let example = pool_named(&pools, "example-nodepool").expect("the seed's example-nodepool");
    assert_eq!(example.instance_type, "gd-8xa100-i128");
    assert_eq!(example.target_nodes, 1);
    assert_eq!(example.zone.as_deref(), Some(ZONE));
    let types: Vec<_> = example
        .conditions
        .iter()
        .take(5)
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "Validated",
            "Capacity",
            "Quota",
            "AtTarget",
            "NodeReconfigurationRequired"
        ]
    );
    assert!(pools.iter().any(|p| p.compute_class == "spot"));
    assert!(
        pools
            .iter()
            .any(|p| p.zone.as_deref() == Some("EU-SOUTH-04A")),
        "both zones are watched"
    );

    let detail: serde_json::Value = reqwest::get(format!(
        "{}/api/v1/pools/{}/example-nodepool",
        d.base, example.cluster
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(detail["pool"]["name"], "example-nodepool");
    assert!(detail["nodes"].is_array() && detail["events"].is_array());
    let missing = reqwest::get(format!(
        "{}/api/v1/pools/{}/no-such-pool",
        d.base, example.cluster
    ))
    .await
    .unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(
        reqwest::get(format!("{}/readyz", d.base))
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_created_through_kube_rs_reaches_the_stream_as_one_keyed_add() {
    let d = start(&[ZONE], 60.0).await;
    let cluster = d.running.embedded.as_ref().unwrap();
    let client = cluster.admin_client(ZONE).unwrap();
    let rev = d.running.hub.snapshot(&Scope::pools()).rev;
    let url = format!("{}/api/v1/stream?since={rev}", d.base);
    let reader = tokio::spawn(async move {
        sse_until(&url, Duration::from_secs(10), |event, data| {
            event == "delta" && data.contains("\"add\"") && data.contains("stream-test-pool")
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pool: NodePool = serde_json::from_value(json!({
        "apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
        "metadata": {"name": "stream-test-pool"},
        "spec": {"computeClass": "spot", "instanceType": "gd-8xh100ib-i128", "targetNodes": 2}
    }))
    .unwrap();
    let created = Api::<NodePool>::all(client)
        .create(&PostParams::default(), &pool)
        .await
        .unwrap();
    let data = reader
        .await
        .unwrap()
        .expect("the add arrives on the stream within 10 s");
    let delta: app::model::Delta = serde_json::from_str(&data).unwrap();
    assert_eq!(
        Some(delta.key),
        created.metadata.uid,
        "deltas are keyed by object uid"
    );
    assert!(delta.rev > rev);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_shows_up_in_the_dashboard() {
    let d = start(&[ZONE], 60.0).await;
    let manifest = d.kubeconfig.with_file_name("pool.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: compute.coreweave.com/v1alpha1\nkind: NodePool\nmetadata:\n  name: kubectl-pool\nspec:\n  computeClass: spot\n  instanceType: gd-8xl40s-i128\n  targetNodes: 1\n",
    )
    .unwrap();
    let cache = d.kubeconfig.with_file_name("kubectl-cache");
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&d.kubeconfig)
        .arg("--cache-dir")
        .arg(&cache)
        .args(["apply", "-f"])
        .arg(&manifest)
        .output()
        .await
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hub = d.running.hub.clone();
    wait_for(Duration::from_secs(5), || {
        pool_named(&hub.pool_rows(), "kubectl-pool").is_some()
    })
    .await;
    let row = pool_named(&hub.pool_rows(), "kubectl-pool").unwrap();
    assert_eq!(row.compute_class, "spot");
    assert_eq!(row.instance_type, "gd-8xl40s-i128");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unexpected_objects_are_shown_with_a_reason_and_nothing_crashes() {
    let d = start(&[ZONE], 60.0).await;
    let client = d.admin(ZONE);
    let ar = kube::api::ApiResource::erase::<NodePool>(&());
    let raw = Api::<DynamicObject>::all_with(client.clone(), &ar);
    let make = |name: &str, spec: serde_json::Value, status: Option<serde_json::Value>| {
        let mut v = json!({
            "apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
            "metadata": {"name": name}, "spec": spec
        });
        if let Some(s) = status {
            v["status"] = s;
        }
        serde_json::from_value::<DynamicObject>(v).unwrap()
    };
    let pp = PostParams::default();
    raw.create(
        &pp,
        &make(
            "bad-count",
            json!({"instanceType": "gd-8xa100-i128", "targetNodes": "three"}),
            None,
        ),
    )
    .await
    .unwrap();
    raw.create(&pp, &make("odd-class", json!({"instanceType": "gd-8xa100-i128", "targetNodes": 1, "computeClass": "flex", "futureField": {"a": 1}}), None)).await.unwrap();
    // A node without a pool label: not part of any pool, must not disturb anything.
    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone());
    nodes
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "stray-node"}})).unwrap(),
        )
        .await
        .unwrap();
    // An unknown condition type and reason on a pool's status.
    raw.create(
        &pp,
        &make(
            "new-conds",
            json!({"instanceType": "gd-8xa100-i128", "targetNodes": 0}),
            None,
        ),
    )
    .await
    .unwrap();
    raw.patch_status(
        "new-conds",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({
            "status": {"conditions": [{"type": "Hibernating", "status": "True", "reason": "Sleepy"}]}
        })),
    )
    .await
    .unwrap();

    let hub = d.running.hub.clone();
    wait_for(Duration::from_secs(5), || {
        let rows = hub.pool_rows();
        ["bad-count", "odd-class", "new-conds"]
            .iter()
            .all(|n| pool_named(&rows, n).is_some())
            && pool_named(&rows, "new-conds")
                .is_some_and(|p| p.conditions.iter().any(|c| c.type_ == "Hibernating"))
    })
    .await;
    let rows = hub.pool_rows();
    let bad = pool_named(&rows, "bad-count").unwrap();
    assert!(
        bad.malformed
            .as_deref()
            .unwrap()
            .starts_with("spec.targetNodes"),
        "{:?}",
        bad.malformed
    );
    let odd = pool_named(&rows, "odd-class").unwrap();
    assert_eq!(odd.compute_class, "flex");
    assert!(
        odd.problems
            .iter()
            .any(|p| p.contains("Unknown computeClass"))
    );
    assert!(
        odd.detail
            .unknown_fields
            .iter()
            .any(|f| f.contains("futureField"))
    );
    let conds = pool_named(&rows, "new-conds").unwrap();
    assert_eq!(conds.conditions.len(), 6, "five known plus the unknown one");
    // The watches are still alive: a later change still arrives.
    let example = pool_named(&rows, "example-nodepool").expect("example pool still there");
    Api::<NodePool>::all(client)
        .patch(
            "example-nodepool",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"targetNodes": 2}})),
        )
        .await
        .unwrap();
    wait_for(Duration::from_secs(5), || {
        pool_named(&hub.pool_rows(), "example-nodepool").is_some_and(|p| p.target_nodes == 2)
    })
    .await;
    assert_eq!(example.target_nodes, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_outage_shows_stale_since_and_recovers_by_itself() {
    let d = start(&[ZONE], 60.0).await;
    let hub = d.running.hub.clone();
    let cluster_row = || hub.snapshot(&Scope::pools()).clusters[0].clone();
    wait_for(Duration::from_secs(10), || {
        cluster_row().state == LinkState::Live
    })
    .await;
    let before = chrono::Utc::now();
    d.running.embedded.as_ref().unwrap().set_outage(ZONE, true);
    wait_for(Duration::from_secs(10), || {
        cluster_row().state == LinkState::Stale
    })
    .await;
    let stale = cluster_row();
    assert!(stale.since.unwrap() <= chrono::Utc::now());
    assert!(
        stale.since.unwrap() >= before - chrono::Duration::seconds(5),
        "since is the last good data"
    );
    assert!(stale.message.is_some());
    // Pools stay visible while stale.
    assert!(!hub.pool_rows().is_empty());
    d.running.embedded.as_ref().unwrap().set_outage(ZONE, false);
    wait_for(Duration::from_secs(40), || {
        cluster_row().state == LinkState::Live
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_origins_are_refused_and_non_loopback_needs_auth() {
    let d = start(&[ZONE], 60.0).await;
    let http = reqwest::Client::new();
    let r = http
        .get(format!("{}/api/v1/stream", d.base))
        .header("Origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = http
        .post(format!("{}/api/snapshot", d.base))
        .header("Origin", "http://evil.example")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let same = d.base.clone();
    let r = http
        .get(format!("{}/api/v1/pools", d.base))
        .header("Origin", same)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    let args = server::cli::ServeArgs {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..d_args()
    };
    let err = server::run::start(&args, std::future::pending())
        .await
        .err()
        .expect("refused");
    assert!(err.to_string().contains("--auth-proxy-header"), "{err}");
}

fn d_args() -> server::cli::ServeArgs {
    use clap::Parser;
    server::cli::Cli::parse_from(["spotboard"]).serve
}
