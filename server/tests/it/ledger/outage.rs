//! "The database goes away": a PostgreSQL ledger behind a link the test cuts, while the
//! cluster keeps changing.

use super::*;

use crate::common::stream::{Statuses, Tab, compare, listed_nodes, listed_pools};

/// A TCP forwarder in front of PostgreSQL whose link can be cut: "the database goes away"
/// without stopping the PostgreSQL other tests share.
struct Link {
    addr: std::net::SocketAddr,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Bumped at every cut; a forwarding task of an older generation ends.
    generation: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Link {
    async fn to(target: &str) -> Self {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let generation = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (u, g, target) = (up.clone(), generation.clone(), target.to_string());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !u.load(Ordering::SeqCst) {
                    continue; // dropped: connection refused in effect
                }
                let born = g.load(Ordering::SeqCst);
                let (g, target) = (g.clone(), target.clone());
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else {
                        return;
                    };
                    let copy = tokio::io::copy_bidirectional(&mut inbound, &mut outbound);
                    let cut = async {
                        while g.load(Ordering::SeqCst) == born {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    };
                    tokio::select! { _ = copy => {}, _ = cut => {} }
                });
            }
        });
        Link {
            addr,
            up,
            generation,
        }
    }

    fn set(&self, up: bool) {
        use std::sync::atomic::Ordering;
        if !up {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        self.up.store(up, Ordering::SeqCst);
    }
}

