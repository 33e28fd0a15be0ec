//! Fallback to on-demand, and when to move back: which pools stand in for which spot pools
//! (`pairs`), and what each pair ran on-demand while its spot side was short, what that cost
//! beyond spot, and whether its on-demand nodes can move back now (`report`).
//!
//! The hours come from the ledger (node lifetimes and NodePool condition history), so they
//! survive restarts; "short" is the spot pool's `Capacity` condition not `True` (CoreWeave:
//! Node Pool reference, `status.conditions`: `QueuedAwaitingCapacity`, `NoAvailableCapacity`).

mod pairs;
mod report;
#[cfg(test)]
mod tests;

pub use pairs::pairs;
pub use report::{Inputs, MOVE_BACK_SCORE, report};
