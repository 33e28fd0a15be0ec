use super::writes::WRITES_PER_COMMIT;
use super::*;
use spotboard_core::model::PoolRow;
use std::sync::Arc;

const CLUSTER: &str = "zone-a";

fn t(s: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
}

fn node(uid: &str, name: &str, notice: bool) -> NodeRow {
    NodeRow {
        key: uid.into(),
        cluster: CLUSTER.into(),
        name: name.into(),
        pool: Some("spot-a".into()),
        capacity_type: spotboard_core::CapacityType::Spot,
        notice,
        ..Default::default()
    }
}

fn started(nodes: Vec<NodeRow>) -> Recorder {
    let mut r = Recorder::default();
    r.observe(
        &crate::hub::LedgerInputs {
            nodes: nodes.into_iter().map(Arc::new).collect(),
            // Being scaled down: a node that leaves without another signal is one of those.
            pools: vec![PoolRow {
                key: "p1".into(),
                cluster: CLUSTER.into(),
                name: "spot-a".into(),
                provider: spotboard_core::Provider::Cks,
                target_nodes: 1,
                current_nodes: Some(2),
                ..Default::default()
            }],
            synced: [CLUSTER.to_string()].into(),
            ..Default::default()
        },
        t(0),
    );
    r.queue.clear();
    r
}

fn removed(uid: &str) -> Fact {
    Fact::Node {
        key: uid.into(),
        row: None,
    }
}

/// The ends queued, with their evidence, sorted by uid.
fn ended_with_evidence(r: &Recorder) -> Vec<(String, &'static str, String)> {
    let mut got: Vec<(String, &str, String)> = r
        .queued_writes()
        .filter_map(|w| match w {
            Write::Ended {
                uid,
                reason,
                evidence,
                ..
            } => Some((uid.clone(), reason.as_str(), evidence.clone())),
            _ => None,
        })
        .collect();
    got.sort();
    got
}

