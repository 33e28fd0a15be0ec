//! spotboard's server: watches Kubernetes clusters and streams a live view of their Spot node
//! pools to browsers.
//!
//! # Layout
//! - [`cli`]: flags and environment.
//! - [`embedded`]: the embedded cluster (an API server per zone plus the CoreWeave behaviour
//!   model) that is the default input and the input of every test.
//! - [`error`]: this crate's error type.

pub mod cli;
pub mod embedded;
pub mod error;

pub use error::{Error, Result};
