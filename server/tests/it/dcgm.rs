//! GPU utilisation through a real Prometheus: the embedded cluster's DCGM exporter is
//! scraped by Debian's Prometheus, spotboard asks that Prometheus (`--prometheus-url`), and
//! each node's figure is worked again here from the exporter's own series. Then the bad days:
//! Prometheus gone and back, and Prometheus-shaped servers that answer badly.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get as route;
use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::Value;

use crate::common::{self, prometheus::Prometheus, sim::eventually};
use crate::providers::{CKS, GKE, GKE_CLUSTER, get};

/// Each node's mean over its GPUs, read from the exporter's text by hand: `Hostname="…"` and
/// the value after the closing brace.
fn exporter_means(text: &str) -> BTreeMap<String, Decimal> {
    let mut sums: BTreeMap<String, (Decimal, u32)> = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("DCGM_FI_DEV_GPU_UTIL{"))
    {
        let host = line
            .split("Hostname=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap();
        let value: Decimal = line.rsplit(' ').next().unwrap().parse().unwrap();
        let e = sums.entry(host.to_string()).or_default();
        e.0 += value;
        e.1 += 1;
    }
    sums.into_iter()
        .map(|(n, (sum, gpus))| {
            let mean = (sum / Decimal::from(gpus))
                .round_dp_with_strategy(1, RoundingStrategy::MidpointAwayFromZero);
            (n, mean)
        })
        .collect()
}

