//! R1–R3 with 20 clusters (issue 40): one dashboard watches 20 CKS zones, one cluster's API
//! server is faulted as R1–R3 fault it, and the other 19 keep changing.
//!
//! What must hold beyond the one-cluster rows:
//! - the 19 never leave `live` (sampled every 20 ms throughout);
//! - a pool created in one of the 19 during a fault reaches the hub and every viewer, each
//!   time, and the time it takes is printed beside the same time measured before any fault
//!   (p50 and max, ms): a fault that held up the shared path (the hub, the publisher, a
//!   viewer's stream) would show here, as R3's 20 s stall would;
//! - the faulted cluster recovers as it does alone, and all 20 clusters' pools then equal a
//!   fresh list of each, in the hub and every viewer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, PostParams};
use rand::{Rng, SeedableRng};
use spotboard_core::model::LinkState;
use spotboard_core::nodepool::NodePool;
use spotboard_embedded::api::ReaderFault;

use super::{Row, Viewer, cluster_states, converge, hub_pools, pool, recover, runs, viewer_errors};
use crate::bench::zones::ZONES;
use crate::common;

/// The longest a pool created in a healthy cluster may take to reach the hub and every
/// viewer. Before any fault it takes tens of milliseconds; a healthy cluster held up behind
/// the stalled one would take the stall's 20 s.
const PROBE_LIMIT: Duration = Duration::from_secs(5);

/// The 20 clusters: the faulted one (the first zone) and the 19 healthy ones.
struct Fleet {
    d: common::Dashboard,
    /// One administrator's NodePool API a cluster, in [`ZONES`]' order.
    apis: Vec<Api<NodePool>>,
    viewers: Vec<Viewer>,
    /// Probes made, to name each probe's pool and pick its cluster in turn.
    probes: AtomicUsize,
}

impl Fleet {
    fn faulted(&self) -> &Api<NodePool> {
        &self.apis[0]
    }

