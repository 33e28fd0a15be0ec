use chrono::{DateTime, Duration, TimeZone, Utc};
use rust_decimal_macros::dec;

use super::*;
use crate::domain::prices::PriceCatalog;
use crate::model::{
    CapacityCell, CapacityGrid, ConditionTransition, ConditionView, Lifetime, MoveBack, PairKind,
    PoolRow, PriceEntry,
};
use crate::nodepool::ConditionType;
use crate::{CapacityType, Provider};

const TYPE: &str = "gd-8xh100ib-i128";

fn t(h: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap() + Duration::hours(h)
}

fn pool(name: &str, class: CapacityType, instance: &str) -> PoolRow {
    PoolRow {
        key: name.into(),
        provider: Provider::Cks,
        capacity_type: class,
        cluster: "c1".into(),
        zone: Some("US-EAST-04A".into()),
        name: name.into(),
        instance_type: instance.into(),
        ..Default::default()
    }
}

fn capacity(status: &str, reason: &str, since: DateTime<Utc>) -> ConditionView {
    ConditionView {
        type_: ConditionType::Capacity,
        status: status.into(),
        reason: reason.into(),
        last_transition: Some(since),
        ..Default::default()
    }
}

fn transition(pool: &str, status: &str, reason: &str, since: DateTime<Utc>) -> ConditionTransition {
    ConditionTransition {
        cluster: "c1".into(),
        pool: pool.into(),
        type_: ConditionType::Capacity,
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        since,
    }
}

fn node(uid: &str, pool: &str, start: i64, end: Option<i64>) -> Lifetime {
    Lifetime {
        uid: uid.into(),
        cluster: "c1".into(),
        node: uid.into(),
        pool: Some(pool.into()),
        instance_type: Some(TYPE.into()),
        zone: Some("US-EAST-04A".into()),
        capacity_type: CapacityType::OnDemand,
        started_at: t(start),
        ended_at: end.map(t),
        ..Default::default()
    }
}

fn prices() -> PriceCatalog {
    PriceCatalog::default().with_user(vec![PriceEntry {
        instance_type: TYPE.into(),
        region: None,
        cluster: None,
        on_demand_usd_h: Some(dec!(10.00)),
        spot_usd_h: Some(dec!(4.00)),
        discount_pct: None,
        source: "test".into(),
        as_of: "2026-11-20".into(),
    }])
}

