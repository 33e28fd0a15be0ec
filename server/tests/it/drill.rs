//! The preemption drill against the embedded cluster, through `POST /api/v1/drill` as a
//! person would send it: the dry run's plan, the CKS sequence (label, event, eviction) at
//! CoreWeave's times on the cluster's clock, the ledger recording `drill` and no preemption,
//! the node left cordoned at the end, abort restoring it; refusals for a read-only account, a
//! foreign Origin, a missing confirmation and a hostile body; and a drill left running when
//! spotboard stops is aborted.
//!
//! The embedded cluster judges by its own rules: its access reviews (the reader may only get,
//! list and watch), its eviction API (budgets), its events.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use common::sim::eventually;

const ZONE: &str = "US-EAST-04A";
const POOL: &str = "h100-spot-train";
/// The embedded zone's cluster name in the dashboard.
const CLUSTER: &str = "spotboard-us-east-04a";

async fn drill(base: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/api/v1/drill"))
        .json(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.expect("spotboard answers");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A spot node of [`POOL`] with pods, not cordoned and not under notice, as the hub has it.
async fn quiet_spot_node(d: &common::Dashboard) -> String {
    eventually(
        Duration::from_secs(20),
        "a quiet spot node with pods",
        || async {
            let (_, nodes, _) = d.running.hub.pool(CLUSTER, POOL)?;
            nodes
                .into_iter()
                .find(|n| !n.cordoned && !n.notice && n.pods >= 2 && n.ready == Some(true))
                .map(|n| n.name)
        },
    )
    .await
}

fn has_label(n: &Node, key: &str) -> Option<String> {
    n.labels().get(key).cloned()
}

fn cordoned(n: &Node) -> bool {
    n.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

/// Evictable pods (not DaemonSet's) bound to `node`.
async fn evictable_pods(admin: &kube::Client, node: &str) -> Vec<String> {
    Api::<Pod>::all(admin.clone())
        .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && !p.owner_references().iter().any(|o| o.kind == "DaemonSet")
        })
        .map(|p| p.name_any())
        .collect()
}

async fn drill_events(admin: &kube::Client, node: &str) -> Vec<Event> {
    Api::<Event>::namespaced(admin.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(node)
                && e.annotations().contains_key(spotboard_core::labels::DRILL)
        })
        .collect()
}

/// The node's card on `/api/v1/preemptions`, once there.
async fn drill_card(base: &str, node: &str) -> Value {
    eventually(Duration::from_secs(5), "the drill's card", || async {
        common::preemption_card(&common::preemptions(base).await, node).cloned()
    })
    .await
}