    /// Creates a pool in the next healthy cluster and waits until the hub and every viewer
    /// hold it. Returns the time that took; panics after [`PROBE_LIMIT`].
    async fn probe(&self) -> Duration {
        let i = self.probes.fetch_add(1, Ordering::Relaxed);
        let api = &self.apis[1 + i % (ZONES.len() - 1)];
        let name = format!("probe-{i}");
        let start = Instant::now();
        let uid = api
            .create(&PostParams::default(), &pool(&name))
            .await
            .unwrap()
            .metadata
            .uid
            .unwrap();
        loop {
            if hub_pools(&self.d).contains(&uid)
                && self.viewers.iter().all(|v| v.keys().contains(&uid))
            {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < PROBE_LIMIT,
                "{name}, created in a healthy cluster, not seen within {PROBE_LIMIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Samples every cluster's link state every 20 ms: counts the samples in which a healthy
/// cluster was not live, and, while `count_faulted` is set, those in which the faulted one
/// was not.
struct Sampler {
    healthy_not_live: Arc<AtomicUsize>,
    faulted_not_live: Arc<AtomicUsize>,
    count_faulted: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    fn start(d: &common::Dashboard) -> Self {
        let faulted = spotboard_embedded::context_name(ZONES[0]);
        let hub = d.running.hub.clone();
        let healthy_not_live = Arc::new(AtomicUsize::new(0));
        let faulted_not_live = Arc::new(AtomicUsize::new(0));
        let count_faulted = Arc::new(AtomicBool::new(false));
        let (h, f, c) = (
            healthy_not_live.clone(),
            faulted_not_live.clone(),
            count_faulted.clone(),
        );
        let task = tokio::spawn(async move {
            loop {
                let snapshot = hub.snapshot(&spotboard_core::model::Scope::pools());
                let mut healthy_down = false;
                for c_row in &snapshot.clusters {
                    if c_row.state == LinkState::Live {
                        continue;
                    }
                    if c_row.name == faulted {
                        if c.load(Ordering::Relaxed) {
                            f.fetch_add(1, Ordering::Relaxed);
                        }
                    } else {
                        healthy_down = true;
                    }
                }
                if healthy_down {
                    h.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        Sampler {
            healthy_not_live,
            faulted_not_live,
            count_faulted,
            task,
        }
    }
}

/// p50 and max of `times`, ms, as the rows' notes print them.
fn p50_max(times: &[Duration]) -> String {
    let mut ms: Vec<u128> = times.iter().map(Duration::as_millis).collect();
    ms.sort_unstable();
    format!("{}/{}", ms[(ms.len() - 1) / 2], ms[ms.len() - 1])
}

/// The 19 healthy clusters' figures for a row's note.
fn healthy_note(during: &[Duration], before: &[Duration], not_live: usize) -> String {
    format!(
        "19 others: samples not live {not_live}; a pool → hub and viewers p50/max {} ms ({} before the faults)",
        p50_max(during),
        p50_max(before)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r1_to_r3_with_twenty_clusters_hold_up_none_of_the_other_19() {
    let d = common::start(&ZONES, 60.0).await;
    let all_live = |d: &common::Dashboard| {
        let states = cluster_states(d);
        states.len() == ZONES.len() && states.iter().all(|(_, s)| *s == LinkState::Live)
    };
    common::wait_for(Duration::from_secs(30), || all_live(&d)).await;
    let apis = ZONES.iter().map(|z| Api::all(d.admin(z))).collect();
    let viewers = (0..3).map(|_| Viewer::open(&d.base)).collect();
    let fleet = Fleet {
        d,
        apis,
        viewers,
        probes: AtomicUsize::new(0),
    };
    let sampler = Sampler::start(&fleet.d);
    let embedded = fleet.d.running.embedded.as_ref().unwrap();
    let zone = ZONES[0];

    let mut before = Vec::new();
    for _ in 1..ZONES.len() {
        before.push(fleet.probe().await);
    }

    // R1: the first cluster's API server down for random 0.2–1.5 s (5 s with the faults
    // task's runs), a pool created and one deleted in it meanwhile.
    let n = runs(8);
    let longest = if n > 10 { 5.0 } else { 1.5 };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let mut row = Row {
        id: "R1-20",
        fault: "R1 on one of 20 clusters",
        runs: n,
        ..Default::default()
    };
    let mut during = Vec::new();
    let healthy_before = sampler.healthy_not_live.load(Ordering::Relaxed);
    for i in 0..n {
        embedded.set_reader_fault(zone, ReaderFault::Down);
        let outage = Instant::now();
        fleet
            .faulted()
            .create(&PostParams::default(), &pool(&format!("r1-{i}")))
            .await
            .unwrap();
        if i > 0 {
            fleet
                .faulted()
                .delete(&format!("r1-{}", i - 1), &DeleteParams::default())
                .await
                .unwrap();
        }
        during.push(fleet.probe().await);
        let length = Duration::from_secs_f64(rng.random_range(0.2..longest));
        tokio::time::sleep(length.saturating_sub(outage.elapsed())).await;
        embedded.set_reader_fault(zone, ReaderFault::None);
        let limit = Duration::from_secs(10);
        recover(&fleet.d, &fleet.apis, &fleet.viewers, limit, &mut row).await;
    }
    let healthy = sampler.healthy_not_live.load(Ordering::Relaxed) - healthy_before;
    row.server_errors = Some(viewer_errors(&fleet.viewers).0);
    row.note = healthy_note(&during, &before, healthy);
    row.print();
    assert_eq!(row.recovered, n, "every restart converged within 10 s");
    assert_eq!((row.lost, row.phantom), (Some(0), Some(0)));

    // R2: every watch of the first cluster ends with 410 Expired, again and again. From
    // live, as R2 alone starts: its pools converged after R1, but a watch of another kind
    // may still be waiting to reconnect.
    common::wait_for(Duration::from_secs(30), || all_live(&fleet.d)).await;
    let n = runs(8) * 2;
    let mut row = Row {
        id: "R2-20",
        fault: "R2 on one of 20 clusters",
        runs: n,
        ..Default::default()
    };
    let mut during = Vec::new();
    let healthy_before = sampler.healthy_not_live.load(Ordering::Relaxed);
    sampler.count_faulted.store(true, Ordering::Relaxed);
    for i in 0..n {
        fleet
            .faulted()
            .create(&PostParams::default(), &pool(&format!("r2-{i}")))
            .await
            .unwrap();
        embedded.expire_watches(zone);
        during.push(fleet.probe().await);
        let limit = Duration::from_secs(10);
        recover(&fleet.d, &fleet.apis, &fleet.viewers, limit, &mut row).await;
    }
    sampler.count_faulted.store(false, Ordering::Relaxed);
    let faulted_stale = sampler.faulted_not_live.load(Ordering::Relaxed);
    let healthy = sampler.healthy_not_live.load(Ordering::Relaxed) - healthy_before;
    row.server_errors = Some(viewer_errors(&fleet.viewers).0);
    row.note = format!(
        "the faulted one's samples not live: {faulted_stale}; {}",
        healthy_note(&during, &before, healthy)
    );
    row.print();
    assert_eq!(row.recovered, n);
    assert_eq!((row.lost, row.phantom), (Some(0), Some(0)));
    assert_eq!(
        faulted_stale, 0,
        "a routine 410 never shows the cluster stale"
    );

    // R3: the first cluster's API server accepts connections and never answers, for 20 s.
    common::wait_for(Duration::from_secs(30), || all_live(&fleet.d)).await;
    let mut row = Row {
        id: "R3-20",
        fault: "R3 on one of 20 clusters",
        runs: 1,
        ..Default::default()
    };
    let faulted_name = spotboard_embedded::context_name(zone);
    let faulted_state = |d: &common::Dashboard| {
        cluster_states(d)
            .into_iter()
            .find(|(name, _)| *name == faulted_name)
            .map(|(_, s)| s)
    };
    let mut during = Vec::new();
    let healthy_before = sampler.healthy_not_live.load(Ordering::Relaxed);
    let t0 = Instant::now();
    embedded.set_reader_fault(zone, ReaderFault::Stall);
    fleet
        .faulted()
        .create(&PostParams::default(), &pool("r3-during"))
        .await
        .unwrap();
    let (mut stale_after, mut flips, mut last) = (None, 0, Some(LinkState::Live));
    let mut next_probe = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        let state = faulted_state(&fleet.d);
        if state != last {
            flips += 1;
            last = state;
        }
        if state == Some(LinkState::Stale) {
            stale_after.get_or_insert(t0.elapsed());
        }
        // A probe every 2 s, so most of them land while the stalled cluster is stale.
        if Instant::now() >= next_probe {
            during.push(fleet.probe().await);
            next_probe += Duration::from_secs(2);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    embedded.set_reader_fault(zone, ReaderFault::None);
    let t1 = Instant::now();
    let recovered = converge(
        &fleet.d,
        &fleet.apis,
        &fleet.viewers,
        Duration::from_secs(30),
        &mut row,
    )
    .await;
    common::wait_for(Duration::from_secs(30), || all_live(&fleet.d)).await;
    row.recovered = usize::from(recovered.is_some());
    row.recovery_ms.push(t1.elapsed().as_millis());
    sampler.task.abort();
    let healthy = sampler.healthy_not_live.load(Ordering::Relaxed) - healthy_before;
    let (server_errors, broken) = viewer_errors(&fleet.viewers);
    row.server_errors = Some(server_errors);
    row.note = format!(
        "the faulted one stale after {} ms, state changes while stalled: {flips}; {}; {broken} of 3 streams broke",
        stale_after.map_or("never".to_string(), |t| t.as_millis().to_string()),
        healthy_note(&during, &before, healthy)
    );
    row.print();
    let stale_after = stale_after.expect("the stalled cluster shows stale");
    assert!(stale_after < Duration::from_secs(15), "{stale_after:?}");
    assert_eq!(flips, 1, "stale once, no flapping while it stalls");
    assert_eq!(row.recovered, 1);
    assert_eq!(
        sampler.healthy_not_live.load(Ordering::Relaxed),
        0,
        "none of the 19 other clusters ever left live"
    );
    assert_eq!((server_errors, broken), (0, 0));
}
