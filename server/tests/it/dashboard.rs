//! The whole dashboard against the embedded cluster, through kube-rs, kubectl and HTTP.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::stream::{Seen, Tab, compare, compare_where, figure, listed_nodes, listed_pools};
use common::{sse_until, start, wait_for};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use spotboard_core::{
    model::{LinkState, PoolRow, Scope},
    nodepool::NodePool,
};

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
    assert!(pools.iter().any(|p| p.compute_class_text() == "spot"));
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
    let epoch = d.running.hub.epoch();
    let url = format!("{}/api/v1/stream?epoch={epoch}&since={rev}", d.base);
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
    let delta: spotboard_core::model::Delta = serde_json::from_str(&data).unwrap();
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
    assert_eq!(row.compute_class_text(), "spot");
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
            && pool_named(&rows, "new-conds").is_some_and(|p| {
                p.conditions
                    .iter()
                    .any(|c| c.type_.as_str() == "Hibernating")
            })
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
    assert_eq!(odd.compute_class_text(), "flex");
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
    // The last good data came before the outage began (the probe looks every 2 s): not the
    // moment the outage was noticed, nor the time the link first went live long before.
    let since = stale.since.unwrap();
    assert!(
        since <= before + chrono::Duration::seconds(1)
            && since >= before - chrono::Duration::seconds(5),
        "since {since} is the last good data (outage began {before})"
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

/// R7: a tab that resumes with a revision of another process (a restart, another replica)
/// gets a snapshot of this one, never this process's deltas for that revision; the row's
/// lost and phantom rows compare its pools with a fresh list, its 5xx are the three streams'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_of_another_process_get_a_snapshot_never_a_replay() {
    let d = start(&[ZONE], 60.0).await;
    let pools = Api::<NodePool>::all(d.admin(ZONE));
    let snap = d.running.hub.snapshot(&Scope::pools());
    let epoch = d.running.hub.epoch();
    assert_eq!(snap.epoch, epoch, "snapshots carry the epoch");
    let limit = Duration::from_secs(10);
    // A tab of another spotboard (a restart, or another replica) at a revision this one
    // also has: it must not be resumed with this process's deltas.
    let foreign = Tab::open(&format!(
        "{}/api/v1/stream?epoch={}&since={}",
        d.base,
        epoch + 1,
        snap.rev
    ));
    foreign.until(limit, |s| s.first.is_some()).await;
    let first = foreign.seen();
    let compared = compare(&foreign, "pool", limit, || listed_pools(&pools)).await;
    // Without an epoch (an old tab) likewise.
    let bare = Tab::open(&format!("{}/api/v1/stream?since={}", d.base, snap.rev));
    bare.until(limit, |s| s.first.is_some()).await;
    // This process's own revision resumes: whatever comes first is a delta.
    let own = Tab::open(&format!(
        "{}/api/v1/stream?epoch={epoch}&since={}",
        d.base, snap.rev
    ));
    own.until(Duration::from_secs(3), |s| s.first.is_some())
        .await;
    let tabs = [first.clone(), bare.seen(), own.seen()];
    let snapshot_first = first.first.as_deref() == Some("snapshot") && first.epoch == Some(epoch);
    // Sub-millisecond on loopback: printed with its fraction, so it does not read as 0.
    let ms = first
        .first_after
        .map(|t| format!("{:.1}", t.as_secs_f64() * 1000.0));
    println!(
        "FAULT|R7|a tab resumes with another process's revision|1|{}|{}|{}|{}|{}|{}|–|the foreign tab's first event: {}, epoch {}; {} of {} pools shown; an old tab's first event: {}",
        usize::from(snapshot_first && compared.took.is_some()),
        figure(ms.clone()),
        figure(ms),
        compared.lost,
        compared.phantom,
        tabs.iter().map(Seen::server_errors).sum::<usize>(),
        first.first.as_deref().unwrap_or("none"),
        if first.epoch == Some(epoch) {
            "this process's"
        } else {
            "another"
        },
        compared.shown,
        compared.listed,
        tabs[1].first.as_deref().unwrap_or("none"),
    );
    assert_eq!(first.status, Some(200));
    assert_eq!(first.first.as_deref(), Some("snapshot"), "{first:?}");
    assert_eq!(first.epoch, Some(epoch));
    assert_eq!((compared.lost, compared.phantom), (0, 0), "{compared:?}");
    assert_eq!(tabs[1].first.as_deref(), Some("snapshot"));
    if let Some(event) = tabs[2].first.as_deref() {
        assert_eq!(event, "delta");
    }
}

