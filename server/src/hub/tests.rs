use super::*;
use spotboard_core::model::{Change, RowKind};

pub(super) fn pool_rec(uid: &str, name: &str) -> PoolRecord {
    PoolRecord {
        uid: uid.into(),
        name: name.into(),
        generation: Some(1),
        created: None,
        fallback_for: Vec::new(),
        parsed: Ok((
            serde_json::from_value(serde_json::json!({"instanceType": "gd-8xa100-i128", "targetNodes": 2, "computeClass": "spot"})).unwrap(),
            Default::default(),
        )),
    }
}

pub(super) fn node_rec(uid: &str, name: &str, pool: &str) -> NodeRecord {
    NodeRecord {
        uid: uid.into(),
        name: name.into(),
        pool: Some(pool.into()),
        ..Default::default()
    }
}

pub(super) fn hub() -> Hub {
    Hub::new(&[("zone-a".into(), Some("US-EAST-04A".into()))])
}

pub(super) fn drain(rx: &mut broadcast::Receiver<Arc<Published>>) -> Vec<Delta> {
    drain_for(rx, None)
}

/// The deltas a subscriber of `scope` receives (every delta with `None`).
pub(super) fn drain_for(
    rx: &mut broadcast::Receiver<Arc<Published>>,
    scope: Option<&Scope>,
) -> Vec<Delta> {
    let mut out = Vec::new();
    while let Ok(p) = rx.try_recv() {
        if scope.is_none_or(|s| p.wanted_by(s)) {
            out.push(Hub::decode(&p).unwrap());
        }
    }
    out
}

/// Applies `deltas` of one kind to `rows` by the browser store's rule: a patch for a row the
/// store does not hold is an error (the tab would reload its snapshot).
pub(super) fn apply_as_a_tab(
    rows: &mut std::collections::HashMap<String, serde_json::Value>,
    deltas: &[Delta],
) -> Result<(), String> {
    for d in deltas {
        match &d.change {
            Change::Add(v) => {
                rows.insert(d.key.clone(), v.clone());
            }
            Change::Patch(_) if !rows.contains_key(&d.key) => {
                return Err(format!("patch for unknown row {}", d.key));
            }
            Change::Patch(_) => {}
            Change::Remove => {
                rows.remove(&d.key);
            }
        }
    }
    Ok(())
}

#[test]
fn a_cordon_sends_a_node_patch_and_a_pool_patch_only() {
    let hub = hub();
    hub.pools(
        "zone-a",
        Observed::Resync(vec![pool_rec("p1", "spot-a"), pool_rec("p2", "spot-b")]),
    );
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![
            node_rec("n1", "g1", "spot-a"),
            node_rec("n2", "g2", "spot-b"),
        ]),
    );
    let mut sub = hub.subscribe(&Scope::pool("zone-a", "spot-a"), None);
    let Start::Snapshot(snap) = sub.start else {
        panic!("expected a snapshot")
    };
    assert_eq!(snap.pools.len(), 1, "only the scoped pool's row");
    assert_eq!(snap.nodes.len(), 1, "only the scoped pool's nodes");
    assert_eq!(snap.pools[0].zone.as_deref(), Some("US-EAST-04A"));

    let mut cordoned = node_rec("n1", "g1", "spot-a");
    cordoned.cordoned = true;
    hub.nodes("zone-a", Observed::Apply(cordoned));
    let deltas = drain(&mut sub.rx);
    assert_eq!(
        deltas.len(),
        1,
        "the pool's counts wait for the flush: {deltas:?}"
    );
    let node = &deltas[0];
    assert_eq!(node.kind, RowKind::Node);
    assert_eq!(node.key, "n1");
    assert_eq!(
        node.change,
        Change::Patch(serde_json::json!({"cordoned": true}))
    );
    assert!(node.rev > snap.rev);
    hub.flush();
    let deltas = drain(&mut sub.rx);
    assert_eq!(deltas.len(), 1, "{deltas:?}");
    assert_eq!(deltas[0].kind, RowKind::Pool);
    assert_eq!(deltas[0].key, "p1");
    assert_eq!(
        deltas[0].change,
        Change::Patch(serde_json::json!({"nodes_cordoned": 1}))
    );

    // The same state again publishes nothing.
    let mut same = node_rec("n1", "g1", "spot-a");
    same.cordoned = true;
    hub.nodes("zone-a", Observed::Apply(same));
    assert!(drain(&mut sub.rx).is_empty());
}

