use chrono::{TimeZone, Utc};

use super::checkpoint::{CheckpointAdvice, Costs, daly_interval_s, fits_notice, young_interval_s};
use super::report::{
    EstimateStatus, SurvivalBy, departure, departure_rows, observation, row, rows,
};
use super::*;
use crate::domain::preemption::rates::Window;
use crate::model::Lifetime;
use crate::{CapacityType, Provider};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// The worked example, ten nodes (times in seconds; P preempted, C censored):
///
/// ```text
///  t   n at risk  d  c   1 − d/n   Ŝ(t)                 Greenwood Σ d/(n(n−d))
///  1      10      1  0    9/10     0.9                  1/90            = 0.011111
///  2       9      2  1    7/9      0.9 × 7/9  = 0.7     + 2/63 = 3/70   = 0.042857
///  3       6      0  1    —        0.7                  3/70
///  4       5      1  0    4/5      0.7 × 4/5  = 0.56    + 1/20 = 13/140 = 0.092857
///  5       4      1  1    3/4      0.56 × 3/4 = 0.42    + 1/12 = 37/210 = 0.176190
///  6       2      1  0    1/2      0.42 × 1/2 = 0.21    + 1/2  = 71/105 = 0.676190
///  8       1      0  1    —        0.21                 71/105
/// ```
///
/// At t = 2 the preemptions come before the censoring: the node censored at 2 is one of the
/// 9 at risk (censoring it first would give 0.9 × 6/8 = 0.675).
///
/// Median: the first t with Ŝ ≤ 1/2 is 5.
/// Log-log band at t = 1: σ = √(1/90) / |ln 0.9| = 1.000463, 0.9^exp(1.96 σ) = 0.9^7.10551
/// = 0.47301 ≤ 1/2, so the median's lower bound is 1. Upper band at t = 5: σ = √(37/210) /
/// |ln 0.42| = 0.483862, 0.42^exp(−1.96 σ) = 0.42^0.387379 = 0.71459; at t = 6 and 8:
/// σ = √(71/105) / |ln 0.21| = 0.526902, 0.21^0.356041 = 0.57370: never ≤ 1/2, so the upper
/// bound is unbounded.
///
/// Restricted mean to τ = 8: 1 + 0.9 + 0.7 + 0.7 + 0.56 + 0.42 + 2 × 0.21 = 4.70.
/// Areas from each preemption time to 8: A(6) = 0.42, A(5) = 0.84, A(4) = 1.40,
/// A(2) = 2.80, A(1) = 3.70. V = 3.70²/90 + 2.80² × 2/63 + 1.40²/20 + 0.84²/12 + 0.42²/2
/// = 0.152111 + 0.248889 + 0.098 + 0.0588 + 0.0882 = 0.646; 1.959964 × √0.646 = 1.575304;
/// interval [3.124696, 6.275304].
fn worked() -> Vec<Observation> {
    use Observation as O;
    vec![
        O::censored(8.0),
        O::preempted(2.0),
        O::preempted(1.0),
        O::censored(2.0),
        O::preempted(5.0),
        O::censored(3.0),
        O::preempted(4.0),
        O::preempted(2.0),
        O::censored(5.0),
        O::preempted(6.0),
    ]
}

