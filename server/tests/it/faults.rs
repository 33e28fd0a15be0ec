//! The fault suite (docs/reliability.md): each test injects one fault into the embedded
//! cluster while browsers watch, asserts what must hold, and prints one `FAULT|…` line of
//! figures; `./tasks.sh faults` runs it with more repetitions and prints the table.
//!
//! The faults hit spotboard's own (reader) account only, while the administrator (the
//! behaviour model and this test) keeps changing the cluster: spotboard must catch up with
//! changes it could not see.

use crate::common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DeleteParams, PostParams};
use rand::{Rng, SeedableRng};
use spotboard_core::model::{LinkState, Scope};
use spotboard_core::nodepool::NodePool;
use spotboard_embedded::api::ReaderFault;

mod stalled_viewer;
mod twenty_clusters;

const ZONE: &str = "US-EAST-04A";

/// Repetitions: `SPOTBOARD_FAULT_RUNS` (the faults task sets it), else `default`.
fn runs(default: usize) -> usize {
    std::env::var("SPOTBOARD_FAULT_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One row of the table. A figure the test did not measure stays `None` and prints `–`.
#[derive(Default)]
struct Row {
    id: &'static str,
    fault: &'static str,
    runs: usize,
    recovered: usize,
    recovery_ms: Vec<u128>,
    /// Rows a viewer (or the hub) lacks that a fresh list holds.
    lost: Option<usize>,
    /// Rows a viewer (or the hub) holds that a fresh list does not.
    phantom: Option<usize>,
    /// 5xx among the responses the test received.
    server_errors: Option<usize>,
    /// Live heap held for a stalled viewer, bytes (R4 only).
    held: Option<i64>,
    note: String,
}

impl Row {
    fn print(&mut self) {
        use common::stream::figure;
        self.recovery_ms.sort_unstable();
        let max = self.recovery_ms.last().copied();
        let p95 = self
            .recovery_ms
            .get(
                (self.recovery_ms.len() * 95)
                    .div_ceil(100)
                    .saturating_sub(1),
            )
            .copied();
        // On a line of its own: run alone, libtest prints the test's name just before it.
        println!(
            "\nFAULT|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
            self.id,
            self.fault,
            self.runs,
            self.recovered,
            figure(max),
            figure(p95),
            figure(self.lost),
            figure(self.phantom),
            figure(self.server_errors),
            figure(self.held),
            self.note
        );
    }
}

/// A browser tab's keyed store of pool rows, fed by the stream as the page's is: a snapshot
/// replaces it, deltas add and remove by key.
#[derive(Clone, Default)]
struct Viewer {
    pools: Arc<Mutex<BTreeSet<String>>>,
    /// Its stream was answered with a 5xx.
    server_errors: Arc<Mutex<usize>>,
    /// Its stream could not be opened, or broke.
    broken: Arc<Mutex<usize>>,
}

impl Viewer {
    fn open(base: &str) -> Self {
        let v = Viewer::default();
        let (pools, server_errors, broken) =
            (v.pools.clone(), v.server_errors.clone(), v.broken.clone());
        let url = format!("{base}/api/v1/stream");
        tokio::spawn(async move {
            let Ok(resp) = reqwest::get(&url).await else {
                *broken.lock().unwrap() += 1;
                return;
            };
            if resp.status().as_u16() >= 500 {
                *server_errors.lock().unwrap() += 1;
            }
            let mut body = resp.bytes_stream();
            let mut buf = String::new();
            while let Some(chunk) = body.next().await {
                let Ok(chunk) = chunk else {
                    *broken.lock().unwrap() += 1;
                    return;
                };
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let block: String = buf.drain(..end + 2).collect();
                    let (mut event, mut data) = ("", String::new());
                    for line in block.lines() {
                        if let Some(e) = line.strip_prefix("event:") {
                            event = if e.trim() == "snapshot" {
                                "snapshot"
                            } else {
                                "delta"
                            };
                        } else if let Some(d) = line.strip_prefix("data:") {
                            data.push_str(d.trim_start());
                        }
                    }
                    let Ok(msg) = serde_json::from_str::<serde_json::Value>(&data) else {
                        continue;
                    };
                    let mut keys = pools.lock().unwrap();
                    if event == "snapshot" {
                        *keys = msg["pools"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|p| p["key"].as_str().map(String::from))
                            .collect();
                    } else if msg["kind"] == "pool" {
                        let key = msg["key"].as_str().unwrap_or_default().to_string();
                        if msg["change"] == "remove" {
                            keys.remove(&key);
                        } else if msg["change"].get("add").is_some() {
                            keys.insert(key);
                        }
                    }
                }
            }
        });
        v
    }

    fn keys(&self) -> BTreeSet<String> {
        self.pools.lock().unwrap().clone()
    }
}

/// 5xx among the viewers' streams, and how many streams broke.
fn viewer_errors(viewers: &[Viewer]) -> (usize, usize) {
    viewers.iter().fold((0, 0), |(e, b), v| {
        (
            e + *v.server_errors.lock().unwrap(),
            b + *v.broken.lock().unwrap(),
        )
    })
}

fn hub_pools(d: &common::Dashboard) -> BTreeSet<String> {
    d.running
        .hub
        .pool_rows()
        .into_iter()
        .map(|p| p.key)
        .collect()
}

fn cluster_state(d: &common::Dashboard) -> spotboard_core::model::ClusterRow {
    d.running.hub.snapshot(&Scope::pools()).clusters[0].clone()
}

/// Every cluster's link state, by cluster name.
fn cluster_states(d: &common::Dashboard) -> Vec<(String, LinkState)> {
    d.running
        .hub
        .snapshot(&Scope::pools())
        .clusters
        .into_iter()
        .map(|c| (c.name, c.state))
        .collect()
}

fn pool(name: &str) -> NodePool {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"computeClass": "spot", "instanceType": "gd-8xh100ib-i128", "targetNodes": 0}
    }))
    .unwrap()
}

