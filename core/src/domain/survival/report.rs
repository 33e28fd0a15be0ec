//! Survival curves per pool, zone, instance type or zone × instance type, from the ledger's
//! node lifetimes: the rows of `GET /api/v1/survival`.
//!
//! The cohort of a range is the spot nodes that turned Ready (or started, when their Ready
//! was never seen) in it, each followed to its preemption or to the range's end: a node
//! already running when the range began is left out, so long-lived nodes are not
//! over-represented (length bias). A preemption is a lifetime with a T=0, as the rates
//! count it ([`crate::domain::preemption::rates`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Estimate, KaplanMeier, Observation};
use crate::CapacityType;
use crate::domain::preemption::rates::{Window, zone_type_key};
use crate::model::Lifetime;

/// What the curves are grouped by, serialized as the API's `by` names it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum SurvivalBy {
    /// A pool: key `cluster/pool`.
    #[default]
    #[serde(rename = "pool")]
    Pool,
    /// A zone: key its name.
    #[serde(rename = "zone")]
    Zone,
    /// An instance type: key its name.
    #[serde(rename = "instance-type")]
    InstanceType,
    /// An instance type in one zone: key `zone/instance-type`.
    #[serde(rename = "zone-instance-type")]
    ZoneInstanceType,
}

impl SurvivalBy {
    /// Every grouping.
    pub const ALL: [SurvivalBy; 4] = [
        SurvivalBy::Pool,
        SurvivalBy::Zone,
        SurvivalBy::InstanceType,
        SurvivalBy::ZoneInstanceType,
    ];

    /// Its name, as serialized (`pool`, `zone`, `instance-type`, `zone-instance-type`).
    pub fn as_str(self) -> &'static str {
        match self {
            SurvivalBy::Pool => "pool",
            SurvivalBy::Zone => "zone",
            SurvivalBy::InstanceType => "instance-type",
            SurvivalBy::ZoneInstanceType => "zone-instance-type",
        }
    }

    /// The grouping named `text`.
    ///
    /// Errors: any other text, with the names that are accepted.
    pub fn parse(text: &str) -> crate::Result<SurvivalBy> {
        SurvivalBy::ALL
            .into_iter()
            .find(|b| b.as_str() == text)
            .ok_or_else(|| {
                crate::Error::Invalid(format!(
                    "unknown by \"{text}\": use pool, zone, instance-type or zone-instance-type"
                ))
            })
    }

    /// The key of `l` in this grouping; `None` when `l` lacks the field.
    pub fn key(self, l: &Lifetime) -> Option<String> {
        match self {
            SurvivalBy::Pool => l.pool.as_ref().map(|p| format!("{}/{p}", l.cluster)),
            SurvivalBy::Zone => l.zone.clone(),
            SurvivalBy::InstanceType => l.instance_type.clone(),
            SurvivalBy::ZoneInstanceType => Some(zone_type_key(
                l.zone.as_deref()?,
                l.instance_type.as_deref()?,
            )),
        }
    }
}

impl std::fmt::Display for SurvivalBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a row has figures, serialized as `estimated` or `too few preemptions`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EstimateStatus {
    /// Median and mean are given.
    #[serde(rename = "estimated")]
    Estimated,
    /// Fewer than [`super::MIN_PREEMPTIONS`] preemptions: no median, no mean.
    #[default]
    #[serde(rename = "too few preemptions")]
    TooFewPreemptions,
}

/// One point of a curve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Seconds since Ready.
    pub t_s: f64,
    /// Ŝ(t_s), 0–1.
    pub survival: f64,
    /// Nodes at risk just before `t_s`.
    pub at_risk: u32,
}

/// One key's curve and figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SurvivalRow {
    /// `cluster/pool`, a zone, an instance type or `zone/instance-type`.
    pub key: String,
    /// Spot nodes in the cohort.
    pub nodes: u32,
    /// Of them, preempted.
    pub preempted: u32,
    /// Of them, censored (still running, or gone for another reason).
    pub censored: u32,
    /// Whether the figures below are given.
    pub status: EstimateStatus,
    /// Median lifetime, seconds since Ready; `null` with too few preemptions or when the
    /// curve stays above 1/2.
    pub median_s: Option<f64>,
    /// The median's 95 % log-log interval, seconds; `null` edges are unbounded (or not
    /// estimated).
    pub median_ci_s: [Option<f64>; 2],
    /// Restricted mean survival time up to the last observed time, seconds.
    pub mean_restricted_s: Option<f64>,
    /// Its 95 % interval, seconds.
    pub mean_restricted_ci_s: Option<[f64; 2]>,
    /// The restriction (the last observed time), seconds.
    pub tau_s: Option<f64>,
    /// `(0, 1, nodes)` then one point per distinct observed time.
    pub curve: Vec<CurvePoint>,
}

