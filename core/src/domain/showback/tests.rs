use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

use super::*;
use crate::domain::savings::tests::{life, t0};
use crate::domain::savings::{ReportInput, report};

fn at(h: f64) -> DateTime<Utc> {
    t0() + Duration::seconds((h * 3600.0) as i64)
}

/// A pod on node `node` (8 GPUs) from `start_h` to `end_h` asking for `gpus`.
fn pod(
    node: &str,
    ns: &str,
    name: &str,
    gpus: u32,
    start_h: f64,
    end_h: Option<f64>,
) -> PodInterval {
    PodInterval {
        cluster: "c1".into(),
        node_uid: node.into(),
        namespace: ns.into(),
        workload: format!("Pod/{name}"),
        pod_uid: format!("uid-{name}"),
        team: None,
        gpus,
        cpu_m: 1000,
        memory_b: 1 << 30,
        node_gpus: 8,
        node_cpu_m: Some(128_000),
        node_memory_b: Some(1 << 40),
        started_at: at(start_h),
        ended_at: end_h.map(at),
    }
}

fn params<'a>(
    lifetimes: &'a [Lifetime],
    prices: &'a PriceCatalog,
    by: ShowbackBy,
    to_h: f64,
) -> Params<'a> {
    Params {
        lifetimes,
        prices,
        from: t0(),
        to: at(to_h),
        now: at(to_h),
        by,
        team_label: "team",
    }
}

/// The savings report over the same lifetimes, prices and range.
fn savings_of(p: &Params) -> crate::model::SavingsReport {
    report(&ReportInput {
        lifetimes: p.lifetimes,
        prices: p.prices,
        from: p.from,
        to: p.to,
        now: p.now,
        reserved_discount_pct: None,
    })
}

fn fold(p: &Params, intervals: &[PodInterval]) -> ShowbackReport {
    let mut s = Showback::new(p);
    let mut by_node: BTreeMap<&str, Vec<PodInterval>> = BTreeMap::new();
    for iv in intervals {
        by_node.entry(&iv.node_uid).or_default().push(iv.clone());
    }
    for (node, ivs) in by_node {
        s.node(node, &ivs);
    }
    s.finish()
}

fn row<'r>(r: &'r ShowbackReport, key: &str) -> &'r ShowbackRow {
    r.rows.iter().find(|x| x.key == key).expect(key)
}

#[test]
fn worked_example_by_hand() {
    // One A100 spot node (8 GPUs, 9.65 USD/h spot, 21.60 on-demand: CoreWeave's price list as
    // shipped) for 10 h. Namespace "train" asks 4 GPUs for 10 h: half the node, 48.25 USD of
    // 96.50. Namespace "eval" asks 2 GPUs for 5 h: a quarter for half the time, 12.0625 → 12.06.
    // The rest is the pool's idle: 96.50 − 48.25 − 12.0625 = 36.1875 → 36.19 (the largest
    // remainder takes the cent the rounding down left over).
    let prices = PriceCatalog::shipped();
    let lifetimes = [life("n1", "spot", "gd-8xa100-i128", 0, Some(10))];
    let ivs = [
        pod("n1", "train", "t-0", 4, 0.0, Some(10.0)),
        pod("n1", "eval", "e-0", 2, 2.0, Some(7.0)),
    ];
    let r = fold(
        &params(&lifetimes, &prices, ShowbackBy::Namespace, 10.0),
        &ivs,
    );
    assert_eq!(r.total.cost_usd, dec!(96.50));
    assert_eq!(r.total.on_demand_usd, dec!(216.00));
    let train = row(&r, "train");
    assert_eq!(train.cost_usd, dec!(48.25));
    assert_eq!(train.on_demand_usd, dec!(108.00));
    assert_eq!(train.savings_usd, dec!(59.75));
    assert_eq!(train.gpu_hours, dec!(40));
    assert_eq!(train.spot_gpu_hours, dec!(40));
    let eval = row(&r, "eval");
    assert_eq!(eval.cost_usd, dec!(12.06));
    assert_eq!(eval.on_demand_usd, dec!(27.00));
    assert_eq!(eval.gpu_hours, dec!(10));
    assert_eq!(r.idle.len(), 1);
    assert_eq!(r.idle[0].pool, "pool-a");
    assert_eq!(r.idle[0].cost_usd, dec!(36.19));
    assert_eq!(r.idle[0].gpu_hours, dec!(30)); // 80 GPU-hours − 40 − 10
    assert_eq!(r.total.allocated_usd + r.total.idle_usd, r.total.cost_usd);
    assert_eq!(r.rows[0].key, "train", "highest cost first");
}

