//! Survival curves and checkpoint advice: the estimator against an independent
//! implementation (the Python package `lifelines`, PyPI), and both endpoints through HTTP
//! over lifetimes put into the ledger.

use crate::common;

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use server::ledger::Ledger;
use spotboard_core::CapacityType;
use spotboard_core::domain::survival::report::row;
use spotboard_core::domain::survival::{KaplanMeier, Observation};
use spotboard_core::model::Lifetime;

/// 300 lifetimes from a fixed linear congruential generator: whole minutes up to 2 days (so
/// many times are tied), about a third censored, some ties between a preemption and a
/// censoring. The last one is a censoring at the longest time, so the curve does not end at 0.
fn lifetimes() -> Vec<Observation> {
    let mut x: u64 = 0x5eed;
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    let mut out: Vec<Observation> = (0..300)
        .map(|_| {
            let t = f64::from(u32::try_from(next() % 2_880).unwrap() + 1) * 60.0;
            Observation {
                t_s: t,
                preempted: next() % 3 != 0,
            }
        })
        .collect();
    out.push(Observation::censored(2_881.0 * 60.0));
    out
}

/// lifelines' Kaplan–Meier of `obs`: its survival function, number at risk, median, the
/// median's interval (`median_survival_times` of its confidence interval: the exponential
/// Greenwood one) and the restricted mean to the last time.
fn lifelines(obs: &[Observation]) -> Value {
    let script = r#"
import json, math, sys
from lifelines import KaplanMeierFitter
from lifelines.utils import median_survival_times, restricted_mean_survival_time
d = json.load(sys.stdin)
k = KaplanMeierFitter().fit(d["durations"], d["events"])
sf = k.survival_function_
ci = median_survival_times(k.confidence_interval_)
def fin(x):
    x = float(x)
    return x if math.isfinite(x) else None
print(json.dumps({
    "t": [float(t) for t in sf.index],
    "s": [float(v) for v in sf.iloc[:, 0]],
    "at_risk": [int(n) for n in k.event_table["at_risk"]],
    "median": fin(k.median_survival_time_),
    "median_ci": [fin(ci.iloc[0, 0]), fin(ci.iloc[0, 1])],
    "rmst": float(restricted_mean_survival_time(k, t=max(d["durations"]))),
}))
"#;
    let input = json!({
        "durations": obs.iter().map(|o| o.t_s).collect::<Vec<_>>(),
        "events": obs.iter().map(|o| o.preempted).collect::<Vec<_>>(),
    });
    let stdout = common::python::run("lifelines", script, input.to_string().as_bytes());
    serde_json::from_slice(&stdout).unwrap()
}

#[test]
fn survival_matches_lifelines_curve_at_risk_median_and_restricted_mean() {
    let obs = lifetimes();
    let want = lifelines(&obs);
    let got = row("c/p".into(), &obs);
    let t: Vec<f64> = got.curve.iter().map(|p| p.t_s).collect();
    let s: Vec<f64> = got.curve.iter().map(|p| p.survival).collect();
    let n: Vec<u64> = got.curve.iter().map(|p| u64::from(p.at_risk)).collect();
    let want_t: Vec<f64> = serde_json::from_value(want["t"].clone()).unwrap();
    let want_s: Vec<f64> = serde_json::from_value(want["s"].clone()).unwrap();
    let want_n: Vec<u64> = serde_json::from_value(want["at_risk"].clone()).unwrap();
    assert_eq!(t, want_t, "the same distinct times");
    assert!(t.len() > 200, "many distinct times: {}", t.len());
    assert_eq!(n, want_n, "the same numbers at risk");
    for (i, (a, b)) in s.iter().zip(&want_s).enumerate() {
        assert!((a - b).abs() <= 1e-9, "Ŝ at {}: {a} vs lifelines {b}", t[i]);
    }
    assert_eq!(got.median_s, want["median"].as_f64(), "median");
    assert_eq!(
        got.median_ci_s,
        [want["median_ci"][0].as_f64(), want["median_ci"][1].as_f64()],
        "the median's log-log interval"
    );
    assert!(
        got.median_ci_s[0].is_some() && got.median_ci_s[1].is_some(),
        "both edges bounded in this sample: {:?}",
        got.median_ci_s
    );
    let rmst = got.mean_restricted_s.unwrap();
    let want_rmst = want["rmst"].as_f64().unwrap();
    assert!(
        (rmst - want_rmst).abs() <= 1e-9 * want_rmst,
        "restricted mean {rmst} vs lifelines {want_rmst}"
    );
    eprintln!(
        "lifelines comparison: {} nodes, {} preempted, {} distinct times, median {:?} s \
         [{:?}, {:?}], restricted mean {rmst:.6} s (lifelines {want_rmst:.6})",
        got.nodes,
        got.preempted,
        t.len(),
        got.median_s,
        got.median_ci_s[0],
        got.median_ci_s[1]
    );
    // The estimator's own steps agree with the row it serves.
    assert_eq!(KaplanMeier::fit(&obs).median_s(), got.median_s);
}

