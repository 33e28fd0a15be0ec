//! The rows the server's producers publish (preemptions, waves, rates, audits, alerts) and
//! the streams that count as their viewers.

use super::tests::{apply_as_a_tab, drain, drain_for, hub};
use super::*;
use spotboard_core::model::{Change, PreemptionView, RowKind, UndeliveredAlert, Wave};

fn preemption(uid: &str, pool: &str, removed: bool) -> PreemptionView {
    use spotboard_core::domain::preemption::{
        Provider,
        timeline::{Phase, Timeline},
    };
    let t0 = Utc::now();
    let phase = |name: &str, observed| Phase {
        name: name.into(),
        planned: t0,
        observed,
    };
    PreemptionView {
        cluster: "zone-a".into(),
        node: format!("node-{uid}"),
        uid: uid.into(),
        pool: Some(pool.into()),
        zone: None,
        instance_type: None,
        capacity_type: spotboard_core::CapacityType::Spot,
        timeline: Timeline {
            provider: Provider::Cks,
            t0,
            phases: vec![
                phase("notice", Some(t0)),
                phase("draining", None),
                phase("removed", removed.then_some(t0)),
            ],
        },
        pods: None,
        pods_error: None,
        evictions: Vec::new(),
        drill: false,
    }
}

#[test]
fn preemption_rows_are_published_once_per_change_and_only_where_wanted() {
    let hub = hub();
    let mut rx = hub.inner.tx.subscribe();
    let a = preemption("u1", "spot-a", false);
    let b = preemption("u2", "spot-b", false);
    hub.publish(vec![a.clone(), b.clone()]);
    let first = drain(&mut rx);
    assert_eq!(first.len(), 2);
    assert!(first.iter().all(|d| d.kind == RowKind::Preemption));

    // The same rows again: nothing to say.
    hub.publish(vec![a.clone(), b.clone()]);
    assert!(drain(&mut rx).is_empty(), "an unchanged row is not re-sent");

    // One node is removed: one patch, for that row only; the other row leaves.
    let a_removed = preemption("u1", "spot-a", true);
    let a_removed = PreemptionView {
        timeline: spotboard_core::domain::preemption::timeline::Timeline {
            t0: a.timeline.t0,
            ..a_removed.timeline
        },
        ..a_removed
    };
    hub.publish(vec![a_removed]);
    let changes = drain(&mut rx);
    assert_eq!(changes.len(), 2, "{changes:?}");
    assert!(
        changes
            .iter()
            .any(|d| d.key == "u1" && matches!(d.change, Change::Patch(_)))
    );
    assert!(
        changes
            .iter()
            .any(|d| d.key == "u2" && d.change == Change::Remove)
    );

    // Scopes: the dashboard gets none, a pool page its pool's, /preemptions all.
    hub.publish(vec![a.clone(), b.clone()]);
    assert!(hub.snapshot(&Scope::pools()).preemptions.is_empty());
    let pool_a = hub.snapshot(&Scope::pool("zone-a", "spot-a")).preemptions;
    assert_eq!(
        pool_a.iter().map(|p| p.uid.as_str()).collect::<Vec<_>>(),
        ["u1"]
    );
    assert_eq!(hub.snapshot(&Scope::preemptions()).preemptions.len(), 2);
    let replayed = hub
        .inner
        .state
        .read()
        .unwrap()
        .views
        .replay(&Scope::pool("zone-a", "spot-b"), 0);
    let replayed = replayed.expect("the ring reaches back to revision 0");
    let wanted: Vec<String> = replayed
        .iter()
        .filter(|p| p.kind == RowKind::Preemption)
        .map(|p| Hub::decode(p).unwrap().key)
        .collect();
    assert!(
        wanted.iter().any(|k| k == "u2"),
        "the pool page gets its own pool's preemption"
    );
    assert!(
        wanted.iter().all(|k| k != "u1"),
        "and not other pools' preemptions"
    );
}

#[test]
fn rates_and_alerts_go_to_the_preemptions_page_only() {
    use spotboard_core::domain::capacity::score::Band;
    use spotboard_core::domain::preemption::rates::{RateBy, RateRow, Window};
    let hub = hub();
    hub.publish(vec![RateRow {
        by: RateBy::Pool,
        key: "zone-a/spot-a".into(),
        window: Window::Last24h,
        preemptions: 1,
        spot_nodes: 4,
        rate_pct: 25.0,
        band: Band::Above20,
        ..Default::default()
    }]);
    hub.publish(vec![UndeliveredAlert {
        cluster: "zone-a".into(),
        destination: "https://hooks.example".into(),
        ..Default::default()
    }]);
    let all = hub.snapshot(&Scope::preemptions());
    assert_eq!((all.rates.len(), all.alerts.len()), (1, 1));
    let pool = hub.snapshot(&Scope::pool("zone-a", "spot-a"));
    assert_eq!((pool.rates.len(), pool.alerts.len()), (0, 0));
}

