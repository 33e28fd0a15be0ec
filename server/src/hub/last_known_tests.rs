//! A cluster's last known state: kept once listed, shown (stale) after a restart until the
//! watches list it, each restored row replaced or removed then.

use super::last_known::COMPRESSED;
use super::tests::{drain_for, hub, node_rec, pool_rec};
use super::*;
use spotboard_core::model::{Change, RowKind};

/// A hub whose cluster `zone-a` has listed pool `spot-a` with nodes `g1` and `g2`.
fn listed() -> Hub {
    let hub = hub();
    hub.pools("zone-a", Observed::Resync(vec![pool_rec("p1", "spot-a")]));
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![
            node_rec("n1", "g1", "spot-a"),
            node_rec("n2", "g2", "spot-a"),
        ]),
    );
    hub.pods("zone-a", Observed::Resync(vec![]));
    hub.events("zone-a", Observed::Resync(vec![]));
    hub
}

fn as_of() -> chrono::DateTime<Utc> {
    "2026-11-28T14:02:00Z".parse().unwrap()
}

#[test]
fn a_listed_clusters_rows_are_kept_and_a_restart_shows_them_stale_since_then() {
    assert!(
        hub().known_rows("zone-a").is_none(),
        "nothing listed, nothing kept"
    );
    let before = listed();
    let body = before
        .known_rows("zone-a")
        .expect("a listed cluster is kept");
    let kept: KnownRows = decode_known(&body, usize::MAX).unwrap();
    assert_eq!((kept.pools.len(), kept.nodes.len()), (1, 2));
    assert!(before.known_rows("zone-b").is_none());

    let after = hub();
    let mut rx = after.inner.tx.subscribe();
    assert_eq!(after.restore("zone-a", as_of(), kept), 3);
    let snap = after.snapshot(&Scope::pool("zone-a", "spot-a"));
    let was = before.snapshot(&Scope::pool("zone-a", "spot-a"));
    assert_eq!(snap.pools, was.pools, "the pool as it was shown");
    assert_eq!(snap.nodes, was.nodes, "the nodes as they were shown");
    let cluster = &snap.clusters[0];
    assert_eq!(cluster.state, LinkState::Stale);
    assert_eq!(cluster.since, Some(as_of()));
    assert_eq!(cluster.message.as_deref(), Some(RESTORED_MESSAGE));
    // Published like new rows, so a tab open at the restore gets them too.
    let adds = drain_for(&mut rx, None)
        .iter()
        .filter(|d| matches!(d.change, Change::Add(_)) && d.kind != RowKind::Cluster)
        .count();
    assert_eq!(adds, 3);
    // Shown, not judged: the followers, the alerts, the capacity grid and /metrics start from
    // what the watches see.
    assert_eq!(after.shown_pool_rows().len(), 1);
    assert!(after.pool_rows().is_empty());
    let initial = after.follow().take_initial();
    assert!(initial.nodes.is_empty() && initial.pools.is_empty());
    assert!(after.audit_nodes().is_empty());
    // Not kept again before it is listed: the state kept stays the newer one.
    assert!(after.known_rows("zone-a").is_none());
    // A cluster the hub does not watch is not restored.
    let other: KnownRows = decode_known(&body, usize::MAX).unwrap();
    assert_eq!(after.restore("zone-b", as_of(), other), 0);
}

#[test]
fn nothing_is_restored_once_a_kind_has_listed() {
    let body = listed().known_rows("zone-a").unwrap();
    let hub = hub();
    hub.pools("zone-a", Observed::Resync(vec![pool_rec("p1", "spot-a")]));
    assert_eq!(
        hub.restore("zone-a", as_of(), decode_known(&body, usize::MAX).unwrap()),
        0
    );
    assert_ne!(
        hub.snapshot(&Scope::pools()).clusters[0].state,
        LinkState::Stale
    );
}

