//! spotboard's integration tests, as one test binary: each module used to be its own binary,
//! and each of those linked kube, sqlx and leptos again (about 700 MB and a link step apiece).
//!
//! Run one area with a filter: `cargo test -p server --test it -- faults::`.

mod common;

mod capacity;
mod crd;
mod create;
mod dashboard;
mod embedded_api;
mod embedded_kubectl;
mod embedded_preemption;
mod embedded_sim;
mod embedded_watch;
mod faults;
mod ledger;
mod preemptions;
mod prices;
mod process;
mod providers;
mod security;
