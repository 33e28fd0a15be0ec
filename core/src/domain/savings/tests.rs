use chrono::{DateTime, Duration, TimeZone, Utc};
use rust_decimal_macros::dec;

use super::*;
use crate::domain::prices::PriceCatalog;
use crate::model::{FleetGroup, Lifetime, SavingsReport};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 0, 0, 0).unwrap()
}

fn life(uid: &str, class: &str, instance: &str, start_h: i64, end_h: Option<i64>) -> Lifetime {
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
        end_reason: end_h.map(|_| "scaled down".into()),
        preemption_t0: None,
        ready_at: None,
        evictions: Default::default(),
        drill_t0: None,
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
    assert_eq!(r.savings_net_usd, r.savings_usd - dec!(4.83));
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