#[test]
fn pods_count_on_their_node_and_resync_removes_what_is_gone() {
    let hub = hub();
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![node_rec("n1", "g1", "spot-a")]),
    );
    let pod = |uid: &str| PodRecord {
        uid: uid.into(),
        node: Some("g1".into()),
        ..Default::default()
    };
    hub.pods(
        "zone-a",
        Observed::Resync(vec![pod("a"), pod("b"), pod("c")]),
    );
    let snap = hub.snapshot(&Scope::pool("zone-a", "spot-a"));
    assert_eq!(snap.nodes[0].pods, 3);
    hub.pods("zone-a", Observed::Delete("a".into()));
    assert_eq!(
        hub.snapshot(&Scope::pool("zone-a", "spot-a")).nodes[0].pods,
        2,
        "a pod's delete counts at once"
    );
    hub.pods("zone-a", Observed::Resync(vec![pod("b")]));
    assert_eq!(
        hub.snapshot(&Scope::pool("zone-a", "spot-a")).nodes[0].pods,
        1
    );
    hub.nodes("zone-a", Observed::Resync(vec![]));
    assert!(
        hub.snapshot(&Scope::pool("zone-a", "spot-a"))
            .nodes
            .is_empty()
    );
}

#[test]
fn resume_replays_missed_deltas_in_scope_or_falls_back_to_a_snapshot() {
    let hub = hub();
    hub.pools("zone-a", Observed::Apply(pool_rec("p1", "spot-a")));
    let rev = hub.snapshot(&Scope::pools()).rev;
    hub.nodes("zone-a", Observed::Apply(node_rec("n1", "g1", "spot-a")));
    hub.pools("zone-a", Observed::Apply(pool_rec("p2", "spot-b")));
    match hub.subscribe(&Scope::pools(), Some(rev)).start {
        Start::Replay(r) => {
            let kinds: Vec<_> = r.iter().map(|p| p.kind).collect();
            assert_eq!(
                kinds,
                [RowKind::Pool],
                "the node delta is out of the pools scope"
            );
            assert!(r[0].rev > rev);
        }
        Start::Snapshot(_) => panic!("expected a replay"),
    }
    assert!(matches!(
        hub.subscribe(&Scope::pools(), Some(10_000)).start,
        Start::Snapshot(_)
    ));
    let now = hub.snapshot(&Scope::pools()).rev;
    assert!(
        matches!(hub.subscribe(&Scope::pools(), Some(now)).start, Start::Replay(ref r) if r.is_empty())
    );
}

#[test]
fn stale_keeps_the_time_of_the_last_good_data() {
    let hub = hub();
    // Apart by more than the clock's resolution, so "unchanged since the hub started" and
    // "now, at the outage" both fall outside [before, after_good].
    std::thread::sleep(std::time::Duration::from_millis(20));
    let before = Utc::now();
    hub.pools("zone-a", Observed::Resync(vec![]));
    let after_good = Utc::now();
    std::thread::sleep(std::time::Duration::from_millis(20));
    hub.set_link(
        "zone-a",
        LinkState::Stale,
        Some("connection refused".into()),
    );
    let row = hub.snapshot(&Scope::pools()).clusters[0].clone();
    assert_eq!(row.state, LinkState::Stale);
    let since = row.since.expect("a stale cluster says since when");
    assert!(
        before <= since && since <= after_good,
        "since {since} is not the time of the last good data ({before} ..= {after_good})"
    );
    assert_eq!(row.message.as_deref(), Some("connection refused"));
    hub.set_link("zone-a", LinkState::Live, None);
    assert_eq!(
        hub.snapshot(&Scope::pools()).clusters[0].state,
        LinkState::Live
    );
}

#[test]
fn events_about_a_deleted_node_keep_its_pool() {
    let hub = hub();
    hub.nodes("zone-a", Observed::Apply(node_rec("n1", "g1", "spot-a")));
    hub.nodes("zone-a", Observed::Delete("n1".into()));
    hub.events(
        "zone-a",
        Observed::Apply(EventRecord {
            uid: "e1".into(),
            kind: "Node".into(),
            object_name: "g1".into(),
            type_: "Warning".into(),
            reason: "Deleted for preemption".into(),
            ..Default::default()
        }),
    );
    let snap = hub.snapshot(&Scope::pool("zone-a", "spot-a"));
    assert_eq!(snap.events.len(), 1);
    assert_eq!(snap.events[0].pool.as_deref(), Some("spot-a"));
}

