use std::collections::BTreeMap;

use chrono::{Duration, TimeZone, Utc};

use super::*;
use crate::Provider;
use crate::catalog;
use crate::domain::preemption::rates;
use crate::model::{
    CapacityCell, CapacityFeed, CapacityGrid, ConditionView, FeedEntry, FinderResult, Lifetime,
    PoolRow, SourceStatus,
};
use crate::nodepool::ComputeClass;

fn now() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 8, 0, 0).unwrap()
}

fn cell(zone: &str, reason: Option<&str>, free: Option<u32>, spot: &str) -> CapacityCell {
    CapacityCell {
        cluster: format!("c-{zone}"),
        zone: zone.into(),
        instance_type: "gd-8xh100ib-i128".into(),
        capacity_reason: reason.map(Into::into),
        pools: u32::from(reason.is_some()),
        current_nodes: 2,
        available_nodes: free,
        available_as_of: free.map(|_| now()),
        observed_at: Some(now()),
        spot_usd_h: Some(spot.into()),
        ..Default::default()
    }
}

fn grid(cells: Vec<CapacityCell>) -> CapacityGrid {
    CapacityGrid {
        cells,
        ..Default::default()
    }
}

#[test]
fn more_nodes_never_score_a_zone_higher() {
    let cases = [
        cell("A", Some("Sufficient"), Some(6), "19.71"),
        cell("B", Some("Partial"), None, "19.71"),
        cell("C", None, None, "21.00"),
        cell("D", None, Some(40), "19.71"),
        cell("E", Some("NoneAvailable"), Some(10), "19.71"),
    ];
    for c in &cases {
        let mut last = f64::INFINITY;
        for n in 1..=80 {
            let s = score::score(c, n, Some("19.71".parse().unwrap()), now()).score;
            assert!(s <= last, "{}: {n} nodes scored {s} > {last}", c.zone);
            last = s;
        }
    }
}

#[test]
fn the_score_changes_with_the_count_and_none_available_ranks_last() {
    let g = grid(vec![
        cell("US-EAST-04A", Some("Sufficient"), Some(6), "19.71"),
        cell("US-CENTRAL-07A", None, Some(2), "19.71"),
        cell("EU-SOUTH-04A", Some("NoneAvailable"), Some(20), "19.71"),
    ]);
    let small = rank(&g, "gd-8xh100ib-i128", 2, None, now());
    let big = rank(&g, "gd-8xh100ib-i128", 6, None, now());
    assert!(small.eligible);
    assert_eq!(small.ranked.last().unwrap().zone, "EU-SOUTH-04A");
    assert_eq!(small.ranked.last().unwrap().score, 0.0);
    assert_eq!(big.ranked[0].zone, "US-EAST-04A");
    let central = |r: &FinderResult| {
        r.ranked
            .iter()
            .find(|z| z.zone == "US-CENTRAL-07A")
            .unwrap()
            .score
    };
    // 2 free nodes: full availability for 2, a third of it for 6.
    assert!(
        central(&small) > central(&big),
        "{} vs {}",
        central(&small),
        central(&big)
    );
    // Hand-computed: availability 1 × 0.5, preemption unknown 0.5 × 0.2, price 1 × 0.15,
    // fulfilment unknown 0.5 × 0.1, freshness 1 × 0.05 → 0.85 → 85.
    assert_eq!(central(&small), 85.0);
    // For 6: availability 2/6 → 0.5 × 0.333 = 0.1667, the rest unchanged (0.35) → 51.7.
    assert_eq!(central(&big), 51.7);
}

#[test]
fn superchips_are_not_eligible_and_unknown_types_say_so() {
    let g = grid(vec![]);
    let r = rank(&g, "gb200-4x", 1, None, now());
    assert!(!r.eligible);
    assert!(r.reason.unwrap().contains("Superchip"));
    let r = rank(&g, "nope", 1, None, now());
    assert!(!r.eligible && r.reason.unwrap().contains("unknown"));
}