/// `GET /api/v1/survival`'s body, and the pages' (`load_survival`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SurvivalReport {
    pub by: SurvivalBy,
    pub range: Window,
    /// The cohort: spot nodes that turned Ready in `[from, to)`.
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// One per key, ordered by key.
    pub rows: Vec<SurvivalRow>,
    /// For comparison: the on-demand nodes of the same range, one row per key, where an
    /// event is any departure (scaled down, deleted, …) rather than a preemption: their
    /// `preempted` counts departures. Empty where the fleet has no on-demand nodes.
    #[serde(default)]
    pub departures: Vec<SurvivalRow>,
}

/// How the estimator reads `l` at `now`: seconds from its Ready (else its start) to its
/// preemption's T=0, or censored at its end (else `now`). `None` for a node that is not
/// spot, or whose origin is after `now`.
pub fn observation(l: &Lifetime, now: DateTime<Utc>) -> Option<Observation> {
    if l.capacity_type != CapacityType::Spot {
        return None;
    }
    let origin = l.ready_at.unwrap_or(l.started_at);
    if origin > now {
        return None;
    }
    let secs = |t: DateTime<Utc>| ((t - origin).num_milliseconds() as f64 / 1000.0).max(0.0);
    Some(match l.preemption_t0 {
        Some(t0) => Observation::preempted(secs(t0)),
        None => Observation::censored(secs(l.ended_at.unwrap_or(now).min(now))),
    })
}

/// How an on-demand node's departure curve reads `l` at `now`: seconds from its Ready (else
/// its start) to its end, whatever the reason, or censored at `now` while it runs (or at its
/// recorded end when that end was inferred, [`crate::model::END_UNOBSERVED`]). `None` for
/// a node that is not on-demand, or whose origin is after `now`. Spot nodes are compared
/// against these: an on-demand pool's nodes go too (scale-down, repairs), and the gap between
/// the two curves is what spot costs in lifetime.
pub fn departure(l: &Lifetime, now: DateTime<Utc>) -> Option<Observation> {
    if l.capacity_type != CapacityType::OnDemand {
        return None;
    }
    let origin = l.ready_at.unwrap_or(l.started_at);
    if origin > now {
        return None;
    }
    let secs = |t: DateTime<Utc>| ((t - origin).num_milliseconds() as f64 / 1000.0).max(0.0);
    Some(match l.ended_at.filter(|e| *e <= now) {
        // Last seen running at the heartbeat: known to have lasted that long, no longer.
        Some(end) if l.end_reason.as_deref() == Some(crate::model::END_UNOBSERVED) => {
            Observation::censored(secs(end))
        }
        Some(end) => Observation::preempted(secs(end)),
        None => Observation::censored(secs(now)),
    })
}

/// The row of `key` for `observations`.
pub fn row(key: String, observations: &[Observation]) -> SurvivalRow {
    let km = KaplanMeier::fit(observations);
    let mut curve = Vec::with_capacity(km.steps.len() + 1);
    if km.steps.first().is_none_or(|s| s.t_s > 0.0) {
        curve.push(CurvePoint {
            t_s: 0.0,
            survival: 1.0,
            at_risk: km.nodes,
        });
    }
    curve.extend(km.steps.iter().map(|s| CurvePoint {
        t_s: s.t_s,
        survival: s.survival,
        at_risk: s.at_risk,
    }));
    let mut row = SurvivalRow {
        key,
        nodes: km.nodes,
        preempted: km.preempted,
        censored: km.censored(),
        curve,
        ..Default::default()
    };
    if let Estimate::Estimated {
        median_s,
        median_ci_s,
        mean,
    } = km.estimate()
    {
        row.status = EstimateStatus::Estimated;
        row.median_s = median_s;
        row.median_ci_s = median_ci_s;
        row.mean_restricted_s = Some(mean.mean_s);
        row.mean_restricted_ci_s = Some(mean.ci_s);
        row.tau_s = Some(mean.tau_s);
    }
    row
}

/// One row per key of `by` among the spot lifetimes of `lifetimes`, ordered by key.
pub fn rows(lifetimes: &[Lifetime], by: SurvivalBy, now: DateTime<Utc>) -> Vec<SurvivalRow> {
    rows_of(lifetimes, by, now, observation)
}

/// One departure row per key of `by` among the on-demand lifetimes ([`departure`]).
pub fn departure_rows(
    lifetimes: &[Lifetime],
    by: SurvivalBy,
    now: DateTime<Utc>,
) -> Vec<SurvivalRow> {
    rows_of(lifetimes, by, now, departure)
}

fn rows_of(
    lifetimes: &[Lifetime],
    by: SurvivalBy,
    now: DateTime<Utc>,
    read: fn(&Lifetime, DateTime<Utc>) -> Option<Observation>,
) -> Vec<SurvivalRow> {
    let mut groups: std::collections::BTreeMap<String, Vec<Observation>> = Default::default();
    for l in lifetimes {
        if let (Some(o), Some(key)) = (read(l, now), by.key(l)) {
            groups.entry(key).or_default().push(o);
        }
    }
    groups
        .into_iter()
        .map(|(key, observations)| row(key, &observations))
        .collect()
}