fn ended(r: &Recorder) -> Vec<(String, &'static str)> {
    r.queued_writes()
        .filter_map(|w| match w {
            Write::Ended { uid, reason, .. } => Some((uid.clone(), reason.as_str())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_brief_notice_then_removal_ends_as_preempted_at_once() {
    let mut r = started(vec![node("n1", "g1", false)]);
    let noticed = node("n1", "g1", true);
    assert!(r.apply(
        &Fact::Node {
            key: "n1".into(),
            row: Some(Arc::new(noticed)),
        },
        t(5),
    ));
    r.apply(&removed("n1"), t(5));
    r.settle(t(5));
    assert!(r.queued_writes().any(|w| *w
        == Write::Preempting {
            uid: "n1".into(),
            t0: t(5)
        }));
    assert_eq!(ended(&r), vec![("n1".to_string(), "preempted")]);
}

#[test]
fn the_preemption_event_decides_for_a_node_that_left_without_a_notice_seen() {
    let mut r = started(vec![node("n1", "g1", false)]);
    r.apply(&removed("n1"), t(10));
    r.settle(t(11));
    assert!(ended(&r).is_empty(), "waits up to END_GRACE for the event");
    r.apply(
        &Fact::PreemptionSignal {
            key: "e1".into(),
            row: Some(Box::new(EventRow {
                key: "e1".into(),
                cluster: CLUSTER.into(),
                object: "Node/g1".into(),
                reason: spotboard_core::labels::REASON_PREEMPTION_PENDING.into(),
                last_seen: Some(t(9)),
                ..Default::default()
            })),
        },
        t(11),
    );
    r.settle(t(11));
    assert_eq!(ended(&r), vec![("n1".to_string(), "preempted")]);
    assert!(r.queued_writes().any(|w| *w
        == Write::Preempting {
            uid: "n1".into(),
            t0: t(9)
        }));
}

#[test]
fn without_a_signal_a_vanished_node_ends_by_its_pool_after_the_grace() {
    let mut r = started(vec![node("n1", "g1", false), node("n2", "g2", false)]);
    r.apply(&removed("n1"), t(10));
    r.settle(t(10) + END_GRACE);
    assert_eq!(ended(&r), vec![("n1".to_string(), "scaled-down")]);
    r.apply(
        &Fact::Pool {
            key: "p1".into(),
            row: None,
        },
        t(20),
    );
    r.apply(&removed("n2"), t(20));
    r.settle(t(20) + END_GRACE);
    assert_eq!(ended(&r)[1], ("n2".to_string(), "deleted"));
}

#[test]
fn a_node_back_before_the_grace_is_not_ended() {
    let mut r = started(vec![node("n1", "g1", false)]);
    r.apply(&removed("n1"), t(10));
    r.apply(
        &Fact::Node {
            key: "n1".into(),
            row: Some(Arc::new(node("n1", "g1", false))),
        },
        t(11),
    );
    r.settle(t(60));
    assert!(ended(&r).is_empty());
    assert!(
        !r.apply(
            &Fact::Synced {
                cluster: CLUSTER.into()
            },
            t(61)
        ),
        "a cluster that listed asks for a whole look"
    );
}

fn pool_with(conditions: Vec<ConditionView>) -> Fact {
    Fact::Pool {
        key: "p1".into(),
        row: Some(std::sync::Arc::new(PoolRow {
            key: "p1".into(),
            cluster: CLUSTER.into(),
            name: "spot-a".into(),
            conditions,
            ..Default::default()
        })),
    }
}

fn capacity(reason: &str, since: Option<DateTime<Utc>>) -> ConditionView {
    ConditionView {
        type_: spotboard_core::nodepool::ConditionType::Capacity,
        status: if reason == "Sufficient" {
            "True"
        } else {
            "False"
        }
        .into(),
        reason: reason.into(),
        last_transition: since,
        ..Default::default()
    }
}

fn condition_writes(r: &Recorder) -> Vec<(String, DateTime<Utc>)> {
    r.queued_writes()
        .filter_map(|w| match w {
            Write::Condition {
                condition, since, ..
            } => Some((condition.reason.clone(), *since)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_condition_is_written_when_first_seen_and_when_it_changes_only() {
    let mut r = started(Vec::new());
    r.apply(
        &pool_with(vec![capacity("Sufficient", Some(t(-100)))]),
        t(1),
    );
    // Another update of the pool with the same condition (a count changed) writes nothing.
    r.apply(
        &pool_with(vec![capacity("Sufficient", Some(t(-100)))]),
        t(2),
    );
    r.apply(
        &pool_with(vec![capacity("QueuedAwaitingCapacity", Some(t(3)))]),
        t(3),
    );
    assert_eq!(
        condition_writes(&r),
        [
            ("Sufficient".to_string(), t(-100)),
            ("QueuedAwaitingCapacity".to_string(), t(3))
        ]
    );
}

#[test]
fn an_undated_condition_counts_from_its_first_sighting() {
    let mut r = started(Vec::new());
    r.apply(&pool_with(vec![capacity("Sufficient", None)]), t(1));
    r.apply(&pool_with(vec![capacity("Sufficient", None)]), t(9));
    r.apply(&pool_with(vec![capacity("NoneAvailable", None)]), t(10));
    assert_eq!(
        condition_writes(&r),
        [
            ("Sufficient".to_string(), t(1)),
            ("NoneAvailable".to_string(), t(10))
        ]
    );
}

#[tokio::test]
async fn a_follower_writes_nothing_and_keeps_only_its_recent_writes_for_a_takeover() {
    let ledger = Ledger::open("sqlite::memory:")
        .await
        .unwrap()
        .with_writer(crate::leader::Leadership::following("replica-b"));
    let mut r =
        started(vec![node("n1", "a", false)]).keeping_for(std::time::Duration::from_millis(200));
    r.apply(
        &Fact::Node {
            key: "n2".into(),
            row: Some(Arc::new(node("n2", "b", false))),
        },
        t(1),
    );
    r.step(&ledger, t(1)).await.unwrap();
    assert_eq!(r.queued(), 1, "kept, not written");
    assert!(ledger.between(t(-10), t(10)).await.unwrap().is_empty());
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    r.step(&ledger, t(2)).await.unwrap();
    assert_eq!(
        r.queued(),
        0,
        "older than the keep window: the holder wrote it"
    );
}

/// A drill's notice and its own "Preemption pending" event are recorded as a drill, never as
/// a preemption; once the drill is over (annotation gone) the node's departure is judged as
/// any other's, and a node deleted during a drill ends as `drill`.
#[test]
fn a_drill_is_recorded_as_drill_and_never_as_a_preemption() {
    let mut r = started(vec![node("n1", "g1", false), node("n2", "g2", false)]);
    let drilled = |uid: &str, name: &str, notice: bool| NodeRow {
        drill: true,
        ..node(uid, name, notice)
    };
    for (uid, name) in [("n1", "g1"), ("n2", "g2")] {
        r.apply(
            &Fact::Node {
                key: uid.into(),
                row: Some(Arc::new(drilled(uid, name, true))),
            },
            t(5),
        );
        r.apply(
            &Fact::PreemptionSignal {
                key: format!("e-{uid}"),
                row: Some(Box::new(EventRow {
                    key: format!("e-{uid}"),
                    cluster: CLUSTER.into(),
                    object: format!("Node/{name}"),
                    reason: spotboard_core::labels::REASON_PREEMPTION_PENDING.into(),
                    last_seen: Some(t(5)),
                    drill: true,
                    ..Default::default()
                })),
            },
            t(5),
        );
    }
    let drills: Vec<&Write> = r
        .queued_writes()
        .filter(|w| matches!(w, Write::Drill { .. }))
        .collect();
    assert_eq!(drills.len(), 2, "{drills:?}");
    assert!(
        !r.queued_writes()
            .any(|w| matches!(w, Write::Preempting { .. })),
        "a drill is no preemption"
    );
    // n1: aborted (annotation and notice gone), then scaled down later; n2 deleted mid-drill.
    r.apply(
        &Fact::Node {
            key: "n1".into(),
            row: Some(Arc::new(node("n1", "g1", false))),
        },
        t(6),
    );
    r.apply(&removed("n1"), t(20));
    r.apply(&removed("n2"), t(20));
    r.settle(t(30));
    let mut e = ended(&r);
    e.sort();
    assert_eq!(
        e,
        vec![
            ("n1".to_string(), "scaled-down"),
            ("n2".to_string(), "drill")
        ]
    );
    assert!(
        !r.queued_writes()
            .any(|w| matches!(w, Write::Preempting { .. }))
    );
}

#[test]
fn a_launch_failure_event_is_queued_at_start_and_as_it_repeats_and_other_events_are_not() {
    let ice = |count: i32, at: i64| EventRow {
        key: "e1".into(),
        cluster: CLUSTER.into(),
        object: "NodeClaim/gpu-spot-b2x7k".into(),
        reason: spotboard_core::labels::KARPENTER_INSUFFICIENT_CAPACITY.into(),
        message: "NodeClaim gpu-spot-b2x7k event: insufficient capacity".into(),
        count,
        last_seen: Some(t(at)),
        ..Default::default()
    };
    let failures = |r: &Recorder| -> Vec<(u32, DateTime<Utc>)> {
        r.queued_writes()
            .filter_map(|w| match w {
                Write::LaunchFailure(f) => Some((f.count, f.last_seen)),
                _ => None,
            })
            .collect()
    };
    let mut r = Recorder::default();
    r.observe(
        &crate::hub::LedgerInputs {
            launch_failures: vec![ice(1, 5)],
            synced: [CLUSTER.to_string()].into(),
            ..Default::default()
        },
        t(10),
    );
    assert_eq!(failures(&r), vec![(1, t(5))]);
    let fact = |row: Option<EventRow>| Fact::LaunchFailureSignal {
        key: "e1".into(),
        row: row.map(Box::new),
    };
    assert!(r.apply(&fact(Some(ice(2, 8))), t(11)));
    // Kubernetes let it expire: the ledger keeps what it has; nothing more is written.
    assert!(r.apply(&fact(None), t(12)));
    assert_eq!(failures(&r), vec![(1, t(5)), (2, t(8))]);
    // A Karpenter event of another reason is no launch failure.
    let other = EventRow {
        reason: "DisruptionBlocked".into(),
        ..ice(1, 9)
    };
    assert!(r.apply(&fact(Some(other)), t(13)));
    assert_eq!(failures(&r).len(), 2);
}

/// Each departure from its own signal: Karpenter's disruption event, a CKS node sent to
/// triage, a pool at its target (no scale-down: deleted), each with its evidence.
#[test]
fn departures_are_told_apart_by_their_signals_with_evidence() {
    let mut r = started(vec![
        node("n1", "g1", false),
        node("n2", "g2", false),
        node("n3", "g3", false),
    ]);
    let disrupting = EventRow {
        key: "e1".into(),
        cluster: CLUSTER.into(),
        object: "Node/g1".into(),
        reason: "DisruptionTerminating".into(),
        message: "Disrupting Node: Underutilized/Delete".into(),
        ..Default::default()
    };
    r.apply(
        &Fact::DepartureSignal {
            key: "e1".into(),
            row: Some(Box::new(disrupting)),
        },
        t(5),
    );
    let triage = NodeRow {
        state: Some("triage".into()),
        ..node("n2", "g2", false)
    };
    r.apply(
        &Fact::Node {
            key: "n2".into(),
            row: Some(Arc::new(triage)),
        },
        t(5),
    );
    // The pool reaches its target; n3 goes minutes later: no scale-down under way.
    let steady = PoolRow {
        key: "p1".into(),
        cluster: CLUSTER.into(),
        name: "spot-a".into(),
        provider: spotboard_core::Provider::Cks,
        target_nodes: 3,
        current_nodes: Some(3),
        ..Default::default()
    };
    r.apply(
        &Fact::Pool {
            key: "p1".into(),
            row: Some(std::sync::Arc::new(steady)),
        },
        t(6),
    );
    for uid in ["n1", "n2"] {
        r.apply(&removed(uid), t(10));
    }
    r.settle(t(10) + END_GRACE);
    // Past the scale-down window of the pool's last shrinking (at t(0)): no scale-down.
    r.apply(&removed("n3"), t(200));
    r.settle(t(200) + END_GRACE);
    let got = ended_with_evidence(&r);
    assert_eq!(
        got,
        vec![
            (
                "n1".to_string(),
                "consolidated",
                "Karpenter DisruptionTerminating: Disrupting Node: Underutilized/Delete"
                    .to_string()
            ),
            (
                "n2".to_string(),
                "repaired",
                "node.coreweave.cloud/state=triage".to_string()
            ),
            (
                "n3".to_string(),
                "deleted",
                "no provider signal".to_string()
            ),
        ]
    );
}

/// The pool's status catches up with a scale-down before the node's removal is seen: still a
/// scale-down within the window, whether seen as a fact or found gone by a whole look.
#[test]
fn a_scale_down_whose_status_caught_up_first_is_still_one() {
    let mut r = started(vec![node("n1", "g1", false), node("n2", "g2", false)]);
    let at_target = PoolRow {
        key: "p1".into(),
        cluster: CLUSTER.into(),
        name: "spot-a".into(),
        provider: spotboard_core::Provider::Cks,
        target_nodes: 1,
        current_nodes: Some(1),
        ..Default::default()
    };
    r.apply(
        &Fact::Pool {
            key: "p1".into(),
            row: Some(std::sync::Arc::new(at_target.clone())),
        },
        t(5),
    );
    r.apply(&removed("n1"), t(6));
    r.settle(t(6) + END_GRACE);
    // A whole look finds n2 gone: the pool's last shrinking (t(0)) is kept across it.
    r.observe(
        &crate::hub::LedgerInputs {
            pools: vec![at_target],
            synced: [CLUSTER.to_string()].into(),
            ..Default::default()
        },
        t(30),
    );
    r.settle(t(30) + END_GRACE);
    let mut e = ended(&r);
    e.sort();
    assert_eq!(
        e,
        vec![
            ("n1".to_string(), "scaled-down"),
            ("n2".to_string(), "scaled-down")
        ]
    );
}

/// A disruption noted an hour and more before the node left is not why it left (a node
/// Karpenter kept, or a later one under the same name).
#[test]
fn an_old_disruption_does_not_decide_a_later_departure() {
    let mut r = started(vec![node("n1", "g1", false)]);
    let old = EventRow {
        key: "e1".into(),
        cluster: CLUSTER.into(),
        object: "Node/g1".into(),
        reason: "DisruptionTerminating".into(),
        message: "Disrupting Node: Drifted/Replace".into(),
        last_seen: Some(t(0)),
        ..Default::default()
    };
    r.apply(
        &Fact::DepartureSignal {
            key: "e1".into(),
            row: Some(Box::new(old)),
        },
        t(1),
    );
    r.apply(&removed("n1"), t(7200));
    r.settle(t(7200) + END_GRACE);
    assert_eq!(ended(&r), vec![("n1".to_string(), "deleted")]);
}

/// A node cordoned after it stopped being Ready and gone still not Ready is a repair (GKE
/// auto-repair's drain); a cordon before the NotReady (a drain, then a shutdown), a cordon
/// after Ready came back, and a node first seen already both are not.
#[test]
fn a_cordon_after_not_ready_is_a_repair_and_a_cordon_before_it_is_not() {
    let state = |uid: &str, name: &str, ready: bool, changed: i64, cordoned: bool| NodeRow {
        ready: Some(ready),
        ready_changed: Some(t(changed)),
        cordoned,
        ..node(uid, name, false)
    };
    let mut r = started(vec![
        state("r1", "g1", true, -100, false),
        state("r2", "g2", true, -100, false),
        state("r3", "g3", true, -100, false),
        state("r4", "g4", false, -50, true),
    ]);
    // The pool at its target: nothing leaves by a scale-down.
    let steady = PoolRow {
        key: "p1".into(),
        cluster: CLUSTER.into(),
        name: "spot-a".into(),
        provider: spotboard_core::Provider::Cks,
        target_nodes: 4,
        current_nodes: Some(4),
        ..Default::default()
    };
    r.apply(
        &Fact::Pool {
            key: "p1".into(),
            row: Some(std::sync::Arc::new(steady)),
        },
        t(1),
    );
    let seen = |r: &mut Recorder, row: NodeRow, at: i64| {
        r.apply(
            &Fact::Node {
                key: row.key.clone(),
                row: Some(Arc::new(row)),
            },
            t(at),
        );
    };
    // r1: the kubelet stops at t(10); the repair drains it at t(300).
    seen(&mut r, state("r1", "g1", false, 10, false), 20);
    seen(&mut r, state("r1", "g1", false, 10, true), 300);
    // r2: drained first, then shut down.
    seen(&mut r, state("r2", "g2", true, -100, true), 20);
    seen(&mut r, state("r2", "g2", false, 60, true), 70);
    // r3: not Ready a while, Ready again, then cordoned, then not Ready.
    seen(&mut r, state("r3", "g3", false, 10, false), 20);
    seen(&mut r, state("r3", "g3", true, 30, false), 30);
    seen(&mut r, state("r3", "g3", true, 30, true), 40);
    seen(&mut r, state("r3", "g3", false, 50, true), 50);
    // Later changes of each (a taint, a label) while they stay as they are.
    for (uid, name, changed) in [("r2", "g2", 60), ("r3", "g3", 50), ("r4", "g4", -50)] {
        seen(&mut r, state(uid, name, false, changed, true), 200);
    }
    for uid in ["r1", "r2", "r3", "r4"] {
        r.apply(&removed(uid), t(400));
    }
    r.settle(t(400) + END_GRACE);
    let got = ended_with_evidence(&r);
    let since = t(10).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(
        got,
        vec![
            (
                "r1".to_string(),
                "repaired",
                format!(
                    "not Ready since {since} (6 min before it left), cordoned after: a repair's drain"
                )
            ),
            (
                "r2".to_string(),
                "deleted",
                "no provider signal".to_string()
            ),
            (
                "r3".to_string(),
                "deleted",
                "no provider signal".to_string()
            ),
            (
                "r4".to_string(),
                "deleted",
                "no provider signal".to_string()
            ),
        ]
    );
}

/// The queue goes out [`WRITES_PER_COMMIT`] writes to a commit. A write the database refuses
/// rolls its whole batch back: the batch stays queued, nothing of it half written, and goes
/// through once the database takes it again; the batches before it stay committed.
#[tokio::test]
async fn the_queue_is_committed_in_batches_and_a_refused_batch_stays_queued_whole() {
    let ledger = Ledger::open("sqlite::memory:").await.unwrap();
    let mut r = started(Vec::new());
    let nodes = WRITES_PER_COMMIT + 500;
    for i in 0..nodes {
        let uid = format!("n{i}");
        let row = node(&uid, &format!("node-{i}"), false);
        r.apply(
            &Fact::Node {
                key: uid.as_str().into(),
                row: Some(Arc::new(row)),
            },
            t(1),
        );
    }
    // Queued after every node: in the second batch.
    r.apply(&pool_with(vec![capacity("Sufficient", Some(t(1)))]), t(1));
    assert_eq!(
        r.queued(),
        nodes + 1,
        "a start per node, then the condition"
    );
    let lifetimes =
        |l: Ledger| async move { l.between(t(-1_000_000), t(1_000_000)).await.unwrap().len() };

    sqlx::query("ALTER TABLE pool_conditions RENAME TO away")
        .execute(&ledger.pool)
        .await
        .unwrap();
    assert!(
        r.step(&ledger, t(2)).await.is_err(),
        "the condition is refused"
    );
    assert_eq!(
        r.queued(),
        nodes + 1 - WRITES_PER_COMMIT,
        "the second batch, whole"
    );
    assert_eq!(lifetimes(ledger.clone()).await, WRITES_PER_COMMIT);

    sqlx::query("ALTER TABLE away RENAME TO pool_conditions")
        .execute(&ledger.pool)
        .await
        .unwrap();
    r.step(&ledger, t(3)).await.unwrap();
    assert_eq!(r.queued(), 0);
    assert_eq!(lifetimes(ledger.clone()).await, nodes);
    let conditions = ledger
        .conditions_of(CLUSTER, "spot-a", t(-10), t(10))
        .await
        .unwrap();
    assert_eq!(conditions.len(), 1);
}
