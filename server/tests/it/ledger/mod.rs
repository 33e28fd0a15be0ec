//! The ledger against the embedded cluster, in SQLite and in PostgreSQL: it records every node
//! the cluster has, ends a preempted node as `preempted` with its T=0, survives a restart of
//! spotboard without duplicates or loss, and the savings report prices what it holds.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::Value;
use spotboard_embedded::{EmbeddedCluster, EmbeddedOptions};

use common::sim::eventually;

pub(crate) const ZONE: &str = "US-EAST-04A";

/// Starts spotboard against the already running `cluster` (as a real kubeconfig context),
/// with the ledger at `database_url`; returns it and a handle that stops it.
async fn dashboard(
    kubeconfig: &std::path::Path,
    database_url: &str,
) -> (server::run::Running, tokio::sync::oneshot::Sender<()>) {
    dashboard_of(
        kubeconfig,
        &spotboard_embedded::context_name(ZONE),
        database_url,
    )
    .await
}

/// [`dashboard`] for kubeconfig context `context`.
pub(crate) async fn dashboard_of(
    kubeconfig: &std::path::Path,
    context: &str,
    database_url: &str,
) -> (server::run::Running, tokio::sync::oneshot::Sender<()>) {
    use clap::Parser;
    let mut args = server::cli::Cli::parse_from(["spotboard"]).serve;
    args.listen = "127.0.0.1:0".parse().unwrap();
    args.kubeconfig = Some(kubeconfig.to_path_buf());
    args.contexts = vec![context.to_string()];
    args.database_url = Some(database_url.to_string());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = server::run::start(&args, async {
        let _ = stopped.await;
    })
    .await
    .expect("spotboard starts");
    common::wait_for(Duration::from_secs(30), || running.hub.ready()).await;
    (running, stop)
}

async fn ledger(base: &str) -> Vec<Value> {
    let v: Value = reqwest::get(format!("{base}/api/v1/ledger?range=24h"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v.as_array().cloned().unwrap_or_default()
}

fn by_uid<'a>(rows: &'a [Value], uid: &str) -> Option<&'a Value> {
    rows.iter().find(|r| r["uid"] == uid)
}

