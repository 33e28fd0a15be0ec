//! spotboard's shared crate (partial while the spine is assembled).
pub mod catalog;
pub mod domain;
pub mod error;
pub mod labels;
pub mod model;
pub mod nodepool;
pub use error::{Error, Result};
