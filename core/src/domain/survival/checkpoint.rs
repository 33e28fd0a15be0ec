//! Checkpoint advice for a workload on a spot pool, from the pool's survival curve.
//!
//! Young's first-order approximation (J. W. Young, "A first order approximation to the
//! optimum checkpoint interval", CACM 17(9), 1974): with C the seconds one checkpoint takes
//! and M the mean time between failures, the interval that minimises the expected time lost
//! is τ = √(2·C·M). It holds while C is small against M; Daly (2006, "A higher order estimate
//! of the optimum checkpoint interval for restart dumps", FGCS 22(3)) refines it for larger
//! C. Here M is the pool's restricted mean survival time
//! ([`super::RestrictedMean`]): the mean counted up to the last observed time, never above
//! the true mean, so τ errs short (more checkpoints, less work lost).
//!
//! Per preemption a workload loses on average half an interval of work plus its restart:
//! τ/2 + R seconds; a node running all day meets 86,400 / M preemptions.
//!
//! Before any interval: a final checkpoint on SIGTERM must fit between SIGTERM and the
//! node's removal, the same budget the readiness audit's grace-period check
//! ([`crate::model::Check::GraceExceedsNotice`]) judges pods against
//! ([`crate::domain::preemption::readiness::shutdown_budget_s`]).

use serde::{Deserialize, Serialize};

use super::report::{EstimateStatus, SurvivalRow};
use crate::Provider;
use crate::domain::capacity::score::human;
use crate::domain::preemption::rates::Window;
use crate::domain::preemption::readiness::shutdown_budget_s;

/// C when the page or the request gives none, seconds.
pub const DEFAULT_CHECKPOINT_S: f64 = 300.0;
/// R when the page or the request gives none, seconds: reading a checkpoint back and
/// rescheduling takes about as long as writing one.
pub const DEFAULT_RESTART_S: f64 = 300.0;
/// The largest C or R accepted, seconds (a day): beyond it Young's approximation says
/// nothing useful about a spot node.
pub const MAX_COST_S: f64 = 86_400.0;
const DAY_S: f64 = 86_400.0;
/// Young's interval is read as advice only while C is at most this share of M: its
/// derivation drops terms of order C/M, and Daly's (2006) higher-order interval departs from
/// it by several percent beyond about a tenth (spotboard's threshold, not Young's).
pub const YOUNG_MAX_C_OVER_M: f64 = 0.1;

/// A workload's costs, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Costs {
    /// C: seconds to write one checkpoint.
    pub checkpoint_s: f64,
    /// R: seconds from a preemption to work resuming (reschedule, read the checkpoint).
    pub restart_s: f64,
}

impl Default for Costs {
    fn default() -> Self {
        Self {
            checkpoint_s: DEFAULT_CHECKPOINT_S,
            restart_s: DEFAULT_RESTART_S,
        }
    }
}

impl Costs {
    /// The costs asked for, defaults where absent.
    ///
    /// Errors ([`crate::Error::Invalid`]): C not above 0, R below 0, either not finite or
    /// above [`MAX_COST_S`].
    pub fn new(checkpoint_s: Option<f64>, restart_s: Option<f64>) -> crate::Result<Self> {
        let c = checkpoint_s.unwrap_or(DEFAULT_CHECKPOINT_S);
        let r = restart_s.unwrap_or(DEFAULT_RESTART_S);
        let bad = |what: &str, v: f64, least: &str| {
            crate::Error::Invalid(format!(
                "{what} {v} is out of range: seconds, {least} to {MAX_COST_S}"
            ))
        };
        if !(c.is_finite() && c > 0.0 && c <= MAX_COST_S) {
            return Err(bad("checkpoint_s", c, "above 0 up"));
        }
        if !(r.is_finite() && (0.0..=MAX_COST_S).contains(&r)) {
            return Err(bad("restart_s", r, "0"));
        }
        Ok(Self {
            checkpoint_s: c,
            restart_s: r,
        })
    }
}

/// Young's interval τ = √(2·C·M), seconds, for C = `checkpoint_s` and M = `m_s` seconds.
pub fn young_interval_s(checkpoint_s: f64, m_s: f64) -> f64 {
    (2.0 * checkpoint_s * m_s).sqrt()
}

/// Daly's higher-order interval, seconds, for C = `checkpoint_s` and M = `m_s` seconds
/// (J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
/// dumps", FGCS 22(3), 2006, eq. 37): with x = C/(2M),
/// τ = √(2·C·M)·(1 + √x/3 + x/9) − C while C < 2M, and τ = M beyond, where checkpointing
/// more often than the mean time between failures gains nothing.
pub fn daly_interval_s(checkpoint_s: f64, m_s: f64) -> f64 {
    if checkpoint_s >= 2.0 * m_s {
        return m_s;
    }
    let x = checkpoint_s / (2.0 * m_s);
    young_interval_s(checkpoint_s, m_s) * (1.0 + x.sqrt() / 3.0 + x / 9.0) - checkpoint_s
}

/// Whether a final checkpoint of `checkpoint_s` seconds, started at SIGTERM, is done before
/// `provider` removes the node.
pub fn fits_notice(provider: Provider, checkpoint_s: f64) -> bool {
    checkpoint_s <= shutdown_budget_s(provider) as f64
}