/// The node's ledger row once it records a drill (`drill_t0`).
async fn ledger_drill_row(base: &str, node: &str) -> Value {
    eventually(Duration::from_secs(10), "the ledger's drill", || async {
        let rows: Value = reqwest::get(format!("{base}/api/v1/ledger?range=24h"))
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        rows.as_array()?
            .iter()
            .find(|r| r["node"] == node && r["drill_t0"].is_string())
            .cloned()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cks_drill_follows_coreweaves_timeline_and_is_recorded_as_a_drill() {
    // Speed 60: the 7-minute window takes 7 s, the drain starts 2 s after T=0.
    let d = common::start(&[ZONE], 60.0).await;
    let admin = d.admin(ZONE);
    let nodes = Api::<Node>::all(admin.clone());
    let node = quiet_spot_node(&d).await;
    let before = evictable_pods(&admin, &node).await;
    assert!(!before.is_empty(), "the node runs pods to evict");

    // Dry run: the plan, nothing written.
    let (status, out) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "dryRun"}),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let plan = &out["plan"];
    assert_eq!(plan["provider"], "cks");
    assert_eq!(
        plan["phases"],
        json!([
            {"name": "notice", "at_s": 0},
            {"name": "draining", "at_s": 120},
            {"name": "window ends", "at_s": 420}
        ])
    );
    assert_eq!(plan["refusals"], json!([]), "{out}");
    let planned: Vec<&str> = plan["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for p in &before {
        assert!(planned.contains(&p.as_str()), "{p} in the plan {planned:?}");
    }
    assert!(
        !cordoned(&nodes.get(&node).await.unwrap()),
        "a dry run writes nothing"
    );

    // Run without the node's name typed: refused, nothing written.
    let (status, out) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "run", "confirm": "other"}),
        &[],
    )
    .await;
    assert_eq!(status, 400, "{out}");
    assert_eq!(out["refusal"], "invalid");
    assert!(!cordoned(&nodes.get(&node).await.unwrap()));

    let (status, out) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "run", "confirm": node}),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["drill"]["state"], "running");
    let started = std::time::Instant::now();

    // T=0: cordon, CKS's label, the drill's annotations, Warning "Preemption pending".
    let at_t0 = eventually(Duration::from_secs(5), "T=0 on the node", || async {
        let n = nodes.get(&node).await.ok()?;
        (cordoned(&n)
            && has_label(&n, "qos.coreweave.cloud/pending-preemption").as_deref() == Some("true"))
        .then_some(n)
    })
    .await;
    assert!(
        at_t0
            .annotations()
            .contains_key("drill.spotboard.dev/started-at"),
        "{:?}",
        at_t0.annotations()
    );
    assert_eq!(
        at_t0
            .annotations()
            .get("drill.spotboard.dev/by")
            .map(String::as_str),
        Some("local user")
    );
    // T+2 min: evicted-at, Warning "Preemption in progress", evictions through the API.
    let at_drain = eventually(Duration::from_secs(8), "T+2 min on the node", || async {
        let n = nodes.get(&node).await.ok()?;
        has_label(&n, "qos.coreweave.cloud/evicted-at").map(|_| started.elapsed())
    })
    .await;
    // 120 cluster seconds at speed 60 are 2 s (the label is seen by polling every 200 ms;
    // a busy machine may add a second).
    assert!(
        at_drain >= Duration::from_millis(1_800) && at_drain < Duration::from_millis(5_000),
        "drain after {at_drain:?}"
    );
    // A second drill on the same node: 409.
    let (status, _) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "run", "confirm": node}),
        &[],
    )
    .await;
    assert_eq!(status, 409);
    let reasons: Vec<String> = drill_events(&admin, &node)
        .await
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        reasons.iter().any(|r| r == "Preemption pending")
            && reasons.iter().any(|r| r == "Preemption in progress"),
        "{reasons:?}"
    );
    eventually(Duration::from_secs(6), "pods evicted", || async {
        let now = evictable_pods(&admin, &node).await;
        (now.len() < before.len()).then_some(())
    })
    .await;

    // The card: the same timeline, marked a drill.
    let card = drill_card(&d.base, &node).await;
    assert_eq!(card["drill"], true, "{card}");

    // T+7 min: the drill stops; the node is still there (a drill deletes nothing), cordoned,
    // its notice and drill marks off.
    let after = eventually(Duration::from_secs(10), "the window's end", || async {
        let n = nodes.get(&node).await.ok()?;
        (!n.annotations()
            .contains_key("drill.spotboard.dev/started-at"))
        .then_some(n)
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert!(cordoned(&after));
    assert_eq!(
        has_label(&after, "qos.coreweave.cloud/pending-preemption"),
        None
    );

    // The ledger: a drill, no preemption.
    let row = ledger_drill_row(&d.base, &node).await;
    assert!(row["preemption_t0"].is_null(), "{row}");

    // Abort after the end restores the node.
    let (status, out) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "abort"}),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["drill"]["state"], "aborted");
    let log = out["drill"]["log"].to_string();
    assert!(
        log.contains("window over") && log.contains("evicted"),
        "the drill ran to its end: {log}"
    );
    let restored = nodes.get(&node).await.unwrap();
    assert!(!cordoned(&restored));
    assert_eq!(
        has_label(&restored, "qos.coreweave.cloud/pending-preemption"),
        None
    );
    assert!(
        !restored
            .annotations()
            .contains_key("drill.spotboard.dev/started-at")
    );
    // Nothing left to abort.
    let (status, _) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "abort"}),
        &[],
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_is_refused_without_the_verbs_or_from_another_site_and_abort_restores() {
    // Slow clock (speed 1): the drill is still in its notice when aborted.
    let d = common::start_with(&[ZONE], 1.0, |a| {
        a.auth_proxy_header = Some("x-forwarded-user".into());
    })
    .await;
    let admin = d.admin(ZONE);
    let nodes = Api::<Node>::all(admin.clone());
    let node = quiet_spot_node(&d).await;
    let embedded = d.running.embedded.as_ref().unwrap();
    let reader = format!("Bearer {}", embedded.token(false));
    let writer = format!("Bearer {}", embedded.token(true));
    let as_reader = [
        ("x-forwarded-user", "bob"),
        ("authorization", reader.as_str()),
    ];
    let as_admin = [
        ("x-forwarded-user", "alice"),
        ("authorization", writer.as_str()),
    ];

    // A token that may only read: the dry run names both missing verbs; the run is a 403.
    let (status, out) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "dryRun"}),
        &as_reader,
    )
    .await;
    assert_eq!(status, 200, "{out}");
    let refusals = out["plan"]["refusals"].to_string();
    assert!(
        refusals.contains("patch nodes") && refusals.contains("create pods/eviction"),
        "{refusals}"
    );
    let (status, out) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "run", "confirm": node}),
        &as_reader,
    )
    .await;
    assert_eq!(status, 403, "{out}");
    assert!(out["message"].as_str().unwrap().contains("patch nodes"));
    // Another site's page posting the drill: refused by the Origin check.
    let r = reqwest::Client::new()
        .post(format!("{}/api/v1/drill", d.base))
        .header("origin", "https://evil.example")
        .headers(
            [
                ("x-forwarded-user", "alice"),
                ("authorization", writer.as_str()),
            ]
            .into_iter()
            .map(|(k, v)| (k.parse().unwrap(), v.parse().unwrap()))
            .collect(),
        )
        .json(&json!({"cluster": CLUSTER, "node": node, "mode": "run", "confirm": node}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    // Hostile bodies: not a drill request.
    for body in [
        json!({"cluster": 5}),
        json!({"cluster": CLUSTER, "node": node, "mode": "delete"}),
    ] {
        let (status, _) = drill(&d.base, &body, &as_admin).await;
        assert!((400..500).contains(&status), "{body}: {status}");
    }
    assert!(
        !cordoned(&nodes.get(&node).await.unwrap()),
        "nothing refused wrote anything"
    );

    // The user's own token may: two runs at once (two tabs), one drill starts as alice.
    let run = json!({"cluster": CLUSTER, "node": node, "mode": "run", "confirm": node});
    let (a, b) = tokio::join!(
        drill(&d.base, &run, &as_admin),
        drill(&d.base, &run, &as_admin)
    );
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{} {}", a.1, b.1);
    eventually(Duration::from_secs(5), "cordoned by the drill", || async {
        cordoned(&nodes.get(&node).await.ok()?).then_some(())
    })
    .await;
    // bob may only read: he may not abort alice's drill (an abort writes as the one who asks).
    let (status, out) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "abort"}),
        &as_reader,
    )
    .await;
    assert_eq!(status, 403, "{out}");
    assert!(out["message"].as_str().unwrap().contains("patch nodes"));
    assert!(cordoned(&nodes.get(&node).await.unwrap()), "still drilled");
    let (status, out) = drill(
        &d.base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "abort"}),
        &as_admin,
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["drill"]["state"], "aborted", "{out}");
    let n = nodes.get(&node).await.unwrap();
    assert!(!cordoned(&n));
    assert_eq!(
        has_label(&n, "qos.coreweave.cloud/pending-preemption"),
        None
    );
    assert!(!n.annotations().contains_key("drill.spotboard.dev/by"));
}