/// An audit every 15 s sends the clusters' rows (their time) and only the pools whose
/// findings changed; a pool page gets its own pool's audit and no other.
#[test]
fn an_audit_sends_only_the_pools_that_changed_and_each_where_wanted() {
    use spotboard_core::model::{ClusterAudit, PoolReadiness};
    let hub = hub();
    let audit = || ClusterAudit {
        cluster: "zone-a".into(),
        generated_at: Some(Utc::now()),
        errors: Vec::new(),
    };
    let pool = |name: &str, pods: u32| PoolReadiness {
        cluster: "zone-a".into(),
        pool: name.into(),
        nodes: 2,
        pods,
        ..Default::default()
    };
    hub.publish(vec![audit()]);
    hub.publish(vec![pool("spot-a", 4), pool("spot-b", 6)]);
    let page = hub.snapshot(&Scope::pool("zone-a", "spot-a"));
    assert_eq!(page.audits.len(), 1);
    assert_eq!(
        page.pool_audits
            .iter()
            .map(|p| p.pool.as_str())
            .collect::<Vec<_>>(),
        ["spot-a"],
        "a pool page gets its own pool's audit"
    );
    let all = hub.snapshot(&Scope::preemptions());
    assert_eq!(all.pool_audits.len(), 2);
    assert_eq!(hub.snapshot(&Scope::pools()).pool_audits.len(), 0);

    let mut rx = hub.subscribe(&Scope::preemptions(), None).rx;
    hub.publish(vec![audit()]);
    hub.publish(vec![pool("spot-a", 4), pool("spot-b", 7)]);
    let sent: Vec<(RowKind, String)> = drain(&mut rx)
        .into_iter()
        .map(|d| (d.kind, d.key))
        .collect();
    assert_eq!(
        sent,
        [
            (RowKind::Audit, "zone-a".to_string()),
            (RowKind::PoolAudit, "zone-a/spot-b".to_string())
        ],
        "the cluster's time, and the one pool that changed"
    );
    hub.publish(vec![audit()]);
    hub.publish(vec![pool("spot-b", 7)]);
    let removed: Vec<Delta> = drain(&mut rx)
        .into_iter()
        .filter(|d| d.kind == RowKind::PoolAudit)
        .collect();
    assert_eq!(removed.len(), 1);
    assert_eq!(
        (removed[0].key.as_str(), &removed[0].change),
        ("zone-a/spot-a", &Change::Remove),
        "a pool with no spot nodes left leaves the audit"
    );
}

#[test]
fn preemption_viewers_are_counted_while_their_stream_lives() {
    let hub = hub();
    let dashboard = hub.subscribe(&Scope::pools(), None);
    assert_eq!(
        hub.preemption_viewers(),
        0,
        "the dashboard shows no preemption rows"
    );
    let page = hub.subscribe(&Scope::preemptions(), None);
    let pool = hub.subscribe(&Scope::pool("zone-a", "spot-a"), None);
    assert_eq!(hub.preemption_viewers(), 2);
    // A handler keeps the receiver and the viewer; the start is sent and gone.
    let Subscription { rx, viewer, .. } = page;
    drop(rx);
    assert_eq!(hub.preemption_viewers(), 2, "counted until the viewer goes");
    drop(viewer);
    drop(pool);
    drop(dashboard);
    assert_eq!(hub.preemption_viewers(), 0);
}

#[test]
fn a_growing_wave_is_sent_with_its_first_names_and_its_count() {
    let hub = hub();
    let mut rx = hub.inner.tx.subscribe();
    let started = Some(Utc::now());
    let wave = |n: usize| Wave {
        cluster: "zone-a".into(),
        started,
        last: started,
        nodes: (0..n).map(|i| format!("node-{i}")).collect(),
        node_count: n,
    };
    hub.publish(vec![wave(Wave::STREAM_NODES)]);
    drain(&mut rx);
    let mut sizes = Vec::new();
    for n in [100, 1_000, 2_000] {
        hub.publish(vec![wave(n)]);
        let sent = drain(&mut rx);
        assert_eq!(sent.len(), 1, "{sent:?}");
        let Change::Patch(patch) = &sent[0].change else {
            panic!("a patch: {sent:?}")
        };
        assert!(
            patch.get("nodes").is_none(),
            "the names shown stay: {patch}"
        );
        assert_eq!(patch["node_count"], n);
        sizes.push(serde_json::to_string(patch).unwrap().len());
    }
    assert!(sizes.iter().all(|&b| b < 100), "bytes per patch: {sizes:?}");
    let shown = hub.snapshot(&Scope::preemptions()).waves;
    assert_eq!(shown[0].nodes.len(), Wave::STREAM_NODES);
    assert_eq!(shown[0].node_count, 2_000);
}