/// The events about NodePool `pool` in the cluster now, by uid. (Not those about its nodes:
/// which of those a pool page holds depends on which nodes carried the pool's label when, and
/// the hub unit test `an_event_seen_before_its_node_gets_the_pool_when_the_node_arrives`
/// covers their attribution.)
async fn listed_events(
    events: &Api<k8s_openapi::api::core::v1::Event>,
    pool: &str,
) -> BTreeSet<String> {
    events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|e| {
            let o = &e.involved_object;
            o.kind.as_deref() == Some("NodePool") && o.name.as_deref() == Some(pool)
        })
        .filter_map(|e| e.metadata.uid.clone())
        .collect()
}

/// R5: a Node, a Pod and an Event that do not decode as their kind: each is skipped (one log
/// line), a good Node, Pod and Event created after them still show, and the cluster stays
/// live. A tab on a pool's page watches throughout: its nodes and events are compared with a
/// fresh list for the row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_nodes_pods_and_events_are_skipped_and_the_rest_keep_updating() {
    use k8s_openapi::api::core::v1::{Event, Node, Pod};
    use kube::api::ApiResource;
    // An on-demand pool: no preemption takes its node away during the test.
    const POOL: &str = "example-nodepool";
    let d = start(&[ZONE], 60.0).await;
    let client = d.admin(ZONE);
    let cluster = spotboard_embedded::context_name(ZONE);
    let nodes = Api::<Node>::all(client.clone());
    let events = Api::<Event>::all(client.clone());
    let host = nodes
        .list(
            &kube::api::ListParams::default()
                .labels(&format!("{}={POOL}", spotboard_core::labels::NODE_POOL)),
        )
        .await
        .unwrap()
        .items
        .into_iter()
        .next()
        .expect("a node of the pool");
    let host_name = kube::ResourceExt::name_any(&host);
    let host_uid = host.metadata.uid.clone().unwrap();
    let tab = Tab::open(&format!(
        "{}/api/v1/stream?cluster={cluster}&pool={POOL}",
        d.base
    ));
    let limit = Duration::from_secs(10);
    let pods_on_host = || async {
        Api::<Pod>::all(client.clone())
            .list(&kube::api::ListParams::default().fields(&format!("spec.nodeName={host_name}")))
            .await
            .unwrap()
            .items
            .len() as u64
    };
    let shows_host_pods = |s: &Seen, n: u64| {
        s.rows
            .get("node")
            .and_then(|r| r.get(&host_uid))
            .is_some_and(|row| row["pods"].as_u64() == Some(n))
    };
    let before = pods_on_host().await;
    assert!(
        tab.until(limit, |s| shows_host_pods(s, before))
            .await
            .is_some(),
        "the tab shows the pool's node with its {before} pods: {:?}",
        tab.seen()
    );

    let pp = PostParams::default();
    let raw = |ar: ApiResource, namespaced: bool| {
        if namespaced {
            Api::<DynamicObject>::namespaced_with(client.clone(), "default", &ar)
        } else {
            Api::<DynamicObject>::all_with(client.clone(), &ar)
        }
    };
    let object = |v: serde_json::Value| serde_json::from_value::<DynamicObject>(v).unwrap();
    raw(ApiResource::erase::<Node>(&()), false)
        .create(
            &pp,
            &object(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "bad-node"}, "spec": {"unschedulable": "yes"}})),
        )
        .await
        .unwrap();
    raw(ApiResource::erase::<Pod>(&()), true)
        .create(
            &pp,
            &object(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "bad-pod", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}],
                     "terminationGracePeriodSeconds": "thirty"}})),
        )
        .await
        .unwrap();
    raw(ApiResource::erase::<Event>(&()), true)
        .create(
            &pp,
            &object(json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "bad-event", "namespace": "default"},
            "reason": "NoSubject", "message": "an event about nothing"})),
        )
        .await
        .unwrap();
    // A Node, a Pod and an Event after them still arrive.
    nodes
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "good-after"}})).unwrap(),
        )
        .await
        .unwrap();
    let good_pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "good-pod-after", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i"}], "nodeName": host_name}
    }))
    .unwrap();
    Api::<Pod>::namespaced(client.clone(), "default")
        .create(&pp, &good_pod)
        .await
        .unwrap();
    let good_event: Event = serde_json::from_value(json!({
        "metadata": {"name": "good-event-after", "namespace": "default"},
        "involvedObject": {"kind": "NodePool", "name": POOL},
        "type": "Normal", "reason": "R5GoodAfter", "message": "an event after the bad ones"
    }))
    .unwrap();
    let good_event = Api::<Event>::namespaced(client.clone(), "default")
        .create(&pp, &good_event)
        .await
        .unwrap();
    let good_event_uid = good_event.metadata.uid.clone().unwrap();
    let created = std::time::Instant::now();
    let hub = d.running.hub.clone();
    wait_for(Duration::from_secs(10), || {
        hub.ledger_inputs()
            .nodes
            .iter()
            .any(|n| n.name == "good-after")
    })
    .await;
    assert_eq!(
        pods_on_host().await,
        before + 1,
        "the good pod is bound to {host_name}"
    );
    // What both spotboards must show: the good pod on its host and the good event, by its
    // key and its reason.
    let shows_good = |s: &Seen| {
        shows_host_pods(s, before + 1)
            && s.rows
                .get("event")
                .and_then(|r| r.get(&good_event_uid))
                .is_some_and(|e| e["reason"] == "R5GoodAfter")
    };
    let shown = tab.until(limit, shows_good).await;
    let shown = shown.map(|_| created.elapsed());
    let seen = tab.seen();
    assert!(
        shown.is_some(),
        "the page shows the good pod on {host_name} ({} pods) and the good event: {seen:?}",
        before + 1
    );
    let nodes_now = || listed_nodes(&nodes, POOL);
    let node_rows = compare(&tab, "node", limit, nodes_now).await;
    let events_now = || listed_events(&events, POOL);
    // The tab holds events about the pool's nodes too: those about the pool are compared.
    let about_pool = |row: &serde_json::Value| row["object"] == format!("NodePool/{POOL}");
    let event_rows = compare_where(&tab, "event", about_pool, limit, events_now).await;
    let all_nodes = hub.ledger_inputs().nodes;
    assert!(!all_nodes.iter().any(|n| n.name == "bad-node"));
    assert!(
        all_nodes.len() > 1,
        "the cluster's other nodes are still there"
    );
    // The cluster is live (the probe turns it so every 2 s) and stays so.
    let live = || hub.snapshot(&Scope::pools()).clusters[0].state == LinkState::Live;
    wait_for(Duration::from_secs(10), live).await;

    // A fresh list (what a restart or a 410 causes) meets them inside the list itself, which
    // a typed list fails as a whole: a second spotboard on the same cluster must still list
    // every kind and show the good nodes, pods and events.
    let kubeconfig = d.kubeconfig.clone();
    let second = common::start_with(&[ZONE], 60.0, |a| {
        a.kubeconfig = Some(kubeconfig);
        a.contexts = vec![cluster.clone()];
    })
    .await;
    let relisted = second.running.hub.ledger_inputs().nodes;
    let second_tab = Tab::open(&format!(
        "{}/api/v1/stream?cluster={cluster}&pool={POOL}",
        second.base
    ));
    let second_shows = second_tab.until(limit, shows_good).await;
    let second_nodes = compare(&second_tab, "node", limit, nodes_now).await;
    let second_events = compare_where(&second_tab, "event", about_pool, limit, events_now).await;
    let rows = [node_rows, event_rows, second_nodes, second_events];
    let server_errors = tab.seen().server_errors() + second_tab.seen().server_errors();
    let ms = shown.map(|t| t.as_millis());
    println!(
        "FAULT|R5|a Node, Pod and Event that do not decode|1|{}|–|–|{}|{}|{server_errors}|–|skipped with a log line; the good Pod and Event after them on the pool page within {} ms; a fresh list (a second spotboard) shows {} of {} nodes and {} of {} events about the pool; cluster live",
        usize::from(second_shows.is_some() && rows.iter().all(|r| r.took.is_some())),
        rows.iter().map(|r| r.lost).sum::<usize>(),
        rows.iter().map(|r| r.phantom).sum::<usize>(),
        figure(ms),
        second_nodes.shown,
        second_nodes.listed,
        second_events.shown,
        second_events.listed,
    );
    assert!(relisted.iter().any(|n| n.name == "good-after"));
    assert!(!relisted.iter().any(|n| n.name == "bad-node"));
    assert!(
        second_shows.is_some(),
        "the second spotboard shows the good pod and event: {:?}",
        second_tab.seen()
    );
    for r in rows {
        assert_eq!((r.lost, r.phantom), (0, 0), "{r:?}");
    }
    assert_eq!(server_errors, 0);
}