/// The watches list: a node still there is sent to followers as new even though its row is
/// the same, and to tabs whole; a node gone since is removed (for tabs too) before the
/// cluster is announced as listed; the stale mark goes with the probe, as for any cluster.
#[test]
fn the_listing_replaces_restored_rows_and_removes_those_gone_before_announcing_it() {
    let body = listed().known_rows("zone-a").unwrap();
    let hub = hub();
    hub.restore("zone-a", as_of(), decode_known(&body, usize::MAX).unwrap());
    let mut following = hub.follow();
    let mut rx = hub.inner.tx.subscribe();
    hub.pools("zone-a", Observed::Resync(vec![pool_rec("p1", "spot-a")]));
    // g2 went while spotboard was down.
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![node_rec("n1", "g1", "spot-a")]),
    );
    assert_eq!(
        hub.snapshot(&Scope::pool("zone-a", "spot-a")).nodes.len(),
        2,
        "g2 stays until every kind is listed"
    );
    hub.pods("zone-a", Observed::Resync(vec![]));
    hub.events("zone-a", Observed::Resync(vec![]));
    let nodes: Vec<String> = hub
        .snapshot(&Scope::pool("zone-a", "spot-a"))
        .nodes
        .iter()
        .map(|n| n.name.clone())
        .collect();
    assert_eq!(nodes, vec!["g1"]);
    let mut facts = Vec::new();
    while let Ok(f) = following.rx.try_recv() {
        facts.push(match &*f {
            Fact::Node { key, row } => format!("node {key} {}", row.is_some()),
            Fact::Pool { key, row } => format!("pool {key} {}", row.is_some()),
            Fact::Synced { cluster } => format!("synced {cluster}"),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(
        facts,
        vec![
            "pool p1 true",
            "node n1 true",
            "node n2 false",
            "synced zone-a"
        ],
        "rows the same as restored still reach the followers; the gone one before the sync"
    );
    let deltas = drain_for(&mut rx, Some(&Scope::pool("zone-a", "spot-a")));
    let n2: Vec<&Change> = deltas
        .iter()
        .filter(|d| d.key == "n2")
        .map(|d| &d.change)
        .collect();
    assert_eq!(n2, vec![&Change::Remove], "a tab drops the gone node");
    let n1: Vec<&Change> = deltas
        .iter()
        .filter(|d| d.key == "n1")
        .map(|d| &d.change)
        .collect();
    assert!(
        matches!(n1.as_slice(), [Change::Add(_)]),
        "a node still there is sent whole once, replacing the restored row: {n1:?}"
    );
    hub.set_link("zone-a", LinkState::Live, None);
    assert_eq!(
        hub.snapshot(&Scope::pools()).clusters[0].state,
        LinkState::Live
    );
    assert!(hub.known_rows("zone-a").is_some(), "kept again once listed");
}

/// A node that moved to another pool while spotboard was down leaves the old pool's page.
#[test]
fn a_restored_node_that_moved_pools_leaves_the_old_pools_scope() {
    let body = listed().known_rows("zone-a").unwrap();
    let hub = hub();
    hub.restore("zone-a", as_of(), decode_known(&body, usize::MAX).unwrap());
    let mut rx = hub.inner.tx.subscribe();
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![
            node_rec("n1", "g1", "spot-b"),
            node_rec("n2", "g2", "spot-a"),
        ]),
    );
    let old_page = drain_for(&mut rx, Some(&Scope::pool("zone-a", "spot-a")));
    assert!(
        old_page
            .iter()
            .any(|d| d.key == "n1" && d.change == Change::Remove),
        "{old_page:?}"
    );
}

/// The kept body is compressed, reads back whole, and is refused past its budget once
/// decompressed (a small body that inflates to gigabytes must not be read); a body kept as
/// plain JSON (the first format) still reads; garbage is a sentence, not a panic.
#[test]
fn a_kept_body_is_compressed_and_read_back_within_its_budget() {
    let body = listed().known_rows("zone-a").unwrap();
    assert!(body.starts_with(COMPRESSED), "{body}");
    let rows = decode_known(&body, usize::MAX).unwrap();
    assert_eq!((rows.pools.len(), rows.nodes.len()), (1, 2));
    let plain = serde_json::to_string(&rows).unwrap();
    assert!(
        decode_known(&body, plain.len() - 1)
            .unwrap_err()
            .contains("larger than"),
        "the budget counts the decompressed JSON"
    );
    assert_eq!(decode_known(&body, plain.len()).unwrap().nodes.len(), 2);
    assert_eq!(decode_known(&plain, usize::MAX).unwrap().nodes.len(), 2);
    for bad in [
        format!("{COMPRESSED}!!!"),
        format!("{COMPRESSED}AAAA"),
        "{\"pools\":".to_string(),
    ] {
        assert!(decode_known(&bad, usize::MAX).is_err(), "{bad}");
    }
}
