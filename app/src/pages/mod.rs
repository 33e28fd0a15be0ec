//! The pages, one file each.

mod dashboard;
mod not_found;
mod pool;
mod pool_parts;

pub use dashboard::Dashboard;
pub use not_found::NotFound;
pub use pool::PoolPage;
