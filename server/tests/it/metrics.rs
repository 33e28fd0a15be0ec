//! `/metrics` as a team's Prometheus scrapes it, and the Grafana dashboard shipped for it
//! (`server/deploy/grafana/spotboard.json`): every series a panel queries is exported, with
//! the embedded cluster's fleet in it; and every series the PrometheusRule's alerts query.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::common;

const ZONE: &str = "US-EAST-04A";
const AWS: &str = "us-east-1a";

/// The `spotboard_*` series names in a PromQL expression.
fn series(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("spotboard_") {
        let name: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[i + name.len()..];
        out.push(name);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_series_the_grafana_dashboard_queries_is_exported() {
    let d = common::start_with(&[ZONE], 60.0, |a| a.karpenter_zones = vec![AWS.into()]).await;
    // Counters and histograms are exported from their first sample: one preemption gives
    // them one. A Karpenter node is replaced without waiting for capacity, so its replacement
    // latency comes in a second or two.
    let aws = Api::<Node>::all(d.admin(AWS));
    let victim = aws
        .list(&ListParams::default().labels("karpenter.sh/nodepool=spot-general"))
        .await
        .unwrap()
        .items[0]
        .name_any();
    let preempt = json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
    aws.patch(&victim, &PatchParams::default(), &Patch::Merge(&preempt))
        .await
        .unwrap();
    // A gpu-spot node's worker (grace 300 s) outlives AWS's 2 minutes: an eviction error.
    let gpu = aws
        .list(&ListParams::default().labels("karpenter.sh/nodepool=gpu-spot"))
        .await
        .unwrap()
        .items[0]
        .name_any();
    aws.patch(&gpu, &PatchParams::default(), &Patch::Merge(&preempt))
        .await
        .unwrap();
    let nodes = Api::<Node>::all(d.admin(ZONE));
    let spot = nodes
        .list(&ListParams::default().labels("compute.coreweave.com/node-pool=h100-spot-train"))
        .await
        .unwrap()
        .items;
    let label = json!({"metadata": {"labels": {"qos.coreweave.cloud/pending-preemption": "true"}}});
    nodes
        .patch(
            &spot[0].name_any(),
            &PatchParams::default(),
            &Patch::Merge(&label),
        )
        .await
        .unwrap();
    let url = format!("{}/metrics", d.base);
    // The replacement's latency is counted once the ledger has it Ready, and the rates are
    // refreshed every 15 s.
    let wanted = [
        "spotboard_preemption_waves_total{",
        "spotboard_replacement_latency_seconds_bucket{",
        "spotboard_preemption_rate_percent{",
        "spotboard_eviction_errors_total{",
    ];
    let started = std::time::Instant::now();
    let text = loop {
        let t = common::text_of(&url).await;
        let missing: Vec<&&str> = wanted.iter().filter(|w| !t.contains(**w)).collect();
        if missing.is_empty() {
            break t;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "not exported within 90 s: {missing:?}\n{t}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/deploy/grafana/spotboard.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut queried = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            queried.extend(series(target["expr"].as_str().unwrap()));
        }
    }
    // And the PrometheusRule's alert expressions.
    let rules = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/prometheus/spotboard-rules.yaml"
    ))
    .unwrap();
    let exprs: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr:"))
        .collect();
    assert_eq!(exprs.len(), 6, "one expression per alert");
    for e in exprs {
        queried.extend(series(e));
    }
    queried.sort();
    queried.dedup();
    assert!(queried.len() >= 10, "{queried:?}");
    for name in &queried {
        // A counter is declared without its `_total` suffix in the exposition's TYPE line, a
        // histogram without `_bucket`, `_sum` and `_count`.
        let family = ["_total", "_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "the dashboard queries {name}, which /metrics does not export:\n{text}"
        );
    }
    // The embedded zone's spot nodes are in the fleet gauge, by the label names Prometheus
    // users expect.
    let spot = text
        .lines()
        .find(|l| {
            l.starts_with("spotboard_nodes{")
                && l.contains(&format!(
                    "cluster=\"spotboard-{}\"",
                    ZONE.to_ascii_lowercase()
                ))
                && l.contains("capacity_type=\"spot\"")
        })
        .unwrap_or_else(|| panic!("no spot nodes gauge:\n{text}"));
    let n: f64 = spot.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n > 0.0, "{spot}");
    assert!(text.contains("# TYPE spotboard_savings_usd_per_hour gauge"));
}

