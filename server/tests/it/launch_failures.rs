//! Karpenter's refused launches through kube-rs against the embedded Karpenter zone, whose own
//! EC2 has no g5.2xlarge spot in the zone's first AZ: every `gpu-spot` launch is refused there
//! first (`InsufficientCapacityError` on a NodeClaim) and lands in another AZ. The rows beside
//! the capacity grid count them per zone and instance type, a new refusal shows live, and the
//! ledger keeps them after Kubernetes has forgotten the events and spotboard has restarted.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use spotboard_embedded::sim::fleet::Flavor;
use spotboard_embedded::{EmbeddedCluster, EmbeddedOptions};

use crate::common::sim::eventually;
use crate::ledger::dashboard_of;
use crate::providers::{AWS_CLUSTER, get};

const AWS: &str = "us-east-1a";
const REASON: &str = "InsufficientCapacityError";

/// The row of g5.2xlarge in us-east-1a, once it counts at least `at_least` failures in 24 h.
async fn g5_row(base: &str, at_least: u64) -> Value {
    eventually(
        Duration::from_secs(20),
        "the g5.2xlarge launch failures",
        || async {
            let grid = get(base, "/api/v1/capacity").await;
            grid["launch_failures"]
                .as_array()?
                .iter()
                .find(|r| r["zone"] == AWS && r["instance_type"] == "g5.2xlarge")
                .filter(|r| r["failures_24h"].as_u64() >= Some(at_least))
                .cloned()
        },
    )
    .await
}

/// Karpenter's launch failure events the cluster holds now.
async fn events(client: &kube::Client) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(REASON))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_launches_count_per_zone_and_type_live_and_survive_the_events_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        zones: vec![],
        fleets: vec![(Flavor::Karpenter, AWS.into())],
        seed: 7,
        speed: 10.0,
        extra_nodes: 0,
        nodes_per_pool: 2_500,
        pods_per_node: 2,
        simulate: true,
        kubeconfig_path: kubeconfig.clone(),
        demo_preemptions: false,
    })
    .await
    .unwrap();
    let client = cluster.admin_client(AWS).unwrap();
    let url = format!("sqlite://{}", dir.path().join("ledger.sqlite").display());
    let (first, stop) = dashboard_of(&kubeconfig, AWS_CLUSTER, &url).await;
    let base = format!("http://{}", first.addr);

    // Seeding launched gpu-spot's two nodes, each refused in us-east-1a first.
    let row = g5_row(&base, 2).await;
    assert_eq!(row["cluster"], AWS_CLUSTER);
    assert_eq!(row["pools"], json!(["gpu-spot"]));
    assert_eq!(row["failures_7d"], row["failures_24h"]);
    let message = row["last_message"].as_str().unwrap();
    assert!(
        message.contains("InsufficientInstanceCapacity") && !message.starts_with("NodeClaim "),
        "the provider's error, without Karpenter's prefix: {message}"
    );

    // What kubectl sees is what was counted: Warnings about NodeClaims named after the pool.
    let held = events(&client).await;
    assert!(held.len() >= 2, "{} events", held.len());
    for e in &held {
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.involved_object.kind.as_deref(), Some("NodeClaim"));
        let name = e.involved_object.name.clone().unwrap();
        assert!(name.starts_with("gpu-spot-"), "{name}");
        let text = e.message.clone().unwrap();
        assert!(
            text.starts_with(&format!("NodeClaim {name} event: ")),
            "{text}"
        );
    }

    // The pool page lists them among its events, and says where its launches fail.
    let detail = get(&base, &format!("/api/v1/pools/{AWS_CLUSTER}/gpu-spot")).await;
    let on_page = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reason"] == REASON)
        .count();
    assert!(on_page >= 2, "{detail}");

    let recorded = row["failures_24h"].as_u64().unwrap();

    // The recorder writes every second: three steps, then stop.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.send(()).unwrap();
    first.wait().await.unwrap();
    // The aborted tasks let go of the ledger's file lock as the runtime drops them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Kubernetes forgets events after an hour: here at once.
    let api = Api::<Event>::namespaced(client.clone(), "default");
    for e in events(&client).await {
        api.delete(&e.name_any(), &DeleteParams::default())
            .await
            .unwrap();
    }

    let (second, _stop) = dashboard_of(&kubeconfig, AWS_CLUSTER, &url).await;
    let base = format!("http://{}", second.addr);
    let row = g5_row(&base, recorded).await;
    let live = events(&client).await.len() as u64;
    assert!(
        live < recorded,
        "the cluster holds {live} of the {recorded}: the rest came from the ledger"
    );
    assert_eq!(row["pools"], json!(["gpu-spot"]));
    // The same figure for Prometheus, once the stream's rows are published (every 2 s).
    let series = format!(
        "spotboard_karpenter_launch_failures{{cluster=\"{AWS_CLUSTER}\",zone=\"{AWS}\",\
         instance_type=\"g5.2xlarge\",window=\"7d\"}} "
    );
    eventually(
        Duration::from_secs(10),
        "the launch failures series",
        || async {
            let metrics = crate::common::text_of(&format!("{base}/metrics")).await;
            let shown: u64 = metrics
                .lines()
                .find_map(|l| l.strip_prefix(&series))?
                .trim()
                .parse()
                .ok()?;
            (shown >= recorded).then_some(())
        },
    )
    .await;

    // A preempted gpu-spot node is replaced: one more refusal, live.
    let before = row["failures_24h"].as_u64().unwrap();
    let nodes: Api<Node> = Api::all(client.clone());
    crate::common::preempt_one(&nodes, "karpenter.sh/nodepool=gpu-spot").await;
    g5_row(&base, before + 1).await;
}

/// PostgreSQL takes the same upsert as SQLite: a late, lower write lowers nothing; a NUL in
/// a message (PostgreSQL refuses one in TEXT) is left out instead of holding the ledger up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keeps_each_launch_failure_once_at_its_highest() {
    use spotboard_core::domain::capacity::launch_failures::LaunchFailure;
    let ledger = server::ledger::Ledger::open(&crate::ledger::fresh_postgres().await)
        .await
        .unwrap();
    let now = chrono::Utc::now();
    let f = |count: u32, minutes_ago: i64| LaunchFailure {
        cluster: AWS_CLUSTER.into(),
        uid: "u1".into(),
        nodeclaim: "gpu-spot-b2x7k".into(),
        message: "NodeClaim gpu-spot-b2x7k event: insufficient\0 capacity".into(),
        count,
        last_seen: now - chrono::Duration::minutes(minutes_ago),
    };
    for write in [f(2, 1), f(1, 5), f(2, 1)] {
        ledger.launch_failure(&write).await.unwrap();
    }
    let kept = ledger
        .launch_failures_since(now - chrono::Duration::days(7))
        .await
        .unwrap();
    // Seconds since the epoch: the ledger keeps whole seconds.
    let expected = LaunchFailure {
        last_seen: chrono::DateTime::from_timestamp(f(2, 1).last_seen.timestamp(), 0).unwrap(),
        message: "NodeClaim gpu-spot-b2x7k event: insufficient capacity".into(),
        ..f(2, 1)
    };
    assert_eq!(kept, vec![expected]);
}