/// spotboard stopping (SIGTERM's path) aborts a running drill before the server exits: the
/// node is not left cordoned by a drill nobody watches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_running_when_spotboard_stops_is_aborted() {
    use clap::Parser;
    let dir = tempfile::tempdir().unwrap();
    let mut args = server::cli::Cli::parse_from(["spotboard"]).serve;
    args.listen = "127.0.0.1:0".parse().unwrap();
    args.embedded_kubeconfig = Some(dir.path().join("kubeconfig"));
    args.zones = vec![ZONE.into()];
    args.gke_zones = Vec::new();
    args.karpenter_zones = Vec::new();
    args.speed = 1.0;
    args.nodes = 0;
    args.demo_preemptions = false;
    args.ledger = dir.path().join("ledger.sqlite");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut running = server::run::start(&args, async move {
        let _ = stopped.await;
    })
    .await
    .unwrap();
    let base = format!("http://{}", running.addr);
    common::wait_for(Duration::from_secs(30), || running.hub.ready()).await;
    let admin = running
        .embedded
        .as_ref()
        .unwrap()
        .admin_client(ZONE)
        .unwrap();
    let nodes = Api::<Node>::all(admin);
    let node = eventually(Duration::from_secs(20), "a spot node", || async {
        let (_, ns, _) = running.hub.pool(CLUSTER, POOL)?;
        ns.into_iter()
            .find(|n| !n.cordoned && !n.notice && n.ready == Some(true))
            .map(|n| n.name)
    })
    .await;
    let (status, out) = drill(
        &base,
        &json!({"cluster": CLUSTER, "node": node, "mode": "run", "confirm": node}),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    eventually(Duration::from_secs(5), "cordoned by the drill", || async {
        cordoned(&nodes.get(&node).await.ok()?).then_some(())
    })
    .await;
    let other = eventually(Duration::from_secs(20), "another spot node", || async {
        let (_, ns, _) = running.hub.pool(CLUSTER, POOL)?;
        ns.into_iter()
            .find(|n| n.name != node && !n.cordoned && !n.notice && n.ready == Some(true))
            .map(|n| n.name)
    })
    .await;
    // Taken out of the dashboard, the embedded cluster outlives its stop: the node can be
    // read after it, and a drill asked for after the stop still reaches the API server.
    let embedded = running.embedded.take();
    let drills = running.drills.clone();
    let _ = stop.send(());
    running.wait().await.unwrap();
    let n = nodes.get(&node).await.unwrap();
    assert!(!cordoned(&n), "the drill was aborted at the stop");
    assert!(
        !n.annotations()
            .contains_key("drill.spotboard.dev/started-at")
    );

    // A drill asked for once the stop began (a request already in flight) is refused with
    // 503 and writes nothing: no drill may start that nobody will be there to restore.
    let (parts, ()) = axum::http::Request::builder()
        .uri("/api/v1/drill")
        .body(())
        .unwrap()
        .into_parts();
    let late = drills
        .handle(
            &parts,
            spotboard_core::model::DrillRequest {
                cluster: CLUSTER.into(),
                node: other.clone(),
                mode: spotboard_core::model::DrillMode::Run,
                confirm: Some(other.clone()),
            },
        )
        .await;
    assert_eq!(
        late.refusal,
        Some(spotboard_core::model::DrillRefusal::Stopping),
        "{late:?}"
    );
    assert_eq!(late.refusal.map(|r| r.status()), Some(503));
    assert!(late.drill.is_none());
    let untouched = nodes.get(&other).await.unwrap();
    drop(embedded);
    assert!(!cordoned(&untouched), "{other} was not cordoned");
}

