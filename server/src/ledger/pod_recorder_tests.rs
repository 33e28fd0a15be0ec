//! The pod recorder against a SQLite ledger: intervals opened, split, closed, taken up after a
//! restart, and what showback makes of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use rust_decimal::Decimal;
use spotboard_core::domain::preemption::readiness::PodFacts;
use spotboard_core::model::{Lifetime, PodInterval, ShowbackBy};

use super::{Open, PodRecorder};
use crate::hub::{PodStay, PodStays, PodUid};
use crate::ledger::{Ledger, Savings};

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn t(min: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap() + Duration::minutes(min)
}

const POD_A: &str = "0b6e3f4c-1111-4a5b-9c2d-000000000001";
const POD_B: &str = "0b6e3f4c-1111-4a5b-9c2d-000000000002";

/// A pod as a test holds it; [`Stays`] lends it to the recorder as the hub would.
struct Owned {
    uid: String,
    facts: PodFacts,
    namespace_labels: Option<BTreeMap<String, String>>,
}

fn stay(uid: &str, ns: &str, team: Option<&str>, gpus: u32) -> Owned {
    Owned {
        uid: uid.into(),
        facts: PodFacts {
            namespace: ns.into(),
            name: format!("pod-{uid}"),
            labels: team
                .map(|t| BTreeMap::from([("team".to_string(), t.to_string())]))
                .unwrap_or_default(),
            active: true,
            gpus,
            ..Default::default()
        },
        namespace_labels: None,
    }
}

impl Owned {
    fn lend(&self) -> PodStay<'_> {
        PodStay {
            pod_uid: PodUid::of(&self.uid),
            facts: &self.facts,
            namespace_labels: self.namespace_labels.as_ref(),
            node_uid: "node-1",
            node_gpus: 8,
            node_cpu_m: Some(128_000),
            node_memory_b: Some(1 << 40),
        }
    }
}

/// The pods of the clusters whose watches have listed.
struct Stays(Vec<(String, Vec<Owned>)>);

impl PodStays for Stays {
    fn listed_clusters(&self) -> Vec<String> {
        self.0.iter().map(|(c, _)| c.clone()).collect()
    }

