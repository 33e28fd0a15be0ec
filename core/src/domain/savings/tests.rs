use chrono::{DateTime, Duration, TimeZone, Utc};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

use super::*;
use crate::domain::prices::PriceCatalog;
use crate::model::{FleetGroup, Lifetime, SavingsReport};

pub(crate) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap()
}

/// A lifetime of an 8-GPU node of `pool-a` in cluster `c1`, hours counted from [`t0`].
pub(crate) fn life(
    uid: &str,
    class: &str,
    instance: &str,
    start_h: i64,
    end_h: Option<i64>,
) -> Lifetime {
    Lifetime {
        uid: uid.into(),
        cluster: "c1".into(),
        node: format!("node-{uid}"),
        pool: Some("pool-a".into()),
        instance_type: Some(instance.into()),
        zone: Some("US-EAST-04A".into()),
        capacity_type: crate::CapacityType::parse(class),
        gpus: 8,
        started_at: t0() + Duration::hours(start_h),
        ended_at: end_h.map(|h| t0() + Duration::hours(h)),
        end_reason: end_h.map(|_| "scaled-down".into()),
        end_evidence: None,
        preemption_t0: None,
        ready_at: None,
        evictions: Default::default(),
        drill_t0: None,
        work_lost_gpu_s: 0,
    }
}

#[test]
fn hybrid_on_demand_floor_example_by_hand() {
    // m5.xlarge in us-east-1 at 0.192 on-demand (AWS public price, mid-2025) and 0.068 spot (a
    // typical spot price then), 20 nodes, 4 kept on-demand.
    let fleet = [FleetGroup {
        instance_type: "m5.xlarge".into(),
        nodes: 20,
        on_demand_usd_h: dec!(0.192),
        spot_usd_h: dec!(0.068),
    }];
    let h = hybrid(&fleet, Floor::Nodes(4));
    assert_eq!(h.on_demand_part_usd, dec!(560.64)); // 0.192 × 4 × 730
    assert_eq!(h.spot_part_usd, dec!(794.24)); // 0.068 × 16 × 730
    assert_eq!(h.blended_usd, dec!(1354.88));
    assert_eq!(h.all_on_demand_usd, dec!(2803.20)); // 0.192 × 20 × 730
    assert_eq!(h.all_spot_usd, dec!(992.80)); // 0.068 × 20 × 730
    assert_eq!(h.saving_usd, dec!(1448.32));
    assert_eq!(h.saving_pct, dec!(51.67));
    assert_eq!(
        hybrid(&fleet, Floor::Percent(dec!(20))),
        h,
        "20 % of 20 is 4"
    );
    assert_eq!(hybrid(&[], Floor::Nodes(3)).blended_usd, dec!(0));
}

#[test]
fn report_by_hand_with_an_unpriced_node_left_out_and_counted() {
    let prices = PriceCatalog::shipped();
    let lifetimes = [
        // A100 spot, 10 h in range: 10 × 9.65 = 96.50 paid, 10 × 21.60 = 216.00 on-demand.
        life("a", "spot", "gd-8xa100-i128", 0, Some(10)),
        // A100 on-demand, 5 h: 5 × 21.60 = 108.00 both ways.
        life("b", "on-demand", "gd-8xa100-i128", 5, Some(10)),
        // Unknown instance type: no price, left out and counted.
        life("c", "spot", "mystery-gpu", 0, Some(10)),
        // Outside the range.
        life("d", "spot", "gd-8xa100-i128", 20, Some(30)),
    ];
    let r = report(&ReportInput {
        lifetimes: &lifetimes,
        prices: &prices,
        from: t0(),
        to: t0() + Duration::hours(10),
        now: t0() + Duration::hours(40),
        reserved_discount_pct: None,
    });
    assert_eq!(r.actual_usd, dec!(204.50));
    assert_eq!(r.baseline_usd, dec!(324.00));
    assert_eq!(r.savings_usd, dec!(119.50));
    assert_eq!(r.savings_pct, dec!(36.88)); // 119.50 ÷ 324.00
    assert_eq!(r.node_hours, dec!(15));
    assert_eq!(r.unpriced_nodes, 1);
    // 204.50 over 10 h → 20.45 per hour × 730 = 14,928.50.
    assert_eq!(r.projected_month_usd, dec!(14928.50));
    // Asked from 10 h before the first recorded node: the projection still uses the 10 h covered.
    let earlier = report(&ReportInput {
        lifetimes: &lifetimes,
        prices: &prices,
        from: t0() - Duration::hours(10),
        to: t0() + Duration::hours(10),
        now: t0() + Duration::hours(40),
        reserved_discount_pct: None,
    });
    assert_eq!(earlier.projected_month_usd, dec!(14928.50));
    let by_class = &r
        .breakdowns
        .iter()
        .find(|(n, _)| n == "capacity type")
        .unwrap()
        .1;
    let spot = by_class.iter().find(|row| row.key == "spot").unwrap();
    assert_eq!(
        (spot.actual_usd, spot.baseline_usd, spot.unpriced_nodes),
        (dec!(96.50), dec!(216.00), 1)
    );
    assert_eq!(r.lines.len(), 3, "the out-of-range node has no line");
    assert!(r.price_sources.iter().any(|s| s.contains("2026-08-22")));
    assert_eq!(r.series.len(), 10, "hourly buckets for a 10 h range");
    assert_eq!(r.series[0].actual_usd, dec!(9.65));
}

