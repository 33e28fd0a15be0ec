//! Preemption rates from the ledger, in the Spot Advisor's bands.
//!
//! Definition (the only one spotboard uses: `/preemptions`, the capacity grid and the Capacity
//! Finder's score all read these rows): for a pool, zone, instance type, or instance type in
//! one zone, and a trailing window (24 h, 7 d, 30 d), the spot nodes whose preemption T=0 fell
//! in the window, divided by the spot nodes that ran at any time in the window, as a percent. The bands are the Spot Instance Advisor's: <5 %, 5–10 %,
//! 10–15 %, 15–20 %, >20 % (AWS: EC2 Spot Instance Advisor, "Frequency of interruption").
//!
//! Each row also carries the eviction errors of its preemptions and the replacement latency of the same preemptions (p50, p95, max; see
//! [`super::replacement`]) and whether it is flagged: a key still running spot nodes whose
//! rate is above `--rate-alert-pct` (default 10 %, the article's rule: AWS, "Best practices
//! for handling EC2 Spot Instance interruptions").

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::evictions::EvictionCounts;
use super::replacement;
use crate::domain::capacity::score::{Band, band};
use crate::model::Lifetime;

/// A trailing window of the rates, serialized as its name (`24h`, `7d`, `30d`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Window {
    /// The last 24 hours.
    #[default]
    #[serde(rename = "24h")]
    Last24h,
    /// The last 7 days.
    #[serde(rename = "7d")]
    Last7d,
    /// The last 30 days.
    #[serde(rename = "30d")]
    Last30d,
}

impl Window {
    /// Every window, shortest first (the order of the table's columns).
    pub const ALL: [Window; 3] = [Window::Last24h, Window::Last7d, Window::Last30d];

    /// Its name, as serialized: `24h`, `7d`, `30d`.
    pub fn as_str(self) -> &'static str {
        match self {
            Window::Last24h => "24h",
            Window::Last7d => "7d",
            Window::Last30d => "30d",
        }
    }

    /// Its length in hours.
    pub fn hours(self) -> i64 {
        match self {
            Window::Last24h => 24,
            Window::Last7d => 24 * 7,
            Window::Last30d => 24 * 30,
        }
    }

    /// The window named `text` (`24h`, `7d`, `30d`).
    ///
    /// Errors ([`crate::Error::Invalid`]): any other text, with the names accepted.
    pub fn parse(text: &str) -> crate::Result<Window> {
        Window::ALL
            .into_iter()
            .find(|w| w.as_str() == text)
            .ok_or_else(|| {
                crate::Error::Invalid(format!("unknown range \"{text}\": use 24h, 7d or 30d"))
            })
    }

    /// Its place in [`Window::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a rate is grouped by, serialized as the table names it (`pool`, `zone`, `instance
/// type`, `zone × instance type`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum RateBy {
    /// A NodePool (or GKE / Karpenter pool): key `cluster/pool`.
    #[default]
    #[serde(rename = "pool")]
    Pool,
    /// A zone: key the zone's name.
    #[serde(rename = "zone")]
    Zone,
    /// An instance type: key its name.
    #[serde(rename = "instance type")]
    InstanceType,
    /// An instance type in one zone, which the capacity grid's cells read: key
    /// [`zone_type_key`].
    #[serde(rename = "zone × instance type")]
    ZoneInstanceType,
}

impl RateBy {
    /// Every grouping, in the order the table offers them.
    pub const ALL: [RateBy; 4] = [
        RateBy::Pool,
        RateBy::Zone,
        RateBy::InstanceType,
        RateBy::ZoneInstanceType,
    ];

    /// Its name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            RateBy::Pool => "pool",
            RateBy::Zone => "zone",
            RateBy::InstanceType => "instance type",
            RateBy::ZoneInstanceType => "zone × instance type",
        }
    }

    /// The grouping named `text` (as [`RateBy::as_str`] writes it), if any.
    pub fn parse(text: &str) -> Option<RateBy> {
        RateBy::ALL.into_iter().find(|b| b.as_str() == text)
    }
}

impl std::fmt::Display for RateBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
        .find(|r| r.by == RateBy::ZoneInstanceType && r.window == Window::Last24h && r.key == key)
}