#[test]
fn survival_worked_example_curve_at_risk_and_ties() {
    let km = KaplanMeier::fit(&worked());
    let got: Vec<(f64, u32, u32, u32)> = km
        .steps
        .iter()
        .map(|s| (s.t_s, s.at_risk, s.preempted, s.censored))
        .collect();
    assert_eq!(
        got,
        vec![
            (1.0, 10, 1, 0),
            (2.0, 9, 2, 1),
            (3.0, 6, 0, 1),
            (4.0, 5, 1, 0),
            (5.0, 4, 1, 1),
            (6.0, 2, 1, 0),
            (8.0, 1, 0, 1),
        ]
    );
    let s: Vec<f64> = km.steps.iter().map(|s| s.survival).collect();
    for (got, want) in s.iter().zip([0.9, 0.7, 0.7, 0.56, 0.42, 0.21, 0.21]) {
        assert!(close(*got, want, 1e-12), "{s:?}");
    }
    let g: Vec<f64> = km.steps.iter().map(|s| s.greenwood).collect();
    for (got, want) in g.iter().zip([
        1.0 / 90.0,
        3.0 / 70.0,
        3.0 / 70.0,
        13.0 / 140.0,
        37.0 / 210.0,
        71.0 / 105.0,
        71.0 / 105.0,
    ]) {
        assert!(close(*got, want, 1e-12), "{g:?}");
    }
    assert_eq!((km.nodes, km.preempted, km.censored()), (10, 6, 4));
    assert!(close(km.survival_at(0.5), 1.0, 0.0));
    assert!(close(km.survival_at(3.5), 0.7, 1e-12));
    assert!(close(km.survival_at(100.0), 0.21, 1e-12));
}

#[test]
fn survival_worked_example_median_and_its_log_log_interval() {
    let km = KaplanMeier::fit(&worked());
    assert_eq!(km.median_s(), Some(5.0));
    let (lo, hi) = km.steps[0].band();
    assert!(close(lo, 0.47301, 1e-5) && hi > 0.9, "{lo} {hi}");
    let (lo5, hi5) = km.steps[4].band();
    assert!(close(hi5, 0.71459, 1e-5), "{lo5} {hi5}");
    assert!(close(km.steps[5].band().1, 0.57370, 1e-5));
    assert_eq!(km.median_ci_s(), [Some(1.0), None]);
}

#[test]
fn survival_worked_example_restricted_mean_and_its_interval() {
    let m = KaplanMeier::fit(&worked()).restricted_mean().unwrap();
    assert!(close(m.mean_s, 4.70, 1e-12), "{m:?}");
    assert_eq!(m.tau_s, 8.0);
    assert!(close(m.ci_s[0], 3.124_696, 1e-6), "{m:?}");
    assert!(close(m.ci_s[1], 6.275_304, 1e-6), "{m:?}");
}

#[test]
fn survival_too_few_preemptions_is_a_state_not_a_number() {
    let four: Vec<Observation> = (1..=4)
        .map(|t| Observation::preempted(f64::from(t)))
        .chain((1..=20).map(|t| Observation::censored(f64::from(t))))
        .collect();
    assert_eq!(
        KaplanMeier::fit(&four).estimate(),
        Estimate::TooFewPreemptions { preempted: 4 }
    );
    let r = row("c/p".into(), &four);
    assert_eq!(r.status, EstimateStatus::TooFewPreemptions);
    assert_eq!((r.median_s, r.mean_restricted_s), (None, None));
    assert_eq!(r.curve.len(), 21, "the curve is still drawn");
    let mut five = four;
    five.push(Observation::preempted(30.0));
    assert!(matches!(
        KaplanMeier::fit(&five).estimate(),
        Estimate::Estimated { .. }
    ));
    assert_eq!(
        KaplanMeier::fit(&[]).estimate(),
        Estimate::TooFewPreemptions { preempted: 0 }
    );
}

#[test]
fn survival_every_node_preempted_at_one_time_ends_the_curve_at_zero() {
    let all: Vec<Observation> = [1.0, 2.0, 3.0, 4.0, 5.0, 5.0]
        .into_iter()
        .map(Observation::preempted)
        .collect();
    let km = KaplanMeier::fit(&all);
    assert_eq!(km.steps.last().unwrap().survival, 0.0);
    assert_eq!(km.steps.last().unwrap().band(), (0.0, 0.0));
    let m = km.restricted_mean().unwrap();
    // 1 + 5/6 + 4/6 + 3/6 + 2/6 = 20/6.
    assert!(close(m.mean_s, 20.0 / 6.0, 1e-12), "{m:?}");
    assert!(m.ci_s[0] < m.mean_s && m.ci_s[1] > m.mean_s);
}