fn figure(v: &Value) -> Option<Decimal> {
    v.as_str()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpu_utilisation_comes_from_a_real_prometheus_scraping_the_embedded_dcgm_exporter() {
    let mut prom = Prometheus::start().await;
    let url = prom.url.clone();
    // Speed 1: no pod moves while the one-minute means settle.
    let d = common::start_with(&[CKS], 1.0, |a| {
        a.gke_zones = vec![GKE.into()];
        a.prometheus_url = Some(url);
        a.dcgm_range = "1m".parse().unwrap();
        a.dcgm_poll_seconds = 1;
    })
    .await;
    let exporter = d.running.embedded.as_ref().unwrap().dcgm_url.clone();
    prom.scrape(&exporter);
    let http = reqwest::Client::new();
    let agreed = eventually(
        Duration::from_secs(120),
        "utilisation as the exporter says",
        || async {
            let text = http.get(&exporter).send().await.ok()?.text().await.ok()?;
            let want = exporter_means(&text);
            let a = get(&d.base, "/api/v1/allocation").await;
            if a["source"] != "dcgm" || a["dcgm"]["nodes"].as_u64() != Some(want.len() as u64) {
                return None;
            }
            for row in a["nodes"].as_array()? {
                let node = row["node"].as_str()?;
                if figure(&row["utilisation"]) != want.get(node).copied() {
                    return None;
                }
            }
            Some((a, want))
        },
    )
    .await;
    let (a, want) = agreed;
    // Every GPU node is measured (the GKE L4 nodes and the CKS GPU nodes), CPU nodes are not.
    let rows = a["nodes"].as_array().unwrap();
    assert!(want.len() >= 3, "{want:?}");
    assert!(
        rows.iter()
            .any(|r| r["gpus_allocatable"] == 0 && r["utilisation"].is_null())
    );
    let l4 = rows
        .iter()
        .filter(|r| r["cluster"] == GKE_CLUSTER && r["pool"] == "spot-l4");
    assert!(
        l4.clone().all(|r| figure(&r["utilisation"]).is_some()),
        "{a}"
    );
    // A held GPU is busy by the model's rule, so a pool with pods on every node is not idle.
    let pool = a["pools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["cluster"] == GKE_CLUSTER && p["pool"] == "spot-l4")
        .unwrap();
    assert!(
        figure(&pool["utilisation"]).unwrap() > Decimal::ZERO,
        "{pool}"
    );
    assert_eq!(
        a["dcgm"]["query"],
        "avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[1m]))"
    );
    // Prometheus' own engine agrees with the same query sent by hand (the join, not the sum,
    // is what spotboard adds).
    let direct = prom
        .query("avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[1m]))")
        .await;
    assert_eq!(
        direct["data"]["result"].as_array().unwrap().len(),
        want.len(),
        "{direct}"
    );

    // Prometheus goes away: the figures are kept and the status says why they are old.
    prom.stop();
    let down = eventually(Duration::from_secs(20), "the outage reported", || async {
        let a = get(&d.base, "/api/v1/allocation").await;
        a["dcgm"]["error"].as_str().map(|_| a.clone())
    })
    .await;
    assert_eq!(down["source"], "dcgm", "{down}");
    let kept = down["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["utilisation"].is_null())
        .count();
    assert_eq!(
        kept,
        want.len(),
        "the last figures stay while Prometheus is down"
    );
    // And comes back: the next poll clears the error by itself.
    prom.restart().await;
    eventually(Duration::from_secs(30), "the error cleared", || async {
        get(&d.base, "/api/v1/allocation").await["dcgm"]["error"]
            .is_null()
            .then_some(())
    })
    .await;
}

/// Servers that answer `/api/v1/query` as no healthy Prometheus would: each read is an
/// error that says what, never a panic or a fleet read as idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prometheus_that_answers_badly_is_an_error_that_says_what() {
    async fn huge() -> impl IntoResponse {
        // 20 MiB of one JSON string: over the 16 MiB budget.
        format!(
            "{{\"status\":\"success\",\"data\":\"{}\"}}",
            "x".repeat(20 << 20)
        )
    }
    async fn proxy_page() -> impl IntoResponse {
        (StatusCode::BAD_GATEWAY, "<html>502 Bad Gateway</html>")
    }
    async fn refused() -> impl IntoResponse {
        (
            StatusCode::BAD_REQUEST,
            r#"{"status":"error","errorType":"bad_data","error":"1:36: parse error: unexpected character"}"#,
        )
    }
    async fn token_only(headers: HeaderMap) -> impl IntoResponse {
        if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer s3cret") {
            return (StatusCode::UNAUTHORIZED, "no").into_response();
        }
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"Hostname":"g1"},"value":[1,"42"]}]}}"#.into_response()
    }
    let app = axum::Router::new()
        .route("/huge/api/v1/query", route(huge))
        .route("/proxy/api/v1/query", route(proxy_page))
        .route("/refused/api/v1/query", route(refused))
        .route("/token/api/v1/query", route(token_only));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let read = |path: &str, token: Option<&str>| {
        let config = server::dcgm::DcgmConfig {
            url: format!("{base}/{path}"),
            token: token.map(String::from),
            range: "1h".parse().unwrap(),
            node_label: "Hostname".into(),
            every: Duration::from_secs(1),
        };
        let http = http.clone();
        async move { server::dcgm::read_once(&http, &config).await }
    };
    let e = read("huge", None).await.unwrap_err();
    assert!(e.contains("larger than 16 MiB"), "{e}");
    assert_eq!(
        read("proxy", None).await.unwrap_err(),
        "HTTP 502 Bad Gateway"
    );
    let e = read("refused", None).await.unwrap_err();
    assert!(e.contains("bad_data") && e.contains("parse error"), "{e}");
    assert_eq!(
        read("token", None).await.unwrap_err(),
        "HTTP 401 Unauthorized"
    );
    let ok = read("token", Some("s3cret")).await.unwrap();
    assert_eq!(ok.by_node["g1"], Decimal::from(42));
    // Nobody listening: the connection's own error.
    let closed = server::dcgm::DcgmConfig {
        url: "http://127.0.0.1:9".into(),
        token: None,
        range: "1h".parse().unwrap(),
        node_label: "Hostname".into(),
        every: Duration::from_secs(1),
    };
    assert!(server::dcgm::read_once(&http, &closed).await.is_err());
}