/// The key of a lifetime in one grouping.
type KeyOf = fn(&Lifetime) -> Option<String>;

/// One rate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateRow {
    /// What the rate is grouped by.
    pub by: RateBy,
    /// The pool (`cluster/pool`), zone, instance type or `zone/instance type`.
    pub key: String,
    /// The trailing window.
    pub window: Window,
    /// Spot nodes whose preemption T=0 fell in the window.
    pub preemptions: u32,
    /// Spot nodes that ran at any time in the window.
    pub spot_nodes: u32,
    /// `preemptions / spot_nodes`, percent, one decimal.
    pub rate_pct: f64,
    /// The Spot Advisor band of `rate_pct`.
    pub band: Band,
    /// Spot nodes of this key running now: a key with none is not "actively used".
    #[serde(default)]
    pub running_spot_nodes: u32,
    /// The rate is above the alert threshold and the key is actively used ([`flag`]).
    #[serde(default)]
    pub alert: bool,
    /// The threshold `alert` was judged against, percent (`--rate-alert-pct`).
    #[serde(default)]
    pub alert_pct: f64,
    /// Preemptions in the window whose replacement is Ready (the latencies below).
    #[serde(default)]
    pub replaced: u32,
    /// Replacement latency, seconds from T=0 to the replacement's Ready: nearest-rank p50,
    /// p95 and the maximum; `None` when no preemption in the window has been replaced yet.
    #[serde(default)]
    pub latency_p50_s: Option<f64>,
    #[serde(default)]
    pub latency_p95_s: Option<f64>,
    #[serde(default)]
    pub latency_max_s: Option<f64>,
    /// Eviction errors of the same preemptions: refusals, pods past grace, pods killed at
    /// removal ([`super::evictions`]).
    #[serde(default)]
    pub evictions: EvictionCounts,
    /// Spot nodes of the key that went away in the window for another reason than a
    /// preemption (scaled down, consolidated, repaired, deleted …): what the rate leaves out.
    #[serde(default)]
    pub departures: crate::domain::departures::DepartureCounts,
}

impl RateRow {
    /// The row's key on the live stream: dimension, key and window.
    pub fn row_key(&self) -> String {
        format!("{}/{}/{}", self.by, self.key, self.window)
    }
}

/// Sets `alert` on every row above `alert_pct` percent whose key runs spot nodes now.
pub fn flag(rows: &mut [RateRow], alert_pct: f64) {
    for r in rows {
        r.alert = r.running_spot_nodes > 0 && r.rate_pct > alert_pct;
        r.alert_pct = alert_pct;
    }
}

/// What to do about a flagged key, for its provider (`None`: not known, every provider's):
/// the article's advice (AWS, "Best practices for handling EC2 Spot Instance interruptions"),
/// with each provider's own lever.
pub fn advice(provider: Option<super::Provider>) -> &'static str {
    use super::Provider;
    match provider {
        Some(Provider::Karpenter) => {
            "Drop this instance family from the NodePool's requirements (or add more \
             families), so Karpenter launches spot capacity from less contested pools."
        }
        Some(Provider::Cks) => {
            "Consider another zone for this instance type: the Capacity Finder ranks them \
             by capacity and by this rate."
        }
        Some(Provider::Gke) => {
            "Spread across machine families: more node pools (or a compute class) with \
             other machine types, so one family's reclaim does not take the workload."
        }
        _ => {
            "Diversify: other instance families (Karpenter), another zone from the \
             Capacity Finder (CKS), other machine families (GKE)."
        }
    }
}

/// What one key accumulates over a window.
#[derive(Default)]
struct Acc {
    preemptions: u32,
    spot_nodes: u32,
    running: u32,
    latencies: Vec<f64>,
    evictions: EvictionCounts,
    departures: crate::domain::departures::DepartureCounts,
}

