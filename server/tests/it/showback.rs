//! Showback through kube-rs against the embedded CKS zone: the pod recorder follows the
//! zone's pods into intervals, `GET /api/v1/showback` splits the fleet's cost among
//! namespaces and teams (the embedded training and batch pods carry a `team` label, the
//! inference pods none: their namespace does) with the pools' idle,
//! to the cent of the savings report's cost; a preempted training node's pods show as
//! killed in their namespace; bad requests get 400s; the CSV carries the same figures.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use rust_decimal::Decimal;
use serde_json::Value;

use crate::common::{self, preempt_one, sim::eventually};

const ZONE: &str = "US-EAST-04A";

fn money(v: &Value) -> Decimal {
    v.as_str()
        .unwrap_or_else(|| panic!("a decimal string: {v}"))
        .parse()
        .unwrap()
}

fn sum(rows: &Value, field: &str) -> Decimal {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| money(&r[field]))
        .sum()
}

async fn get(base: &str, path: &str) -> reqwest::Response {
    reqwest::get(format!("{base}{path}")).await.unwrap()
}

/// `GET /api/v1/showback?{query}` as JSON (`Null` when it is not JSON).
async fn showback(base: &str, query: &str) -> Value {
    get(base, &format!("/api/v1/showback?{query}"))
        .await
        .json()
        .await
        .unwrap_or(Value::Null)
}

fn row<'a>(r: &'a Value, key: &str) -> Option<&'a Value> {
    r["rows"].as_array()?.iter().find(|x| x["key"] == key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_teams_and_idle_add_up_to_the_fleet_cost_and_preemptions_hit_their_namespace() {
    let d = common::start_with(&[ZONE], 60.0, |a| a.showback_sample_seconds = 1).await;
    let from = (chrono::Utc::now() - chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);

    // The recorder's first looks: every user namespace's pods have intervals.
    let r = eventually(
        Duration::from_secs(30),
        "showback rows with cost",
        || async {
            let r = showback(&d.base, "range=1h").await;
            let train = row(&r, "ml-training")?;
            (money(&train["cost_usd"]) > Decimal::ZERO && row(&r, "inference").is_some())
                .then_some(r)
        },
    )
    .await;
    assert_eq!(r["by"], "namespace");
    assert!(money(&row(&r, "ml-training").unwrap()["gpu_hours"]) > Decimal::ZERO);
    assert!(
        !r["idle"].as_array().unwrap().is_empty(),
        "some pools are idle"
    );

    // A fixed range in the past: showback's total is the savings report's cost, and the rows
    // and the idle rows add up to it to the cent.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let to = (chrono::Utc::now() - chrono::Duration::seconds(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let range = format!("from={from}&to={to}");
    for by in ["namespace", "team", "pool"] {
        let r = showback(&d.base, &format!("{range}&by={by}")).await;
        let total = money(&r["total"]["cost_usd"]);
        assert!(total > Decimal::ZERO);
        assert_eq!(
            sum(&r["rows"], "cost_usd") + sum(&r["idle"], "cost_usd"),
            total,
            "by {by}: {r}"
        );
        assert_eq!(
            sum(&r["rows"], "on_demand_usd") + sum(&r["idle"], "on_demand_usd"),
            money(&r["total"]["on_demand_usd"]),
            "by {by}"
        );
        let savings: Value = get(&d.base, &format!("/api/v1/savings?{range}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(total, money(&savings["actual_usd"]), "by {by}");
        assert_eq!(
            money(&r["total"]["on_demand_usd"]),
            money(&savings["baseline_usd"])
        );
    }
    let teams = showback(&d.base, &format!("{range}&by=team")).await;
    assert_eq!(teams["team_label"], "team");
    for team in ["research", "serving"] {
        assert!(row(&teams, team).is_some(), "{team}: {teams}");
    }

    // The CSV: the same total.
    let csv = get(&d.base, &format!("/api/v1/showback.csv?{range}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        csv.starts_with("kind,key,cost_usd,on_demand_usd,savings_usd,"),
        "{csv}"
    );
    let total_line = csv.lines().find(|l| l.starts_with("total,")).unwrap();
    let r = showback(&d.base, &range).await;
    assert_eq!(
        total_line.split(',').nth(2).unwrap(),
        r["total"]["cost_usd"].as_str().unwrap()
    );

    // Bad requests: an unknown grouping, a range past the ledger's limit.
    let bad = get(&d.base, "/api/v1/showback?by=label").await;
    assert_eq!(bad.status(), 400);
    assert!(
        bad.text()
            .await
            .unwrap()
            .contains("namespace, team or pool")
    );
    let long = get(
        &d.base,
        "/api/v1/showback?from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z",
    )
    .await;
    assert_eq!(long.status(), 400);

    // A preempted training node: its pods count as killed in ml-training, with lost GPU-hours.
    let nodes = Api::<Node>::all(d.admin(ZONE));
    let victim = preempt_one(&nodes, "compute.coreweave.com/node-pool=h100-spot-train").await;
    let hit = eventually(
        Duration::from_secs(40),
        "the preemption in ml-training",
        || async {
            let r = showback(&d.base, "range=1h").await;
            let train = row(&r, "ml-training")?.clone();
            (train["preemptions"].as_u64() >= Some(1) && train["pods_killed"].as_u64() >= Some(1))
                .then_some(train)
        },
    )
    .await;
    assert!(
        money(&hit["gpu_hours_lost"]) > Decimal::ZERO,
        "{victim}: {hit}"
    );
}
