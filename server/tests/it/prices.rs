//! The price catalog in force: shipped CoreWeave prices, a user file in front of them, and a
//! bad file refused at start with its line.

use crate::common;

use serde_json::Value;

const HEADER: &str =
    "instance_type,region,cluster,on_demand_usd_h,spot_usd_h,discount_pct,source,as_of\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_price_file_is_served_in_front_of_the_shipped_prices() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prices.csv");
    std::fs::write(
        &file,
        format!(
            "{HEADER}gd-8xh100ib-i128,,spotboard-us-east-04a,39.00,15.00,,contract,2026-07-01\n"
        ),
    )
    .unwrap();
    let d = common::start_with(&["US-EAST-04A"], 60.0, |a| a.prices = Some(file.clone())).await;
    let p: Value = reqwest::get(format!("{}/api/v1/prices", d.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(p["user_entries"], 1);
    assert_eq!(p["entries"][0]["spot_usd_h"], "15.00");
    assert_eq!(p["entries"][0]["source"], "contract");
    let shipped = p["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["instance_type"] == "gd-8xa100-i128" && e["region"] == "North America")
        .unwrap();
    assert_eq!(shipped["on_demand_usd_h"], "21.60");
    assert_eq!(shipped["as_of"], "2026-08-22");

    let bad = reqwest::get(format!("{}/api/v1/savings?range=2w", d.base))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert!(bad.text().await.unwrap().contains("unknown range"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_price_file_stops_the_start_and_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prices.csv");
    std::fs::write(&file, format!("{HEADER}gd-8xa100-i128,,,twelve,,,,\n")).unwrap();
    use clap::Parser;
    let mut args = server::cli::Cli::parse_from(["spotboard"]).serve;
    args.listen = "127.0.0.1:0".parse().unwrap();
    args.prices = Some(file);
    args.zones = vec!["US-EAST-04A".into()];
    args.embedded_kubeconfig = Some(dir.path().join("kubeconfig"));
    args.ledger = dir.path().join("ledger.sqlite");
    let err = server::run::start(&args, std::future::pending())
        .await
        .err()
        .expect("refused");
    let text = err.to_string();
    assert!(
        text.contains("line 2") && text.contains("not a decimal"),
        "{text}"
    );
}
