//! Fallback pairs through the embedded cluster: the scenario's `b200-on-demand` is annotated
//! as the fallback of `b200-spot-burst`, which waits for B200 Spot capacity from the start
//! (`QueuedAwaitingCapacity`), so `/api/v1/fallback` counts its on-demand node-hours as run
//! while spot was short and prices them; the savings report carries the same pairs. The
//! pools of one instance type pair by themselves, and none is advised to move back while its
//! spot side has held capacity for less than the time asked.

use std::time::Duration;

use serde_json::Value;

use crate::common::{self, sim::eventually};
use crate::providers::{CKS, get};

/// On-demand minus spot, USD per instance-hour, of b200-8x in North America (the shipped
/// catalog: coreweave.com/pricing, 2026-08-22): 68.80 − 34.11.
const B200_EXTRA_PER_HOUR: f64 = 34.69;

fn number(v: &Value) -> f64 {
    v.as_str().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN)
}

fn pair<'a>(r: &'a Value, on_demand: &str) -> Option<&'a Value> {
    r["pairs"]
        .as_array()?
        .iter()
        .find(|p| p["on_demand_pool"] == on_demand)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_pair_counts_and_prices_on_demand_hours_while_spot_is_queued() {
    let d = common::start_with(&[CKS], 60.0, |_| {}).await;
    // Wait for enough hours that rounding to the thousandth of an hour is small beside them.
    let report = eventually(
        Duration::from_secs(30),
        "the b200 pair with on-demand hours while short",
        || async {
            let r = get(&d.base, "/api/v1/fallback?range=24h").await;
            let b200 = pair(&r, "b200-on-demand")?;
            (number(&b200["short_node_hours"]) >= 0.01).then(|| r.clone())
        },
    )
    .await;
    let b200 = pair(&report, "b200-on-demand").unwrap();
    assert_eq!(b200["kind"], "annotation");
    assert_eq!(b200["spot_pools"], serde_json::json!(["b200-spot-burst"]));
    assert_eq!(b200["instance_type"], "b200-8x");
    assert_eq!(b200["on_demand_nodes_now"], 2);
    assert_eq!(b200["move_back"], "wait");
    assert_eq!(
        b200["note"],
        "keep the 2 on-demand nodes: spot pool b200-spot-burst is short (Capacity: QueuedAwaitingCapacity)"
    );
    let short = number(&b200["short_node_hours"]);
    assert!(short <= number(&b200["on_demand_node_hours"]));
    // Worked again from the two figures of one answer: the hours are rounded to the
    // thousandth (±0.0005 h), the USD to the cent (±0.005).
    let extra = number(&b200["extra_usd"]);
    assert!(
        (extra - short * B200_EXTRA_PER_HOUR).abs() <= 0.0005 * B200_EXTRA_PER_HOUR + 0.005,
        "{extra} USD over {short} node-hours at {B200_EXTRA_PER_HOUR} per hour"
    );
    assert_eq!(b200["unpriced_nodes"], 0);

    // The pools of one instance type pair by themselves; their spot sides have capacity.
    let mut kinds: Vec<(String, String)> = report["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["on_demand_pool"].as_str().unwrap().to_string(),
                p["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("b200-on-demand".into(), "annotation".into()),
            ("example-nodepool".into(), "same-instance-type".into()),
            ("h100-reserved".into(), "same-instance-type".into()),
            ("l40s-inference".into(), "same-instance-type".into()),
        ]
    );
    let h100 = pair(&report, "h100-reserved").unwrap();
    assert_eq!(h100["spot_pools"], serde_json::json!(["h100-spot-train"]));
    assert_eq!(number(&h100["short_node_hours"]), 0.0);
    assert_eq!(h100["move_back"], "wait", "{}", h100["note"]);
    assert!(
        h100["note"]
            .as_str()
            .unwrap()
            .ends_with("of the 60 min asked before moving back"),
        "{}",
        h100["note"]
    );

    // The savings report carries the same pairs.
    let savings = get(&d.base, "/api/v1/savings?range=24h").await;
    let in_savings = pair(&savings["fallback"], "b200-on-demand").expect("the pair in savings");
    assert_eq!(in_savings["spot_pools"], b200["spot_pools"]);
    assert!(number(&in_savings["short_node_hours"]) >= short);

    // A bad range is refused, not guessed.
    let status = reqwest::get(format!("{}/api/v1/fallback?range=9y", d.base))
        .await
        .unwrap()
        .status();
    assert_eq!(status, 400);
}
