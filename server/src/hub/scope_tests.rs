//! A pool page's stream carries its own pool's row only; every page's header counts the
//! nodes under notice from the cluster rows, whose sums the hub keeps.

use super::tests::{drain, hub, node_rec, pool_rec};
use super::*;
use spotboard_core::model::RowKind;

#[test]
fn a_pool_page_gets_its_own_pool_row_and_the_clusters_count_the_notices() {
    let hub = hub();
    hub.pools(
        "zone-a",
        Observed::Resync(vec![pool_rec("p1", "spot-a"), pool_rec("p2", "spot-b")]),
    );
    let draining = |uid: &str, name: &str, pool: &str| {
        let mut n = node_rec(uid, name, pool);
        n.evicted_at = Some("2026-11-23T10:00:00Z".into());
        n
    };
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![
            draining("n1", "g1", "spot-a"),
            draining("n2", "g2", "spot-b"),
            node_rec("n3", "g3", "spot-b"),
        ]),
    );
    hub.flush();

    let page = Scope::pool("zone-a", "spot-a");
    let snap = hub.snapshot(&page);
    assert_eq!(
        snap.pools
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["spot-a"],
        "a pool page's snapshot holds its own pool"
    );
    assert_eq!(hub.snapshot(&Scope::pools()).pools.len(), 2);
    assert_eq!(snap.clusters[0].nodes_preempting, 2, "both pools' notices");

    // Another pool's count changes: its row goes to the dashboard, not to the pool page;
    // the cluster's sum goes to both.
    let mut rx = hub.inner.tx.subscribe();
    hub.nodes("zone-a", Observed::Apply(draining("n3", "g3", "spot-b")));
    hub.flush();
    let sent: Vec<Arc<Published>> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let pool_b: Vec<_> = sent.iter().filter(|p| p.kind == RowKind::Pool).collect();
    assert!(
        !pool_b.is_empty(),
        "spot-b's row changed: {:?}",
        sent.iter().map(|p| &p.data).collect::<Vec<_>>()
    );
    assert!(pool_b.iter().all(|p| !p.wanted_by(&page)));
    assert!(pool_b.iter().all(|p| p.wanted_by(&Scope::pools())));
    let cluster = sent
        .iter()
        .find(|p| p.kind == RowKind::Cluster)
        .expect("the cluster row's count changed");
    assert!(cluster.wanted_by(&page));
    assert_eq!(hub.snapshot(&page).clusters[0].nodes_preempting, 3);

    // A link change keeps the count; a node gone lowers it.
    hub.set_link("zone-a", LinkState::Live, None);
    assert_eq!(hub.snapshot(&page).clusters[0].nodes_preempting, 3);
    hub.nodes(
        "zone-a",
        Observed::Resync(vec![draining("n1", "g1", "spot-a")]),
    );
    hub.flush();
    assert_eq!(hub.snapshot(&page).clusters[0].nodes_preempting, 1);
    drain(&mut rx);
}

/// A fallback pair goes to the fleet pages and to every pool page of its cluster (the page
/// keeps the pair its pool is in), never to another cluster's pool page.
#[test]
fn fallback_pairs_go_to_their_clusters_pages() {
    use spotboard_core::model::FallbackRow;
    let hub = hub();
    let mut rx = hub.inner.tx.subscribe();
    hub.publish(vec![FallbackRow {
        cluster: "zone-a".into(),
        spot_pools: vec!["spot-a".into()],
        on_demand_pool: "od-a".into(),
        ..Default::default()
    }]);
    let sent: Vec<Arc<Published>> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let pair = sent
        .iter()
        .find(|p| p.kind == RowKind::Fallback)
        .expect("the pair is published");
    assert!(pair.wanted_by(&Scope::pools()));
    assert!(pair.wanted_by(&Scope::pool("zone-a", "spot-a")));
    assert!(!pair.wanted_by(&Scope::pool("zone-b", "spot-a")));
    assert_eq!(
        hub.snapshot(&Scope::pool("zone-a", "spot-a"))
            .fallback
            .len(),
        1
    );
    assert!(
        hub.snapshot(&Scope::pool("zone-b", "x"))
            .fallback
            .is_empty()
    );
}

#[test]
fn launch_failures_go_to_capacity_and_their_clusters_pool_pages_only() {
    use spotboard_core::model::LaunchFailureRow;
    let hub = hub();
    let mut rx = hub.inner.tx.subscribe();
    hub.publish(vec![LaunchFailureRow {
        cluster: "zone-a".into(),
        zone: "us-east-1a".into(),
        instance_type: "g5.2xlarge".into(),
        pools: vec!["gpu-spot".into()],
        failures_24h: 1,
        failures_7d: 1,
        ..Default::default()
    }]);
    let sent: Vec<Arc<Published>> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let row = sent
        .iter()
        .find(|p| p.kind == RowKind::LaunchFailure)
        .expect("the row is published");
    assert!(row.wanted_by(&Scope::capacity()));
    assert!(row.wanted_by(&Scope::pool("zone-a", "gpu-spot")));
    assert!(!row.wanted_by(&Scope::pool("zone-b", "gpu-spot")));
    assert!(!row.wanted_by(&Scope::pools()), "the dashboard shows none");
    assert_eq!(hub.snapshot(&Scope::capacity()).launch_failures.len(), 1);
    assert!(hub.snapshot(&Scope::pools()).launch_failures.is_empty());
}