/// Rates per pool, zone and instance type over each window, for spot lifetimes only, with
/// the replacement latency of the same preemptions. Not flagged: see [`flag`].
pub fn rates(lifetimes: &[Lifetime], now: DateTime<Utc>) -> Vec<RateRow> {
    let pairs = replacement::pair(lifetimes);
    let dims: [(RateBy, KeyOf); 4] = [
        (RateBy::Pool, |l| {
            l.pool.as_ref().map(|p| format!("{}/{p}", l.cluster))
        }),
        (RateBy::Zone, |l| l.zone.clone()),
        (RateBy::InstanceType, |l| l.instance_type.clone()),
        (RateBy::ZoneInstanceType, |l| {
            Some(zone_type_key(
                l.zone.as_deref()?,
                l.instance_type.as_deref()?,
            ))
        }),
    ];
    let mut out = Vec::new();
    for window in Window::ALL {
        let from = now - Duration::hours(window.hours());
        for (by, key_of) in dims {
            let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
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
                e.spot_nodes += 1;
                if l.ended_at.is_none() {
                    e.running += 1;
                }
                if l.preemption_t0.is_some_and(|t| t >= from && t <= now) {
                    e.preemptions += 1;
                    let latency = pairs
                        .get(l.uid.as_str())
                        .and_then(|r| replacement::latency_s(l, r));
                    e.latencies.extend(latency);
                    e.evictions.add(&l.evictions);
                }
                // A preempted node that ended unobserved is in the rate, not beside it.
                if l.preemption_t0.is_none()
                    && l.ended_at.is_some_and(|t| t >= from && t <= now)
                    && let Some(reason) = l
                        .end_reason
                        .as_deref()
                        .and_then(crate::domain::departures::EndReason::parse)
                {
                    e.departures.add(reason);
                }
            }
            for (key, a) in acc {
                let rate_pct = f64::from(a.preemptions) * 100.0 / f64::from(a.spot_nodes.max(1));
                let latency = replacement::stats(&a.latencies);
                out.push(RateRow {
                    by,
                    key,
                    window,
                    preemptions: a.preemptions,
                    spot_nodes: a.spot_nodes,
                    rate_pct: (rate_pct * 10.0).round() / 10.0,
                    band: band(rate_pct),
                    running_spot_nodes: a.running,
                    alert: false,
                    alert_pct: 0.0,
                    replaced: a.latencies.len() as u32,
                    latency_p50_s: latency.map(|s| s.p50_s),
                    latency_p95_s: latency.map(|s| s.p95_s),
                    latency_max_s: latency.map(|s| s.max_s),
                    evictions: a.evictions,
                    departures: a.departures,
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
            capacity_type: crate::CapacityType::parse(class),
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
        let get = |w: Window| {
            r.iter()
                .find(|x| x.by == RateBy::Pool && x.window == w)
                .unwrap()
        };
        // 24 h: 1 of 10 spot nodes that ran (y ended 100 h ago) = 10 % → 10–15 %.
        assert_eq!(
            (
                get(Window::Last24h).preemptions,
                get(Window::Last24h).spot_nodes
            ),
            (1, 10)
        );
        assert_eq!(get(Window::Last24h).band, Band::From10To15);
        // 7 d: 2 of 11 = 18.2 % → 15–20 %.
        assert_eq!(
            (
                get(Window::Last7d).preemptions,
                get(Window::Last7d).spot_nodes,
                get(Window::Last7d).rate_pct
            ),
            (2, 11, 18.2)
        );
        assert_eq!(get(Window::Last7d).band, Band::From15To20);
        // One row per pool, zone, instance type, and instance type in a zone.
        assert_eq!(r.iter().filter(|x| x.window == Window::Last30d).count(), 4);
    }

    #[test]
    fn eviction_errors_add_up_over_the_preemptions_of_each_window() {
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap();
        let counts = |refused, past_grace, killed| EvictionCounts {
            refused,
            past_grace,
            killed,
        };
        let mut x = life("x", 100, Some(2), "spot");
        x.evictions = counts(2, 0, 1);
        let mut y = life("y", 500, Some(100), "spot");
        y.evictions = counts(0, 1, 3);
        let mut od = life("z", 100, Some(1), "on-demand");
        od.evictions = counts(9, 9, 9);
        let r = rates(&[x, y, od, life("n", 100, None, "spot")], now);
        let get = |w: Window| {
            r.iter()
                .find(|x| x.by == RateBy::Pool && x.window == w)
                .unwrap()
        };
        assert_eq!(
            get(Window::Last24h).evictions,
            counts(2, 0, 1),
            "only x's preemption"
        );
        assert_eq!(get(Window::Last7d).evictions, counts(2, 1, 4), "x and y");
        assert_eq!(get(Window::Last7d).evictions.total(), 7);
    }

    /// A scale-down 2 h ago and a consolidation 3 days ago beside a preemption 2 h ago: the
    /// 24 h row counts the scale-down only, 7 d both; neither is in the rate, and an
    /// on-demand node that left is no spot departure.
    #[test]
    fn other_departures_are_counted_beside_the_rate_not_in_it() {
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap();
        let gone = |uid: &str, h: i64, reason: &str, class: &str| Lifetime {
            ended_at: Some(now - Duration::hours(h)),
            end_reason: Some(reason.into()),
            ..life(uid, 100, None, class)
        };
        let mut x = life("x", 100, Some(2), "spot");
        x.end_reason = Some("preempted".into());
        let r = rates(
            &[
                x,
                gone("s", 2, "scaled-down", "spot"),
                gone("c", 72, "consolidated", "spot"),
                gone("o", 2, "deleted", "on-demand"),
            ],
            now,
        );
        let get = |w: Window| {
            r.iter()
                .find(|x| x.by == RateBy::Pool && x.window == w)
                .unwrap()
        };
        let day = get(Window::Last24h);
        assert_eq!(
            (day.preemptions, day.spot_nodes),
            (1, 2),
            "x and s ran in it"
        );
        assert_eq!(day.departures.to_string(), "1 scaled-down");
        assert_eq!(
            get(Window::Last7d).departures.to_string(),
            "1 scaled-down · 1 consolidated"
        );
    }

    #[test]
    fn replacement_latency_and_the_alert_flag_per_pool_by_hand() {
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap();
        let s = |secs: i64| now - Duration::hours(1) + Duration::seconds(secs);
        let mut l: Vec<Lifetime> = (0..8)
            .map(|i| life(&format!("n{i}"), 100, None, "spot"))
            .collect();
        // Two preemptions an hour ago, at T=0 and T=0+10 s; their replacements start at 30 s
        // and 40 s and are Ready at 75 s and 140 s: latencies 75 s and 130 s.
        for (uid, t0) in [("v1", 0), ("v2", 10)] {
            l.push(Lifetime {
                preemption_t0: Some(s(t0)),
                ended_at: Some(s(t0 + 420)),
                ..life(uid, 100, None, "spot")
            });
        }
        for (uid, start, ready) in [("r1", 30, 75), ("r2", 40, 140)] {
            l.push(Lifetime {
                started_at: s(start),
                ready_at: Some(s(ready)),
                ..life(uid, 0, None, "spot")
            });
        }
        let mut r = rates(&l, now);
        flag(&mut r, 10.0);
        let pool = r
            .iter()
            .find(|r| r.by == RateBy::Pool && r.window == Window::Last24h)
            .unwrap();
        // 2 preempted of 12 spot nodes that ran: 16.7 %; 10 still running.
        assert_eq!((pool.preemptions, pool.spot_nodes), (2, 12));
        assert_eq!(pool.rate_pct, 16.7);
        assert_eq!(pool.running_spot_nodes, 10);
        assert!(pool.alert, "above 10 % and running");
        assert_eq!(pool.replaced, 2);
        // Nearest rank of [75, 130]: p50 = 1st = 75, p95 = 2nd = 130.
        assert_eq!(
            (pool.latency_p50_s, pool.latency_p95_s, pool.latency_max_s),
            (Some(75.0), Some(130.0), Some(130.0))
        );
        // The same pool at a 20 % threshold is not flagged; nor is a key with nothing running.
        flag(&mut r, 20.0);
        assert!(!r.iter().any(|r| r.alert));
        let mut idle = rates(&l[8..10], now);
        flag(&mut idle, 10.0);
        assert!(idle.iter().all(|r| r.running_spot_nodes == 0 && !r.alert));
    }
}
