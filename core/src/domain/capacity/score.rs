//! The Capacity Finder's score: zones ranked for an instance type × node count.
//!
//! score = 100 × Σ weight × part, each part in [0, 1], and 0 when the zone cannot place the
//! request at all (its pools of that type report NoneAvailable, NoneAvailableNodeAffinity or
//! QueuedAwaitingCapacity, or the feed says no nodes are free). Parts and weights:
//!
//! | part | weight | value |
//! | --- | --- | --- |
//! | availability | 0.50 | with a feed: min(1, availableNodes ÷ count); without one, a prior from the Capacity condition (Sufficient 0.8, Partial 0.4, no pools 0.3) × min(1, nodes already delivered ÷ count) |
//! | preemption | 0.20 | 1 − min(1, 24 h preemption rate ÷ 20 %); 0.5 when unknown |
//! | price | 0.15 | cheapest spot price among the zones ÷ this zone's; 0.5 when unpublished |
//! | fulfilment | 0.10 | 1 ÷ (1 + median seconds queued→current ÷ 600); 0.5 when unknown |
//! | freshness | 0.05 | 1 up to 60 s old, falling linearly to 0 at 1 h |
//!
//! Only availability depends on the count, and it never rises with it, so asking for more nodes
//! never scores a zone higher.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::domain::validation::SUPERCHIP_SPOT_REASON;
use crate::model::{CapacityCell, CapacityGrid, FinderResult, ScorePart, ZoneScore};

/// Capacity condition reasons that mean no spot node of the type can be placed now.
pub const BLOCKING_REASONS: [&str; 3] = [
    "NoneAvailable",
    "NoneAvailableNodeAffinity",
    "QueuedAwaitingCapacity",
];

/// The node counts the chart plots, besides the requested one.
pub const CURVE_COUNTS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

const W_AVAILABILITY: f64 = 0.5;
const W_PREEMPTION: f64 = 0.2;
const W_PRICE: f64 = 0.15;
const W_FULFILMENT: f64 = 0.1;
const W_FRESHNESS: f64 = 0.05;

fn part(name: &str, value: f64, weight: f64, why: String) -> ScorePart {
    ScorePart {
        name: name.into(),
        value: value.clamp(0.0, 1.0),
        weight,
        why,
    }
}

/// The availability part for `count` nodes.
pub fn availability(cell: &CapacityCell, count: u32) -> ScorePart {
    let count = count.max(1);
    let mk = |v: f64, why: String| part("availability", v, W_AVAILABILITY, why);
    if let Some(r) = cell
        .capacity_reason
        .as_deref()
        .filter(|r| BLOCKING_REASONS.contains(r))
    {
        return mk(
            0.0,
            format!("this zone's spot pools of the type report {r}"),
        );
    }
    if let Some(free) = cell.available_nodes {
        let v = f64::from(free) / f64::from(count);
        return mk(
            v.min(1.0),
            format!("{free} nodes free for {count} requested"),
        );
    }
    let (prior, what) = match cell.capacity_reason.as_deref() {
        Some("Sufficient") => (0.8, "pools report Sufficient"),
        Some(_) => (0.4, "pools report partial capacity"),
        None => (0.3, "no pools of this type here and no feed"),
    };
    let shown = cell.current_nodes.max(1) as f64;
    let v = prior * (shown / f64::from(count)).min(1.0);
    mk(
        v,
        format!(
            "{what}; {} delivered nodes shown for {count} requested (no feed)",
            cell.current_nodes.max(0)
        ),
    )
}