/// A row whose pool changes (a preemption first seen before its node's pool was known) is
/// removed from the old pool's pages and added, whole, to the new pool's: each page's store
/// applies every delta it is sent and ends with exactly its pool's rows.
#[test]
fn a_row_that_changes_pool_leaves_one_page_and_arrives_whole_on_the_other() {
    let hub = hub();
    let (a, b) = (
        Scope::pool("zone-a", "spot-a"),
        Scope::pool("zone-a", "spot-b"),
    );
    let mut on_a = hub.subscribe(&a, None);
    let mut on_b = hub.subscribe(&b, None);
    let mut held_a = std::collections::HashMap::new();
    let mut held_b = std::collections::HashMap::new();

    hub.publish(vec![preemption("u1", "spot-a", false)]);
    apply_as_a_tab(&mut held_a, &drain_for(&mut on_a.rx, Some(&a))).unwrap();
    apply_as_a_tab(&mut held_b, &drain_for(&mut on_b.rx, Some(&b))).unwrap();
    assert_eq!((held_a.len(), held_b.len()), (1, 0));

    let moved = preemption("u1", "spot-b", false);
    let moved = PreemptionView {
        timeline: spotboard_core::domain::preemption::timeline::Timeline {
            t0: held_a["u1"]["timeline"]["t0"]
                .as_str()
                .and_then(|t| t.parse().ok())
                .unwrap(),
            ..moved.timeline
        },
        ..moved
    };
    hub.publish(vec![moved]);
    let to_a = drain_for(&mut on_a.rx, Some(&a));
    let to_b = drain_for(&mut on_b.rx, Some(&b));
    assert_eq!(
        to_a.iter().map(|d| &d.change).collect::<Vec<_>>(),
        [&Change::Remove]
    );
    assert!(
        matches!(
            to_b.as_slice(),
            [Delta {
                change: Change::Add(_),
                ..
            }]
        ),
        "{to_b:?}"
    );
    apply_as_a_tab(&mut held_a, &to_a).unwrap();
    apply_as_a_tab(&mut held_b, &to_b).expect("the new pool's page can apply what it gets");
    assert!(held_a.is_empty());
    assert_eq!(held_b["u1"]["pool"], "spot-b");
}

/// Waiting rows go where pool rows go: the cluster's row and every pool's on `/`, a pool
/// page its own pool's and its cluster's; a change reaches only the scopes that want it.
#[test]
fn waiting_rows_go_where_their_pool_goes() {
    use spotboard_core::model::WaitingPool;
    let hub = hub();
    let row = |pool: Option<&str>, pods| WaitingPool {
        cluster: "zone-a".into(),
        pool: pool.map(String::from),
        pods,
        gpus: 8 * pods,
        cause: "waiting for spot capacity in US-EAST-04A".into(),
        ..Default::default()
    };
    hub.publish(vec![
        row(None, 3),
        row(Some("spot-a"), 2),
        row(Some("spot-b"), 1),
    ]);
    let keys = |s: &Scope| {
        let mut k: Vec<String> = hub
            .snapshot(s)
            .waiting
            .iter()
            .map(WaitingPool::key)
            .collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&Scope::pools()),
        ["zone-a", "zone-a/spot-a", "zone-a/spot-b"]
    );
    assert_eq!(
        keys(&Scope::pool("zone-a", "spot-a")),
        ["zone-a", "zone-a/spot-a"]
    );
    let mut rx = hub.inner.tx.subscribe();
    hub.publish(vec![
        row(None, 3),
        row(Some("spot-a"), 2),
        row(Some("spot-b"), 4),
    ]);
    let mut sent = Vec::new();
    while let Ok(p) = rx.try_recv() {
        sent.push(p);
    }
    assert_eq!(sent.len(), 1, "only the changed row");
    assert!(sent[0].wanted_by(&Scope::pools()));
    assert!(sent[0].wanted_by(&Scope::pool("zone-a", "spot-b")));
    assert!(!sent[0].wanted_by(&Scope::pool("zone-a", "spot-a")));
    // The work is gone: the rows leave.
    hub.publish(Vec::<WaitingPool>::new());
    assert!(hub.snapshot(&Scope::pools()).waiting.is_empty());
}