/// PostgreSQL goes away mid-run: live data keeps serving, savings and /readyz say "ledger
/// unavailable since …", and what happened meanwhile (a node that is preempted and gone)
/// is recorded when it returns, once. Two tabs watch throughout (the dashboard and the pool's
/// page): their rows are compared with a fresh list for the row, and every response the test
/// gets is counted for its 5xx (the savings report's 503 is one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_loses_nothing_and_duplicates_nothing() {
    let db_url = fresh_postgres().await;
    let pg = db_url
        .split('@')
        .nth(1)
        .and_then(|h| h.split('/').next())
        .unwrap()
        .to_string();
    let link = Link::to(&pg).await;
    let url = db_url.replace(&pg, &link.addr.to_string());

    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    // Speed 60: the notice window lasts 7 s, so the preemption tracker (which looks once a
    // second) reads the victim's pods while it still holds them.
    let cluster = playing_cluster(&kubeconfig, 12, 60.0).await;
    let nodes = Api::<Node>::all(cluster.admin_client(ZONE).unwrap());
    let (running, _stop) = dashboard(&kubeconfig, &url).await;
    let base = format!("http://{}", running.addr);
    let spot = eventually(
        Duration::from_secs(15),
        "a spot H100 node recorded",
        || async {
            ledger(&base)
                .await
                .into_iter()
                .find(|r| r["pool"] == "h100-spot-train" && r["ended_at"].is_null())
        },
    )
    .await;
    let victim_uid = spot["uid"].as_str().unwrap().to_string();
    let victim = spot["node"].as_str().unwrap().to_string();
    let pool = "h100-spot-train";
    let dashboard_tab = Tab::open(&format!("{base}/api/v1/stream"));
    let pool_tab = Tab::open(&format!(
        "{base}/api/v1/stream?cluster={}&pool={pool}",
        spotboard_embedded::context_name(ZONE)
    ));
    let statuses = Statuses::default();

    link.set(false);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    // The outage is noticed at the recorder's next look.
    let readyz = eventually(
        Duration::from_secs(10),
        "readyz names the ledger",
        || async {
            let r = statuses
                .send(client.get(format!("{base}/readyz")))
                .await
                .ok()?;
            let status = r.status().as_u16();
            let body = r.text().await.ok()?;
            body.contains("ledger unavailable since")
                .then_some((status, body))
        },
    )
    .await;
    assert_eq!(readyz.0, 200, "live data still serves: {}", readyz.1);
    // Meanwhile a node is preempted and gone; the pods it held at T=0 are linked to its
    // preemption once the database is back.
    let held = Api::<k8s_openapi::api::core::v1::Pod>::all(cluster.admin_client(ZONE).unwrap())
        .list(&ListParams::default().fields(&format!("spec.nodeName={victim}")))
        .await
        .unwrap()
        .items
        .len();
    assert!(held > 0, "the victim runs pods");
    common::sim::preempt(&nodes, &victim).await;
    common::sim::gone(&nodes, &victim, Duration::from_secs(15)).await;
    let started = std::time::Instant::now();
    let pools = statuses
        .send(client.get(format!("{base}/api/v1/pools")))
        .await
        .expect("pools answer during the outage");
    assert_eq!(pools.status().as_u16(), 200);
    let pools_ms = started.elapsed().as_millis();
    let savings = statuses
        .send(client.get(format!("{base}/api/v1/savings?range=24h")))
        .await
        .expect("savings answer during the outage");
    let savings_status = savings.status().as_u16();
    assert_eq!(savings_status, 503);
    let why = savings.text().await.unwrap();
    assert!(why.contains("ledger unavailable since"), "{why}");
    // Not counted with the others: the fault suite's figure is the savings report's one 503.
    let fallback = client
        .get(format!("{base}/api/v1/fallback?range=24h"))
        .send()
        .await
        .expect("fallback answers during the outage");
    assert_eq!(
        fallback.status().as_u16(),
        503,
        "the fallback pairs need the ledger"
    );

    link.set(true);
    let restored = std::time::Instant::now();
    let rows = eventually(
        Duration::from_secs(30),
        "the preemption is recorded once the database is back",
        || async {
            let rows = ledger(&base).await;
            by_uid(&rows, &victim_uid)
                .filter(|r| r["end_reason"] == "preempted")
                .map(|_| rows.clone())
        },
    )
    .await;
    let mut uids: Vec<&str> = rows.iter().map(|r| r["uid"].as_str().unwrap()).collect();
    let all = uids.len();
    uids.sort();
    uids.dedup();
    assert_eq!(uids.len(), all, "no lifetime twice");
    let linked = eventually(
        Duration::from_secs(30),
        "the pods it held linked to the preemption",
        || async {
            let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&db_url)
                .await
                .ok()?;
            let n: i64 = sqlx::Row::get(
                &sqlx::query("SELECT COUNT(*) FROM preemption_pods WHERE node_uid = $1")
                    .bind(&victim_uid)
                    .fetch_one(&mut conn)
                    .await
                    .ok()?,
                0,
            );
            (n as usize == held).then_some(n)
        },
    )
    .await;
    assert_eq!(linked as usize, held);
    let caught_up = restored.elapsed().as_millis();
    // What the tabs were sent, against a fresh list: the victim gone, its replacement there.
    let pools_api =
        Api::<spotboard_core::nodepool::NodePool>::all(cluster.admin_client(ZONE).unwrap());
    let limit = Duration::from_secs(15);
    let pool_rows = compare(&dashboard_tab, "pool", limit, || listed_pools(&pools_api)).await;
    let node_rows = compare(&pool_tab, "node", limit, || listed_nodes(&nodes, pool)).await;
    let tabs = [dashboard_tab.seen(), pool_tab.seen()];
    let server_errors =
        statuses.server_errors() + tabs.iter().map(|t| t.server_errors()).sum::<usize>();
    println!(
        "FAULT|R6|PostgreSQL away mid-run, a node preempted meanwhile|1|{}|{caught_up}|{caught_up}|{}|{}|{server_errors}|–|/api/v1/pools in {pools_ms} ms meanwhile; savings {savings_status} \"ledger unavailable since\"; {} responses and 2 streams counted for 5xx; tabs: {} of {} pools, {} of {} nodes of {pool}; the preemption and its {held} pods recorded once it returned",
        usize::from(pool_rows.took.is_some() && node_rows.took.is_some()),
        pool_rows.lost + node_rows.lost,
        pool_rows.phantom + node_rows.phantom,
        statuses.received(),
        pool_rows.shown,
        pool_rows.listed,
        node_rows.shown,
        node_rows.listed,
    );
    for r in [pool_rows, node_rows] {
        assert_eq!((r.lost, r.phantom), (0, 0), "{r:?}");
    }
    eventually(
        Duration::from_secs(10),
        "readyz without the note",
        || async {
            let r = statuses
                .send(client.get(format!("{base}/readyz")))
                .await
                .ok()?;
            (r.text().await.ok()? == "ready").then_some(())
        },
    )
    .await;
}