#[test]
fn the_total_is_the_savings_reports_cost_and_baseline() {
    let prices = PriceCatalog::shipped();
    let lifetimes = [
        life("n1", "spot", "gd-8xa100-i128", -3, None),
        life("n2", "on-demand", "gd-8xa100-i128", 1, Some(7)),
        life("n3", "spot", "mystery-gpu", 0, Some(4)),
    ];
    let ivs = [
        pod("n1", "a", "a-0", 3, -1.0, Some(2.2)),
        pod("n2", "b", "b-0", 5, 1.0, None),
        pod("n3", "a", "a-1", 8, 0.0, Some(4.0)),
    ];
    let p = params(&lifetimes, &prices, ShowbackBy::Namespace, 9.0);
    let r = fold(&p, &ivs);
    let s = savings_of(&p);
    assert_eq!(r.total.cost_usd, s.actual_usd);
    assert_eq!(r.total.on_demand_usd, s.baseline_usd);
    assert_eq!(r.total.unpriced_nodes, s.unpriced_nodes);
    // The unpriced node's pod: its hours counted, its money not.
    assert_eq!(row(&r, "a").unpriced_pod_hours, dec!(4));
}

#[test]
fn a_team_label_that_changes_mid_range_is_attributed_by_interval() {
    let prices = PriceCatalog::shipped();
    let lifetimes = [life("n1", "spot", "gd-8xa100-i128", 0, Some(4))];
    let mut first = pod("n1", "ml", "p", 8, 0.0, Some(1.0));
    first.team = Some("research".into());
    let mut second = pod("n1", "ml", "p", 8, 1.0, Some(4.0));
    second.team = Some("serving".into());
    let bare = pod("n1", "ml", "q", 0, 0.0, Some(4.0));
    let r = fold(
        &params(&lifetimes, &prices, ShowbackBy::Team, 4.0),
        &[first, second, bare],
    );
    // 9.65 for the first hour, 28.95 for the next three.
    assert_eq!(row(&r, "research").cost_usd, dec!(9.65));
    assert_eq!(row(&r, "serving").cost_usd, dec!(28.95));
    let none = row(&r, NO_TEAM);
    assert_eq!(none.cost_usd, dec!(0), "asks for no GPU of a GPU node");
    assert_eq!(none.pod_hours, dec!(4));
    assert!(r.idle[0].cost_usd.is_zero());
}

#[test]
fn cpu_node_shares_are_the_larger_of_cpu_and_memory_scaled_when_they_overcommit() {
    let prices = PriceCatalog::shipped();
    let mut cpu = life("c", "on-demand", "cd-gp-a192-genoa", 0, Some(2));
    cpu.gpus = 0;
    let on_cpu = |name: &str, cpu_m: u64, mem: u64| PodInterval {
        node_gpus: 0,
        gpus: 0,
        cpu_m,
        memory_b: mem,
        node_cpu_m: Some(100_000),
        node_memory_b: Some(1000),
        ..pod("c", name, name, 0, 0.0, Some(2.0))
    };
    // a: CPU 60 %, memory 10 % → 0.6; b: CPU 10 %, memory 60 % → 0.6. Together 1.2: each is
    // scaled to 0.5, and nothing is idle.
    let r = fold(
        &params(&[cpu], &prices, ShowbackBy::Namespace, 2.0),
        &[on_cpu("a", 60_000, 100), on_cpu("b", 10_000, 600)],
    );
    assert!(r.total.cost_usd > Decimal::ZERO, "the type is priced");
    assert_eq!(row(&r, "a").cost_usd, row(&r, "b").cost_usd);
    assert!(r.idle[0].cost_usd.is_zero());
    assert_eq!(row(&r, "a").cost_usd * dec!(2), r.total.cost_usd);
}

#[test]
fn a_pod_replaced_at_the_same_second_is_not_counted_twice() {
    let ivs = [
        pod("n", "a", "old", 8, 0.0, Some(1.0)),
        pod("n", "a", "new", 8, 1.0, Some(2.0)),
    ];
    let w = weighted_seconds(&ivs, secs(t0()), secs(at(2.0)), secs(at(2.0)));
    assert_eq!(w[0], (dec!(3600), 3600));
    assert_eq!(w[1], (dec!(3600), 3600));
    // A window after both: nothing.
    let later = weighted_seconds(&ivs, secs(at(3.0)), secs(at(4.0)), secs(at(4.0)));
    assert!(later.iter().all(|(d, s)| d.is_zero() && *s == 0));
}

#[test]
fn killed_pods_and_lost_gpu_hours_go_to_their_namespace_and_team() {
    let prices = PriceCatalog::shipped();
    let mut n1 = life("n1", "spot", "gd-8xa100-i128", 0, Some(5));
    n1.preemption_t0 = Some(at(4.9));
    let lifetimes = [n1];
    let mut p = pod("n1", "ml", "trainer", 4, 2.0, Some(5.0));
    p.team = Some("research".into());
    let killed = |name: &str, outcome: &str, owner: Option<&str>| KilledPod {
        node_uid: "n1".into(),
        namespace: "ml".into(),
        pod: name.into(),
        owner_kind: owner.map(Into::into),
        owner_name: owner.map(|_| "agent".into()),
        outcome: Some(outcome.into()),
        gpus: 4,
        started_at: Some(at(2.0)),
    };
    for (by, key) in [
        (ShowbackBy::Namespace, "ml"),
        (ShowbackBy::Team, "research"),
    ] {
        let pr = params(&lifetimes, &prices, by, 6.0);
        let mut s = Showback::new(&pr);
        s.node("n1", std::slice::from_ref(&p));
        s.killed([
            killed("trainer", "still running", None),
            killed("done", "Succeeded", None),
            killed("agent", "still running", Some("DaemonSet")),
        ]);
        let r = s.finish();
        let row = row(&r, key);
        assert_eq!(row.preemptions, 1);
        assert_eq!(row.pods_killed, 1, "Succeeded and DaemonSet pods aside");
        assert_eq!(row.gpu_hours_lost, dec!(12), "4 GPUs × 3 h from its start");
    }
}

