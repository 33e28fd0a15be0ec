//! The pages, one file each.

mod create;
mod dashboard;
mod not_found;
mod pool;
mod pool_parts;

pub use create::CreatePoolPage;
pub use dashboard::Dashboard;
pub use not_found::NotFound;
pub use pool::PoolPage;