/// The event watch and the node watch have no order between them: an event about a node
/// that is not listed yet gets its pool once the node arrives, and a pool page that was
/// open all along receives the whole row (a patch would be for a row it never had: the tab
/// would drop its deltas and reload; CI caught a pool page reconnecting mid-test so).
#[test]
fn an_event_seen_before_its_node_gets_the_pool_when_the_node_arrives() {
    let hub = hub();
    let mut rx = hub.inner.tx.subscribe();
    let page = Scope::pool("zone-a", "spot-a");
    let mut page_sub = hub.subscribe(&page, None);
    let Start::Snapshot(snap) = page_sub.start else {
        panic!("expected a snapshot")
    };
    assert!(snap.events.is_empty());
    let event = |uid: &str| EventRecord {
        uid: uid.into(),
        kind: "Node".into(),
        object_name: "g1".into(),
        type_: "Warning".into(),
        reason: "Preemption pending".into(),
        ..Default::default()
    };
    hub.events("zone-a", Observed::Apply(event("e1")));
    hub.events("zone-a", Observed::Apply(event("e2")));
    hub.events("zone-a", Observed::Delete("e2".into()));
    assert!(
        hub.snapshot(&Scope::pool("zone-a", "spot-a"))
            .events
            .is_empty()
    );
    drain(&mut rx);

    hub.nodes("zone-a", Observed::Apply(node_rec("n1", "g1", "spot-a")));
    let snap = hub.snapshot(&Scope::pool("zone-a", "spot-a"));
    assert_eq!(snap.events.len(), 1, "e1 only: e2 was deleted before");
    assert_eq!(snap.events[0].pool.as_deref(), Some("spot-a"));
    let event_deltas: Vec<_> = drain(&mut rx)
        .into_iter()
        .filter(|d| d.kind == RowKind::Event)
        .collect();
    // e1 leaves "no pool" and joins spot-a: a removal (for nobody's pool) and an addition.
    assert_eq!(event_deltas.len(), 2, "{event_deltas:?}");
    assert!(event_deltas.iter().all(|d| d.key == "e1"));
    assert_eq!(event_deltas[0].change, Change::Remove);
    assert!(matches!(event_deltas[1].change, Change::Add(_)));

    // The pool page's stream: e1 whole, which its store can hold.
    let page_events: Vec<Delta> = drain_for(&mut page_sub.rx, Some(&page))
        .into_iter()
        .filter(|d| d.kind == RowKind::Event)
        .collect();
    let mut held = std::collections::HashMap::new();
    apply_as_a_tab(&mut held, &page_events).expect("every delta applies");
    assert_eq!(held.len(), 1, "{page_events:?}");
    assert_eq!(held["e1"]["pool"], "spot-a");

    // The node's next change re-projects nothing more.
    hub.nodes("zone-a", Observed::Apply(node_rec("n1", "g1", "spot-a")));
    assert!(drain(&mut rx).iter().all(|d| d.kind != RowKind::Event));
}

#[test]
fn a_burst_of_cordons_sends_one_pool_patch_per_window_but_pool_changes_go_at_once() {
    let hub = hub();
    hub.pools("zone-a", Observed::Resync(vec![pool_rec("p1", "spot-a")]));
    let nodes: Vec<_> = (0..5)
        .map(|i| node_rec(&format!("n{i}"), &format!("g{i}"), "spot-a"))
        .collect();
    hub.nodes("zone-a", Observed::Resync(nodes.clone()));
    hub.flush();
    let mut sub = hub.subscribe(&Scope::pools(), None);
    for mut n in nodes {
        n.cordoned = true;
        hub.nodes("zone-a", Observed::Apply(n));
    }
    hub.flush();
    // At most one publication at once and one at the flush, whatever the machine's speed
    // (the window may or may not have passed since the re-list); never one per node.
    let deltas: Vec<Delta> = drain(&mut sub.rx)
        .into_iter()
        .filter(|d| d.kind == RowKind::Pool)
        .collect();
    assert!((1..=2).contains(&deltas.len()), "{deltas:?}");
    assert_eq!(
        deltas.last().unwrap().change,
        Change::Patch(serde_json::json!({"nodes_cordoned": 5})),
        "the last patch carries the final count"
    );
    // A change to the pool itself is not held back.
    let mut changed = pool_rec("p1", "spot-a");
    changed.generation = Some(2);
    hub.pools("zone-a", Observed::Apply(changed));
    let now: Vec<Delta> = drain(&mut sub.rx);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].kind, RowKind::Pool);
}