/// GKE and Karpenter drills use their own signals and windows: GKE's termination taint and
/// 30 s, Karpenter's `SpotInterrupted` event with its disruption taint and 2 min; both cards
/// are the dashboard's own notice (the hub reads the providers' signals), marked a drill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gke_and_karpenter_drills_use_their_own_signals() {
    const GKE: &str = "us-central1-a";
    const AWS: &str = "us-east-1a";
    let d = common::start_with(&[ZONE], 60.0, |a| {
        a.gke_zones = vec![GKE.into()];
        a.karpenter_zones = vec![AWS.into()];
    })
    .await;
    for (zone, cluster, pool, taint, window_s) in [
        (
            GKE,
            "spotboard-gke-us-central1-a",
            "spot-l4",
            "cloud.google.com/impending-node-termination",
            30,
        ),
        (
            AWS,
            "spotboard-karpenter-us-east-1a",
            "spot-general",
            "karpenter.sh/disrupted",
            120,
        ),
    ] {
        let nodes = Api::<Node>::all(d.admin(zone));
        let node = eventually(Duration::from_secs(20), "a quiet spot node", || async {
            let (_, ns, _) = d.running.hub.pool(cluster, pool)?;
            ns.into_iter()
                .find(|n| !n.cordoned && !n.notice && n.ready == Some(true))
                .map(|n| n.name)
        })
        .await;
        let (status, out) = drill(
            &d.base,
            &json!({"cluster": cluster, "node": node, "mode": "dryRun"}),
            &[],
        )
        .await;
        assert_eq!(status, 200, "{out}");
        assert_eq!(
            out["plan"]["phases"].as_array().unwrap().last().unwrap()["at_s"],
            window_s
        );
        let (status, out) = drill(
            &d.base,
            &json!({"cluster": cluster, "node": node, "mode": "run", "confirm": node}),
            &[],
        )
        .await;
        assert_eq!(status, 200, "{out}");
        eventually(Duration::from_secs(5), "the provider's taint", || async {
            let n = nodes.get(&node).await.ok()?;
            let tainted = n
                .spec
                .as_ref()?
                .taints
                .as_ref()?
                .iter()
                .any(|t| t.key == taint && t.effect == "NoSchedule");
            (tainted && cordoned(&n)).then_some(())
        })
        .await;
        let card = drill_card(&d.base, &node).await;
        assert_eq!(card["drill"], true, "{card}");
        // Not a preemption anywhere: the ledger has its drill, no T=0.
        let row = ledger_drill_row(&d.base, &node).await;
        assert!(row["preemption_t0"].is_null(), "{row}");
        if zone == AWS {
            let reasons: Vec<String> = drill_events(&d.admin(zone), &node)
                .await
                .into_iter()
                .filter_map(|e| e.reason)
                .collect();
            assert!(
                reasons.iter().any(|r| r == "SpotInterrupted"),
                "{reasons:?}"
            );
        }
        let (status, out) = drill(
            &d.base,
            &json!({"cluster": cluster, "node": node, "mode": "abort"}),
            &[],
        )
        .await;
        assert_eq!(status, 200, "{out}");
        let n = nodes.get(&node).await.unwrap();
        assert!(!cordoned(&n));
        assert!(
            !n.spec
                .as_ref()
                .and_then(|s| s.taints.as_ref())
                .is_some_and(|ts| ts.iter().any(|t| t.key == taint)),
            "the taint is removed"
        );
    }
}
