//! spotboard's server: watches Kubernetes clusters and streams a live view of their Spot node
//! pools to browsers.
//!
//! # Layout
//! - [`capacity`]: capacity by zone: the clusters' view joined with capacity feeds.
//! - [`cli`]: flags and environment.
//! - [`run`]: wiring: clusters → watchers → hub → HTTP.
//! - [`embedded`]: the embedded cluster (an API server per zone plus the CoreWeave behaviour
//!   model), the default input and the input of every test.
//! - [`watch`]: one watcher per kind per cluster; objects trimmed to records.
//! - [`preemption`]: live preemption timelines, blast radius, waves, metrics.
//! - [`projection`]: pure functions from records to the view rows of `spotboard_core::model`.
//! - [`hub`]: the current view, its revision, keyed deltas, resume ring, subscribers.
//! - [`ledger`]: node lifetimes in SQLite or PostgreSQL, recorded from the watches.
//! - [`leader`]: which replica writes the ledger (leader election on a Lease).
//! - [`http`]: pages (Leptos SSR), the SSE stream, the JSON API, health, guards.
//! - [`create`]: creating NodePools with the user's identity (access review, rate limit, audit).
//! - [`crd`]: the NodePool CRD as YAML.
//! - `demo`: "Play a preemption" on the embedded cluster (absent without it).
//! - [`logging`]: `RUST_LOG`, with the audit trail always on.
//! - [`error`]: this crate's error type.
//! - [`allocator`]: the allocator's settings (set by running the binary again once).
//! - [`waiting`]: pods waiting for a node, placed on pools, published as rows.
//! - [`kueue`]: Kueue's ClusterQueues, pending and admitted workloads, published as rows.

pub mod allocator;
pub mod capacity;
pub mod cli;
pub mod crd;
pub mod create;
pub mod dcgm;
#[cfg(feature = "embedded")]
pub mod demo;
pub mod drill;
pub mod error;
pub mod http;
pub mod hub;
pub mod kueue;
pub mod leader;
pub mod ledger;
pub mod logging;
pub mod preemption;
pub mod projection;
pub mod run;
pub mod waiting;
pub mod watch;

pub use error::{Error, Result};