#[test]
fn preemption_cost_runs_from_t0_to_the_replacement_being_ready() {
    let prices = PriceCatalog::shipped();
    let mut victim = life("v", "spot", "gd-8xa100-i128", 0, Some(9));
    victim.preemption_t0 = Some(t0() + Duration::hours(8));
    victim.end_reason = Some("preempted".into());
    // The replacement is created 20 min after T=0 and Ready 30 min after: the loss runs
    // to Ready (creation would make it 20 min).
    let replacement = life("r", "spot", "gd-8xa100-i128", 0, None);
    let replacement = Lifetime {
        started_at: t0() + Duration::minutes(8 * 60 + 20),
        ready_at: Some(t0() + Duration::minutes(8 * 60 + 30)),
        ..replacement
    };
    let r = first_half_day(&[victim, replacement], &prices);
    assert_eq!(r.preemption.preemptions, 1);
    assert_eq!(r.preemption.lost_node_hours, dec!(0.5));
    assert_eq!(r.preemption.lost_gpu_hours, dec!(4)); // 0.5 h × 8 GPUs
    assert_eq!(r.preemption.lost_usd, dec!(4.83)); // 0.5 × 9.65 = 4.825, half up
    assert_eq!(r.net.gap_usd, dec!(4.83));
    assert_eq!(
        r.net.net_usd,
        r.savings_usd - dec!(4.83),
        "no work lost recorded"
    );
    // The run rate: the replacement runs, at 9.65 against 21.60 per hour.
    assert_eq!(r.run_rate.running_nodes, 1);
    assert_eq!(r.run_rate.actual_usd_h, dec!(9.65));
    assert_eq!(r.run_rate.difference_usd_h, dec!(11.95));
    assert_eq!(r.fleet.len(), 1);
}

/// The report of the range's first 12 hours, read at its end.
fn first_half_day(lifetimes: &[Lifetime], prices: &PriceCatalog) -> SavingsReport {
    report(&ReportInput {
        lifetimes,
        prices,
        from: t0(),
        to: t0() + Duration::hours(12),
        now: t0() + Duration::hours(12),
        reserved_discount_pct: None,
    })
}

#[test]
fn a_replacement_recorded_without_a_ready_time_counts_from_its_creation() {
    // Rows from before Ready times were kept: the loss must not run on to the end of the range.
    let prices = PriceCatalog::shipped();
    let mut victim = life("v", "spot", "gd-8xa100-i128", 0, Some(9));
    victim.preemption_t0 = Some(t0() + Duration::hours(8));
    let replacement = Lifetime {
        started_at: t0() + Duration::minutes(8 * 60 + 30),
        ..life("r", "spot", "gd-8xa100-i128", 0, None)
    };
    let r = first_half_day(&[victim, replacement], &prices);
    assert_eq!(r.preemption.lost_node_hours, dec!(0.5));
}