/// The score of `cell` for `count` nodes; `cheapest` is the lowest spot price among the
/// candidate zones (USD per instance-hour).
pub fn score(
    cell: &CapacityCell,
    count: u32,
    cheapest: Option<Decimal>,
    now: DateTime<Utc>,
) -> ZoneScore {
    let avail = availability(cell, count);
    let preemption = match cell.preemption_rate_pct {
        Some(r) => part(
            "preemption",
            1.0 - (r / 20.0).min(1.0),
            W_PREEMPTION,
            format!(
                "{r:.1} % of the {} spot nodes that ran in 24 h were preempted ({})",
                cell.spot_nodes,
                band(r)
            ),
        ),
        None => part("preemption", 0.5, W_PREEMPTION, "no preemption data".into()),
    };
    let price = match (spot_price(cell), cheapest) {
        (Some(p), Some(c)) if !p.is_zero() => part(
            "price",
            ratio(c, p),
            W_PRICE,
            format!("spot ${p}/h against the cheapest ${c}/h"),
        ),
        _ => part("price", 0.5, W_PRICE, "spot price not published".into()),
    };
    let fulfilment = match cell.median_fulfil_seconds {
        Some(s) => part(
            "fulfilment",
            1.0 / (1.0 + s as f64 / 600.0),
            W_FULFILMENT,
            format!("median {} from queued to current", human(s)),
        ),
        None => part(
            "fulfilment",
            0.5,
            W_FULFILMENT,
            "no fulfilment observed".into(),
        ),
    };
    let as_of = cell.available_as_of.or(cell.observed_at);
    let freshness = match as_of {
        Some(t) => {
            let age = (now - t).num_seconds().max(0) as f64;
            let v = if age <= 60.0 {
                1.0
            } else {
                1.0 - (age - 60.0) / 3540.0
            };
            part(
                "freshness",
                v,
                W_FRESHNESS,
                format!("data {} old", human(age as u64)),
            )
        }
        None => part("freshness", 0.0, W_FRESHNESS, "no data".into()),
    };
    let parts = vec![avail, preemption, price, fulfilment, freshness];
    let total = if parts[0].value <= 0.0 {
        0.0
    } else {
        100.0 * parts.iter().map(|p| p.value * p.weight).sum::<f64>()
    };
    let score = (total * 10.0).round() / 10.0;
    ZoneScore {
        cluster: cell.cluster.clone(),
        zone: cell.zone.clone(),
        score,
        parts,
        confidential: cell.confidential,
        history: history(cell),
        history_warning: history_warning(cell, score),
    }
}

/// A score from which the Finder calls a zone good.
pub const GOOD_SCORE: f64 = 70.0;

/// Queued time in the last 24 h from which a good score is contradicted, seconds.
pub const WAITED_WARNING_S: u64 = 600;

/// The fleet's own history of `cell` in one line, when there is one to tell.
fn history(cell: &CapacityCell) -> Option<String> {
    let (Some(day), Some(week)) = (cell.queued_seconds_24h, cell.queued_seconds_7d) else {
        return None;
    };
    let mut s = if week == 0 {
        "not queued in 7 d".to_string()
    } else {
        format!("queued {} in 24 h, {} in 7 d", human(day), human(week))
    };
    if let (Some(asked), Some(done)) = (cell.scale_ups_7d, cell.fulfilled_7d)
        && asked > 0
    {
        s.push_str(&format!("; {done} of {asked} scale-ups fulfilled"));
    }
    if let Some(p95) = cell.p95_fulfil_seconds {
        s.push_str(&format!(", p95 {}", human(p95)));
    }
    Some(s)
}

/// "The score says good, the history says it waited" (see [`ZoneScore::history_warning`]).
fn history_warning(cell: &CapacityCell, score: f64) -> Option<String> {
    let waited = cell.queued_seconds_24h.filter(|s| *s >= WAITED_WARNING_S)?;
    (score >= GOOD_SCORE).then(|| {
        format!(
            "scores {score:.0}, but this fleet's {} pools here waited {} for capacity in the last 24 h",
            cell.instance_type,
            human(waited)
        )
    })
}

fn ratio(a: Decimal, b: Decimal) -> f64 {
    (a / b).to_string().parse().unwrap_or(0.5)
}

fn spot_price(cell: &CapacityCell) -> Option<Decimal> {
    cell.spot_usd_h.as_deref()?.parse().ok()
}