#[test]
fn gke_nodes_make_a_pool_that_lives_and_dies_with_them() {
    use spotboard_core::{CapacityType, Provider};
    let hub = Hub::new(&[("gke".into(), None)]);
    let gke = |uid: &str, notice: bool| NodeRecord {
        provider: Provider::Gke,
        capacity: CapacityType::Spot,
        zone: Some("us-central1-a".into()),
        ready: Some(true),
        notice,
        ..node_rec(uid, uid, "spot-l4")
    };
    let mut rx = hub.subscribe(&Scope::pools(), None).rx;
    hub.nodes(
        "gke",
        Observed::Resync(vec![gke("a", false), gke("b", false)]),
    );
    let rows = hub.pool_rows();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].key, "gke:gke:spot-l4");
    assert_eq!(
        (rows[0].provider.as_str(), rows[0].capacity_type.as_str()),
        ("gke", "spot")
    );
    assert_eq!(rows[0].current_nodes, Some(2));
    drain(&mut rx);

    // A notice on one node patches the pool row's preempting count (at the next flush: pool
    // aggregates are coalesced like a CKS pool's).
    hub.nodes("gke", Observed::Apply(gke("a", true)));
    hub.flush();
    let deltas = drain(&mut rx);
    assert!(
        deltas
            .iter()
            .any(|d| d.kind == RowKind::Pool && d.key == "gke:gke:spot-l4"),
        "{deltas:?}"
    );
    assert_eq!(hub.pool_rows()[0].nodes_preempting, 1);

    // The last node gone, the pool is gone, with a delete delta.
    hub.nodes("gke", Observed::Resync(vec![]));
    hub.flush();
    assert!(hub.pool_rows().is_empty());
    assert!(
        drain(&mut rx)
            .iter()
            .any(|d| d.kind == RowKind::Pool && matches!(d.change, Change::Remove))
    );
}

#[test]
fn a_karpenter_taint_is_a_preemption_only_with_spot_interrupted() {
    use crate::watch::records::EventRecord;
    use spotboard_core::{CapacityType, Provider};
    let hub = Hub::new(&[("aws".into(), None)]);
    // The disruption taint alone (consolidation looks the same): not a preemption.
    let tainted = NodeRecord {
        provider: Provider::Karpenter,
        capacity: CapacityType::Spot,
        notice: true,
        ready: Some(true),
        ..node_rec("n1", "ip-10-0-1-1", "spot-general")
    };
    hub.nodes("aws", Observed::Resync(vec![tainted]));
    hub.flush();
    let notice = |hub: &Hub| hub.ledger_inputs().nodes[0].notice;
    assert!(!notice(&hub));
    assert_eq!(hub.pool_rows()[0].nodes_preempting, 0);
    // Karpenter's interruption event on the node makes it one.
    hub.events(
        "aws",
        Observed::Apply(EventRecord {
            uid: "e1".into(),
            kind: "Node".into(),
            object_name: "ip-10-0-1-1".into(),
            type_: "Warning".into(),
            reason: "SpotInterrupted".into(),
            message: "Spot interruption warning was triggered".into(),
            count: 1,
            last_seen: None,
            drill: false,
            ..Default::default()
        }),
    );
    hub.flush();
    assert!(notice(&hub));
    assert_eq!(hub.pool_rows()[0].nodes_preempting, 1);
}

#[test]
fn a_nodes_capacity_type_and_notice_are_derived_once_in_its_row() {
    let hub = hub();
    hub.pools("zone-a", Observed::Resync(vec![pool_rec("p1", "spot-a")]));
    let mut draining = node_rec("n2", "g2", "spot-a");
    draining.evicted_at = Some("2026-11-23T10:00:00Z".into());
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![node_rec("n1", "g1", "spot-a"), draining]),
    );
    hub.flush();
    let snap = hub.snapshot(&Scope::pool("zone-a", "spot-a"));
    let row = |k: &str| snap.nodes.iter().find(|n| n.key == k).unwrap().clone();
    // A CKS node has no capacity-type label: its NodePool's computeClass says spot.
    assert_eq!(row("n1").capacity_type, spotboard_core::CapacityType::Spot);
    assert!(!row("n1").notice);
    // A drain under way is still the notice window, for the row, the pool count and the
    // ledger alike.
    assert!(row("n2").notice);
    assert_eq!(snap.pools[0].nodes_preempting, 1);
}