#[test]
fn series_names_are_read_from_promql() {
    assert_eq!(
        series("sum by (a) (increase(spotboard_preemptions_total[1h])) / spotboard_nodes{x=\"y\"}"),
        ["spotboard_preemptions_total", "spotboard_nodes"]
    );
}

/// `--metrics-listen`: Prometheus in the cluster scrapes the pod's IP, which the dashboard's
/// address refuses (421, the Host allow-list); the metrics address answers it, with every
/// family from the start (zero series for the pools that exist), and serves nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_address_answers_a_scrape_by_pod_ip_and_serves_nothing_else() {
    let d = common::start_with(&[ZONE], 60.0, |a| {
        a.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let at = d
        .running
        .metrics_addr
        .expect("the metrics address is bound");
    assert_ne!(at, d.running.addr);
    let client = reqwest::Client::new();
    // As a scrape of the pod at 10.4.7.19 names it.
    let pod_host = format!("10.4.7.19:{}", at.port());
    let r = client
        .get(format!("http://{at}/metrics"))
        .header("host", pod_host.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let text = r.text().await.unwrap();
    // A family that has had no event yet is there at zero for a pool that exists.
    assert!(
        text.lines()
            .any(|l| l.starts_with("spotboard_preemptions_total{")
                && l.contains("h100-spot-train")
                && l.ends_with(" 0")),
        "{text}"
    );
    assert!(
        text.trim_end().ends_with("# EOF"),
        "OpenMetrics ends with # EOF"
    );
    for path in ["/", "/api/v1/pools", "/api/v1/stream", "/pools/new"] {
        let r = client
            .get(format!("http://{at}{path}"))
            .header("host", pod_host.as_str())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 404, "{path} on the metrics address");
    }
    // The dashboard's address still refuses a foreign Host, /metrics included.
    let r = client
        .get(format!("{}/metrics", d.base))
        .header("host", format!("10.4.7.19:{}", d.running.addr.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 421);
}

/// A NodePool condition's reason is free text: one carrying a quote, a newline and a whole
/// series after them leaves the scrape readable by Prometheus' own parser (the Python
/// `prometheus_client`'s OpenMetrics parser, PyPI) with no series of its own, and reads back
/// as it was written.
#[test]
fn a_hostile_reason_leaves_the_scrape_parseable_by_prometheus_client() {
    use spotboard_core::model::{ConditionView, PoolRow};
    let reason = "Bad\"} 1\nspotboard_injected_probe_total 1\n# EOF\n\\";
    let metrics = server::preemption::Metrics::default();
    metrics.set_fleet(&[PoolRow {
        cluster: "c1".into(),
        name: "spot-a".into(),
        conditions: vec![ConditionView {
            type_: spotboard_core::nodepool::ConditionType::Capacity,
            status: "False".into(),
            reason: reason.into(),
            ..Default::default()
        }],
        ..Default::default()
    }]);
    let text = metrics.encode();
    let script = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
print(json.dumps([[s.name, s.labels] for f in text_string_to_metric_families(sys.stdin.read()) for s in f.samples]))
"#;
    let stdout = common::python::run("prometheus-client", script, text.as_bytes());
    let samples: Vec<(String, std::collections::BTreeMap<String, String>)> =
        serde_json::from_slice(&stdout).unwrap_or_else(|e| panic!("{e}: the scrape was\n{text}"));
    assert!(
        samples.iter().all(|(name, _)| !name.contains("injected")),
        "{samples:?}"
    );
    let condition: Vec<_> = samples
        .iter()
        .filter(|(name, _)| name == "spotboard_nodepool_condition")
        .collect();
    assert_eq!(condition.len(), 1, "{samples:?}");
    assert_eq!(condition[0].1["reason"], reason);
    assert_eq!(condition[0].1["pool"], "spot-a");
}