/// A zone the Finder ranks well for TYPE (plenty free, capacity Sufficient).
fn good_grid() -> CapacityGrid {
    CapacityGrid {
        cells: vec![CapacityCell {
            cluster: "c1".into(),
            zone: "US-EAST-04A".into(),
            instance_type: TYPE.into(),
            capacity_reason: Some("Sufficient".into()),
            pools: 1,
            current_nodes: 2,
            available_nodes: Some(20),
            available_as_of: Some(t(14)),
            observed_at: Some(t(14)),
            spot_usd_h: Some("4.00".into()),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The report over 08:00–14:00 (now), a move back after 60 min, at the test prices.
fn report_of(
    pools: &[PoolRow],
    lifetimes: &[Lifetime],
    capacity: &[ConditionTransition],
    grid: Option<&CapacityGrid>,
) -> crate::model::FallbackReport {
    report_with(pools, lifetimes, capacity, grid, &prices(), t(14))
}

/// The same, with these prices and the range ending at `to` (now is still 14:00).
fn report_with(
    pools: &[PoolRow],
    lifetimes: &[Lifetime],
    capacity: &[ConditionTransition],
    grid: Option<&CapacityGrid>,
    prices: &PriceCatalog,
    to: DateTime<Utc>,
) -> crate::model::FallbackReport {
    let pairs = pairs(pools);
    report(&Inputs {
        pairs: &pairs,
        pools,
        lifetimes,
        capacity,
        prices,
        grid,
        from: t(8),
        to,
        now: t(14),
        move_back_after: Duration::minutes(60),
    })
}

#[test]
fn pairs_by_type_annotation_and_karpenter() {
    let mut annotated = pool("od-annotated", CapacityType::OnDemand, "other-type");
    annotated.fallback_for = vec!["spot-a".into(), "no-such-pool".into()];
    let mut karpenter = pool("mixed", CapacityType::Mixed, "m5.xlarge");
    karpenter.provider = Provider::Karpenter;
    karpenter.allows_spot_and_on_demand = true;
    let mut broken = pool("od-broken", CapacityType::OnDemand, TYPE);
    broken.malformed = Some("spec is missing".into());
    let mut elsewhere = pool("spot-other-cluster", CapacityType::Spot, "lonely-type");
    elsewhere.cluster = "c2".into();
    // Same type, another zone of the cluster: not a fallback for `od`.
    let mut west = pool("spot-west", CapacityType::Spot, TYPE);
    west.zone = Some("US-WEST-04A".into());
    // GKE pools have no Capacity condition to say when spot is short: never paired by type.
    let mut gke_od = pool("gke-od", CapacityType::OnDemand, "g2-standard-24");
    gke_od.provider = Provider::Gke;
    let mut gke_spot = pool("gke-spot", CapacityType::Spot, "g2-standard-24");
    gke_spot.provider = Provider::Gke;
    let pools = [
        pool("spot-a", CapacityType::Spot, TYPE),
        pool("spot-b", CapacityType::Spot, TYPE),
        pool("od", CapacityType::OnDemand, TYPE),
        annotated,
        karpenter,
        broken,
        pool("od-lonely", CapacityType::OnDemand, "lonely-type"),
        elsewhere,
        west,
        gke_od,
        gke_spot,
    ];
    let got: Vec<(String, Vec<String>, PairKind)> = pairs(&pools)
        .into_iter()
        .map(|p| (p.on_demand_pool, p.spot_pools, p.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            ("mixed".into(), vec!["mixed".into()], PairKind::Karpenter),
            (
                "od".into(),
                vec!["spot-a".into(), "spot-b".into()],
                PairKind::SameInstanceType
            ),
            (
                "od-annotated".into(),
                vec!["spot-a".into()],
                PairKind::Annotation
            ),
        ]
    );
}

/// Worked by hand. Range 08:00–14:00 (now). spot-a is short from 10:00 to 12:00 (Capacity
/// False, then True). On-demand node A runs 09:00–13:00: 4 node-hours, 2 of them while
/// short; node B runs 11:00 onward: 3 node-hours, 1 while short. Extra: 3 h × (10 − 4) =
/// 18.00 USD.
#[test]
fn hours_while_short_and_their_extra_cost_by_hand() {
    let mut spot = pool("spot-a", CapacityType::Spot, TYPE);
    spot.conditions = vec![capacity("True", "Sufficient", t(12))];
    let pools = [spot, pool("od", CapacityType::OnDemand, TYPE)];
    let lifetimes = [
        node("a", "od", 9, Some(13)),
        node("b", "od", 11, None),
        // Another pool's node and a spot node of this one are not the pair's.
        node("x", "elsewhere", 9, None),
        Lifetime {
            capacity_type: CapacityType::Spot,
            ..node("s", "od", 9, None)
        },
    ];
    let transitions = [
        transition("spot-a", "True", "Sufficient", t(1)),
        transition("spot-a", "False", "QueuedAwaitingCapacity", t(10)),
        transition("spot-a", "True", "Sufficient", t(12)),
    ];
    let r = report_of(&pools, &lifetimes, &transitions, None);
    let row = &r.pairs[0];
    assert_eq!(row.on_demand_node_hours, dec!(7));
    assert_eq!(row.short_node_hours, dec!(3));
    assert_eq!(row.spot_short_hours, Some(dec!(2)));
    assert_eq!(row.extra_usd, dec!(18.00));
    assert_eq!(row.unpriced_nodes, 0);
    assert_eq!(row.on_demand_nodes_now, 1);
    assert_eq!(r.extra_usd, dec!(18.00));
    assert_eq!(r.move_back_after_minutes, 60);
    // Fulfilling since 12:00 (2 h), but no grid: no score, so keep waiting.
    assert_eq!(row.spot_fulfilling_since, Some(t(12)));
    assert_eq!(row.move_back, MoveBack::Wait);
    assert!(row.note.contains("no score"), "{}", row.note);
}

/// A pool short since before the range counts from the range's start; an unknown price
/// is counted, not guessed.
#[test]
fn short_since_before_the_range_and_unpriced_nodes() {
    let mut spot = pool("spot-a", CapacityType::Spot, TYPE);
    spot.conditions = vec![capacity("False", "QueuedAwaitingCapacity", t(2))];
    spot.queued_nodes = Some(2);
    let pools = [spot, pool("od", CapacityType::OnDemand, TYPE)];
    let lifetimes = [
        node("a", "od", 0, None),
        Lifetime {
            instance_type: Some("unpriced-type".into()),
            ..node("b", "od", 0, None)
        },
    ];
    let transitions = [transition(
        "spot-a",
        "False",
        "QueuedAwaitingCapacity",
        t(2),
    )];
    let r = report_of(&pools, &lifetimes, &transitions, Some(&good_grid()));
    let row = &r.pairs[0];
    assert_eq!(row.spot_short_hours, Some(dec!(6)));
    assert_eq!(row.short_node_hours, dec!(12));
    assert_eq!(row.extra_usd, dec!(36.00), "6 h × 6 USD, node a only");
    assert_eq!(row.unpriced_nodes, 1);
    assert_eq!(row.move_back, MoveBack::Wait);
    assert_eq!(
        row.note,
        "keep the 2 on-demand nodes: spot pool spot-a is short (Capacity: QueuedAwaitingCapacity)"
    );
}

/// The move back is advised only after the spot side has held capacity for the time asked
/// and its zone ranks well; with no on-demand node there is nothing to move.
#[test]
fn move_back_needs_time_and_a_good_score() {
    let run = |fulfilling_since: i64, nodes: &[Lifetime]| {
        let mut spot = pool("spot-a", CapacityType::Spot, TYPE);
        spot.conditions = vec![capacity("True", "Sufficient", t(fulfilling_since))];
        let pools = [spot, pool("od", CapacityType::OnDemand, TYPE)];
        report_of(&pools, nodes, &[], Some(&good_grid()))
            .pairs
            .remove(0)
    };
    let two = [node("a", "od", 0, None), node("b", "od", 0, None)];
    let early = run(14, &two);
    assert_eq!(early.move_back, MoveBack::Wait);
    assert!(early.note.contains("0 s of the 60 min"), "{}", early.note);
    let late = run(12, &two);
    assert_eq!(late.move_back, MoveBack::MoveBack, "{}", late.note);
    assert!(late.finder_score.is_some_and(|s| s >= MOVE_BACK_SCORE));
    assert!(
        late.note
            .starts_with("move back: spot has had capacity for 2.0 h and the Capacity Finder scores US-EAST-04A 85"),
        "{}",
        late.note
    );
    assert!(
        late.note
            .ends_with("move the 2 on-demand nodes of od to spot-a"),
        "{}",
        late.note
    );
    let none = run(12, &[node("a", "od", 0, Some(9))]);
    assert_eq!(none.move_back, MoveBack::Nothing);
    assert_eq!(none.on_demand_node_hours, dec!(1));
}

/// A Karpenter pool that allows both types: every on-demand node-hour stood in for spot.
#[test]
fn a_karpenter_pair_counts_every_on_demand_hour() {
    let mut k = pool("mixed", CapacityType::Mixed, TYPE);
    k.provider = Provider::Karpenter;
    k.allows_spot_and_on_demand = true;
    let pools = [k];
    let r = report_of(&pools, &[node("a", "mixed", 10, None)], &[], None);
    let row = &r.pairs[0];
    assert_eq!(
        (row.short_node_hours, row.spot_short_hours),
        (dec!(4), None)
    );
    assert_eq!(row.extra_usd, dec!(24.00));
    assert_eq!(row.move_back, MoveBack::Wait);
}

/// An annotation pairs two types: the extra is the on-demand node's price against the spot
/// pool's type (20 − 4 USD here, 2 h while short: 32.00).
#[test]
fn an_annotated_pair_of_two_types_is_priced_against_the_spot_pools_type() {
    let mut spot = pool("spot-a", CapacityType::Spot, TYPE);
    spot.conditions = vec![capacity("False", "QueuedAwaitingCapacity", t(12))];
    let mut od = pool("od-big", CapacityType::OnDemand, "od-type");
    od.fallback_for = vec!["spot-a".into()];
    let mut catalog = prices();
    catalog = catalog.with_user(vec![PriceEntry {
        instance_type: "od-type".into(),
        region: None,
        cluster: None,
        on_demand_usd_h: Some(dec!(20.00)),
        spot_usd_h: None,
        discount_pct: None,
        source: "test".into(),
        as_of: "2026-11-20".into(),
    }]);
    let r = report_with(
        &[spot, od],
        &[Lifetime {
            instance_type: Some("od-type".into()),
            ..node("a", "od-big", 0, None)
        }],
        &[transition(
            "spot-a",
            "False",
            "QueuedAwaitingCapacity",
            t(12),
        )],
        None,
        &catalog,
        t(14),
    );
    let row = &r.pairs[0];
    assert_eq!(row.kind, PairKind::Annotation);
    assert_eq!(
        (row.short_node_hours, row.extra_usd),
        (dec!(2), dec!(32.00))
    );
    assert_eq!(row.unpriced_nodes, 0);
}

/// A Capacity condition without its lastTransitionTime cannot say how long spot has had
/// capacity: keep the nodes, never move back on a guess.
#[test]
fn capacity_since_an_unknown_time_is_no_move_back() {
    let mut spot = pool("spot-a", CapacityType::Spot, TYPE);
    spot.conditions = vec![ConditionView {
        last_transition: None,
        ..capacity("True", "Sufficient", t(0))
    }];
    let pools = [spot, pool("od", CapacityType::OnDemand, TYPE)];
    let r = report_of(&pools, &[node("a", "od", 0, None)], &[], Some(&good_grid()));
    assert_eq!(r.pairs[0].move_back, MoveBack::Wait);
    assert!(
        r.pairs[0].note.contains("does not give"),
        "{}",
        r.pairs[0].note
    );
}

/// A range that ended before now still counts the on-demand nodes running now for its
/// advice (a node that began after the range adds no hours to it).
#[test]
fn a_past_range_counts_the_nodes_running_now() {
    let mut spot = pool("spot-a", CapacityType::Spot, TYPE);
    spot.conditions = vec![capacity("False", "QueuedAwaitingCapacity", t(0))];
    let r = report_with(
        &[spot, pool("od", CapacityType::OnDemand, TYPE)],
        &[node("a", "od", 9, None), node("late", "od", 13, None)],
        &[transition(
            "spot-a",
            "False",
            "QueuedAwaitingCapacity",
            t(0),
        )],
        None,
        &prices(),
        t(12),
    );
    assert_eq!(r.pairs[0].on_demand_nodes_now, 2);
    assert_eq!(r.pairs[0].short_node_hours, dec!(3), "node a, 09:00–12:00");
}

/// The stream patches a pair's row field by field as its hours grow: the patch made on the
/// server applies to the browser's copy (only a plain struct row can be patched).
#[test]
fn a_rows_patch_applies() {
    use crate::model::patch::{apply, diff};
    let mut spot = pool("spot-a", CapacityType::Spot, TYPE);
    spot.conditions = vec![capacity("False", "QueuedAwaitingCapacity", t(0))];
    let pools = [spot, pool("od", CapacityType::OnDemand, TYPE)];
    let capacity = [transition(
        "spot-a",
        "False",
        "QueuedAwaitingCapacity",
        t(0),
    )];
    let at = |to| {
        report_with(
            &pools,
            &[node("a", "od", 9, None)],
            &capacity,
            None,
            &prices(),
            to,
        )
    };
    let (old, new) = (at(t(10)).pairs.remove(0), at(t(12)).pairs.remove(0));
    let patch = diff(
        &serde_json::to_value(&old).unwrap(),
        &serde_json::to_value(&new).unwrap(),
    )
    .expect("the hours changed");
    let mut row = old;
    apply(&mut row, &patch).expect("a fallback row can be patched");
    assert_eq!(row, new);
}
