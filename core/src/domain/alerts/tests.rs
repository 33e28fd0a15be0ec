use chrono::TimeZone;

use super::*;
use crate::domain::preemption::evictions::{ErrorKind, EvictionError};
use crate::domain::preemption::timeline::{Observation, derive};
use crate::model::ConditionView;
use crate::{CapacityType, Provider};

fn t(s: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 24, 10, 0, 0).unwrap() + Duration::seconds(s)
}

fn wave(nodes: &[&str], started: i64, last: i64) -> Wave {
    Wave {
        cluster: "c1".into(),
        started: Some(t(started)),
        last: Some(t(last)),
        nodes: nodes.iter().map(|n| n.to_string()).collect(),
        node_count: nodes.len(),
    }
}

fn keys(alerts: &[Alert]) -> Vec<(String, AlertStatus)> {
    alerts.iter().map(|a| (a.key.clone(), a.status)).collect()
}

#[test]
fn a_wave_fires_once_from_two_nodes_grows_silently_and_resolves_when_it_closes() {
    let th = Thresholds::default();
    let mut ep = Episodes::default();
    let step = |ep: &mut Episodes, w: Wave, now: i64| {
        let wrong = now_wrong(
            Inputs {
                waves: &[w],
                ..Inputs::default()
            },
            &th,
            t(now),
        );
        ep.step(wrong, t(now))
    };
    assert!(
        step(&mut ep, wave(&["a"], 0, 0), 1).is_empty(),
        "one node is no wave"
    );
    let fired = step(&mut ep, wave(&["a", "b"], 0, 10), 11);
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].status, AlertStatus::Firing);
    assert_eq!(fired[0].nodes, ["a", "b"]);
    assert_eq!(fired[0].started, Some(t(0)), "from the wave's first T=0");
    assert_eq!(fired[0].schema, ALERT_SCHEMA);
    assert!(step(&mut ep, wave(&["a", "b", "c"], 0, 20), 21).is_empty());
    assert_eq!(ep.firing()[0].nodes.len(), 3, "figures move while it fires");
    // 60 s after the last preemption the wave is closed.
    let resolved = step(&mut ep, wave(&["a", "b", "c"], 0, 20), 81);
    assert_eq!(resolved.len(), 1);
    assert_eq!(
        (resolved[0].status, resolved[0].resolved),
        (AlertStatus::Resolved, Some(t(81)))
    );
    assert_eq!(resolved[0].nodes, ["a", "b", "c"]);
    assert!(ep.firing().is_empty());
    assert!(step(&mut ep, wave(&["a", "b", "c"], 0, 20), 90).is_empty());
}

fn rate(key: &str, alert: bool, p95: Option<f64>) -> RateRow {
    RateRow {
        by: RateBy::Pool,
        key: key.into(),
        window: Window::Last24h,
        preemptions: 2,
        spot_nodes: 10,
        rate_pct: 20.0,
        alert,
        alert_pct: 10.0,
        latency_p95_s: p95,
        running_spot_nodes: 3,
        ..RateRow::default()
    }
}

#[test]
fn rates_and_latencies_above_their_thresholds_fire_per_pool() {
    let mut emptied = rate("c1/emptied", false, Some(300.0));
    emptied.running_spot_nodes = 0;
    let rates = [
        rate("c1/hot", true, Some(91.0)),
        rate("c1/calm", false, Some(90.0)),
        emptied,
        rate("arn:aws:eks:us-east-1:1:cluster/prod/spot", true, None),
    ];
    let wrong = now_wrong(
        Inputs {
            rates: &rates,
            ..Inputs::default()
        },
        &Thresholds::default(),
        t(0),
    );
    let k: Vec<&str> = wrong.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(
        k,
        [
            "rate/c1/hot",
            "replacement-latency/c1/hot",
            "rate/arn:aws:eks:us-east-1:1:cluster/prod/spot"
        ]
    );
    assert_eq!(
        (wrong[2].cluster.as_str(), wrong[2].pool.as_deref()),
        ("arn:aws:eks:us-east-1:1:cluster/prod", Some("spot"))
    );
    assert_eq!(wrong[0].pool.as_deref(), Some("hot"));
    assert_eq!((wrong[0].value, wrong[0].threshold), (20.0, 10.0));
    assert_eq!(
        wrong[1].summary,
        "c1/hot: replacements Ready 91 s after T=0 (p95 over 24 h), above 90 s"
    );
}

fn card(node: &str, pool: &str, t0: i64, errors: usize) -> PreemptionView {
    let timeline = derive(
        Provider::Cks,
        &[Observation {
            at: t(t0),
            notice: true,
            draining: false,
            gone: false,
        }],
    )
    .unwrap();
    PreemptionView {
        cluster: "c1".into(),
        node: node.into(),
        uid: node.into(),
        pool: Some(pool.into()),
        zone: None,
        instance_type: None,
        capacity_type: CapacityType::Spot,
        timeline,
        pods: None,
        pods_error: None,
        evictions: (0..errors)
            .map(|_| EvictionError {
                kind: ErrorKind::Refused,
                ..EvictionError::default()
            })
            .collect(),
        drill: false,
    }
}