const CLUSTER: &str = "lab";

/// A spot node of `CLUSTER`/`pool` Ready at `ready`, preempted (T=0) `preempted_after`
/// later, or else ended as `scaled down` `ended_after` later, or else still running.
struct Node {
    pool: &'static str,
    ready: DateTime<Utc>,
    preempted_after: Option<Duration>,
    ended_after: Option<Duration>,
    capacity_type: CapacityType,
}

async fn seed(url: &str, nodes: &[Node]) {
    let ledger = Ledger::open(url).await.unwrap();
    for (i, n) in nodes.iter().enumerate() {
        let uid = format!("{}-{i}", n.pool);
        ledger
            .started(&Lifetime {
                uid: uid.clone(),
                cluster: CLUSTER.into(),
                node: uid.clone(),
                pool: Some(n.pool.into()),
                zone: Some("LAB-1A".into()),
                instance_type: Some("gd-8xh100ib-i128".into()),
                capacity_type: n.capacity_type,
                started_at: n.ready - Duration::minutes(3),
                ..Default::default()
            })
            .await
            .unwrap();
        ledger.ready(&uid, n.ready).await.unwrap();
        if let Some(after) = n.preempted_after {
            ledger.preempting(&uid, n.ready + after).await.unwrap();
            ledger
                .ended(&uid, n.ready + after + Duration::minutes(7), "preempted")
                .await
                .unwrap();
        } else if let Some(after) = n.ended_after {
            ledger
                .ended(&uid, n.ready + after, "scaled-down")
                .await
                .unwrap();
        }
    }
}

/// The worked example of the core's unit tests (`core/src/domain/survival/tests.rs`) in
/// hours: preempted at 1, 2, 2, 4, 5, 6 h; scaled down at 2, 3, 5 h; one still running,
/// Ready 8 h ago. Ŝ: 0.9, 0.7, 0.7, 0.56, 0.42, 0.21; median 5 h, its interval [1 h,
/// unbounded); restricted mean 4.70 h (a few seconds more: the running node's time grows).
fn worked(now: DateTime<Utc>) -> Vec<Node> {
    let h = Duration::hours;
    let spot = |preempted: Option<i64>, ended: Option<i64>| Node {
        pool: "spot-a",
        ready: now - h(20),
        preempted_after: preempted.map(h),
        ended_after: ended.map(h),
        capacity_type: CapacityType::Spot,
    };
    let mut nodes: Vec<Node> = [1, 2, 2, 4, 5, 6]
        .into_iter()
        .map(|t| spot(Some(t), None))
        .chain([2, 3, 5].into_iter().map(|t| spot(None, Some(t))))
        .collect();
    nodes.push(Node {
        ready: now - h(8),
        ..spot(None, None)
    });
    // Left out: an on-demand node, and a spot node Ready before the 30-day range.
    nodes.push(Node {
        capacity_type: CapacityType::OnDemand,
        ..spot(Some(1), None)
    });
    nodes.push(Node {
        ready: now - Duration::days(31),
        ..spot(Some(1), None)
    });
    // Another pool with four preemptions: too few.
    nodes.extend((1..=4).map(|t| Node {
        pool: "spot-b",
        ..spot(Some(t), None)
    }));
    nodes
}

