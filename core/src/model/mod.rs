//! The view types that cross the wire: small, flat rows keyed by Kubernetes object uid.
//!
//! The server projects trimmed Kubernetes objects into these (see the server's `projection`
//! module); the browser keeps them in keyed stores. No Kubernetes type appears here.

mod alert;
mod allocation;
mod capacity;
mod create;
mod drill;
mod fallback;
mod history;
mod kueue;
pub mod patch;
mod preemption;
mod readiness;
mod rows;
mod savings;
mod showback;
mod stream;
mod waiting;
#[cfg(test)]
mod wire_format_tests;

pub use alert::*;
pub use allocation::*;
pub use capacity::*;
pub use create::*;
pub use drill::*;
pub use fallback::*;
pub use history::*;
pub use kueue::*;
pub use preemption::*;
pub use readiness::*;
pub use rows::*;
pub use savings::*;
pub use showback::*;
pub use stream::*;
pub use waiting::*;
