//! The demo that shows itself: the first preemption starts within a minute of start with no
//! action, and "Play a preemption" exists only on the embedded cluster.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use crate::common;
use common::sim::eventually;

const ZONE: &str = "US-EAST-04A";
/// The demo's first zone: `l40s-spot-inference`, the pool it prefers, is in the second.
const SHOWCASE_ZONE: &str = "US-CENTRAL-07A";

use common::preemptions;

/// `POST /api/demo_available`: whether "Play a preemption" is offered.
async fn demo_available(base: &str) -> Value {
    crate::common::json_of(
        reqwest::Client::new()
            .post(format!("{base}/api/demo_available"))
            .json(&json!({})),
    )
    .await
}

/// Real time (speed 1): the newcomer's first minute, not the simulation's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_preemption_starts_within_a_minute_with_no_action() {
    let started = Instant::now();
    let d = common::start_with(&[ZONE, SHOWCASE_ZONE], 1.0, |a| a.demo_preemptions = true).await;
    let first = eventually(
        Duration::from_secs(60),
        "a preemption under way",
        || async {
            let p = preemptions(&d.base).await;
            p["nodes"].as_array()?.first().cloned()
        },
    )
    .await;
    let after = started.elapsed();
    assert!(
        after < Duration::from_secs(60),
        "the first preemption after {after:?}"
    );
    assert_eq!(first["timeline"]["provider"], "cks", "{first}");
    assert_eq!(first["capacity_type"], "spot", "{first}");
    assert_eq!(
        first["pool"], "l40s-spot-inference",
        "the pool whose drain shows refused evictions: {first}"
    );
}

/// The quiet fleet the other tests run on: nothing in the first 30 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_preemptions_false_keeps_the_fleet_quiet() {
    let d = common::start(&[ZONE, SHOWCASE_ZONE], 1.0).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let p = preemptions(&d.base).await;
    assert_eq!(p["nodes"].as_array().map(Vec::len), Some(0), "{p}");
}

async fn play(base: &str, cluster: &str, node: &str) -> (u16, String) {
    let r = reqwest::Client::new()
        .post(format!("{base}/api/play_preemption"))
        .json(&json!({"cluster": cluster, "node": node}))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_a_preemption_annotates_a_spot_node_and_refuses_others() {
    let d = common::start(&[ZONE], 60.0).await;
    let cluster = spotboard_embedded::context_name(ZONE);
    let nodes = Api::<Node>::all(d.admin(ZONE));
    let of = |pool: &str| {
        ListParams::default().labels(&format!("compute.coreweave.com/node-pool={pool}"))
    };
    let spot = nodes.list(&of("h100-spot-train")).await.unwrap().items[0].name_any();
    let on_demand = nodes.list(&of("example-nodepool")).await.unwrap().items[0].name_any();

    assert_eq!(demo_available(&d.base).await, json!(true));

    assert_eq!(play(&d.base, &cluster, &on_demand).await.0, 400, "not spot");
    assert_eq!(play(&d.base, &cluster, "no-such-node").await.0, 404);
    assert_eq!(play(&d.base, "no-such-cluster", &spot).await.0, 404);
    // A page of another origin may not play one (the guard in front of every POST).
    let foreign = reqwest::Client::new()
        .post(format!("{}/api/play_preemption", d.base))
        .header("Origin", "http://evil.example")
        .json(&json!({"cluster": cluster, "node": spot}))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status().as_u16(), 403);

    let (status, body) = play(&d.base, &cluster, &spot).await;
    assert_eq!(status, 200, "{body}");
    eventually(Duration::from_secs(10), "the node under notice", || async {
        let p = preemptions(&d.base).await;
        p["nodes"]
            .as_array()?
            .iter()
            .find(|n| n["node"] == spot.as_str())
            .cloned()
    })
    .await;
    assert_eq!(
        play(&d.base, &cluster, &spot).await.0,
        400,
        "already leaving"
    );
}

/// With real clusters (a kubeconfig, here the embedded cluster's own) there is nothing to play.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn play_a_preemption_is_404_with_real_clusters() {
    use clap::Parser;
    let d = common::start(&[ZONE], 60.0).await;
    let mut args = server::cli::Cli::parse_from(["spotboard"]).serve;
    args.listen = "127.0.0.1:0".parse().unwrap();
    args.kubeconfig = Some(d.kubeconfig.clone());
    args.contexts = vec![spotboard_embedded::context_name(ZONE)];
    let dir = tempfile::tempdir().unwrap();
    args.ledger = dir.path().join("ledger.sqlite");
    let real = server::run::start(&args, std::future::pending())
        .await
        .unwrap();
    let base = format!("http://{}", real.addr);
    let nodes = Api::<Node>::all(d.admin(ZONE));
    let node = nodes.list(&ListParams::default()).await.unwrap().items[0].name_any();
    let (status, body) = play(&base, &spotboard_embedded::context_name(ZONE), &node).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(demo_available(&base).await, json!(false));
}
