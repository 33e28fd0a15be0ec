//! The ledger: node lifetimes kept beyond what the clusters remember, so that savings (and,
//! later, preemption history) survive restarts and Kubernetes' short event and object memory.
//!
//! # Layout
//! - `store`: the database (SQLite file by default, PostgreSQL with `--database-url`).
//! - `recorder`: turns the hub's nodes into lifetimes.

mod recorder;
mod savings;
mod store;

pub use recorder::{RECORD_EVERY, Recorder, lifetime};
pub use savings::Savings;
pub use store::Ledger;

use crate::hub::Hub;

/// Records forever; a failed step is logged and retried at the next tick (nothing is lost:
/// the next step sees the same state).
pub fn spawn_recorder(ledger: Ledger, hub: Hub) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut recorder = Recorder::default();
        let mut tick = tokio::time::interval(RECORD_EVERY);
        let mut failing = false;
        loop {
            tick.tick().await;
            match recorder.step(&ledger, &hub, chrono::Utc::now()).await {
                Ok(()) => failing = false,
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, "ledger step failed; retrying");
                }
                Err(_) => {}
            }
        }
    })
}
