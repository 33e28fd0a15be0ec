//! Pure domain logic, unit-tested natively and used by both the server and the browser.

pub mod conditions;

