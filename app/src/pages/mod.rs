//! The pages, one file each.

pub mod capacity;
pub mod condition_history;
mod create;
mod dashboard;
mod drill;
mod fleet_summary;
mod lazy;
mod not_found;
mod pool;
mod pool_parts;
pub mod preemptions;
mod queues;
pub mod savings;
pub mod survival;

pub use capacity::{CapacityFinderPage, CapacityPage};
pub use create::CreatePoolPage;
pub use dashboard::Dashboard;
pub use lazy::{
    CapacityFinderRoute, CapacityRoute, CreatePoolRoute, PoolRoute, PreemptionsRoute, SavingsRoute,
};
pub use not_found::NotFound;
pub use pool::PoolPage;
pub use preemptions::PreemptionsPage;
pub use savings::SavingsPage;