/// `pool`'s condition history in the zone's cluster, over 24 h.
async fn conditions(base: &str, pool: &str) -> Value {
    let cluster = spotboard_embedded::context_name(ZONE);
    reqwest::get(format!(
        "{base}/api/v1/ledger/conditions?cluster={cluster}&pool={pool}&range=24h"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap()
}

/// One CKS zone with the behaviour model at `speed` (at 600, T+7 min is 0.7 s), its
/// kubeconfig written to `kubeconfig`.
pub(crate) async fn playing_cluster(
    kubeconfig: &std::path::Path,
    seed: u64,
    speed: f64,
) -> EmbeddedCluster {
    EmbeddedCluster::start(EmbeddedOptions {
        zones: vec![ZONE.into()],
        fleets: vec![],
        seed,
        speed,
        extra_nodes: 0,
        nodes_per_pool: 2_500,
        pods_per_node: 2,
        simulate: true,
        kubeconfig_path: kubeconfig.to_path_buf(),
        demo_preemptions: false,
    })
    .await
    .unwrap()
}

async fn plays_and_survives_a_restart(database_url: &str) {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let cluster = playing_cluster(&kubeconfig, 11, 600.0).await;
    let nodes = Api::<Node>::all(cluster.admin_client(ZONE).unwrap());

    let (first, stop) = dashboard(&kubeconfig, database_url).await;
    let base = format!("http://{}", first.addr);
    let in_cluster = nodes.list(&ListParams::default()).await.unwrap().items;
    let rows = eventually(
        Duration::from_secs(10),
        "every node in the ledger",
        || async {
            let rows = ledger(&base).await;
            in_cluster
                .iter()
                .all(|n| by_uid(&rows, &n.uid().unwrap()).is_some())
                .then_some(rows)
        },
    )
    .await;
    for n in &in_cluster {
        let row = by_uid(&rows, &n.uid().unwrap()).unwrap();
        let created = n.creation_timestamp().unwrap().0.as_second();
        let started = chrono::DateTime::parse_from_rfc3339(row["started_at"].as_str().unwrap())
            .unwrap()
            .timestamp();
        assert_eq!(started, created, "backfilled from creationTimestamp: {row}");
        assert!(row["ended_at"].is_null());
    }
    let spot = rows
        .iter()
        .find(|r| r["pool"] == "h100-spot-train")
        .expect("a spot H100 node");
    assert_eq!(spot["capacity_type"], "spot");
    assert_eq!(spot["gpus"], 8);
    let victim_uid = spot["uid"].as_str().unwrap().to_string();
    let victim = spot["node"].as_str().unwrap().to_string();

    // A CKS preemption (T+7 min is 0.7 s at speed 600).
    common::sim::preempt(&nodes, &victim).await;
    let ended = eventually(
        Duration::from_secs(15),
        "the preempted node ends",
        || async {
            let rows = ledger(&base).await;
            by_uid(&rows, &victim_uid)
                .filter(|r| !r["ended_at"].is_null())
                .cloned()
        },
    )
    .await;
    assert_eq!(ended["end_reason"], "preempted", "{ended}");
    assert!(!ended["preemption_t0"].is_null(), "{ended}");

    let report: Value = reqwest::get(format!("{base}/api/v1/savings?range=24h"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let money = |v: &Value| v.as_str().unwrap().parse::<f64>().unwrap();
    assert!(
        money(&report["baseline_usd"]) > money(&report["actual_usd"]),
        "{report}"
    );
    assert!(money(&report["run_rate"]["actual_usd_h"]) > 0.0);
    // The sim may preempt other spot nodes by itself too.
    let preemptions = report["preemption"]["preemptions"].as_u64().unwrap();
    assert!(preemptions >= 1, "{}", report["preemption"]);

    // Every CKS pool's conditions are in the ledger from the first sight (the backfill).
    let history_before = eventually(
        Duration::from_secs(10),
        "a pool's five conditions in the ledger",
        || async {
            let h = conditions(&base, "h100-spot-train").await;
            (h["transitions"].as_array()?.len() >= 5).then_some(h)
        },
    )
    .await;
    let types: std::collections::BTreeSet<&str> = history_before["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["type"].as_str().unwrap())
        .collect();
    for t in [
        "Validated",
        "AtTarget",
        "Capacity",
        "Quota",
        "NodeReconfigurationRequired",
    ] {
        assert!(types.contains(t), "{t} in {history_before}");
    }
    // The same history as the pool's own resource.
    let cluster = spotboard_embedded::context_name(ZONE);
    let own: Value = reqwest::get(format!(
        "{base}/api/v1/pools/{cluster}/h100-spot-train/conditions?range=24h"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(own["transitions"], history_before["transitions"]);

    // Restart spotboard; the cluster keeps running.
    let before = ledger(&base).await;
    stop.send(()).unwrap();
    first.wait().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (second, _stop) = dashboard(&kubeconfig, database_url).await;
    let base = format!("http://{}", second.addr);
    let after = eventually(
        Duration::from_secs(10),
        "current nodes recorded again",
        || async {
            let rows = ledger(&base).await;
            let now_in_cluster = nodes.list(&ListParams::default()).await.unwrap().items;
            now_in_cluster
                .iter()
                .all(|n| by_uid(&rows, &n.uid().unwrap()).is_some_and(|r| r["ended_at"].is_null()))
                .then_some(rows)
        },
    )
    .await;
    for row in &before {
        let kept = by_uid(&after, row["uid"].as_str().unwrap()).expect("nothing recorded is lost");
        assert_eq!(kept["started_at"], row["started_at"]);
        if !row["ended_at"].is_null() {
            // Its eviction errors come from its pods' outcomes, read a second after the node
            // left: they may land after `before` was read.
            let lifetime = |v: &Value| {
                let mut v = v.clone();
                v.as_object_mut().unwrap().remove("evictions");
                v
            };
            assert_eq!(
                lifetime(kept),
                lifetime(row),
                "an ended lifetime is not touched again"
            );
        }
    }
    // The restart's backfill of the same conditions adds no row.
    let history_after = conditions(&base, "h100-spot-train").await;
    let seen = |h: &Value| {
        let mut v: Vec<String> = h["transitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                format!(
                    "{} {} {} {}",
                    t["type"], t["status"], t["reason"], t["since"]
                )
            })
            .collect();
        v.sort();
        v
    };
    let (b, a) = (seen(&history_before), seen(&history_after));
    assert!(b.iter().all(|t| a.contains(t)), "nothing lost: {b:?} {a:?}");
    let mut unique = a.clone();
    unique.dedup();
    assert_eq!(unique.len(), a.len(), "no transition twice: {a:?}");
    let mut uids: Vec<&str> = after.iter().map(|r| r["uid"].as_str().unwrap()).collect();
    let n = uids.len();
    uids.sort_unstable();
    uids.dedup();
    assert_eq!(uids.len(), n, "no lifetime is recorded twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_ledger_records_the_cluster_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("ledger.sqlite").display());
    plays_and_survives_a_restart(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_ledger_records_the_cluster_and_survives_a_restart() {
    plays_and_survives_a_restart(&fresh_postgres().await).await;
}

/// R10: the embedded cluster's clusters have the same names every run. A run takes neither
/// another run's open nodes for its own leftovers nor ends a run that still beats; a run
/// whose heartbeat stopped has its nodes ended at that heartbeat, once.
async fn runs_keep_to_their_own_nodes(url: &str) {
    use server::ledger::Ledger;
    use spotboard_core::model::Lifetime;
    let cluster = "spotboard-us-east-04a";
    let now = chrono::Utc::now();
    let node = |uid: &str| Lifetime {
        uid: uid.into(),
        cluster: cluster.into(),
        node: uid.into(),
        capacity_type: spotboard_core::CapacityType::Spot,
        started_at: now - chrono::Duration::hours(2),
        ..Default::default()
    };
    let died_at = now - chrono::Duration::minutes(5);
    // Each run's ledger is dropped before the next opens: one SQLite owner at a time.
    for (run, uid, beat) in [
        ("embedded-dead", "dead-1", died_at),
        ("embedded-live", "live-1", now),
    ] {
        let ledger = Ledger::open(url).await.unwrap().with_identity(run);
        ledger.started(&node(uid)).await.unwrap();
        ledger.beat(beat).await.unwrap();
    }
    let this = Ledger::open(url)
        .await
        .unwrap()
        .with_identity("embedded-this");
    this.started(&node("this-1")).await.unwrap();
    assert_eq!(
        this.open_uids(cluster).await.unwrap(),
        vec!["this-1".to_string()]
    );
    assert_eq!(this.end_abandoned(cluster, now).await.unwrap(), 1);
    assert_eq!(this.end_abandoned(cluster, now).await.unwrap(), 0, "once");
    let rows = this
        .between(now - chrono::Duration::days(1), now)
        .await
        .unwrap();
    let ended = |uid: &str| rows.iter().find(|l| l.uid == uid).unwrap().ended_at;
    assert_eq!(
        ended("dead-1").map(|t| t.timestamp()),
        Some(died_at.timestamp()),
        "a run that stopped beating ends at its last heartbeat"
    );
    let reason = rows
        .iter()
        .find(|l| l.uid == "dead-1")
        .unwrap()
        .end_reason
        .clone();
    assert_eq!(
        reason.as_deref(),
        Some(spotboard_core::model::END_UNOBSERVED),
        "an end nobody saw is marked so: the survival curves censor it"
    );
    assert_eq!(
        ended("live-1"),
        None,
        "a run that still beats is left alone"
    );
    assert_eq!(ended("this-1"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_runs_keep_to_their_own_nodes() {
    let dir = tempfile::tempdir().unwrap();
    runs_keep_to_their_own_nodes(&format!(
        "sqlite://{}",
        dir.path().join("ledger.sqlite").display()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_runs_keep_to_their_own_nodes() {
    runs_keep_to_their_own_nodes(&fresh_postgres().await).await;
}

/// A fresh PostgreSQL database on the test server, so earlier runs' rows cannot mix in;
/// returns its URL.
pub(crate) async fn fresh_postgres() -> String {
    let admin_url = std::env::var("SPOTBOARD_TEST_DATABASE_URL").expect(
        "SPOTBOARD_TEST_DATABASE_URL is not set: run the tests through ./tasks.sh test, which \
         installs and starts PostgreSQL on loopback",
    );
    let name = format!("spotboard_test_{}", uuid::Uuid::new_v4().simple());
    sqlx::any::install_default_drivers();
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&admin_url)
        .await
        .expect("PostgreSQL reachable");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .unwrap();
    let base = admin_url.rsplit_once('/').map(|(b, _)| b).unwrap();
    format!("{base}/{name}")
}

mod last_known;
mod outage;
mod work_lost;
