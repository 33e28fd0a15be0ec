//! A restarted spotboard shows the fleet it last saw, marked stale since then, before its
//! watches have listed anything (S5 of the scale issue): here with the cluster's API server
//! gone, where it would otherwise show nothing at all. Restarted beside a cluster whose
//! fleet changed meanwhile, it converges: the rows it no longer has go, and the cluster turns
//! live.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use spotboard_core::model::{LinkState, Scope};

use super::{ZONE, fresh_postgres, playing_cluster};
use crate::common::{self, sim::eventually};

/// spotboard on `context` of `kubeconfig` with the ledger at `url`, keeping the last known
/// state every second; returned as soon as it listens (not once the cluster is listed).
async fn spotboard(
    kubeconfig: &std::path::Path,
    url: &str,
) -> (server::run::Running, tokio::sync::oneshot::Sender<()>) {
    use clap::Parser;
    let mut args = server::cli::Cli::parse_from(["spotboard"]).serve;
    args.listen = "127.0.0.1:0".parse().unwrap();
    args.kubeconfig = Some(kubeconfig.to_path_buf());
    args.contexts = vec![spotboard_embedded::context_name(ZONE)];
    args.database_url = Some(url.to_string());
    args.last_known_seconds = 1;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = server::run::start(&args, async {
        let _ = stopped.await;
    })
    .await
    .expect("spotboard starts");
    (running, stop)
}

fn keys<T>(rows: &[T], key: impl Fn(&T) -> String) -> Vec<String> {
    let mut k: Vec<String> = rows.iter().map(key).collect();
    k.sort();
    k
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_shows_the_last_known_fleet_stale_then_converges() {
    let url = fresh_postgres().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let context = spotboard_embedded::context_name(ZONE);

    // A first run lists the cluster and keeps what it shows.
    let cluster = playing_cluster(&kubeconfig, 11, 1.0).await;
    let (first, stop) = spotboard(&kubeconfig, &url).await;
    common::wait_for(Duration::from_secs(30), || first.hub.ready()).await;
    let ledger = server::ledger::Ledger::open(&url).await.unwrap();
    let kept = eventually(Duration::from_secs(10), "the state kept", || async {
        ledger
            .known(std::slice::from_ref(&context))
            .await
            .ok()?
            .pop()
    })
    .await;
    let shown = first.hub.snapshot(&Scope::pools());
    assert!(!shown.pools.is_empty());
    stop.send(()).unwrap();
    first.wait().await.unwrap();
    // What was shown when it was last kept (the fleet is quiet at speed 1).
    let was = ledger.known(std::slice::from_ref(&context)).await.unwrap();
    let as_of = was[0].as_of;
    assert!(as_of >= kept.as_of);

    // The API server is gone: the restart shows the fleet as it was, stale since then.
    drop(cluster);
    let (second, stop) = spotboard(&kubeconfig, &url).await;
    let base = format!("http://{}", second.addr);
    let snap = second.hub.snapshot(&Scope::pools());
    assert_eq!(
        keys(&snap.pools, |p| p.key.clone()),
        keys(&shown.pools, |p| p.key.clone()),
        "every pool, before any list"
    );
    assert_eq!(snap.clusters[0].state, LinkState::Stale);
    assert_eq!(snap.clusters[0].since, Some(as_of));
    let page = common::text_of(&format!("{base}/")).await;
    let pool = &shown.pools[0].name;
    assert!(
        page.contains(pool.as_str()) && page.contains("stale since"),
        "the first page shows pool {pool} and says stale since"
    );
    let api = common::json_of(reqwest::Client::new().get(format!("{base}/api/v1/pools"))).await;
    // Not listed: not ready, unless the probe takes the last known state.
    let ready = |q: &'static str| {
        let base = base.clone();
        async move {
            let r = reqwest::get(format!("{base}/readyz{q}")).await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(ready("").await.0, 503);
    let (status, body) = ready("?last-known=true").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("last known state of 1 cluster"), "{body}");
    assert_eq!(api["pools"].as_array().unwrap().len(), shown.pools.len());
    // Never listed, it keeps nothing newer: the state stays the first run's.
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.send(()).unwrap();
    second.wait().await.unwrap();
    assert_eq!(
        ledger.known(std::slice::from_ref(&context)).await.unwrap()[0].as_of,
        as_of
    );

    // Another fleet answers under the same context: the restart converges on it alone.
    let other = playing_cluster(&kubeconfig, 12, 1.0).await;
    let (third, _stop) = spotboard(&kubeconfig, &url).await;
    let nodes: Vec<String> = {
        let api: Api<Node> = Api::all(other.admin_client(ZONE).unwrap());
        let mut n: Vec<String> = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|n| n.uid().unwrap())
            .collect();
        n.sort();
        n
    };
    eventually(
        Duration::from_secs(30),
        "the new fleet alone, live",
        || async {
            let snap = third.hub.snapshot(&Scope::pools());
            let mut shown: Vec<String> = snap
                .pools
                .iter()
                .flat_map(|p| third.hub.snapshot(&Scope::pool(&p.cluster, &p.name)).nodes)
                .map(|n| n.key)
                .collect();
            shown.sort();
            shown.dedup();
            (snap.clusters[0].state == LinkState::Live && shown == nodes).then_some(())
        },
    )
    .await;
    let old_pools = keys(&shown.pools, |p| p.key.clone());
    let snap = third.hub.snapshot(&Scope::pools());
    assert!(
        !snap.pools.iter().any(|p| old_pools.contains(&p.key)),
        "the first fleet's NodePools are gone"
    );
}