/// A preempted A100 spot node (8 GPUs, 9.65 spot, 21.60 on-demand per hour) and its
/// replacement over the first 12 h: T=0 at 8 h, the node gone at 9 h, the replacement created
/// at 8:20 and Ready at 8:30; the victim held one 8-GPU pod started at 6 h.
fn preempted_with_lost_work(work_lost_gpu_s: u64) -> [Lifetime; 2] {
    let mut victim = life("v", "spot", "gd-8xa100-i128", 0, Some(9));
    victim.preemption_t0 = Some(t0() + Duration::hours(8));
    victim.end_reason = Some("preempted".into());
    victim.work_lost_gpu_s = work_lost_gpu_s;
    let replacement = Lifetime {
        started_at: t0() + Duration::minutes(8 * 60 + 20),
        ready_at: Some(t0() + Duration::minutes(8 * 60 + 30)),
        ..life("r", "spot", "gd-8xa100-i128", 0, None)
    };
    [victim, replacement]
}

fn half_day_with_reserved(lifetimes: &[Lifetime], reserved: Option<Decimal>) -> SavingsReport {
    report(&ReportInput {
        lifetimes,
        prices: &PriceCatalog::shipped(),
        from: t0(),
        to: t0() + Duration::hours(12),
        now: t0() + Duration::hours(12),
        reserved_discount_pct: reserved,
    })
}

#[test]
fn net_savings_and_break_even_by_hand() {
    // The pod's work: 8 GPUs × (9 h − 6 h) = 24 GPU-hours.
    let lives = preempted_with_lost_work(8 * 3 * 3600);
    let n = half_day_with_reserved(&lives, Some(dec!(40))).net;
    // Node-hours: 9 (victim) + 3 h 40 min (replacement) = 12.6667.
    // B = 12.6667 × 21.60 = 273.60; A = 12.6667 × 9.65 = 122.2333.
    assert_eq!(n.gross_usd, dec!(151.37));
    assert_eq!(n.gross_pct, dec!(55.32)); // 151.3667 ÷ 273.60
    assert_eq!(n.preemptions, 1);
    assert_eq!((n.gap_node_hours, n.gap_usd), (dec!(0.5), dec!(4.83))); // 0.5 × 9.65 = 4.825
    // 24 GPU-hours at 21.60 ÷ 8 = 2.70 per GPU-hour on-demand.
    assert_eq!(
        (n.lost_work_gpu_hours, n.lost_work_usd),
        (dec!(24), dec!(64.80))
    );
    assert_eq!(n.net_usd, dec!(81.74)); // 151.3667 − 4.825 − 64.80 = 81.7417
    assert_eq!(n.net_pct, dec!(29.88));
    assert_eq!(n.gpu_hours, dec!(101.33)); // 8 × 12.6667
    assert_eq!(n.lost_work_pct, dec!(23.68)); // 24 ÷ 101.3333
    // (B − A − G) ÷ V, V = B (every node has GPUs): 146.5417 ÷ 273.60.
    assert_eq!(n.break_even_pct, Some(dec!(53.56)));
    // Reserved at 40 % off: (273.60 × 0.6 − 122.2333 − 4.825) ÷ 273.60 = 37.1017 ÷ 273.60.
    assert_eq!(n.reserved_discount_pct, Some(dec!(40)));
    assert_eq!(n.reserved_break_even_pct, Some(dec!(13.56)));
    assert_eq!(
        net::sentence(&n),
        "spot saves 55.32 % gross, 29.88 % net; break-even at 53.56 % of GPU-hours lost \
         (23.68 % now); reserved at 40 % off would win above 13.56 %"
    );
    // The pool's row and the spot row carry the same figures: one pool, all spot.
    let r = half_day_with_reserved(&lives, Some(dec!(40)));
    for by in ["pool", "capacity type", "instance type"] {
        let rows = &r.breakdowns.iter().find(|(name, _)| name == by).unwrap().1;
        assert_eq!(rows.len(), 1, "{by}");
        assert_eq!(rows[0].net, n, "{by}");
    }
    // Without a reserved discount there is nothing to compare with.
    let plain = half_day_with_reserved(&lives, None).net;
    assert_eq!(
        (plain.reserved_discount_pct, plain.reserved_break_even_pct),
        (None, None)
    );
}

