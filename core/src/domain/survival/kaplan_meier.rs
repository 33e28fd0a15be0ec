//! The Kaplan–Meier estimate of a survival curve from right-censored lifetimes, its
//! Greenwood variance, the median with a log-log ("exponential Greenwood") confidence
//! interval, and the restricted mean survival time with its Greenwood-type interval.
//!
//! Sources: E. L. Kaplan and P. Meier, "Nonparametric estimation from incomplete
//! observations", JASA 53 (1958); M. Greenwood, "The natural duration of cancer", Reports on
//! Public Health and Medical Subjects 33 (1926); the log-log interval and the median's
//! interval as in Klein & Moeschberger, *Survival Analysis* (2nd ed., 2003), §4.3–4.5 (URLs
//! in `docs/sources.md`).

/// The standard normal quantile for a two-sided 95 % interval, Φ⁻¹(0.975).
pub const Z_95: f64 = 1.959_963_984_540_054;

/// How close to 1/2 a survival value counts as "reached 1/2": a product of fractions that is
/// exactly 1/2 on paper can land a rounding error above it in floating point.
const HALF_TOLERANCE: f64 = 1e-12;

/// One node's lifetime as the estimator reads it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Observation {
    /// Seconds since the node's Ready (its start when its Ready was never seen): to its
    /// preemption's T=0 when `preempted`, else to when it was last observed (censored).
    pub t_s: f64,
    /// `true`: preempted at `t_s` (an event); `false`: right-censored at `t_s` (still
    /// running, or gone for another reason than a preemption).
    pub preempted: bool,
}

impl Observation {
    /// A preemption at `t_s` seconds.
    pub fn preempted(t_s: f64) -> Self {
        Self {
            t_s,
            preempted: true,
        }
    }

    /// A lifetime censored at `t_s` seconds.
    pub fn censored(t_s: f64) -> Self {
        Self {
            t_s,
            preempted: false,
        }
    }
}

/// One distinct observed time of the curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// Seconds since Ready.
    pub t_s: f64,
    /// Nodes at risk just before `t_s`: observed for at least `t_s` seconds. The nodes
    /// censored at `t_s` are among them (preemptions count before censorings at a tie).
    pub at_risk: u32,
    /// Preemptions at `t_s`.
    pub preempted: u32,
    /// Lifetimes censored at `t_s`.
    pub censored: u32,
    /// Ŝ(t_s): the product of (1 − d/n) over the steps up to and including this one.
    pub survival: f64,
    /// Greenwood's sum Σ d / (n (n − d)) up to and including this step (unitless;
    /// Var Ŝ = Ŝ² × this). Infinite once every node at risk was preempted at one step.
    pub greenwood: f64,
}

impl Step {
    /// The 95 % log-log ("exponential Greenwood") interval of Ŝ(t_s), `(lower, upper)`:
    /// Ŝ^exp(±z·σ) with σ = √greenwood / |ln Ŝ|. It stays inside [0, 1], unlike the plain
    /// Greenwood interval Ŝ ± z·Ŝ·√greenwood. `(1, 1)` where Ŝ = 1 and `(0, 0)` where Ŝ = 0
    /// (the transform is undefined there).
    pub fn band(&self) -> (f64, f64) {
        let s = self.survival;
        if s >= 1.0 {
            return (1.0, 1.0);
        }
        if s <= 0.0 || !self.greenwood.is_finite() {
            return (0.0, 0.0);
        }
        let sigma = self.greenwood.sqrt() / s.ln().abs();
        (s.powf((Z_95 * sigma).exp()), s.powf((-Z_95 * sigma).exp()))
    }
}

/// The restricted mean survival time: the area under Ŝ from 0 to `tau_s`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RestrictedMean {
    /// Seconds: the expected lifetime of a node counted up to `tau_s` (a node that lives
    /// longer counts as `tau_s`). Never above the true mean: a curve that has not reached
    /// 0 by `tau_s` leaves its tail out.
    pub mean_s: f64,
    /// 95 % interval, seconds: `mean_s ± z·√V` with V = Σ A_j² d_j / (n_j (n_j − d_j)) over
    /// the preemption times t_j, A_j the area under Ŝ from t_j to `tau_s` (Klein &
    /// Moeschberger §4.5), clamped to [0, `tau_s`].
    pub ci_s: [f64; 2],
    /// The restriction: the last observed time (preemption or censoring), seconds.
    pub tau_s: f64,
}

/// The fitted curve.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KaplanMeier {
    /// One step per distinct observed time, ascending.
    pub steps: Vec<Step>,
    /// Lifetimes read (observations with a finite, non-negative time).
    pub nodes: u32,
    /// Of them, preempted.
    pub preempted: u32,
}