fn lifetime(uid: &str, pool: &str) -> Lifetime {
    Lifetime {
        uid: uid.into(),
        cluster: "c1".into(),
        node: uid.into(),
        pool: Some(pool.into()),
        zone: Some("US-EAST-04A".into()),
        instance_type: Some("gd-8xh100ib-i128".into()),
        capacity_type: CapacityType::Spot,
        started_at: Utc.timestamp_opt(1_000_000, 0).unwrap(),
        ..Default::default()
    }
}

#[test]
fn survival_lifetimes_are_read_from_ready_and_censored_unless_preempted() {
    let now = Utc.timestamp_opt(1_100_000, 0).unwrap();
    let t = |s: i64| Utc.timestamp_opt(1_000_000 + s, 0).unwrap();
    let mut preempted = lifetime("a", "p");
    preempted.ready_at = Some(t(100));
    preempted.preemption_t0 = Some(t(3_700));
    preempted.ended_at = Some(t(4_100));
    preempted.end_reason = Some("preempted".into());
    assert_eq!(
        observation(&preempted, now),
        Some(Observation::preempted(3_600.0)),
        "from Ready to T=0, not to removal"
    );
    let mut scaled = lifetime("b", "p");
    scaled.ended_at = Some(t(500));
    scaled.end_reason = Some("scaled-down".into());
    assert_eq!(
        observation(&scaled, now),
        Some(Observation::censored(500.0)),
        "no Ready seen: from the start; scaled down: censored"
    );
    let running = lifetime("c", "p");
    assert_eq!(
        observation(&running, now),
        Some(Observation::censored(100_000.0))
    );
    let mut on_demand = lifetime("d", "p");
    on_demand.capacity_type = CapacityType::OnDemand;
    assert_eq!(observation(&on_demand, now), None);

    let all = [preempted, scaled, running, on_demand, lifetime("e", "q")];
    let by_pool = rows(&all, SurvivalBy::Pool, now);
    let keys: Vec<(&str, u32, u32)> = by_pool
        .iter()
        .map(|r| (r.key.as_str(), r.nodes, r.preempted))
        .collect();
    assert_eq!(keys, vec![("c1/p", 3, 1), ("c1/q", 1, 0)]);
    let by_zone_type = rows(&all, SurvivalBy::ZoneInstanceType, now);
    assert_eq!(by_zone_type[0].key, "US-EAST-04A/gd-8xh100ib-i128");
    assert_eq!(by_zone_type[0].curve[0].at_risk, 4);
}

/// A node that went while spotboard was not watching ends at the last heartbeat, and only
/// its survival to then is known: two on-demand nodes Ready at 0, one inferred gone at 10 h
/// (censored there), one scaled down at 20 h: one departure, Ŝ = 1 until 20 h, then 0 with
/// one node at risk.
#[test]
fn an_unobserved_end_is_censored_not_a_departure() {
    let h = |n: i64| Utc.timestamp_opt(1_000_000 + n * 3_600, 0).unwrap();
    let od = |uid: &str, end: i64, reason: &str| Lifetime {
        capacity_type: CapacityType::OnDemand,
        ready_at: Some(h(0)),
        ended_at: Some(h(end)),
        end_reason: Some(reason.to_string()),
        ..lifetime(uid, "od")
    };
    let all = [
        od("a", 10, crate::model::END_UNOBSERVED),
        od("b", 20, "scaled-down"),
    ];
    assert_eq!(
        departure(&all[0], h(30)),
        Some(Observation::censored(10.0 * 3_600.0))
    );
    let r = departure_rows(&all, SurvivalBy::Pool, h(30));
    assert_eq!((r[0].nodes, r[0].preempted), (2, 1));
    let last = r[0].curve.last().unwrap();
    assert!(close(last.t_s, 20.0 * 3_600.0, 1e-9) && last.survival == 0.0 && last.at_risk == 1);
}

