//! The work a preemption's pods lost, as the ledger sums it on SQLite and on PostgreSQL: each
//! pod running at T=0 × its GPUs × (the node's end − the pod's last start), pods that
//! Succeeded, DaemonSet pods and pods finished at T=0 aside, nothing until the node ends.

use chrono::{Duration, TimeZone, Utc};
use server::ledger::Ledger;
use spotboard_core::CapacityType;
use spotboard_core::model::{Lifetime, PodImpact};

use super::fresh_postgres;

fn pod(name: &str, owner: &str, gpus: u32, started_h_before_t0: Option<i64>) -> PodImpact {
    let t0 = Utc.with_ymd_and_hms(2026, 11, 20, 8, 0, 0).unwrap();
    PodImpact {
        namespace: "ml".into(),
        name: name.into(),
        owner_kind: Some(owner.into()),
        owner_name: Some(name.into()),
        grace_s: 30,
        gpus,
        started_at: started_h_before_t0.map(|h| t0 - Duration::hours(h)),
        ..Default::default()
    }
}

async fn sums_the_work_lost(url: &str) {
    let ledger = Ledger::open(url).await.unwrap();
    let t0 = Utc.with_ymd_and_hms(2026, 11, 20, 8, 0, 0).unwrap();
    let node = Lifetime {
        uid: "u-victim".into(),
        cluster: "zone-a".into(),
        node: "g-victim".into(),
        pool: Some("h100-spot".into()),
        instance_type: Some("gd-8xh100ib-i128".into()),
        zone: Some("US-EAST-04A".into()),
        capacity_type: CapacityType::Spot,
        gpus: 8,
        started_at: t0 - Duration::hours(10),
        ..Default::default()
    };
    ledger.started(&node).await.unwrap();
    ledger.preempting(&node.uid, t0).await.unwrap();
    let pods = [
        pod("train-0", "Job", 4, Some(3)),    // 4 × 3 h 2 min: counted
        pod("train-1", "Job", 2, Some(1)),    // 2 × 1 h 2 min: counted
        pod("dcgm", "DaemonSet", 1, Some(9)), // a DaemonSet loses no work
        pod("eval", "Job", 2, Some(2)),       // Succeeded before the node went
        pod("done", "Job", 2, None),          // finished before T=0: no start recorded
        pod("api", "ReplicaSet", 0, Some(5)), // no GPUs
    ];
    ledger.preempted_pods(&node.uid, &pods).await.unwrap();
    let read = ledger.pods_of(&node.uid).await.unwrap();
    let train = read.iter().find(|p| p.name == "train-0").unwrap();
    assert_eq!(
        (train.gpus, train.started_at),
        (4, Some(t0 - Duration::hours(3))),
        "a pod's GPUs and last start come back as written"
    );
    let window = |l: &Ledger| {
        let l = l.clone();
        async move {
            l.between(t0 - Duration::days(1), t0 + Duration::days(1))
                .await
                .unwrap()
                .into_iter()
                .find(|l| l.uid == "u-victim")
                .unwrap()
        }
    };
    assert_eq!(
        window(&ledger).await.work_lost_gpu_s,
        0,
        "nothing is lost until the node ends"
    );
    ledger
        .ended(&node.uid, t0 + Duration::minutes(2), "preempted")
        .await
        .unwrap();
    ledger
        .pod_outcomes(
            &node.uid,
            &[
                ("ml".into(), "train-0".into(), "still running".into()),
                ("ml".into(), "train-1".into(), "deleted".into()),
                ("ml".into(), "eval".into(), "Succeeded".into()),
            ],
        )
        .await
        .unwrap();
    let seconds = |h: i64| h * 3600 + 120;
    let expected = 4 * seconds(3) + 2 * seconds(1);
    assert_eq!(
        window(&ledger).await.work_lost_gpu_s,
        u64::try_from(expected).unwrap(),
        "4 GPUs × 3 h 2 min + 2 GPUs × 1 h 2 min"
    );
}

#[tokio::test]
async fn sqlite_sums_the_work_a_preemption_lost() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("ledger.sqlite").display());
    sums_the_work_lost(&url).await;
}

#[tokio::test]
async fn postgres_sums_the_work_a_preemption_lost() {
    sums_the_work_lost(&fresh_postgres().await).await;
}
