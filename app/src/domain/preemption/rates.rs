//! Preemption rates from the ledger, in the Spot Advisor's bands.
//!
//! Definition (the only one spotboard uses: `/preemptions`, the capacity grid and the Capacity
//! Finder's score all read these rows): for a pool, zone, instance type, or instance type in
//! one zone, and a trailing window (24 h, 7 d, 30 d), the spot nodes whose preemption T=0 fell
//! in the window, divided by the spot nodes that ran at any time in the window, as a percent. The bands are the Spot Instance Advisor's: <5 %, 5–10 %,
//! 10–15 %, 15–20 %, >20 % (AWS: EC2 Spot Instance Advisor, "Frequency of interruption").

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::capacity::score::band;
use crate::model::Lifetime;

/// The trailing windows, with their names.
pub const WINDOWS: [(&str, i64); 3] = [("24h", 24), ("7d", 24 * 7), ("30d", 24 * 30)];

/// `by` of the rows per instance type in one zone, which the capacity grid's cells read.
pub const BY_ZONE_TYPE: &str = "zone × instance type";

/// The key of a [`BY_ZONE_TYPE`] row.
pub fn zone_type_key(zone: &str, instance_type: &str) -> String {
    format!("{zone}/{instance_type}")
}

/// The row of `rates` for `instance_type` in `zone` over the 24 h window, if the ledger has
/// spot nodes there.
pub fn zone_type_24h<'a>(
    rates: &'a [RateRow],
    zone: &str,
    instance_type: &str,
) -> Option<&'a RateRow> {
    let key = zone_type_key(zone, instance_type);
    rates
        .iter()
        .find(|r| r.by == BY_ZONE_TYPE && r.window == "24h" && r.key == key)
}

/// The key of a lifetime in one grouping.
type KeyOf = fn(&Lifetime) -> Option<String>;

/// One rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateRow {
    /// `pool`, `zone` or `instance type`.
    pub by: String,
    pub key: String,
    /// `24h`, `7d` or `30d`.
    pub window: String,
    pub preemptions: u32,
    pub spot_nodes: u32,
    pub rate_pct: f64,
    pub band: String,
}

impl RateRow {
    /// The row's key on the live stream: dimension, key and window.
    pub fn row_key(&self) -> String {
        format!("{}/{}/{}", self.by, self.key, self.window)
    }
}

/// Rates per pool, zone and instance type over each window, for spot lifetimes only.
pub fn rates(lifetimes: &[Lifetime], now: DateTime<Utc>) -> Vec<RateRow> {
    let dims: [(&str, KeyOf); 4] = [
        ("pool", |l| {
            l.pool.as_ref().map(|p| format!("{}/{p}", l.cluster))
        }),
        ("zone", |l| l.zone.clone()),
        ("instance type", |l| l.instance_type.clone()),
        (BY_ZONE_TYPE, |l| {
            Some(zone_type_key(
                l.zone.as_deref()?,
                l.instance_type.as_deref()?,
            ))
        }),
    ];
    let mut out = Vec::new();
    for (window, hours) in WINDOWS {
        let from = now - Duration::hours(hours);
        for (by, key_of) in dims {
            let mut acc: BTreeMap<String, (u32, u32)> = BTreeMap::new();
            for l in lifetimes
                .iter()
                .filter(|l| l.capacity_type == super::CapacityType::Spot)
            {
                let ran = l.started_at <= now && l.ended_at.is_none_or(|e| e >= from);
                if !ran {
                    continue;
                }
                let Some(key) = key_of(l) else { continue };
                let e = acc.entry(key).or_default();
                e.1 += 1;
                if l.preemption_t0.is_some_and(|t| t >= from && t <= now) {
                    e.0 += 1;
                }
            }
            for (key, (preemptions, spot_nodes)) in acc {
                let rate_pct = f64::from(preemptions) * 100.0 / f64::from(spot_nodes.max(1));
                out.push(RateRow {
                    by: by.into(),
                    key,
                    window: window.into(),
                    preemptions,
                    spot_nodes,
                    rate_pct: (rate_pct * 10.0).round() / 10.0,
                    band: band(rate_pct).into(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn life(uid: &str, start_h: i64, t0_h: Option<i64>, class: &str) -> Lifetime {
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap();
        Lifetime {
            uid: uid.into(),
            cluster: "c".into(),
            pool: Some("p".into()),
            zone: Some("US-EAST-04A".into()),
            instance_type: Some("gd-8xh100ib-i128".into()),
            capacity_type: crate::domain::preemption::CapacityType::parse(class),
            started_at: now - Duration::hours(start_h),
            ended_at: t0_h.map(|h| now - Duration::hours(h) + Duration::minutes(7)),
            preemption_t0: t0_h.map(|h| now - Duration::hours(h)),
            ..Default::default()
        }
    }

    #[test]
    fn rates_per_window_with_bands() {
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap();
        let mut l: Vec<Lifetime> = (0..9)
            .map(|i| life(&format!("n{i}"), 100, None, "spot"))
            .collect();
        l.push(life("x", 100, Some(2), "spot")); // preempted 2 h ago
        l.push(life("y", 500, Some(100), "spot")); // preempted 100 h ago
        l.push(life("z", 100, Some(1), "on-demand")); // not spot: ignored
        let r = rates(&l, now);
        let get = |w: &str| r.iter().find(|x| x.by == "pool" && x.window == w).unwrap();
        // 24 h: 1 of 10 spot nodes that ran (y ended 100 h ago) = 10 % → 10–15 %.
        assert_eq!((get("24h").preemptions, get("24h").spot_nodes), (1, 10));
        assert_eq!(get("24h").band, "10–15 %");
        // 7 d: 2 of 11 = 18.2 % → 15–20 %.
        assert_eq!(
            (
                get("7d").preemptions,
                get("7d").spot_nodes,
                get("7d").rate_pct
            ),
            (2, 11, 18.2)
        );
        assert_eq!(get("7d").band, "15–20 %");
        // One row per pool, zone, instance type, and instance type in a zone.
        assert_eq!(r.iter().filter(|x| x.window == "30d").count(), 4);
    }
}