/// On-demand departures by hand: three nodes Ready at 0; one scaled down at 10 h, one deleted
/// at 20 h, one still running at 30 h (now). Ŝ = 2/3 after 10 h, 2/3 × 1/2 = 1/3 after 20 h;
/// the third is censored at 30 h. A spot node is no departure row, a preemption no spot row's
/// departure.
#[test]
fn departure_curves_of_on_demand_nodes_by_hand() {
    let h = |n: i64| Utc.timestamp_opt(1_000_000 + n * 3_600, 0).unwrap();
    let now = h(30);
    let od = |uid: &str, end: Option<(i64, &str)>| Lifetime {
        capacity_type: CapacityType::OnDemand,
        ready_at: Some(h(0)),
        ended_at: end.map(|(e, _)| h(e)),
        end_reason: end.map(|(_, r)| r.to_string()),
        ..lifetime(uid, "od")
    };
    let all = [
        od("a", Some((10, "scaled-down"))),
        od("b", Some((20, "deleted"))),
        od("c", None),
        lifetime("s", "od"),
    ];
    assert_eq!(departure(&all[3], now), None, "spot is not on-demand");
    assert_eq!(
        departure(&all[2], now),
        Some(Observation::censored(30.0 * 3_600.0))
    );
    let r = departure_rows(&all, SurvivalBy::Pool, now);
    assert_eq!(r.len(), 1);
    assert_eq!(
        (r[0].key.as_str(), r[0].nodes, r[0].preempted),
        ("c1/od", 3, 2)
    );
    let s: Vec<(f64, f64, u32)> = r[0]
        .curve
        .iter()
        .map(|p| (p.t_s / 3_600.0, p.survival, p.at_risk))
        .collect();
    assert_eq!(s[0], (0.0, 1.0, 3));
    assert!(close(s[1].0, 10.0, 1e-12) && close(s[1].1, 2.0 / 3.0, 1e-12) && s[1].2 == 3);
    assert!(close(s[2].0, 20.0, 1e-12) && close(s[2].1, 1.0 / 3.0, 1e-12) && s[2].2 == 2);
    // The spot row of the same pool holds the spot node alone.
    assert_eq!(rows(&all, SurvivalBy::Pool, now)[0].nodes, 1);
}

#[test]
fn survival_by_parses_the_api_names_and_refuses_others() {
    for by in SurvivalBy::ALL {
        assert_eq!(SurvivalBy::parse(by.as_str()).unwrap(), by);
        assert_eq!(
            serde_json::to_string(&by).unwrap(),
            format!("\"{}\"", by.as_str())
        );
    }
    let e = SurvivalBy::parse("region").unwrap_err().to_string();
    assert!(e.contains("unknown by \"region\""), "{e}");
}

/// Young by hand: C = 300 s, M = 6 h = 21,600 s: τ = √(2 × 300 × 21,600) = √12,960,000 =
/// 3,600 s. With R = 120 s: lost per preemption 3,600/2 + 120 = 1,920 s; 86,400 / 21,600 =
/// 4 preemptions a day, 7,680 s lost a day; checkpoints 300 × 86,400 / 3,600 = 7,200 s a day.
#[test]
fn checkpoint_young_interval_by_hand() {
    assert_eq!(young_interval_s(300.0, 21_600.0), 3_600.0);
    let r = super::report::SurvivalRow {
        nodes: 512,
        preempted: 43,
        status: EstimateStatus::Estimated,
        mean_restricted_s: Some(21_600.0),
        mean_restricted_ci_s: Some([10_800.0, 43_200.0]),
        ..Default::default()
    };
    let costs = Costs::new(Some(300.0), Some(120.0)).unwrap();
    let a = CheckpointAdvice::new(&r, costs, Provider::Cks, "c1", "p", Window::Last30d);
    assert_eq!(a.status, EstimateStatus::Estimated);
    assert_eq!(a.interval_s, Some(3_600.0));
    assert_eq!(a.lost_per_preemption_s, Some(1_920.0));
    assert_eq!(a.lost_per_day_s, Some(7_680.0));
    assert_eq!(a.checkpoint_per_day_s, Some(7_200.0));
    assert_eq!(a.m_ci_s, Some([10_800.0, 43_200.0]));
    let ci = a.interval_ci_s.unwrap();
    assert!(close(ci[0], 2_545.584_412, 1e-6) && close(ci[1], 5_091.168_825, 1e-6));
    assert!(
        a.fits_notice,
        "300 s fits CKS's 300 s from SIGTERM to removal"
    );
    assert_eq!(a.inputs.notice_budget_s, 300);
    assert_eq!(
        a.arithmetic(),
        "M = 6.0 h from 43 preemptions of 512 nodes; τ = √(2 × 300 s × 6.0 h) = 60 min"
    );
    assert!(a.young_holds, "300 s is under a tenth of 6 h");
    let short = super::report::SurvivalRow {
        mean_restricted_s: Some(2_999.0),
        ..r.clone()
    };
    let a = CheckpointAdvice::new(&short, costs, Provider::Cks, "c1", "p", Window::Last30d);
    assert!(!a.young_holds, "300 s is more than a tenth of 2,999 s");
}

