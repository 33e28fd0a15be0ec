//! Capacity by zone and the Capacity Finder's ranking: pure functions over what the clusters
//! show (pools, their Capacity condition, preemption events, fulfilment times) and what the
//! capacity feeds say.
//!
//! - `grid`: the zones × instance types grid.
//! - `launch_failures`: Karpenter's refused launches (`InsufficientCapacityError`).
//! - `obtainability`: this fleet's own history of getting capacity in a zone.
//! - `score`: the documented score, its parts, ranking and score-against-count curves.

mod grid;
pub mod launch_failures;
pub mod obtainability;
pub mod score;

pub use grid::{GridInputs, build_grid, median};
pub use score::rank;

#[cfg(test)]
mod tests;