#[test]
fn apportion_keeps_the_total_to_the_cent() {
    assert_eq!(
        apportion(&[dec!(1.005), dec!(1.005), dec!(0.99)], dec!(3.00)),
        vec![dec!(1.01), dec!(1.00), dec!(0.99)]
    );
    assert_eq!(apportion(&[], dec!(0)), Vec::<Decimal>::new());
    // More cents asked than the remainders give: taken back from the smallest.
    assert_eq!(
        apportion(&[dec!(1.00), dec!(2.00)], dec!(2.99)),
        vec![dec!(1.00), dec!(1.99)]
    );
}

/// A small deterministic generator (xorshift), so the random fleets repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn rows_and_idle_add_up_to_the_fleet_cost_to_the_cent_on_random_fleets() {
    let prices = PriceCatalog::shipped();
    let types = ["gd-8xa100-i128", "cd-gp-a192-genoa", "mystery-gpu"];
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for round in 0..200 {
        let nodes = 1 + rng.below(12) as usize;
        let lifetimes: Vec<Lifetime> = (0..nodes)
            .map(|i| {
                let start = rng.below(48 * 3600) as i64 - 12 * 3600;
                let end = (rng.below(3) > 0).then(|| start + 60 + rng.below(40 * 3600) as i64);
                Lifetime {
                    uid: format!("n{i}"),
                    cluster: format!("c{}", rng.below(2)),
                    node: format!("node-{i}"),
                    pool: Some(format!("p{}", rng.below(3))),
                    instance_type: Some(types[rng.below(3) as usize].into()),
                    zone: Some("US-EAST-04A".into()),
                    capacity_type: if rng.below(2) == 0 {
                        crate::CapacityType::Spot
                    } else {
                        crate::CapacityType::OnDemand
                    },
                    gpus: [0, 8][rng.below(2) as usize],
                    started_at: t0() + Duration::seconds(start),
                    ended_at: end.map(|e| t0() + Duration::seconds(e)),
                    ..Default::default()
                }
            })
            .collect();
        let mut ivs = Vec::new();
        for l in &lifetimes {
            for k in 0..rng.below(20) {
                let s = l.started_at + Duration::seconds(rng.below(30 * 3600) as i64);
                let e = (rng.below(4) > 0)
                    .then(|| s + Duration::seconds(1 + rng.below(20 * 3600) as i64));
                ivs.push(PodInterval {
                    cluster: l.cluster.clone(),
                    node_uid: l.uid.clone(),
                    namespace: format!("ns{}", rng.below(5)),
                    workload: format!("Pod/{}-{k}", l.uid),
                    pod_uid: format!("{}-{k}", l.uid),
                    team: (rng.below(3) > 0).then(|| format!("t{}", rng.below(3))),
                    gpus: rng.below(9) as u32,
                    cpu_m: rng.below(200_000),
                    memory_b: rng.below(2_000_000),
                    node_gpus: l.gpus,
                    node_cpu_m: (rng.below(5) > 0).then_some(192_000),
                    node_memory_b: Some(1_500_000),
                    started_at: s,
                    ended_at: e,
                });
            }
        }
        let to_h = 1.0 + rng.below(60) as f64;
        for by in ShowbackBy::ALL {
            let p = params(&lifetimes, &prices, by, to_h);
            let r = fold(&p, &ivs);
            let rows: Decimal = r.rows.iter().map(|x| x.cost_usd).sum();
            let idle: Decimal = r.idle.iter().map(|x| x.cost_usd).sum();
            assert_eq!(rows + idle, r.total.cost_usd, "round {round} by {by:?}");
            let rows_od: Decimal = r.rows.iter().map(|x| x.on_demand_usd).sum();
            let idle_od: Decimal = r.idle.iter().map(|x| x.on_demand_usd).sum();
            assert_eq!(rows_od + idle_od, r.total.on_demand_usd, "round {round}");
            assert!(
                r.idle.iter().all(|i| i.cost_usd >= Decimal::ZERO),
                "round {round}: shares never exceed the node"
            );
            let s = savings_of(&p);
            assert_eq!(r.total.cost_usd, s.actual_usd, "round {round}");
            assert_eq!(r.total.on_demand_usd, s.baseline_usd, "round {round}");
        }
    }
}

#[test]
fn by_names_parse_and_refuse() {
    for b in ShowbackBy::ALL {
        assert_eq!(ShowbackBy::parse(b.as_str()).unwrap(), b);
    }
    assert!(ShowbackBy::parse("label").is_err());
}