#[test]
fn eviction_errors_of_recent_preemptions_fire_per_pool_and_resolve_after_the_window() {
    let cards = [
        card("n1", "p", 0, 2),
        card("n2", "p", 30, 1),
        card("n3", "q", 0, 0),
        // A drill's refusals are rehearsed, not paged: pool r fires nothing, p counts 3.
        PreemptionView {
            drill: true,
            ..card("n4", "r", 10, 4)
        },
        PreemptionView {
            drill: true,
            ..card("n5", "p", 10, 5)
        },
    ];
    let mut ep = Episodes::default();
    let at = |now: i64| {
        now_wrong(
            Inputs {
                preemptions: &cards,
                ..Inputs::default()
            },
            &Thresholds::default(),
            t(now),
        )
    };
    let fired = ep.step(at(60), t(60));
    assert_eq!(
        keys(&fired),
        [("eviction-errors/c1/p".into(), AlertStatus::Firing)]
    );
    assert_eq!(fired[0].value, 3.0);
    assert_eq!(
        fired[0].summary,
        "c1/p: eviction errors (3 refused) on 2 preempted node(s)"
    );
    // 15 minutes after the last T=0 with errors, the episode ends.
    assert!(ep.step(at(15 * 60 + 30), t(15 * 60 + 30)).is_empty());
    let resolved = ep.step(at(15 * 60 + 31), t(15 * 60 + 31));
    assert_eq!(
        keys(&resolved),
        [("eviction-errors/c1/p".into(), AlertStatus::Resolved)]
    );
}

fn pool(cluster: &str, name: &str, conds: &[(ConditionType, &str, Option<i64>)]) -> PoolRow {
    PoolRow {
        cluster: cluster.into(),
        name: name.into(),
        conditions: conds
            .iter()
            .map(|(ty, status, since)| ConditionView {
                type_: ty.clone(),
                status: status.to_string(),
                reason: "NoCapacity".into(),
                last_transition: since.map(t),
                ..ConditionView::default()
            })
            .collect(),
        ..PoolRow::default()
    }
}

#[test]
fn quota_or_capacity_false_fires_after_the_minutes_from_its_own_transition() {
    let pools = [
        pool("c1", "a", &[(ConditionType::Capacity, "False", Some(0))]),
        pool("c1", "b", &[(ConditionType::Quota, "False", None)]),
        pool("c1", "c", &[(ConditionType::Validated, "False", Some(0))]),
        pool("c1", "d", &[(ConditionType::Capacity, "True", Some(0))]),
    ]
    .map(std::sync::Arc::new);
    let at = |now: i64| {
        now_wrong(
            Inputs {
                pools: &pools,
                ..Inputs::default()
            },
            &Thresholds::default(),
            t(now),
        )
    };
    assert!(at(15 * 60).is_empty(), "not longer than 15 min yet");
    let wrong = at(23 * 60);
    assert_eq!(wrong.len(), 1, "no time, another type or True: not judged");
    assert_eq!(wrong[0].key, "condition/c1/a/Capacity");
    assert_eq!(
        wrong[0].summary,
        "c1/a: Capacity=False (NoCapacity) for 23 min"
    );
    assert_eq!(wrong[0].started, Some(t(0)));
    assert_eq!(wrong[0].path, "/pools/c1/a");
}

/// The pending-work alert: judged on each cluster's row by its oldest pod requesting GPUs,
/// from the minutes of `--alert-pending-minutes`; a pool's row is not judged (the cluster's
/// row counts each pod once); it resolves when the pod is placed.
#[test]
fn gpu_work_pending_past_the_minutes_fires_once_per_cluster() {
    let row = |cluster: &str, pool: Option<&str>, gpu_since: Option<i64>| {
        WaitingPool {
        cluster: cluster.into(),
        pool: pool.map(Into::into),
        pods: 3,
        gpus: 16,
        oldest_since: Some(t(-3600)),
        oldest_gpu_since: gpu_since.map(t),
        cause: "waiting for spot capacity in US-EAST-04A since 10:00 (Capacity: QueuedAwaitingCapacity)".into(),
        no_pool: 0,
    }
    };
    let waiting = [
        row("c1", None, Some(0)),
        row("c1", Some("h100"), Some(0)),
        // Only CPU pods have waited an hour: not judged.
        row("c2", None, None),
        row("c3", None, Some(10 * 60)),
    ];
    let th = Thresholds {
        pending_after: Duration::minutes(15),
        ..Thresholds::default()
    };
    let at = |waiting: &[WaitingPool], now: i64| {
        now_wrong(
            Inputs {
                waiting,
                ..Inputs::default()
            },
            &th,
            t(now),
        )
    };
    assert!(
        at(&waiting, 15 * 60).is_empty(),
        "not longer than 15 min yet"
    );
    let wrong = at(&waiting, 20 * 60);
    assert_eq!(
        keys(&wrong),
        [("pending-work/c1".to_string(), AlertStatus::Firing)]
    );
    let a = &wrong[0];
    assert_eq!(
        a.summary,
        "c1: pods requesting GPUs waiting for 20 min (3 pod(s), 16 GPUs waiting; waiting for spot \
         capacity in US-EAST-04A since 10:00 (Capacity: QueuedAwaitingCapacity))"
    );
    assert_eq!((a.value, a.threshold), (20.0, 15.0));
    assert_eq!(
        (a.started, a.path.as_str(), a.pool.as_deref()),
        (Some(t(0)), "/", None)
    );
    assert_eq!(at(&waiting, 26 * 60).len(), 2, "c3 from 25 min");
    // One episode: announced once, resolved when the cluster has no such pod left.
    let mut ep = Episodes::default();
    assert_eq!(ep.step(at(&waiting, 20 * 60), t(20 * 60)).len(), 1);
    assert!(ep.step(at(&waiting, 21 * 60), t(21 * 60)).is_empty());
    let gone = ep.step(at(&[], 22 * 60), t(22 * 60));
    assert_eq!(
        keys(&gone),
        [("pending-work/c1".to_string(), AlertStatus::Resolved)]
    );
}
