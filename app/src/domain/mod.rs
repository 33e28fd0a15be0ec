//! Pure domain logic, unit-tested natively and used by both the server and the browser.

pub mod conditions;
pub mod pools_view;
pub mod validation;