#[test]
fn region_filter_and_curves() {
    let g = grid(vec![
        cell("US-EAST-04A", None, Some(6), "19.71"),
        cell("EU-SOUTH-04A", None, Some(6), "19.71"),
    ]);
    let r = rank(&g, "gd-8xh100ib-i128", 3, Some("us-east"), now());
    assert_eq!(r.ranked.len(), 1);
    assert_eq!(r.curves.len(), 1);
    let points = &r.curves[0].1;
    assert!(
        points.iter().any(|(n, _)| *n == 3),
        "the requested count is plotted"
    );
    assert!(points.windows(2).all(|w| w[0].1 >= w[1].1), "{points:?}");
}

#[test]
fn bands_match_the_spot_advisor() {
    assert_eq!(score::band(0.0), score::Band::Below5);
    assert_eq!(score::band(5.0), score::Band::From5To10);
    assert_eq!(score::band(14.9), score::Band::From10To15);
    assert_eq!(score::band(19.99), score::Band::From15To20);
    assert_eq!(score::band(20.0), score::Band::Above20);
}

fn pool(cluster: &str, name: &str, reason: &str, queued: i32, current: i32) -> PoolRow {
    PoolRow {
        key: name.into(),
        cluster: cluster.into(),
        name: name.into(),
        compute_class: Some(ComputeClass::Spot),
        // As the hub derives it from computeClass.
        capacity_type: crate::CapacityType::Spot,
        instance_type: "gd-8xh100ib-i128".into(),
        queued_nodes: Some(queued),
        current_nodes: Some(current),
        conditions: vec![ConditionView {
            type_: "Capacity".into(),
            status: "True".into(),
            reason: reason.into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn the_grid_sums_pools_counts_preemptions_and_takes_the_latest_feed_figure() {
    let clusters = vec![("c1".to_string(), "US-EAST-04A".to_string())];
    let pools = vec![
        pool("c1", "a", "Sufficient", 0, 3),
        pool("c1", "b", "Partial", 2, 1),
        pool("c2", "elsewhere", "NoneAvailable", 5, 0),
    ]
    .into_iter()
    .map(std::sync::Arc::new)
    .collect::<Vec<_>>();
    // The ledger: n1 preempted 1 h ago, n2 30 h ago (outside 24 h), three others running, in
    // pool a; and a node of another zone that must not count here.
    let life = |node: &str, zone: &str, t0_hours_ago: Option<i64>| Lifetime {
        cluster: "c1".into(),
        node: node.into(),
        pool: Some("a".into()),
        zone: Some(zone.into()),
        instance_type: Some("gd-8xh100ib-i128".into()),
        capacity_type: crate::CapacityType::Spot,
        started_at: now() - Duration::hours(40),
        ended_at: t0_hours_ago.map(|h| now() - Duration::hours(h) + Duration::minutes(7)),
        preemption_t0: t0_hours_ago.map(|h| now() - Duration::hours(h)),
        ..Default::default()
    };
    let lifetimes = vec![
        life("n1", "US-EAST-04A", Some(1)),
        life("n2", "US-EAST-04A", Some(30)),
        life("n3", "US-EAST-04A", None),
        life("n4", "US-EAST-04A", None),
        life("n5", "US-EAST-04A", None),
        life("x1", "US-WEST-01A", Some(1)),
    ];
    let rates = rates::rates(&lifetimes, now());
    let mut fulfil = BTreeMap::new();
    fulfil.insert(
        ("US-EAST-04A".to_string(), "gd-8xh100ib-i128".to_string()),
        vec![300, 60, 120],
    );
    // The ledger's history: pool a queued 20 min in 24 h, b 45 min; the cell gives the longest,
    // and the scale-ups of both.
    let ph = |day: u64, week: u64, asked: u32, done: u32| {
        crate::domain::capacity::obtainability::PoolHistory {
            queued_24h_s: day,
            queued_7d_s: week,
            scale_ups_7d: asked,
            fulfilled_7d: done,
        }
    };
    let history = BTreeMap::from([
        (("c1".to_string(), "a".to_string()), ph(1200, 4000, 3, 3)),
        (("c1".to_string(), "b".to_string()), ph(2700, 2700, 1, 0)),
        (
            ("c2".to_string(), "elsewhere".to_string()),
            ph(9999, 9999, 9, 9),
        ),
    ]);
    let feed = |free: u32, minutes_ago: i64, confidential: bool| CapacityFeed {
        source: "test".into(),
        generated_at: now() - Duration::minutes(minutes_ago),
        confidential,
        entries: vec![FeedEntry {
            zone: "us-east-04a".into(),
            instance_type: "gd-8xh100ib-i128".into(),
            capacity_type: crate::CapacityType::Spot,
            available_nodes: free,
            observed_at: None,
        }],
    };
    let feeds = vec![
        (SourceStatus::default(), Some(feed(9, 10, false))),
        (SourceStatus::default(), Some(feed(4, 1, true))),
    ];
    let g = build_grid(&GridInputs {
        clusters: &clusters,
        pools: &pools,
        rates: &rates,
        fulfil: &fulfil,
        history: Some(&history),
        feeds: &feeds,
        now: now(),
    });
    let c = g.cell("US-EAST-04A", "gd-8xh100ib-i128").unwrap();
    assert_eq!(c.pools, 2);
    assert_eq!((c.queued_nodes, c.current_nodes), (2, 4));
    assert_eq!(
        c.capacity_reason.as_deref(),
        Some("Partial"),
        "the worst of the two"
    );
    // One node preempted in 24 h (n2 is older, x1 another zone) over the 4 spot nodes that
    // ran in the window: the ledger's definition, the same figure `/preemptions` shows.
    assert_eq!(c.preemption_rate_pct, Some(25.0));
    assert_eq!(c.spot_nodes, 4);
    let row = rates::zone_type_24h(&rates, "US-EAST-04A", "gd-8xh100ib-i128").unwrap();
    assert_eq!(
        (row.preemptions, row.spot_nodes, row.rate_pct),
        (1, 4, 25.0)
    );
    assert_eq!(c.median_fulfil_seconds, Some(120));
    assert_eq!(c.p95_fulfil_seconds, Some(300));
    assert_eq!(
        (
            c.queued_seconds_24h,
            c.queued_seconds_7d,
            c.scale_ups_7d,
            c.fulfilled_7d
        ),
        (Some(2700), Some(4000), Some(4), Some(3))
    );
    // A type the fleet runs no spot pool of here has no history of its own.
    let none = g.cell("US-EAST-04A", "gd-8xl40s-i128").unwrap();
    assert_eq!((none.queued_seconds_24h, none.scale_ups_7d), (None, None));
    assert_eq!(c.available_nodes, Some(4), "the newer feed figure wins");
    assert!(c.confidential && g.confidential);
    assert_eq!(c.spot_usd_h.as_deref(), Some("19.71"));
    assert!(
        g.cell("US-EAST-04A", "gb200-4x").is_none(),
        "Superchips have no spot row"
    );
}

#[test]
fn the_grid_is_a_cks_grid() {
    let clusters = vec![
        ("cks".to_string(), "US-EAST-04A".to_string()),
        ("cks-new-zone".to_string(), "US-NEW-99A".to_string()),
        ("gke".to_string(), "us-central1-a".to_string()),
        ("eks".to_string(), "us-east-1a".to_string()),
    ];
    let typed = |cluster: &str, t: &str, provider: Provider| PoolRow {
        instance_type: t.into(),
        provider,
        ..pool(cluster, t, "Sufficient", 0, 1)
    };
    let pools = vec![
        typed("cks-new-zone", "gd-8xh100ib-i128", Provider::Cks),
        typed("gke", "g2-standard-24", Provider::Gke),
        typed("eks", "m5.xlarge", Provider::Karpenter),
    ]
    .into_iter()
    .map(std::sync::Arc::new)
    .collect::<Vec<_>>();
    let g = build_grid(&GridInputs {
        clusters: &clusters,
        pools: &pools,
        rates: &[],
        fulfil: &BTreeMap::new(),
        history: None,
        feeds: &[],
        now: now(),
    });
    let columns: Vec<&str> = g.zones.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(columns, ["cks", "cks-new-zone"]);
    assert!(
        !g.instance_types
            .iter()
            .any(|t| t == "g2-standard-24" || t == "m5.xlarge")
    );
    assert!(g.cells.iter().all(|c| c.cluster.starts_with("cks")));
}

#[test]
fn median_of_samples() {
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[5]), Some(5));
    assert_eq!(median(&[9, 1, 5, 3]), Some(3));
}

#[test]
fn a_grid_from_streamed_cells_has_the_servers_columns_and_rows() {
    let cell = |cluster: &str, zone: &str, t: &str| CapacityCell {
        cluster: cluster.into(),
        zone: zone.into(),
        instance_type: t.into(),
        confidential: t == "zz-custom",
        ..Default::default()
    };
    let catalog_first = catalog::instance_types()
        .iter()
        .find(|t| t.spot_ok)
        .unwrap()
        .id
        .clone();
    let g = CapacityGrid::from_rows(
        vec![
            cell("c2", "EU-SOUTH-04A", "zz-custom"),
            cell("c1", "US-EAST-04A", &catalog_first),
            cell("c2", "EU-SOUTH-04A", &catalog_first),
        ],
        Vec::new(),
    );
    assert_eq!(
        g.zones,
        [
            ("c1".to_string(), "US-EAST-04A".to_string()),
            ("c2".to_string(), "EU-SOUTH-04A".to_string())
        ]
    );
    assert_eq!(
        g.instance_types,
        [catalog_first.clone(), "zz-custom".into()]
    );
    assert!(g.confidential, "a confidential cell marks the grid");
    assert!(g.cell("EU-SOUTH-04A", "zz-custom").is_some());
}

/// Where the score says good and this fleet's own history says it waited, the Finder says
/// so; a zone that never queued gets its history line and no warning.
#[test]
fn a_good_score_against_a_long_wait_is_flagged() {
    let mut waited = cell("A", Some("Sufficient"), Some(10), "19.71");
    waited.queued_seconds_24h = Some(40 * 60);
    waited.queued_seconds_7d = Some(3 * 3600);
    waited.scale_ups_7d = Some(4);
    waited.fulfilled_7d = Some(3);
    waited.p95_fulfil_seconds = Some(720);
    let s = score::score(&waited, 2, "19.71".parse().ok(), now());
    assert!(s.score >= score::GOOD_SCORE, "{}", s.score);
    assert_eq!(
        s.history.as_deref(),
        Some("queued 40 min in 24 h, 3.0 h in 7 d; 3 of 4 scale-ups fulfilled, p95 12 min")
    );
    assert_eq!(
        s.history_warning.as_deref(),
        Some(&*format!(
            "scores {:.0}, but this fleet's gd-8xh100ib-i128 pools here waited 40 min for capacity in the last 24 h",
            s.score
        ))
    );
    let mut calm = waited.clone();
    calm.queued_seconds_24h = Some(0);
    calm.queued_seconds_7d = Some(0);
    let c = score::score(&calm, 2, "19.71".parse().ok(), now());
    assert_eq!(c.history_warning, None);
    assert!(c.history.unwrap().starts_with("not queued in 7 d"));
    // Without a ledger there is no history to tell.
    assert_eq!(
        score::score(&cell("A", None, Some(10), "19.71"), 2, None, now()).history,
        None
    );
}
