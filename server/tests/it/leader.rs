//! Leader election among replicas (`server/src/leader`), through kube-rs against the
//! embedded cluster as spotboard's own account: one replica holds the Lease at a time, a
//! replica that stops renewing stops writing before another starts, a clean stop hands over
//! at once, and a ledger on a replica that does not hold the Lease writes nothing until it
//! takes over, then writes what it kept.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use server::leader::{Elector, Leadership, LeaseConfig};
use server::ledger::Ledger;

use crate::common::sim;

const LEASE: &str = "spotboard-ledger";
const NAMES: [&str; 2] = ["replica-a", "replica-b"];
/// Lease duration of the takeover test, seconds: renewals every 860 ms, a 4 s renew deadline,
/// room for a busy two-core machine.
const LEASE_S: u64 = 6;

fn config(identity: &str, seconds: u64) -> LeaseConfig {
    LeaseConfig::new(
        "default",
        LEASE,
        identity.into(),
        Duration::from_secs(seconds),
    )
}

/// Samples both replicas every 5 ms until `until` holds; panics if both ever hold at once.
async fn never_both_until(
    l: &[Leadership; 2],
    limit: Duration,
    until: impl Fn(&[Leadership; 2]) -> bool,
) -> Duration {
    let started = Instant::now();
    loop {
        assert!(
            !(l[0].holds() && l[1].holds()),
            "two replicas held the Lease at once"
        );
        if until(l) {
            return started.elapsed();
        }
        assert!(started.elapsed() < limit, "not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn holder(client: &kube::Client) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    leases.get(LEASE).await.ok()?.spec?.holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_holds_the_lease_and_a_killed_holder_is_replaced_after_the_duration() {
    let zone = sim::zone(0, 1, 1.0).await;
    let mut electors: Vec<Option<Elector>> = NAMES
        .iter()
        .map(|n| Some(Elector::spawn(zone.reader.clone(), config(n, LEASE_S))))
        .collect();
    let l: [Leadership; 2] =
        std::array::from_fn(|i| electors[i].as_ref().unwrap().leadership.clone());
    never_both_until(&l, Duration::from_secs(10), |l| {
        l[0].holds() || l[1].holds()
    })
    .await;
    let first = usize::from(!l[0].holds());
    let other = 1 - first;
    // Held through several renewals, by the same one only.
    let steady = Instant::now();
    while steady.elapsed() < Duration::from_secs(4) {
        assert!(l[first].holds() && !l[other].holds(), "the holder changed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(holder(&zone.client).await.as_deref(), Some(NAMES[first]));

    // The holder dies without a word. The other takes over once the Lease has gone
    // unrenewed for its duration, and the dead one has stopped writing by then.
    electors[first].take().unwrap().abandon();
    let took = never_both_until(&l, Duration::from_secs(LEASE_S + 6), |l| l[other].holds()).await;
    assert!(!l[first].holds());
    assert!(
        took >= Duration::from_secs(LEASE_S / 2) && took <= Duration::from_secs(LEASE_S + 2),
        "took over after {took:?}; expected within the {LEASE_S} s duration + 2 s"
    );
    assert_eq!(holder(&zone.client).await.as_deref(), Some(NAMES[other]));
    println!(
        "LEADER|killed holder replaced after {} ms (lease {LEASE_S} s)",
        took.as_millis()
    );

    // A clean stop writes the Lease free: a waiting replica takes it at once, well inside
    // the duration it would otherwise wait out.
    let c = Elector::spawn(zone.reader.clone(), config("replica-c", 3));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!c.leadership.holds());
    let released = Instant::now();
    let (releasing, lc) = (l[other].clone(), c.leadership.clone());
    // Sampled while the release is under way: never both.
    let watch = tokio::spawn(async move {
        while !lc.holds() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        !releasing.holds()
    });
    electors[other].take().unwrap().release().await;
    assert!(!l[other].holds(), "released: no longer writes");
    assert!(c.leadership.wait_to_hold(Duration::from_secs(3)).await);
    assert!(
        watch.await.unwrap(),
        "the new holder started while the old one still held"
    );
    let handover = released.elapsed();
    assert!(
        handover < Duration::from_millis(1500),
        "handover took {handover:?}"
    );
    assert_eq!(holder(&zone.client).await.as_deref(), Some("replica-c"));
    println!("LEADER|clean handover in {} ms", handover.as_millis());
}

fn lifetime(uid: &str) -> spotboard_core::model::Lifetime {
    spotboard_core::model::Lifetime {
        uid: uid.into(),
        cluster: "US-EAST-04A".into(),
        node: format!("node-{uid}"),
        started_at: chrono::Utc::now() - chrono::Duration::minutes(5),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_does_not_hold_the_lease_writes_nothing_until_it_takes_over() {
    let zone = sim::zone(0, 1, 1.0).await;
    let holding = Elector::spawn(zone.reader.clone(), config("holding", 3));
    assert!(
        holding
            .leadership
            .wait_to_hold(Duration::from_secs(5))
            .await
    );
    let following = Elector::spawn(zone.reader.clone(), config("following", 3));
    sim::eventually(
        Duration::from_secs(5),
        "the follower reads the Lease",
        || async { (following.leadership.describe() == "replica holding").then_some(()) },
    )
    .await;

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("ledger.sqlite").display());
    let ledger = Ledger::open(&url)
        .await
        .unwrap()
        .with_writer(following.leadership.clone());
    let refused = ledger.started(&lifetime("n1")).await.unwrap_err();
    assert!(
        matches!(refused, server::Error::NotWriter { ref writer } if writer == "replica holding"),
        "{refused}"
    );
    // Not writing is not the database failing.
    assert!(ledger.health().unavailable_since.is_none());
    let day = chrono::Duration::days(1);
    let now = chrono::Utc::now();
    assert!(ledger.between(now - day, now).await.unwrap().is_empty());

    // A write the follower keeps for a takeover (a preemption's pods, read once at T=0) goes
    // through when the holder leaves.
    let kept = {
        let ledger = ledger.clone();
        let n2 = lifetime("n2");
        tokio::spawn(async move {
            ledger
                .until_written("a kept write", || ledger.started(&n2))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!kept.is_finished());
    holding.release().await;
    tokio::time::timeout(Duration::from_secs(5), kept)
        .await
        .expect("written after the takeover")
        .unwrap()
        .unwrap();
    assert!(ledger.writer().holds());
    let rows = ledger.between(now - day, chrono::Utc::now()).await.unwrap();
    assert_eq!(
        rows.iter().map(|l| l.uid.as_str()).collect::<Vec<_>>(),
        ["n2"]
    );
}
