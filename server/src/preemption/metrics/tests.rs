use super::*;
use spotboard_core::domain::preemption::rates::Window;

fn pool(cluster: &str, capacity_type: CapacityType, nodes: i32) -> PoolRow {
    PoolRow {
        cluster: cluster.into(),
        provider: Provider::Cks,
        capacity_type,
        current_nodes: Some(nodes),
        ..Default::default()
    }
}

#[test]
fn fleet_gauges_sum_per_label_set_and_forget_what_is_gone() {
    let m = Metrics::default();
    let mut troubled = pool("c1", CapacityType::Spot, 3);
    troubled.problems = vec!["Capacity: NoneAvailable".into()];
    troubled.nodes_preempting = 1;
    m.set_fleet(&[
        troubled,
        pool("c1", CapacityType::Spot, 2),
        pool("c1", CapacityType::OnDemand, 1),
        pool("gone", CapacityType::Spot, 9),
    ]);
    m.set_fleet(&m_rows());
    let text = m.encode();
    assert!(
        text.contains(r#"spotboard_nodes{cluster="c1",provider="cks",capacity_type="spot"} 5"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"spotboard_nodes{cluster="c1",provider="cks",capacity_type="on_demand"} 1"#
        )
    );
    assert!(text.contains(r#"spotboard_pools_with_problem{cluster="c1"} 1"#));
    assert!(text.contains(r#"spotboard_nodes_under_notice{cluster="c1"} 1"#));
    // The fleet gauges forget a cluster that left; its counters stay (at zero here): a
    // counter that vanished would read as a reset.
    for gauge in [
        "spotboard_nodes{",
        "spotboard_pools_with_problem{",
        "spotboard_nodes_under_notice{",
    ] {
        assert!(
            !text
                .lines()
                .any(|l| l.starts_with(gauge) && l.contains(r#"cluster="gone""#)),
            "a cluster that left has no {gauge}: {text}"
        );
    }
    assert!(text.contains(r#"spotboard_preemption_waves_total{cluster="gone"} 0"#));
}

fn m_rows() -> Vec<PoolRow> {
    let mut troubled = pool("c1", CapacityType::Spot, 3);
    troubled.problems = vec!["Capacity: NoneAvailable".into()];
    troubled.nodes_preempting = 1;
    vec![
        troubled,
        pool("c1", CapacityType::Spot, 2),
        pool("c1", CapacityType::OnDemand, 1),
    ]
}

#[test]
fn run_rate_gauges_are_usd_per_hour() {
    let m = Metrics::default();
    m.set_run_rate(&RunRate {
        running_nodes: 2,
        unpriced_nodes: 0,
        actual_usd_h: rust_decimal::Decimal::new(965, 2),
        baseline_usd_h: rust_decimal::Decimal::new(2160, 2),
        difference_usd_h: rust_decimal::Decimal::new(1195, 2),
    });
    let text = m.encode();
    assert!(
        text.contains("spotboard_savings_usd_per_hour 11.95"),
        "{text}"
    );
    assert!(text.contains("spotboard_cost_usd_per_hour 9.65"));
    assert!(text.contains("spotboard_on_demand_baseline_usd_per_hour 21.6"));
}

#[test]
fn replacement_latencies_count_once_and_not_the_ledger_s_past_at_start() {
    use chrono::{Duration, TimeZone, Utc};
    let t = |s: i64| Utc.with_ymd_and_hms(2026, 11, 24, 12, 0, 0).unwrap() + Duration::seconds(s);
    let node = |uid: &str, start: i64, t0: Option<i64>, ready: Option<i64>| Lifetime {
        uid: uid.into(),
        cluster: "c1".into(),
        pool: Some("spot-a".into()),
        started_at: t(start),
        preemption_t0: t0.map(t),
        ready_at: ready.map(t),
        ..Default::default()
    };
    let m = Metrics::default();
    // At start the ledger already has one replacement (50 s): noted, not counted.
    let mut ledger = vec![
        node("old", -900, Some(-600), Some(-890)),
        node("r0", -590, None, Some(-550)),
    ];
    assert_eq!(m.observe_replacements(&ledger), 0);
    // Then a preemption at 0 s whose replacement is Ready at 75 s.
    ledger.push(node("v", -900, Some(0), Some(-890)));
    ledger.push(node("r", 20, None, None));
    assert_eq!(m.observe_replacements(&ledger), 0, "not Ready yet");
    ledger[3].ready_at = Some(t(75));
    assert_eq!(m.observe_replacements(&ledger), 1);
    assert_eq!(m.observe_replacements(&ledger), 0, "once");
    let text = m.encode();
    assert!(
        text.contains(
            r#"spotboard_replacement_latency_seconds_sum{cluster="c1",pool="spot-a"} 75.0"#
        ),
        "{text}"
    );
    assert!(
        text.contains(
            r#"spotboard_replacement_latency_seconds_count{cluster="c1",pool="spot-a"} 1"#
        )
    );
    assert!(text.contains(
        r#"spotboard_replacement_latency_seconds_bucket{le="60.0",cluster="c1",pool="spot-a"} 0"#
    ));
    assert!(text.contains(
        r#"spotboard_replacement_latency_seconds_bucket{le="90.0",cluster="c1",pool="spot-a"} 1"#
    ));
}

#[test]
fn conditions_and_rates_of_pools_in_use_are_exported() {
    use spotboard_core::model::ConditionView;
    let m = Metrics::default();
    let mut p = pool("c1", CapacityType::Spot, 3);
    p.name = "spot-a".into();
    p.conditions = vec![ConditionView {
        type_: spotboard_core::nodepool::ConditionType::Capacity,
        status: "False".into(),
        reason: "NoneAvailable".into(),
        ..Default::default()
    }];
    m.set_fleet(&[p]);
    let rate = |key: &str, running: u32| RateRow {
        by: RateBy::Pool,
        key: key.into(),
        window: Window::Last24h,
        rate_pct: 12.5,
        running_spot_nodes: running,
        ..Default::default()
    };
    m.set_rates(&[rate("c1/spot-a", 3), rate("c1/idle", 0)]);
    let text = m.encode();
    assert!(
        text.contains(r#"spotboard_nodepool_condition{cluster="c1",pool="spot-a",condition="Capacity",status="False",reason="NoneAvailable"} 1"#),
        "{text}"
    );
    assert!(text.contains(
        r#"spotboard_preemption_rate_percent{cluster="c1",pool="spot-a",window="24h"} 12.5"#
    ));
    assert!(
        !text.contains("idle"),
        "a pool running no spot nodes has no rate series"
    );
}

/// One sample of a text exposition: metric name, labels (unescaped), value.
type Sample = (String, Vec<(String, String)>, f64);

/// A strict reader of the text exposition (the OpenMetrics / Prometheus 0.0.4 grammar
/// for samples: `name{label="value",…} number`, label values with only `\\`, `\"` and
/// `\n` escapes, as Prometheus' own parser accepts). Panics naming the line it cannot read.
fn parse_exposition(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.split('\n').filter(|l| !l.is_empty()) {
        if let Some(comment) = line.strip_prefix('#') {
            let known = ["# HELP ", "# TYPE ", "# UNIT ", "# EOF"];
            assert!(
                known.iter().any(|k| line.starts_with(k)),
                "not a descriptor: {comment:?}"
            );
            continue;
        }
        let mut chars = line.char_indices().peekable();
        let name_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(line.len());
        let name = &line[..name_end];
        assert!(!name.is_empty(), "no metric name: {line:?}");
        while chars.peek().is_some_and(|(i, _)| *i < name_end) {
            chars.next();
        }
        let mut labels = Vec::new();
        if chars.peek().map(|(_, c)| *c) == Some('{') {
            chars.next();
            loop {
                let mut key = String::new();
                for (_, c) in chars.by_ref() {
                    if c == '=' {
                        break;
                    }
                    assert!(
                        c.is_ascii_alphanumeric() || c == '_',
                        "label name: {line:?}"
                    );
                    key.push(c);
                }
                assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "{line:?}");
                let mut value = String::new();
                loop {
                    match chars.next().map(|(_, c)| c) {
                        Some('"') => break,
                        Some('\\') => match chars.next().map(|(_, c)| c) {
                            Some('\\') => value.push('\\'),
                            Some('"') => value.push('"'),
                            Some('n') => value.push('\n'),
                            other => panic!("escape {other:?} in {line:?}"),
                        },
                        Some(c) => value.push(c),
                        None => panic!("unterminated value: {line:?}"),
                    }
                }
                labels.push((key, value));
                match chars.next().map(|(_, c)| c) {
                    Some(',') => continue,
                    Some('}') => break,
                    other => panic!("{other:?} after a label in {line:?}"),
                }
            }
        }
        assert_eq!(chars.next().map(|(_, c)| c), Some(' '), "{line:?}");
        let rest: String = chars.map(|(_, c)| c).collect();
        let value = rest
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("value: {line:?}"));
        samples.push((name.to_string(), labels, value));
    }
    samples
}

#[test]
fn label_values_are_escaped_so_a_reason_cannot_add_series() {
    use spotboard_core::model::ConditionView;
    let reason = "Bad\"} 1\nspotboard_injected_probe_total 1\n# \\ \r\"";
    let m = Metrics::default();
    let mut p = pool("c\\1\"", CapacityType::Spot, 3);
    p.name = "spot-a\n".into();
    p.conditions = vec![ConditionView {
        type_: spotboard_core::nodepool::ConditionType::Capacity,
        status: "False".into(),
        reason: reason.into(),
        ..Default::default()
    }];
    m.set_fleet(&[p]);
    let text = m.encode();
    let samples = parse_exposition(&text);
    assert!(
        samples
            .iter()
            .all(|(n, _, _)| n.starts_with("spotboard_") && !n.starts_with("spotboard_injected")),
        "{text}"
    );
    let conditions: Vec<&Sample> = samples
        .iter()
        .filter(|(n, _, _)| n == "spotboard_nodepool_condition")
        .collect();
    assert_eq!(conditions.len(), 1, "{text}");
    let got = |k: &str| {
        conditions[0]
            .1
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    // What was written reads back as it was (a carriage return as a line feed).
    assert_eq!(
        got("reason").as_deref(),
        Some(reason.replace('\r', "\n").as_str())
    );
    assert_eq!(got("cluster").as_deref(), Some("c\\1\""));
    assert_eq!(got("pool").as_deref(), Some("spot-a\n"));
}

#[test]
fn event_families_start_at_zero_for_the_pools_that_exist() {
    let m = Metrics::default();
    let mut p = pool("c1", CapacityType::Spot, 3);
    p.name = "spot-a".into();
    p.zone = Some("US-EAST-04A".into());
    p.instance_type = "gd-8xh100ib-i128".into();
    m.set_fleet(&[p]);
    let text = m.encode();
    for series in [
        r#"spotboard_preemptions_total{cluster="c1",pool="spot-a",zone="US-EAST-04A",instance_type="gd-8xh100ib-i128"} 0"#,
        r#"spotboard_preemption_waves_total{cluster="c1"} 0"#,
        r#"spotboard_eviction_errors_total{cluster="c1",pool="spot-a",kind="refused"} 0"#,
        r#"spotboard_eviction_errors_total{cluster="c1",pool="spot-a",kind="past-grace"} 0"#,
        r#"spotboard_eviction_errors_total{cluster="c1",pool="spot-a",kind="killed"} 0"#,
        r#"spotboard_replacement_latency_seconds_count{cluster="c1",pool="spot-a"} 0"#,
    ] {
        assert!(text.contains(series), "{series} missing from {text}");
    }
    parse_exposition(&text);
}