impl KaplanMeier {
    /// Fits the curve to `observations` (any order). Observations with a negative or
    /// non-finite time are left out.
    pub fn fit(observations: &[Observation]) -> Self {
        let mut sorted: Vec<Observation> = observations
            .iter()
            .filter(|o| o.t_s.is_finite() && o.t_s >= 0.0)
            .copied()
            .collect();
        sorted.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        let nodes = u32::try_from(sorted.len()).unwrap_or(u32::MAX);
        let mut at_risk = nodes;
        let (mut survival, mut greenwood) = (1.0_f64, 0.0_f64);
        let mut steps = Vec::new();
        for tied in sorted.chunk_by(|a, b| a.t_s == b.t_s) {
            let d = u32::try_from(tied.iter().filter(|o| o.preempted).count()).unwrap_or(0);
            let c = u32::try_from(tied.len()).unwrap_or(0) - d;
            let n = at_risk;
            // Preemptions before censorings at the same time: a node censored at t was still
            // running at t, so it is at risk of the preemptions at t (Kaplan & Meier 1958).
            if d > 0 {
                let (d, n) = (f64::from(d), f64::from(n));
                survival *= 1.0 - d / n;
                greenwood += if n > d {
                    d / (n * (n - d))
                } else {
                    f64::INFINITY
                };
            }
            steps.push(Step {
                t_s: tied[0].t_s,
                at_risk: n,
                preempted: d,
                censored: c,
                survival,
                greenwood,
            });
            at_risk -= d + c;
        }
        let preempted = steps.iter().map(|s| s.preempted).sum();
        Self {
            steps,
            nodes,
            preempted,
        }
    }

    /// Lifetimes censored (nodes − preempted).
    pub fn censored(&self) -> u32 {
        self.nodes - self.preempted
    }

    /// Ŝ(t): the probability that a node is still running `t_s` seconds after Ready.
    pub fn survival_at(&self, t_s: f64) -> f64 {
        self.steps
            .iter()
            .take_while(|s| s.t_s <= t_s)
            .last()
            .map_or(1.0, |s| s.survival)
    }

    /// The first observed time at which `value(step)` is at or below 1/2, seconds; `None`
    /// when it never is.
    fn first_at_half(&self, value: impl Fn(&Step) -> f64) -> Option<f64> {
        self.steps
            .iter()
            .find(|s| value(s) <= 0.5 + HALF_TOLERANCE)
            .map(|s| s.t_s)
    }

    /// The median lifetime, seconds since Ready: the first time Ŝ is at or below 1/2.
    /// `None` when the curve stays above 1/2 (the median is longer than the longest
    /// observation).
    pub fn median_s(&self) -> Option<f64> {
        self.first_at_half(|s| s.survival)
    }

    /// The 95 % interval of the median, seconds, `[lower, upper]` (Brookmeyer & Crowley
    /// 1982 with the log-log band): the first times the band's lower edge, then its upper
    /// edge, reach 1/2 (the lower edge falls first). `None` for an edge that never does
    /// (unbounded above).
    pub fn median_ci_s(&self) -> [Option<f64>; 2] {
        [
            self.first_at_half(|s| s.band().0),
            self.first_at_half(|s| s.band().1),
        ]
    }

    /// The restricted mean survival time up to the last observed time, with its 95 %
    /// interval; `None` with no observation.
    pub fn restricted_mean(&self) -> Option<RestrictedMean> {
        let tau_s = self.steps.last()?.t_s;
        // area_from[j]: the area under Ŝ from step j's time to tau (Ŝ holds its value
        // after step j until step j + 1).
        let mut area_from = vec![0.0; self.steps.len()];
        for j in (0..self.steps.len().saturating_sub(1)).rev() {
            let width = self.steps[j + 1].t_s - self.steps[j].t_s;
            area_from[j] = area_from[j + 1] + self.steps[j].survival * width;
        }
        // Before the first step Ŝ = 1.
        let mean_s = self.steps[0].t_s + area_from[0];
        let variance: f64 = self
            .steps
            .iter()
            .zip(&area_from)
            .filter(|(s, a)| s.preempted > 0 && **a > 0.0)
            .map(|(s, a)| {
                let (d, n) = (f64::from(s.preempted), f64::from(s.at_risk));
                a * a * d / (n * (n - d))
            })
            .sum();
        let half = Z_95 * variance.sqrt();
        Some(RestrictedMean {
            mean_s,
            ci_s: [(mean_s - half).max(0.0), (mean_s + half).min(tau_s)],
            tau_s,
        })
    }
}
