//! Survival of spot nodes: how long a node lives after it turned Ready before its provider
//! preempts it, and what that means for a workload's checkpoints.
//!
//! A node still running, or one that went away for another reason than a preemption
//! (scaled down, deleted), is right-censored at its last observed time: it is neither
//! counted as preempted nor dropped. Why: the mean of the finished lifetimes alone is biased
//! short, because in a window of days a node that lives long is more likely to be still
//! running (and so left out) than one that is preempted early; dropping the nodes that were
//! scaled down keeps only the ones that lasted until a preemption found them.
//!
//! # Layout
//! - [`kaplan_meier`]: the estimator (curve, number at risk, median with its log-log
//!   interval, restricted mean with its interval).
//! - [`report`]: lifetimes to observations, grouped by pool, zone, instance type or zone ×
//!   instance type: the rows of `GET /api/v1/survival`.
//! - [`checkpoint`]: Young's checkpoint interval from the restricted mean, the time lost per
//!   preemption and per day, and whether a final checkpoint fits the notice window.

pub mod checkpoint;
pub mod kaplan_meier;
pub mod report;
#[cfg(test)]
mod tests;

pub use kaplan_meier::{KaplanMeier, Observation, RestrictedMean, Step};

/// Fewer preemptions than this and no median or mean is given: with four events the
/// median's interval is most of the observed range, and a single number would be read as
/// more than it is.
pub const MIN_PREEMPTIONS: u32 = 5;

/// What the curve supports.
#[derive(Clone, Debug, PartialEq)]
pub enum Estimate {
    /// Fewer than [`MIN_PREEMPTIONS`] preemptions were observed: "too few preemptions to
    /// estimate".
    TooFewPreemptions {
        /// Preemptions observed.
        preempted: u32,
    },
    /// Enough preemptions for the figures below.
    Estimated {
        /// Median lifetime, seconds since Ready; `None` when the curve stays above 1/2.
        median_s: Option<f64>,
        /// Its 95 % log-log interval, seconds; `None` for an unbounded edge.
        median_ci_s: [Option<f64>; 2],
        /// The restricted mean survival time and its interval.
        mean: RestrictedMean,
    },
}

impl KaplanMeier {
    /// The figures this curve supports ([`Estimate::TooFewPreemptions`] under
    /// [`MIN_PREEMPTIONS`]).
    pub fn estimate(&self) -> Estimate {
        match self.restricted_mean() {
            Some(mean) if self.preempted >= MIN_PREEMPTIONS => Estimate::Estimated {
                median_s: self.median_s(),
                median_ci_s: self.median_ci_s(),
                mean,
            },
            _ => Estimate::TooFewPreemptions {
                preempted: self.preempted,
            },
        }
    }
}
