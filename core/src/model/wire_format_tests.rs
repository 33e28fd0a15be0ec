//! The typed values (`Window`, `RateBy`, `Band`, a pool's `ComputeClass`) are written on the
//! stream, the JSON API and the ledger's exports exactly as the strings they replaced: these
//! rows, in the JSON the string-typed fields produced (taken from a stream before the change),
//! read back to the same JSON, and every value of each enum round-trips.

use serde_json::{Value, json};

use crate::domain::capacity::score::{Band, band};
use crate::domain::preemption::rates::{RateBy, RateRow, Window};
use crate::model::PoolRow;
use crate::nodepool::ComputeClass;

/// A rate row as the string-typed `RateRow` serialized it.
fn rate_json() -> Value {
    json!({
        "by": "zone × instance type", "key": "US-EAST-04A/gd-8xh100ib-i128", "window": "30d",
        "preemptions": 3, "spot_nodes": 20, "rate_pct": 15.0, "band": "15–20 %",
        "running_spot_nodes": 17, "alert": true, "alert_pct": 10.0, "replaced": 2,
        "latency_p50_s": 75.0, "latency_p95_s": 130.0, "latency_max_s": 130.0,
        "evictions": { "refused": 1, "past_grace": 0, "killed": 0 }
    })
}

#[test]
fn a_rate_row_reads_and_writes_the_json_of_the_strings_it_replaced() {
    let row: RateRow = serde_json::from_value(rate_json()).expect("today's JSON reads");
    assert_eq!(
        (row.by, row.window, row.band),
        (RateBy::ZoneInstanceType, Window::Last30d, Band::From15To20)
    );
    // Written back the same, with the departures added since (zero when read from rows
    // without them).
    let mut written = rate_json();
    written["departures"] = json!({
        "scaled_down": 0, "consolidated": 0, "drifted": 0, "expired": 0, "repaired": 0,
        "deleted": 0, "unobserved": 0
    });
    assert_eq!(serde_json::to_value(&row).unwrap(), written);
    assert_eq!(
        row.row_key(),
        "zone × instance type/US-EAST-04A/gd-8xh100ib-i128/30d",
        "the stream's row key is unchanged"
    );
}

#[test]
fn a_pool_rows_compute_class_is_its_text_and_empty_for_none() {
    for (class, text) in [
        (Some(ComputeClass::Spot), "spot"),
        (Some(ComputeClass::Default), "default"),
        (Some(ComputeClass::from("flex")), "flex"),
        (None, ""),
    ] {
        let row = PoolRow {
            compute_class: class.clone(),
            ..Default::default()
        };
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["compute_class"], text);
        let back: PoolRow = serde_json::from_value(json).unwrap();
        assert_eq!(back.compute_class, class);
        assert_eq!(back.compute_class_text(), text);
    }
}

#[test]
fn every_window_grouping_and_band_serializes_as_its_name() {
    for w in Window::ALL {
        assert_eq!(serde_json::to_value(w).unwrap(), w.as_str());
        assert_eq!(Window::ALL[w.index()], w);
    }
    let names: Vec<&str> = Window::ALL.iter().map(|w| w.as_str()).collect();
    assert_eq!(names, ["24h", "7d", "30d"]);
    for by in RateBy::ALL {
        assert_eq!(serde_json::to_value(by).unwrap(), by.as_str());
        assert_eq!(RateBy::parse(by.as_str()), Some(by));
    }
    assert_eq!(RateBy::parse("cluster"), None);
    // One rate from inside each band, and its label as it was written before.
    for (rate, label) in [
        (1.0, "<5 %"),
        (7.5, "5–10 %"),
        (12.0, "10–15 %"),
        (17.0, "15–20 %"),
        (40.0, ">20 %"),
    ] {
        assert_eq!(serde_json::to_value(band(rate)).unwrap(), label);
        assert_eq!(band(rate).to_string(), label);
    }
    assert!(
        serde_json::from_value::<Window>(json!("1h")).is_err(),
        "not a rate window"
    );
}