/// The break-even found another way: by searching for the lost work at which the report's
/// own net savings reach zero, each step a whole report. It must agree with the closed form
/// to the reported precision, against on-demand and against a reserved price alike.
#[test]
fn break_even_agrees_with_a_search_over_the_reports_own_net_savings() {
    let base = half_day_with_reserved(&preempted_with_lost_work(0), Some(dec!(40)));
    let gpu_hours = Decimal::from(8) * (dec!(9) + Decimal::from(11) / Decimal::from(3));
    // The lost GPU-seconds at which `cheaper(report)` stops holding.
    let search = |still_wins: &dyn Fn(&SavingsReport) -> bool| {
        let (mut lo, mut hi) = (0u64, 8 * 12 * 3600 * 2);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            let r = half_day_with_reserved(&preempted_with_lost_work(mid), Some(dec!(40)));
            if still_wins(&r) { lo = mid } else { hi = mid }
        }
        Decimal::from(lo) / Decimal::from(3600) / gpu_hours * Decimal::ONE_HUNDRED
    };
    let on_demand = search(&|r| r.net.net_usd > Decimal::ZERO);
    let expected = base.net.break_even_pct.unwrap();
    assert!(
        (on_demand - expected).abs() <= dec!(0.01),
        "search {on_demand} vs closed form {expected}"
    );
    // Spot's whole cost (actual + gap + lost work) against the reserved price, by hand.
    let reserved = search(&|r| {
        r.actual_usd + r.net.gap_usd + r.net.lost_work_usd < r.baseline_usd * dec!(0.6)
    });
    let expected = base.net.reserved_break_even_pct.unwrap();
    assert!(
        (reserved - expected).abs() <= dec!(0.01),
        "search {reserved} vs closed form {expected}"
    );
}

/// Bad input: no GPU-hours gives no break-even (never a division by zero); a spot price above
/// on-demand gives 0 (spot loses with no work lost), and a saving larger than the whole value
/// is capped at 100.
#[test]
fn break_even_is_absent_without_gpus_and_clamped_to_0_to_100() {
    let mut cpu = preempted_with_lost_work(0);
    for l in &mut cpu {
        l.gpus = 0;
    }
    let n = half_day_with_reserved(&cpu, Some(dec!(40))).net;
    assert_eq!((n.break_even_pct, n.reserved_break_even_pct), (None, None));
    assert_eq!(n.gpu_hours, dec!(0));
    assert!(!net::sentence(&n).contains("break-even"));
    let parts = net::NetParts {
        gpu_hours: dec!(10),
        gpu_baseline_usd: dec!(100),
        ..Default::default()
    };
    let dearer = net::finish(&parts, dec!(100), dec!(120), Some(dec!(10)));
    assert_eq!(dearer.break_even_pct, Some(dec!(0)));
    assert_eq!(dearer.reserved_break_even_pct, Some(dec!(0)));
    assert!(net::sentence(&dearer).ends_with("would win at any loss"));
    let tiny = net::NetParts {
        gpu_hours: dec!(1),
        gpu_baseline_usd: dec!(10),
        ..Default::default()
    };
    assert_eq!(
        net::finish(&tiny, dec!(100), dec!(1), None).break_even_pct,
        Some(dec!(100))
    );
}

/// The rows of each breakdown add up to the fleet's net savings (to the cent per row).
#[test]
fn breakdown_rows_add_up_to_the_fleet_net() {
    let mut lives = preempted_with_lost_work(5 * 3600).to_vec();
    let mut other = life("o", "on-demand", "gd-8xa100-i128", 0, Some(12));
    other.pool = Some("pool-b".into());
    other.zone = Some("US-WEST-01A".into());
    lives.push(other);
    let r = half_day_with_reserved(&lives, None);
    for (by, rows) in &r.breakdowns {
        let sum: Decimal = rows.iter().map(|row| row.net.net_usd).sum();
        assert!(
            (sum - r.net.net_usd).abs() <= Decimal::new(rows.len() as i64, 2),
            "{by}: {sum} vs {}",
            r.net.net_usd
        );
        let gaps: Decimal = rows.iter().map(|row| row.net.gap_usd).sum();
        assert_eq!(gaps, r.net.gap_usd, "{by}: one gap, in one row");
    }
}
