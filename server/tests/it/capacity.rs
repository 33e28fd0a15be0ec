//! Capacity by zone and the Capacity Finder against the embedded cluster: the zones' feeds,
//! the grid, the ranking, and a feed file read beside them.

use crate::common;

use std::time::Duration;

use serde_json::Value;

const ZONES: [&str; 3] = ["US-EAST-04A", "US-CENTRAL-07A", "EU-SOUTH-04A"];

async fn get(url: &str) -> Value {
    let r = reqwest::get(url).await.expect("reachable");
    assert!(r.status().is_success(), "{url}: {}", r.status());
    r.json().await.expect("json")
}

/// Waits until every feed source has been read once.
async fn grid_when_read(base: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let g = get(&format!("{base}/api/v1/capacity")).await;
        let read = g["sources"]
            .as_array()
            .is_some_and(|s| !s.is_empty() && s.iter().all(|s| !s["as_of"].is_null()));
        if read {
            return g;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "feeds never read: {g}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn cell<'a>(g: &'a Value, zone: &str, t: &str) -> &'a Value {
    g["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["zone"] == zone && c["instance_type"] == t)
        .unwrap_or_else(|| panic!("no cell {zone} × {t}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zones_differ_and_the_finder_ranks_the_scenarios_best_zone_first() {
    let d = common::start(&ZONES, 60.0).await;
    let g = grid_when_read(&d.base).await;
    assert_eq!(g["zones"].as_array().unwrap().len(), 3);
    assert_eq!(
        g["sources"].as_array().unwrap().len(),
        3,
        "one feed per embedded zone"
    );
    assert_eq!(g["confidential"], false);

    // The showcase type: plenty in zone 0, scarce elsewhere.
    let free = |z: &str| cell(&g, z, "b300-8x")["available_nodes"].as_u64().unwrap();
    assert!(free("US-EAST-04A") >= 10, "{}", free("US-EAST-04A"));
    assert!(free("US-CENTRAL-07A") <= 2 && free("EU-SOUTH-04A") <= 2);
    // The pools' own view: B200 spot waits for capacity in zone 1.
    let b200 = cell(&g, "US-CENTRAL-07A", "b200-8x");
    assert_eq!(b200["capacity_reason"], "QueuedAwaitingCapacity", "{b200}");
    assert!(b200["queued_nodes"].as_i64().unwrap() > 0);
    // Delivered spot H100 nodes in zone 0.
    assert!(
        cell(&g, "US-EAST-04A", "gd-8xh100ib-i128")["current_nodes"]
            .as_i64()
            .unwrap()
            >= 4
    );

    let finder = |t: &str, n: u32| {
        let url = format!(
            "{}/api/v1/capacity-finder?instanceType={t}&count={n}",
            d.base
        );
        async move { get(&url).await }
    };
    let r = finder("b300-8x", 8).await;
    assert_eq!(r["eligible"], true);
    assert_eq!(r["ranked"][0]["zone"], "US-EAST-04A", "{r}");
    let parts = common::names(&r["ranked"][0]["parts"]);
    assert_eq!(
        parts,
        [
            "availability",
            "preemption",
            "price",
            "fulfilment",
            "freshness"
        ]
    );

    // A larger request never scores a zone higher.
    let small = finder("b300-8x", 1).await;
    let big = finder("b300-8x", 64).await;
    for z in ZONES {
        let score = |r: &Value| {
            r["ranked"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["zone"] == z)
                .unwrap()["score"]
                .as_f64()
                .unwrap()
        };
        assert!(score(&small) >= score(&big), "{z}");
    }
    // Waiting for capacity ranks last with 0.
    let b = finder("b200-8x", 2).await;
    let last = b["ranked"].as_array().unwrap().last().unwrap();
    assert_eq!(
        (last["zone"].as_str(), last["score"].as_f64()),
        (Some("US-CENTRAL-07A"), Some(0.0))
    );

    let gb = finder("gb200-4x", 1).await;
    assert_eq!(gb["eligible"], false);
    assert!(gb["reason"].as_str().unwrap().contains("Superchip"));
    let bad = reqwest::get(format!("{}/api/v1/capacity-finder?count=2", d.base))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_feed_needs_a_token_and_a_feed_file_is_read_and_marked_confidential() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("feed.json");
    std::fs::write(
        &file,
        r#"{"source":"test file","generatedAt":"2030-01-01T00:00:00Z","confidential":true,
            "entries":[{"zone":"US-EAST-04A","instanceType":"gd-8xl40-i128","capacityType":"spot","availableNodes":99}]}"#,
    )
    .unwrap();
    let path = file.display().to_string();
    let d = common::start_with(&ZONES[..1], 60.0, |a| {
        a.capacity_feeds = vec![path];
        a.capacity_poll_seconds = 1;
    })
    .await;
    let embedded = d.running.embedded.as_ref().unwrap();
    let url = &embedded.feed_urls()[0];
    assert_eq!(reqwest::get(url).await.unwrap().status(), 401);
    let feed = common::json_of(
        reqwest::Client::new()
            .get(url)
            .bearer_auth(embedded.token(false)),
    )
    .await;
    assert!(feed["source"].as_str().unwrap().contains("simulated"));
    assert!(
        feed["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["capacityType"] == "spot")
    );

    let g = grid_when_read(&d.base).await;
    let c = cell(&g, "US-EAST-04A", "gd-8xl40-i128");
    assert_eq!(c["available_nodes"], 99, "the file's newer figure wins");
    assert_eq!(c["confidential"], true);
    let r = reqwest::get(format!("{}/api/v1/capacity", d.base))
        .await
        .unwrap();
    assert!(r.headers().contains_key("x-spotboard-confidential"));
    assert_eq!(r.headers()["cache-control"], "no-store");

    // A file that turns unreadable keeps its last figures and says why.
    std::fs::write(&file, "{not json").unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let g = get(&format!("{}/api/v1/capacity", d.base)).await;
        let src = g["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"].as_str().unwrap().ends_with("feed.json"))
            .unwrap()
            .clone();
        if !src["error"].is_null() {
            assert!(
                src["error"]
                    .as_str()
                    .unwrap()
                    .contains("not a capacity feed"),
                "{src}"
            );
            assert_eq!(
                cell(&g, "US-EAST-04A", "gd-8xl40-i128")["available_nodes"],
                99
            );
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the bad file was never noticed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The time from queued to current comes from the ledger's condition history, so a restart
/// keeps it: a ledger holding five hour-long AtTarget=False episodes of a pool gives its cell
/// a median of an hour as soon as the dashboard has listed the pool. The same history gives
/// this fleet's obtainability (issue 36 item 5): two hours QueuedAwaitingCapacity, five
/// scale-ups asked and fulfilled, and the Finder's history line beside the score (with the
/// warning exactly when the score is good).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_time_from_queued_to_current_is_read_from_the_condition_history() {
    use spotboard_core::model::ConditionView;
    use spotboard_core::nodepool::ConditionType;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.sqlite");
    let cluster = "spotboard-us-east-04a";
    let pool = "h100-spot-train";
    {
        let ledger = server::ledger::Ledger::open(&format!("sqlite://{}", file.display()))
            .await
            .unwrap();
        let now = chrono::Utc::now();
        for i in 0..5 {
            let start = now - chrono::Duration::hours(2 * (i + 2));
            for (status, reason, at) in [
                ("False", "QueuedAwaitingCapacity", start),
                ("True", "AtTarget", start + chrono::Duration::hours(1)),
            ] {
                let c = ConditionView {
                    type_: ConditionType::AtTarget,
                    status: status.into(),
                    reason: reason.into(),
                    ..Default::default()
                };
                ledger.condition(cluster, pool, &c, at).await.unwrap();
            }
        }
        for (status, reason, hours_ago) in [
            ("False", "QueuedAwaitingCapacity", 3),
            ("True", "Sufficient", 1),
        ] {
            let c = ConditionView {
                type_: ConditionType::Capacity,
                status: status.into(),
                reason: reason.into(),
                ..Default::default()
            };
            ledger
                .condition(cluster, pool, &c, now - chrono::Duration::hours(hours_ago))
                .await
                .unwrap();
        }
    }
    let d = common::start_with(&[ZONES[0]], 60.0, |a| a.ledger = file.clone()).await;
    let pools = get(&format!("{}/api/v1/pools", d.base)).await;
    let t = pools["pools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["cluster"] == cluster && p["name"] == pool)
        .map(|p| p["instance_type"].as_str().unwrap().to_string())
        .expect("the pool");
    common::sim::eventually(Duration::from_secs(20), "the history's median", || async {
        let g = get(&format!("{}/api/v1/capacity", d.base)).await;
        (cell(&g, ZONES[0], &t)["median_fulfil_seconds"] == 3600).then_some(())
    })
    .await;
    let g = get(&format!("{}/api/v1/capacity", d.base)).await;
    let c = cell(&g, ZONES[0], &t);
    assert_eq!(c["p95_fulfil_seconds"], 3600);
    assert_eq!(c["queued_seconds_24h"], 7200, "{c}");
    assert_eq!(c["queued_seconds_7d"], 7200);
    assert_eq!(
        (&c["scale_ups_7d"], &c["fulfilled_7d"]),
        (&serde_json::json!(5), &serde_json::json!(5))
    );
    let f = get(&format!(
        "{}/api/v1/capacity-finder?instanceType={t}&count=1",
        d.base
    ))
    .await;
    let zone = f["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|z| z["zone"] == ZONES[0])
        .unwrap();
    assert_eq!(
        zone["history"],
        "queued 2.0 h in 24 h, 2.0 h in 7 d; 5 of 5 scale-ups fulfilled, p95 60 min"
    );
    assert_eq!(
        zone["history_warning"].is_string(),
        zone["score"].as_f64().unwrap() >= 70.0,
        "{zone}"
    );
}