/// Seconds as `45 s`, `12 min`, `3.5 h`.
pub fn human(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{:.1} h", s as f64 / 3600.0),
    }
}

/// A band of preemption rates: the Spot Instance Advisor's "Frequency of interruption"
/// (AWS), serialized as its label (`<5 %`, `5–10 %`, `10–15 %`, `15–20 %`, `>20 %`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Band {
    /// Under 5 %.
    #[default]
    #[serde(rename = "<5 %")]
    Below5,
    /// 5 % to under 10 %.
    #[serde(rename = "5–10 %")]
    From5To10,
    /// 10 % to under 15 %.
    #[serde(rename = "10–15 %")]
    From10To15,
    /// 15 % to under 20 %.
    #[serde(rename = "15–20 %")]
    From15To20,
    /// 20 % and above.
    #[serde(rename = ">20 %")]
    Above20,
}

impl Band {
    /// Its label, as serialized and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Band::Below5 => "<5 %",
            Band::From5To10 => "5–10 %",
            Band::From10To15 => "10–15 %",
            Band::From15To20 => "15–20 %",
            Band::Above20 => ">20 %",
        }
    }
}

impl std::fmt::Display for Band {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Spot Advisor band of a preemption rate in percent.
pub fn band(rate_pct: f64) -> Band {
    match rate_pct {
        r if r < 5.0 => Band::Below5,
        r if r < 10.0 => Band::From5To10,
        r if r < 15.0 => Band::From10To15,
        r if r < 20.0 => Band::From15To20,
        _ => Band::Above20,
    }
}

/// Whether `zone` is in `region`: the same region (`US-EAST-04A` is in `US-EAST-04`), or the
/// region text is a prefix (`US-EAST`, `EU`), case-insensitively.
pub fn in_region(zone: &str, region: &str) -> bool {
    let zone = zone.to_ascii_uppercase();
    let region = region.trim().to_ascii_uppercase();
    region.is_empty() || zone.starts_with(&region)
}

/// Zones of `grid` ranked for `instance_type` × `count`, best first (ties by zone name), with
/// score-against-count curves for the chart.
pub fn rank(
    grid: &CapacityGrid,
    instance_type: &str,
    count: u32,
    region: Option<&str>,
    now: DateTime<Utc>,
) -> FinderResult {
    let mut result = FinderResult {
        instance_type: instance_type.to_string(),
        count,
        region: region.map(str::to_string),
        ..Default::default()
    };
    match catalog::instance_type(instance_type) {
        None => {
            result.reason = Some(format!("unknown instance type \"{instance_type}\""));
            return result;
        }
        Some(t) if t.superchip || !t.spot_ok => {
            result.reason = Some(format!(
                "{} ({}) is not eligible: {SUPERCHIP_SPOT_REASON}",
                t.id, t.gpu_model
            ));
            return result;
        }
        Some(_) => result.eligible = true,
    }
    let cells: Vec<&CapacityCell> = grid
        .cells
        .iter()
        .filter(|c| c.instance_type == instance_type)
        .filter(|c| region.is_none_or(|r| in_region(&c.zone, r)))
        .collect();
    let cheapest = cells.iter().filter_map(|c| spot_price(c)).min();
    let mut ranked: Vec<ZoneScore> = cells
        .iter()
        .map(|c| score(c, count, cheapest, now))
        .collect();
    ranked.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.zone.cmp(&b.zone))
    });
    let mut counts: Vec<u32> = CURVE_COUNTS.iter().copied().chain([count.max(1)]).collect();
    counts.sort_unstable();
    counts.dedup();
    result.curves = cells
        .iter()
        .map(|c| {
            let points = counts
                .iter()
                .map(|n| (*n, score(c, *n, cheapest, now).score))
                .collect();
            (c.zone.clone(), points)
        })
        .collect();
    result.confidential = ranked.iter().any(|z| z.confidential);
    result.ranked = ranked;
    result
}
