//! spotboard's integration tests, as one test binary: each module used to be its own binary,
//! and each of those linked kube, sqlx and leptos again (about 700 MB and a link step apiece).
//!
//! Run one area with a filter: `cargo test -p server --test it -- faults::`. The embedded
//! cluster's own tests are in `server/embedded/tests/it`.

mod common;

mod capacity;
mod crd;
mod create;
mod dashboard;
mod faults;
mod ledger;
mod preemptions;
mod prices;
mod process;
mod providers;
mod security;
