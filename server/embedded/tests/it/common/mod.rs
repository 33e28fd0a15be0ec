//! Fixtures for the embedded cluster's tests.

pub mod api;
pub mod objects;

pub use spotboard_embedded::testing as sim;