    fn each_pod_stay(&self, cluster: &str, f: &mut dyn FnMut(&PodStay<'_>)) -> bool {
        let Some((_, pods)) = self.0.iter().find(|(c, _)| c == cluster) else {
            return false;
        };
        for p in pods {
            f(&p.lend());
        }
        true
    }
}

async fn all(ledger: &Ledger) -> Vec<PodInterval> {
    ledger.all_pod_intervals().await
}

#[tokio::test]
async fn intervals_open_split_on_a_team_change_and_close_when_the_pod_goes() {
    let ledger = Ledger::open("sqlite::memory:").await.unwrap();
    let mut r = PodRecorder::new("team");
    let c = |pods: Vec<Owned>| Stays(vec![("c1".to_string(), pods)]);
    r.step(
        &ledger,
        &c(vec![
            stay(POD_A, "ml", Some("research"), 4),
            stay(POD_B, "ml", None, 0),
        ]),
        t(0),
    )
    .await
    .unwrap();
    // Unchanged: nothing written.
    r.step(
        &ledger,
        &c(vec![
            stay(POD_A, "ml", Some("research"), 4),
            stay(POD_B, "ml", None, 0),
        ]),
        t(1),
    )
    .await
    .unwrap();
    assert_eq!(all(&ledger).await.len(), 2);
    // The team label changes: a new interval from then.
    r.step(
        &ledger,
        &c(vec![
            stay(POD_A, "ml", Some("serving"), 4),
            stay(POD_B, "ml", None, 0),
        ]),
        t(2),
    )
    .await
    .unwrap();
    // POD_B goes.
    r.step(
        &ledger,
        &c(vec![stay(POD_A, "ml", Some("serving"), 4)]),
        t(3),
    )
    .await
    .unwrap();
    let ivs = all(&ledger).await;
    assert_eq!(ivs.len(), 3);
    assert_eq!(
        (ivs[0].team.as_deref(), ivs[0].started_at, ivs[0].ended_at),
        (Some("research"), t(0), Some(t(2)))
    );
    assert_eq!(
        (ivs[1].team.as_deref(), ivs[1].started_at, ivs[1].ended_at),
        (Some("serving"), t(2), None)
    );
    assert_eq!(
        (ivs[2].pod_uid.as_str(), ivs[2].ended_at),
        (POD_B, Some(t(3)))
    );
    assert_eq!(ivs[0].workload, format!("Pod/pod-{POD_A}"));
    assert_eq!(ivs[0].gpus, 4);
    assert_eq!(ivs[0].node_gpus, 8);
    // A cluster not judged (still listing) closes nothing.
    r.step(&ledger, &Stays(vec![]), t(4)).await.unwrap();
    assert_eq!(all(&ledger).await[1].ended_at, None);
}

/// [`Stays`] where `cluster` began listing again between the recorder's two reads: named
/// as listed, then not read.
struct Relisting(Stays, &'static str);

impl PodStays for Relisting {
    fn listed_clusters(&self) -> Vec<String> {
        self.0.listed_clusters()
    }

    fn each_pod_stay(&self, cluster: &str, f: &mut dyn FnMut(&PodStay<'_>)) -> bool {
        cluster != self.1 && self.0.each_pod_stay(cluster, f)
    }
}

#[tokio::test]
async fn each_cluster_is_judged_on_its_own_and_one_listing_again_closes_nothing() {
    let ledger = Ledger::open("sqlite::memory:").await.unwrap();
    let mut r = PodRecorder::new("team");
    let fleet = |c1: Vec<Owned>, c2: Vec<Owned>| {
        Stays(vec![("c1".to_string(), c1), ("c2".to_string(), c2)])
    };
    r.step(
        &ledger,
        &fleet(
            vec![stay(POD_A, "ml", None, 1)],
            vec![stay(POD_B, "ml", None, 1)],
        ),
        t(0),
    )
    .await
    .unwrap();
    let ivs = all(&ledger).await;
    let clusters: Vec<(&str, &str)> = ivs
        .iter()
        .map(|iv| (iv.pod_uid.as_str(), iv.cluster.as_str()))
        .collect();
    assert_eq!(clusters, [(POD_A, "c1"), (POD_B, "c2")]);
    // A goes from c1 while c2 lists again: A closes, B (not seen) stays open.
    r.step(&ledger, &Relisting(fleet(vec![], vec![]), "c2"), t(1))
        .await
        .unwrap();
    let ivs = all(&ledger).await;
    assert_eq!(
        (ivs[0].pod_uid.as_str(), ivs[0].ended_at),
        (POD_A, Some(t(1)))
    );
    assert_eq!((ivs[1].pod_uid.as_str(), ivs[1].ended_at), (POD_B, None));
    // c2 listed again without B: B closes then.
    r.step(&ledger, &fleet(vec![], vec![]), t(2)).await.unwrap();
    assert_eq!(all(&ledger).await[1].ended_at, Some(t(2)));
    assert_eq!(r.open_count(), Some(0));
}

#[tokio::test]
async fn a_restart_takes_up_the_open_intervals_and_ends_the_gone_at_the_last_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("ledger.sqlite").display());
    let c = |pods: Vec<Owned>| Stays(vec![("c1".to_string(), pods)]);
    {
        let ledger = Ledger::open(&url).await.unwrap();
        let mut r = PodRecorder::new("team");
        r.step(
            &ledger,
            &c(vec![stay(POD_A, "ml", None, 1), stay(POD_B, "ml", None, 1)]),
            t(0),
        )
        .await
        .unwrap();
        ledger.beat(t(5)).await.unwrap();
    }
    let ledger = Ledger::open(&url).await.unwrap();
    let mut r = PodRecorder::new("team");
    // Back at t(30): A still runs, B went while nobody watched.
    r.step(&ledger, &c(vec![stay(POD_A, "ml", None, 1)]), t(30))
        .await
        .unwrap();
    let ivs = all(&ledger).await;
    assert_eq!(ivs.len(), 2, "A's interval continues: {ivs:?}");
    assert_eq!((ivs[0].started_at, ivs[0].ended_at), (t(0), None));
    assert_eq!(ivs[1].ended_at, Some(t(5)), "at the last heartbeat");
    assert_eq!(r.open_count(), Some(1));
}

#[tokio::test]
async fn showback_from_the_ledger_splits_a_node_between_two_namespaces_and_its_idle() {
    let ledger = Ledger::open("sqlite::memory:").await.unwrap();
    // An A100 spot node (9.65 USD/h spot, 21.60 on-demand as shipped) from t(0), ended at 60.
    ledger
        .started(&Lifetime {
            uid: "node-1".into(),
            cluster: "c1".into(),
            node: "n1".into(),
            pool: Some("p".into()),
            instance_type: Some("gd-8xa100-i128".into()),
            zone: Some("US-EAST-04A".into()),
            capacity_type: spotboard_core::CapacityType::Spot,
            gpus: 8,
            started_at: t(0),
            ..Default::default()
        })
        .await
        .unwrap();
    ledger.ended("node-1", t(60), "deleted").await.unwrap();
    let mut r = PodRecorder::new("team");
    let c = |pods: Vec<Owned>| Stays(vec![("c1".to_string(), pods)]);
    r.step(
        &ledger,
        &c(vec![
            stay(POD_A, "train", Some("research"), 4),
            stay(POD_B, "eval", None, 2),
        ]),
        t(0),
    )
    .await
    .unwrap();
    r.step(
        &ledger,
        &c(vec![stay(POD_A, "train", Some("research"), 4)]),
        t(30),
    )
    .await
    .unwrap();
    r.step(&ledger, &c(vec![]), t(60)).await.unwrap();
    let s = Savings::new(
        ledger,
        Arc::new(spotboard_core::domain::prices::PriceCatalog::shipped()),
    );
    let rep = s
        .showback(t(0), t(60), ShowbackBy::Namespace)
        .await
        .unwrap();
    // train: half the node for the hour, 4.825; eval: a quarter for half an hour, 1.20625;
    // idle: 9.65 − 6.03125 = 3.61875. Rounded down, 9.63: the two cents left go to the
    // largest remainders, idle's .875 and eval's .625 of a cent.
    let cost = |k: &str| rep.rows.iter().find(|r| r.key == k).unwrap().cost_usd;
    assert_eq!(rep.total.cost_usd, d("9.65"));
    assert_eq!(cost("train"), d("4.82"));
    assert_eq!(cost("eval"), d("1.21"));
    assert_eq!(rep.idle[0].cost_usd, d("3.62"));
    let by_team = s.showback(t(0), t(60), ShowbackBy::Team).await.unwrap();
    assert!(by_team.rows.iter().any(|r| r.key == "research"));
    assert!(
        by_team
            .rows
            .iter()
            .any(|r| r.key == spotboard_core::model::NO_TEAM)
    );
}

#[test]
fn a_pod_without_the_team_label_takes_its_namespaces_and_its_own_label_wins() {
    let mut ns = stay(POD_A, "inference", None, 1);
    ns.namespace_labels = Some(BTreeMap::from([(
        "team".to_string(),
        "serving".to_string(),
    )]));
    let iv = super::interval("c1", &ns.lend(), "team", t(0));
    assert_eq!(iv.team.as_deref(), Some("serving"));
    // The fingerprint read back from the ledger is the one made from the hub's pod.
    assert_eq!(
        super::interval_fingerprint(&iv),
        super::stay_fingerprint(&ns.lend(), "team")
    );
    // So is an owned pod's, whose workload is its owner.
    let mut replica = stay(POD_B, "inference", None, 1);
    replica.facts.owner_kind = Some("ReplicaSet".into());
    replica.facts.owner_name = Some("vllm-7c9".into());
    let r = super::interval("c1", &replica.lend(), "team", t(0));
    assert_eq!(r.workload, "ReplicaSet/vllm-7c9");
    assert_eq!(
        super::interval_fingerprint(&r),
        super::stay_fingerprint(&replica.lend(), "team")
    );
    let mut own = stay(POD_A, "inference", Some("research"), 1);
    own.namespace_labels = ns.namespace_labels.clone();
    assert_eq!(
        super::interval("c1", &own.lend(), "team", t(0))
            .team
            .as_deref(),
        Some("research")
    );
}

/// One entry per running pod: a field grown back to a `DateTime` or an `Arc<str>` shows here
/// before it shows in the bench's RSS (P2: 50,000 entries in a table of 65,536 slots).
#[test]
fn an_open_interval_stays_24_bytes() {
    assert_eq!(std::mem::size_of::<Open>(), 24);
}