/// Waits until the hub holds exactly what a fresh list of the clusters (`apis`, one a
/// cluster) holds and every viewer holds exactly what the hub holds; returns the time it
/// took, or `None` after `limit` (then adds the differences to the row).
async fn converge(
    d: &common::Dashboard,
    apis: &[Api<NodePool>],
    viewers: &[Viewer],
    limit: Duration,
    row: &mut Row,
) -> Option<Duration> {
    let start = Instant::now();
    // Compared every time: 0 when it converged.
    row.lost.get_or_insert(0);
    row.phantom.get_or_insert(0);
    loop {
        let mut fresh = BTreeSet::new();
        for api in apis {
            fresh.extend(common::stream::listed_pools(api).await);
        }
        let hub = hub_pools(d);
        if hub == fresh && viewers.iter().all(|v| v.keys() == hub) {
            return Some(start.elapsed());
        }
        if start.elapsed() > limit {
            let (mut lost, mut phantom) = (0, 0);
            for v in viewers {
                let seen = v.keys();
                lost += fresh.difference(&seen).count();
                phantom += seen.difference(&fresh).count();
            }
            lost += fresh.difference(&hub).count();
            phantom += hub.difference(&fresh).count();
            *row.lost.get_or_insert(0) += lost;
            *row.phantom.get_or_insert(0) += phantom;
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// [`converge`], counting the run in `row` as recovered, with its time, when it converged.
async fn recover(
    d: &common::Dashboard,
    apis: &[Api<NodePool>],
    viewers: &[Viewer],
    limit: Duration,
    row: &mut Row,
) {
    if let Some(t) = converge(d, apis, viewers, limit, row).await {
        row.recovered += 1;
        row.recovery_ms.push(t.as_millis());
    }
}

/// R1: spotboard's API server goes down and comes back again and again, for random
/// 0.2–5 s, while ten viewers watch and pools come and go during each outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r1_api_server_restarts_lose_and_invent_no_rows() {
    let d = common::start(&[ZONE], 60.0).await;
    let embedded = d.running.embedded.as_ref().unwrap();
    let api: Api<NodePool> = Api::all(d.admin(ZONE));
    let viewers: Vec<Viewer> = (0..10).map(|_| Viewer::open(&d.base)).collect();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let n = runs(8);
    let longest = if n > 10 { 5.0 } else { 1.5 };
    let mut row = Row {
        id: "R1",
        fault: "API server down 0.2-5 s, pools change meanwhile, 10 viewers",
        runs: n,
        ..Default::default()
    };
    for i in 0..n {
        embedded.set_reader_fault(ZONE, ReaderFault::Down);
        api.create(&PostParams::default(), &pool(&format!("r1-{i}")))
            .await
            .unwrap();
        if i > 0 {
            api.delete(&format!("r1-{}", i - 1), &DeleteParams::default())
                .await
                .unwrap();
        }
        tokio::time::sleep(Duration::from_secs_f64(rng.random_range(0.2..longest))).await;
        embedded.set_reader_fault(ZONE, ReaderFault::None);
        let apis = std::slice::from_ref(&api);
        recover(&d, apis, &viewers, Duration::from_secs(10), &mut row).await;
    }
    let (server_errors, broken) = viewer_errors(&viewers);
    row.server_errors = Some(server_errors);
    row.note = format!(
        "hub = a fresh list, and every viewer = hub, after each restart; {broken} of 10 streams broke"
    );
    row.print();
    assert_eq!(row.recovered, n, "every restart converged within 10 s");
    assert_eq!((row.lost, row.phantom), (Some(0), Some(0)));
}

/// R2: every watch gets `410 Expired` again and again while pools change. kube-rs relists;
/// the cluster must never show `stale` for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r2_a_routine_410_is_never_stale() {
    let d = common::start(&[ZONE], 60.0).await;
    let embedded = d.running.embedded.as_ref().unwrap();
    let api: Api<NodePool> = Api::all(d.admin(ZONE));
    let viewers: Vec<Viewer> = (0..3).map(|_| Viewer::open(&d.base)).collect();
    let live = || cluster_state(&d).state == LinkState::Live;
    common::wait_for(Duration::from_secs(10), live).await;
    let stale_seen = Arc::new(Mutex::new(0usize));
    let sampler = {
        let (hub, stale_seen) = (d.running.hub.clone(), stale_seen.clone());
        tokio::spawn(async move {
            loop {
                let state = hub.snapshot(&Scope::pools()).clusters[0].state;
                if state != LinkState::Live {
                    *stale_seen.lock().unwrap() += 1;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let n = runs(8) * 2;
    let mut row = Row {
        id: "R2",
        fault: "410 Gone on every watch, pools change meanwhile",
        runs: n,
        ..Default::default()
    };
    for i in 0..n {
        api.create(&PostParams::default(), &pool(&format!("r2-{i}")))
            .await
            .unwrap();
        embedded.expire_watches(ZONE);
        let apis = std::slice::from_ref(&api);
        recover(&d, apis, &viewers, Duration::from_secs(10), &mut row).await;
    }
    sampler.abort();
    let stale = *stale_seen.lock().unwrap();
    let (server_errors, broken) = viewer_errors(&viewers);
    row.server_errors = Some(server_errors);
    row.note = format!("samples not live (every 20 ms): {stale}; {broken} of 3 streams broke");
    row.print();
    assert_eq!(row.recovered, n);
    assert_eq!((row.lost, row.phantom), (Some(0), Some(0)));
    assert_eq!(stale, 0, "a routine 410 never shows the cluster stale");
    assert_eq!((server_errors, broken), (0, 0));
}

/// R3: the API server accepts connections and never answers. `stale since` the last good
/// data within 15 s, no flapping while it stalls, live again within 30 s after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r3_a_stalled_api_server_is_stale_once_and_recovers() {
    let d = common::start(&[ZONE], 60.0).await;
    let embedded = d.running.embedded.as_ref().unwrap();
    let api: Api<NodePool> = Api::all(d.admin(ZONE));
    let viewers = [Viewer::open(&d.base)];
    common::wait_for(Duration::from_secs(10), || {
        cluster_state(&d).state == LinkState::Live
    })
    .await;
    let stalled_at = chrono::Utc::now();
    let t0 = Instant::now();
    embedded.set_reader_fault(ZONE, ReaderFault::Stall);
    // A change it cannot see while stalled.
    api.create(&PostParams::default(), &pool("r3-during"))
        .await
        .unwrap();
    let mut stale_after = None;
    let mut flips = 0;
    let mut last = LinkState::Live;
    let mut since_ok = true;
    while t0.elapsed() < Duration::from_secs(20) {
        let c = cluster_state(&d);
        if c.state != last {
            flips += 1;
            last = c.state;
        }
        if c.state == LinkState::Stale {
            stale_after.get_or_insert(t0.elapsed());
            // A probe already past the server when the stall began may still land; the time
            // of detection (seconds later) must not.
            since_ok &= c
                .since
                .is_some_and(|s| s <= stalled_at + chrono::Duration::seconds(1));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    embedded.set_reader_fault(ZONE, ReaderFault::None);
    let t1 = Instant::now();
    let mut row = Row {
        id: "R3",
        fault: "API server stalls 20 s (accepts, never answers)",
        runs: 1,
        ..Default::default()
    };
    let recovered = converge(
        &d,
        std::slice::from_ref(&api),
        &viewers,
        Duration::from_secs(30),
        &mut row,
    )
    .await;
    common::wait_for(Duration::from_secs(30), || {
        cluster_state(&d).state == LinkState::Live
    })
    .await;
    let live_after = t1.elapsed();
    row.recovered = usize::from(recovered.is_some());
    row.recovery_ms.push(live_after.as_millis());
    let (server_errors, broken) = viewer_errors(&viewers);
    row.server_errors = Some(server_errors);
    row.note = format!(
        "stale after {} ms; state changes while stalled: {flips}; hub and a viewer = a fresh list {} ms after; {broken} of 1 stream broke",
        stale_after.map_or("never".to_string(), |t| t.as_millis().to_string()),
        recovered.map_or("never".to_string(), |t| t.as_millis().to_string()),
    );
    row.print();
    let stale_after = stale_after.expect("the cluster shows stale");
    assert!(stale_after < Duration::from_secs(15), "{stale_after:?}");
    assert_eq!(flips, 1, "stale once, no flapping while it stalls");
    assert!(since_ok, "stale since keeps the time of the last good data");
    assert_eq!(row.recovered, 1);
}

/// The readiness audit reads the pods the dashboard's pod watch holds, so an API server that
/// stops answering leaves the pods' findings in place (as of the last good data, which the
/// cluster's `stale since` says); only the budgets, listed on demand, are named as missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readiness_audit_outlives_an_api_server_outage() {
    let d = common::start(&[ZONE], 60.0).await;
    let embedded = d.running.embedded.as_ref().unwrap();
    common::wait_for(Duration::from_secs(10), || {
        cluster_state(&d).state == LinkState::Live
    })
    .await;
    embedded.set_reader_fault(ZONE, ReaderFault::Down);
    let audit =
        common::json_of(reqwest::Client::new().get(format!("{}/api/v1/readiness", d.base))).await;
    embedded.set_reader_fault(ZONE, ReaderFault::None);
    let errors: Vec<&str> = audit["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.as_str())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    // Refused with 503 or, as kube-rs retries those, out of time: either way, said.
    assert!(
        errors[0].ends_with("budget findings are left out"),
        "{errors:?}"
    );
    let pools = audit["pools"].as_array().unwrap();
    let pods: u64 = pools.iter().filter_map(|p| p["pods"].as_u64()).sum();
    assert!(pods > 0, "the pods are the watch's: {audit}");
    let checks: BTreeSet<&str> = pools
        .iter()
        .flat_map(|p| p["findings"].as_array().unwrap())
        .filter_map(|f| f["check"].as_str())
        .collect();
    assert!(!checks.is_empty(), "{audit}");
    assert!(
        !checks.contains("no-pdb") && !checks.contains("pdb-blocks-drain"),
        "no budget finding without the budgets: {checks:?}"
    );
}