/// What the advice was computed from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointInputs {
    pub cluster: String,
    pub pool: String,
    /// The cohort's range.
    pub range: Window,
    /// C, seconds.
    pub checkpoint_s: f64,
    /// R, seconds.
    pub restart_s: f64,
    /// The pool's provider (`unknown` when the pool is not watched now; its notice budget
    /// is then CKS's).
    pub provider: Provider,
    /// Seconds from SIGTERM to the node's removal on this provider.
    pub notice_budget_s: i64,
    /// Spot nodes in the cohort.
    pub nodes: u32,
    /// Of them, preempted.
    pub preempted: u32,
}

/// `GET /api/v1/checkpoint`'s body: Young's interval for one pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckpointAdvice {
    /// Whether M (and all that follows from it) is given.
    pub status: EstimateStatus,
    /// M: the pool's restricted mean survival time, seconds.
    pub m_s: Option<f64>,
    /// M's 95 % interval, seconds.
    pub m_ci_s: Option<[f64; 2]>,
    /// τ = √(2·C·M), seconds.
    pub interval_s: Option<f64>,
    /// τ over M's interval, seconds (τ rises with M).
    pub interval_ci_s: Option<[f64; 2]>,
    /// Daly's higher-order interval ([`daly_interval_s`]), seconds: the one to read where
    /// Young's does not hold (`young_holds` false).
    #[serde(default)]
    pub daly_interval_s: Option<f64>,
    /// τ/2 + R, seconds.
    pub lost_per_preemption_s: Option<f64>,
    /// (τ/2 + R) × 86,400 / M: seconds lost to preemptions per day of running.
    pub lost_per_day_s: Option<f64>,
    /// C × 86,400 / τ: seconds spent writing checkpoints per day.
    pub checkpoint_per_day_s: Option<f64>,
    /// A final checkpoint (C seconds from SIGTERM) fits the notice window.
    pub fits_notice: bool,
    /// C is small against M (C ≤ [`YOUNG_MAX_C_OVER_M`] × M), where Young's first-order
    /// interval holds; `false` also without an estimate.
    #[serde(default)]
    pub young_holds: bool,
    pub inputs: CheckpointInputs,
}

impl CheckpointAdvice {
    /// The advice for `row`'s curve (the pool's) with `costs` on `provider`.
    pub fn new(
        row: &SurvivalRow,
        costs: Costs,
        provider: Provider,
        cluster: &str,
        pool: &str,
        range: Window,
    ) -> Self {
        let inputs = CheckpointInputs {
            cluster: cluster.to_string(),
            pool: pool.to_string(),
            range,
            checkpoint_s: costs.checkpoint_s,
            restart_s: costs.restart_s,
            provider,
            notice_budget_s: shutdown_budget_s(provider),
            nodes: row.nodes,
            preempted: row.preempted,
        };
        let fits = fits_notice(provider, costs.checkpoint_s);
        let m = row
            .mean_restricted_s
            .filter(|m| row.status == EstimateStatus::Estimated && *m > 0.0);
        let Some(m) = m else {
            return Self {
                status: EstimateStatus::TooFewPreemptions,
                fits_notice: fits,
                inputs,
                ..Default::default()
            };
        };
        let tau = young_interval_s(costs.checkpoint_s, m);
        let lost = tau / 2.0 + costs.restart_s;
        Self {
            status: EstimateStatus::Estimated,
            m_s: Some(m),
            m_ci_s: row.mean_restricted_ci_s,
            interval_s: Some(tau),
            interval_ci_s: row.mean_restricted_ci_s.map(|[lo, hi]| {
                [
                    young_interval_s(costs.checkpoint_s, lo),
                    young_interval_s(costs.checkpoint_s, hi),
                ]
            }),
            daly_interval_s: Some(daly_interval_s(costs.checkpoint_s, m)),
            lost_per_preemption_s: Some(lost),
            lost_per_day_s: Some(lost * DAY_S / m),
            checkpoint_per_day_s: Some(costs.checkpoint_s * DAY_S / tau),
            fits_notice: fits,
            young_holds: costs.checkpoint_s <= YOUNG_MAX_C_OVER_M * m,
            inputs,
        }
    }

    /// The arithmetic, for a person: "M = 11.2 h from 43 preemptions of 512 nodes; τ =
    /// √(2 × 300 s × 11.2 h) = 49 min", or why there is none.
    pub fn arithmetic(&self) -> String {
        let i = &self.inputs;
        match (self.m_s, self.interval_s) {
            (Some(m), Some(tau)) => format!(
                "M = {m_h} from {} preemptions of {} nodes; τ = √(2 × {} s × {m_h}) = {}",
                i.preempted,
                i.nodes,
                i.checkpoint_s.round(),
                human(tau.round() as u64),
                m_h = human(m.round() as u64),
            ),
            _ => format!(
                "too few preemptions to estimate ({} of {} nodes; {} needed)",
                i.preempted,
                i.nodes,
                super::MIN_PREEMPTIONS
            ),
        }
    }
}
