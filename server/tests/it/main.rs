//! spotboard's integration tests, as one test binary: each module used to be its own binary,
//! and each of those linked kube, sqlx and leptos again (about 700 MB and a link step apiece).
//!
//! Run one area with a filter: `cargo test -p server --test it -- faults::`. The embedded
//! cluster's own tests are in `server/embedded/tests/it`.

mod common;
// The bench's churn and stream reader (bench/src), so R4 measures the other viewers' latency
// the way the bench does; and its 20 zones, which the fault suite's run with 20 clusters uses.
#[allow(dead_code)]
#[path = "../../../bench/src"]
mod bench {
    pub mod churn;
    pub mod sse;
    pub mod zones;
}

/// Every allocation is counted, so a fault test can read the process's live heap (R4).
#[global_allocator]
pub(crate) static HEAP: &stats_alloc::StatsAlloc<std::alloc::System> =
    &stats_alloc::INSTRUMENTED_SYSTEM;

mod capacity;
mod crd;
mod create;
mod dashboard;
mod dcgm;
mod demo;
mod departures;
mod drill;
mod evictions;
mod fallback;
mod faults;
mod gpus;
mod kueue;
mod launch_failures;
mod leader;
mod ledger;
mod metrics;
mod preemptions;
mod prices;
mod process;
mod providers;
mod replicas;
mod security;
mod showback;
mod signals;
mod streaming_lists;
mod survival;
mod transport;
mod waiting;