/// A follower sees every change, in order, as typed rows: a node under notice for less time
/// than any timer (cordoned and deleted between two looks) is still seen under notice.
#[test]
fn a_follower_sees_every_node_change_even_a_brief_notice() {
    let hub = hub();
    hub.pools("zone-a", Observed::Resync(vec![pool_rec("p1", "spot-a")]));
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![node_rec("n1", "g1", "spot-a")]),
    );
    let mut following = hub.follow();
    assert_eq!(following.initial.nodes.len(), 1);
    assert!(!following.initial.nodes[0].notice);
    let noticed = NodeRecord {
        notice: true,
        pending_preemption: true,
        cordoned: true,
        ..node_rec("n1", "g1", "spot-a")
    };
    hub.nodes("zone-a", Observed::Apply(noticed));
    hub.nodes("zone-a", Observed::Delete("n1".into()));
    let mut seen = Vec::new();
    while let Ok(f) = following.rx.try_recv() {
        match &*f {
            Fact::Node { key, row } => seen.push((key.clone(), row.as_ref().map(|r| r.notice))),
            other => panic!("only node facts expected: {other:?}"),
        }
    }
    assert_eq!(
        seen,
        vec![("n1".to_string(), Some(true)), ("n1".to_string(), None)],
        "the notice, then the removal"
    );
}

/// The facts buffer grows with the clusters: a follower of a two-cluster hub may fall
/// further behind than one of a one-cluster hub before it must start again.
#[test]
fn a_follower_may_fall_behind_by_a_buffer_per_cluster() {
    let behind = |hub: &Hub| {
        hub.pools("zone-a", Observed::Resync(vec![pool_rec("p1", "spot-a")]));
        hub.nodes(
            "zone-a",
            Observed::Resync(vec![node_rec("n1", "g1", "spot-a")]),
        );
        let mut following = hub.follow();
        // One fact per change: the node flips between cordoned and not.
        for i in 0..FACTS_BUFFER + 10 {
            let flip = NodeRecord {
                cordoned: i % 2 == 0,
                ..node_rec("n1", "g1", "spot-a")
            };
            hub.nodes("zone-a", Observed::Apply(flip));
        }
        following.rx.try_recv().err()
    };
    assert!(
        matches!(
            behind(&hub()),
            Some(broadcast::error::TryRecvError::Lagged(_))
        ),
        "one cluster: {FACTS_BUFFER} facts at most"
    );
    let two = Hub::new(&[("zone-a".into(), None), ("zone-b".into(), None)]);
    assert_eq!(behind(&two), None, "two clusters: twice as many");
    assert_eq!(facts_buffer(0), FACTS_BUFFER);
    assert_eq!(facts_buffer(20), 20 * FACTS_BUFFER);
}

/// Facts are made only while someone follows, and a cluster that finishes listing is
/// announced once.
#[test]
fn facts_are_made_for_followers_and_a_listed_cluster_is_announced_once() {
    let hub = hub();
    hub.pools("zone-a", Observed::Resync(vec![pool_rec("p1", "spot-a")]));
    let mut following = hub.follow();
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![node_rec("n1", "g1", "spot-a")]),
    );
    hub.pods("zone-a", Observed::Resync(vec![]));
    hub.events("zone-a", Observed::Resync(vec![]));
    hub.events("zone-a", Observed::Resync(vec![]));
    let mut synced = 0;
    let mut nodes = 0;
    while let Ok(f) = following.rx.try_recv() {
        match &*f {
            Fact::Synced { cluster } => {
                assert_eq!(cluster, "zone-a");
                synced += 1;
            }
            Fact::Node { .. } => nodes += 1,
            _ => {}
        }
    }
    assert_eq!((synced, nodes), (1, 1));
    drop(following);
    let mut later = NodeRecord {
        cordoned: true,
        ..node_rec("n1", "g1", "spot-a")
    };
    hub.nodes("zone-a", Observed::Apply(later.clone()));
    let following = hub.follow();
    assert!(
        following.initial.nodes[0].cordoned,
        "the change is in the hub"
    );
    later.cordoned = false;
    hub.nodes("zone-a", Observed::Apply(later));
    assert_eq!(
        following.rx.len(),
        1,
        "one fact for the one change after following"
    );
}