/// Daly by hand: C = 300 s, M = 6 h: x = 300/43,200 = 1/144, √x = 1/12; τ = 3,600 ×
/// (1 + 1/36 + 1/1,296) − 300 = 3,600 + 100 + 25/9 − 300 = 3,402 7/9 s. For C ≥ 2M, τ = M.
/// As C/M falls, Daly's interval meets Young's less C.
#[test]
fn checkpoint_daly_interval_by_hand() {
    assert!(close(
        daly_interval_s(300.0, 21_600.0),
        3_400.0 + 25.0 / 9.0,
        1e-9
    ));
    assert_eq!(daly_interval_s(500.0, 200.0), 200.0);
    assert_eq!(daly_interval_s(400.0, 200.0), 200.0);
    let (c, m) = (1.0, 1.0e8);
    let rel = (daly_interval_s(c, m) + c) / young_interval_s(c, m) - 1.0;
    assert!(rel > 0.0 && rel < 1e-4, "{rel}");
    let r = super::report::SurvivalRow {
        nodes: 512,
        preempted: 43,
        status: EstimateStatus::Estimated,
        mean_restricted_s: Some(21_600.0),
        ..Default::default()
    };
    let a = CheckpointAdvice::new(
        &r,
        Costs::new(Some(300.0), Some(0.0)).unwrap(),
        Provider::Cks,
        "c1",
        "p",
        Window::Last30d,
    );
    assert!(close(a.daly_interval_s.unwrap(), 3_402.777_777_8, 1e-6));
}

#[test]
fn checkpoint_notice_fit_is_the_readiness_audits_budget() {
    assert!(fits_notice(Provider::Cks, 300.0));
    assert!(!fits_notice(Provider::Cks, 301.0));
    assert!(fits_notice(Provider::Karpenter, 120.0));
    assert!(!fits_notice(Provider::Karpenter, 121.0));
    assert!(!fits_notice(Provider::Gke, 16.0));
}

#[test]
fn checkpoint_without_an_estimate_says_so_and_bad_costs_are_refused() {
    let r = super::report::SurvivalRow {
        nodes: 9,
        preempted: 2,
        ..Default::default()
    };
    let a = CheckpointAdvice::new(
        &r,
        Costs::default(),
        Provider::Gke,
        "c",
        "p",
        Window::Last7d,
    );
    assert_eq!(a.status, EstimateStatus::TooFewPreemptions);
    assert_eq!((a.m_s, a.interval_s), (None, None));
    assert!(!a.fits_notice, "300 s does not fit GKE's 15 s");
    assert!(
        a.arithmetic()
            .starts_with("too few preemptions to estimate")
    );
    for (c, r) in [
        (Some(0.0), None),
        (Some(-1.0), None),
        (Some(f64::NAN), None),
        (None, Some(-5.0)),
        (Some(1e9), None),
    ] {
        assert!(
            matches!(Costs::new(c, r), Err(crate::Error::Invalid(_))),
            "{c:?} {r:?}"
        );
    }
    assert_eq!(Costs::new(None, None).unwrap(), Costs::default());
}