async fn get(base: &str, path: &str) -> (u16, String) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survival_and_checkpoint_through_the_api_from_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("seeded.sqlite");
    let now = Utc::now();
    seed(&format!("sqlite://{}", file.display()), &worked(now)).await;
    let d = common::start_with(&["US-EAST-04A"], 60.0, |a| a.ledger = file.clone()).await;

    let (status, body) = get(&d.base, "/api/v1/survival?by=pool&range=30d").await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["by"], "pool");
    assert_eq!(v["range"], "30d");
    let rows = v["rows"].as_array().unwrap();
    let row = |key: &str| rows.iter().find(|r| r["key"] == key).unwrap().clone();
    // The on-demand node (seeded gone 1 h 7 min after Ready) is a departure row of its own,
    // for the pages' comparison, and in no spot row: its one departure at 4,020 s.
    let od = v["departures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "lab/spot-a")
        .cloned()
        .expect("the on-demand node's departure row");
    assert_eq!(
        (od["nodes"].as_u64(), od["preempted"].as_u64()),
        (Some(1), Some(1)),
        "{od}"
    );
    assert_eq!(
        od["curve"][1],
        json!({"t_s": 4020.0, "survival": 0.0, "at_risk": 1})
    );
    let a = row("lab/spot-a");
    assert_eq!(
        (
            a["nodes"].as_u64(),
            a["preempted"].as_u64(),
            a["censored"].as_u64()
        ),
        (Some(10), Some(6), Some(4))
    );
    assert_eq!(a["status"], "estimated");
    assert_eq!(a["median_s"], 5.0 * 3600.0);
    assert_eq!(a["median_ci_s"], json!([3600.0, null]));
    let survival: Vec<f64> = a["curve"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["survival"].as_f64().unwrap())
        .collect();
    let want = [1.0, 0.9, 0.7, 0.7, 0.56, 0.42, 0.21, 0.21];
    assert_eq!(survival.len(), want.len(), "{survival:?}");
    for (g, w) in survival.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "{survival:?}");
    }
    let at_risk: Vec<u64> = a["curve"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["at_risk"].as_u64().unwrap())
        .collect();
    assert_eq!(at_risk, vec![10, 10, 9, 6, 5, 4, 2, 1]);
    let mean = a["mean_restricted_s"].as_f64().unwrap();
    assert!(
        (4.70 * 3600.0..4.70 * 3600.0 + 0.21 * 120.0).contains(&mean),
        "{mean}"
    );
    let b = row("lab/spot-b");
    assert_eq!(b["status"], "too few preemptions");
    assert_eq!(b["median_s"], Value::Null);

    let (status, body) = get(&d.base, "/api/v1/survival?by=zone-instance-type&range=7d").await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let zt = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == "LAB-1A/gd-8xh100ib-i128")
        .unwrap()
        .clone();
    assert_eq!(zt["nodes"], 14, "both pools, spot, in range");

    let (status, body) = get(
        &d.base,
        "/api/v1/checkpoint?cluster=lab&pool=spot-a&checkpoint_s=300&restart_s=120",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let c: Value = serde_json::from_str(&body).unwrap();
    let m = c["m_s"].as_f64().unwrap();
    // The running node's time grows between the two requests (Ŝ = 0.21 at its end).
    assert!((m - mean).abs() < 1.0, "{m} {mean}");
    let tau = (2.0 * 300.0 * m).sqrt();
    assert!(
        (c["interval_s"].as_f64().unwrap() - tau).abs() < 1e-9,
        "{c}"
    );
    let lost = tau / 2.0 + 120.0;
    assert!((c["lost_per_preemption_s"].as_f64().unwrap() - lost).abs() < 1e-9);
    assert!((c["lost_per_day_s"].as_f64().unwrap() - lost * 86_400.0 / m).abs() < 1e-6);
    assert_eq!(c["fits_notice"], true, "{c}");
    assert_eq!(c["inputs"]["provider"], "unknown", "lab is not watched");
    assert_eq!(c["inputs"]["preempted"], 6);
    assert_eq!(c["m_ci_s"].as_array().unwrap().len(), 2);

    let (status, body) = get(&d.base, "/api/v1/checkpoint?cluster=lab&pool=spot-b").await;
    assert_eq!(status, 200, "{body}");
    let c: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(c["status"], "too few preemptions");
    assert_eq!(c["interval_s"], Value::Null);
    assert_eq!(c["inputs"]["checkpoint_s"], 300.0, "the default C");

    for (path, says) in [
        ("/api/v1/survival?by=region", "unknown by \"region\""),
        ("/api/v1/survival?range=2w", "unknown range \"2w\""),
        (
            "/api/v1/checkpoint?cluster=lab",
            "cluster and pool are required",
        ),
        (
            "/api/v1/checkpoint?cluster=lab&pool=spot-a&checkpoint_s=abc",
            "checkpoint_s \"abc\" is not a number",
        ),
        (
            "/api/v1/checkpoint?cluster=lab&pool=spot-a&checkpoint_s=0",
            "checkpoint_s 0 is out of range",
        ),
        (
            "/api/v1/checkpoint?cluster=lab&pool=spot-a&restart_s=-1",
            "restart_s -1 is out of range",
        ),
        (
            "/api/v1/checkpoint?cluster=lab&pool=spot-a&range=1y",
            "unknown range",
        ),
    ] {
        let (status, body) = get(&d.base, path).await;
        assert_eq!((status, body.contains(says)), (400, true), "{path}: {body}");
    }
    let (status, _) = get(&d.base, "/api/v1/checkpoint?cluster=lab&pool=nope").await;
    assert_eq!(status, 404);

    // The page, rendered by the server: the advice's arithmetic with C from the URL, and
    // τ moving with C as √(2·C·M) says; the pool with four preemptions says so.
    let m_h = format!("{:.1} h", m / 3600.0);
    for c in [300.0_f64, 1200.0] {
        let (status, html) = get(
            &d.base,
            &format!("/preemptions?checkpoint_s={c}&restart_s=60"),
        )
        .await;
        assert_eq!(status, 200);
        let tau_min = ((2.0 * c * m).sqrt().round() as u64) / 60;
        let want = format!("τ = √(2 × {c} s × {m_h}) = {tau_min} min");
        assert!(html.contains(&want), "{want} not in the page");
        assert!(html.contains("M = 4.7 h from 6 preemptions of 10 nodes"));
        assert!(html.contains("too few preemptions to estimate"));
    }
}

/// The cohort query in PostgreSQL (the SQLite one runs above): the worked example's spot-a
/// nodes, Ready in the range, read back with their Ready time and T=0, and the same curve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_cohort_is_the_nodes_ready_in_the_range() {
    let url = crate::ledger::fresh_postgres().await;
    let now = Utc::now();
    seed(&url, &worked(now)).await;
    let ledger = Ledger::open(&url).await.unwrap();
    let cohort = ledger
        .began_between(now - Duration::days(30), now)
        .await
        .unwrap();
    assert_eq!(cohort.len(), 15, "the node Ready 31 days ago is left out");
    assert!(cohort.iter().all(|l| l.ready_at.is_some()));
    let rows = spotboard_core::domain::survival::report::rows(
        &cohort,
        spotboard_core::domain::survival::report::SurvivalBy::Pool,
        now,
    );
    let a = rows.iter().find(|r| r.key == "lab/spot-a").unwrap();
    assert_eq!(
        (a.nodes, a.preempted, a.median_s),
        (10, 6, Some(5.0 * 3600.0))
    );
}
