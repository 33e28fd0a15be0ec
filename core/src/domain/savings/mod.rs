//! Savings: what the ledger's node-hours cost at the prices paid, against the same node-hours
//! on-demand (a month is 730 hours, 365 × 24 / 12; a hybrid of an on-demand floor plus spot is
//! the normal production shape).
//!
//! - `report`: totals, breakdowns, the series for the chart, preemption cost, run rate.
//! - `net`: savings after preemptions, and the break-even.
//! - `hybrid`: the on-demand-floor what-if.
//!
//! A lifetime whose price (paid, or on-demand for the baseline) is unknown is left out of every
//! total and counted in `unpriced_nodes`: never guessed.

mod hybrid;
pub mod idle;
pub mod net;
pub mod range;
pub mod report;

pub use hybrid::{Floor, Hybrid, hybrid};
pub use report::{ReportInput, report};

#[cfg(test)]
pub(crate) mod tests;