#[test]
fn pods_past_their_grace_period_are_known_by_node_until_they_go() {
    let hub = Hub::new(&[("zone-a".into(), None)]);
    let now = Utc::now();
    let pod = |uid: &str, node: &str, ends: Option<i64>| PodRecord {
        uid: uid.into(),
        node: Some(node.into()),
        grace_ends: ends.map(|s| now + chrono::Duration::seconds(s)),
        ..Default::default()
    };
    hub.pods(
        "zone-a",
        Observed::Resync(vec![
            pod("late", "g1", Some(-5)),
            pod("in-grace", "g1", Some(30)),
            pod("running", "g1", None),
            pod("elsewhere", "g2", Some(-5)),
        ]),
    );
    let late = |hub: &Hub| {
        let mut v: Vec<((String, String), Vec<String>)> =
            hub.pods_past_grace(now).into_iter().collect();
        v.sort();
        v
    };
    let at = |node: &str, uid: &str| {
        (
            ("zone-a".to_string(), node.to_string()),
            vec![uid.to_string()],
        )
    };
    assert_eq!(late(&hub), [at("g1", "late"), at("g2", "elsewhere")]);
    hub.pods("zone-a", Observed::Delete("late".into()));
    assert_eq!(late(&hub), [at("g2", "elsewhere")]);
    // A pod seen terminating and then not (a namesake's record) is no longer counted.
    hub.pods("zone-a", Observed::Apply(pod("elsewhere", "g2", None)));
    assert!(late(&hub).is_empty());
}

/// Scheduling events about a waiting pod come with it, newest first, and make no event row
/// of their own; an event about a pod that does not wait is kept but shown nowhere, and a
/// deleted one goes.
#[test]
fn a_waiting_pods_scheduling_events_come_with_it_and_make_no_rows() {
    let hub = hub();
    let waiting = PodRecord {
        uid: "p1".into(),
        pending: Some(Box::new(crate::watch::records::PendingRecord {
            namespace: "ml".into(),
            name: "train-0".into(),
            ..Default::default()
        })),
        ..Default::default()
    };
    hub.pods("zone-a", Observed::Resync(vec![waiting]));
    let at =
        |m: u32| Some(chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 11, 28, 9, m, 0).unwrap());
    let event = |uid: &str, name: &str, source: &str, reason: &str, m: u32| EventRecord {
        uid: uid.into(),
        kind: "Pod".into(),
        namespace: "ml".into(),
        object_name: name.into(),
        source: source.into(),
        type_: "Warning".into(),
        reason: reason.into(),
        message: format!("{reason} at {m}"),
        count: 1,
        last_seen: at(m),
        ..Default::default()
    };
    hub.events(
        "zone-a",
        Observed::Resync(vec![
            event("e1", "train-0", "default-scheduler", "FailedScheduling", 1),
            event("e2", "train-0", "karpenter", "FailedScheduling", 5),
            event("e3", "other", "default-scheduler", "FailedScheduling", 3),
        ]),
    );
    let got = hub.waiting(None);
    assert_eq!(got.len(), 1);
    let sources: Vec<&str> = got[0].events.iter().map(|e| e.source.as_str()).collect();
    assert_eq!(sources, ["karpenter", "default-scheduler"]);
    assert!(hub.snapshot(&Scope::pools()).events.is_empty());
    hub.events("zone-a", Observed::Delete("e2".into()));
    assert_eq!(hub.waiting(None)[0].events.len(), 1);
}

/// A pool's node names, as the pool page's utilisation reads them: its own nodes only, and
/// none for a cluster the hub does not hold.
#[test]
fn node_names_are_the_pools_own() {
    let hub = hub();
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![
            node_rec("n1", "g1", "spot-a"),
            node_rec("n2", "g2", "spot-a"),
            node_rec("n3", "g3", "spot-b"),
        ]),
    );
    let mut names = hub.node_names("zone-a", "spot-a");
    names.sort();
    assert_eq!(names, ["g1", "g2"]);
    assert!(hub.node_names("zone-x", "spot-a").is_empty());
}
