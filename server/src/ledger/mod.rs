//! The ledger: node lifetimes kept beyond what the clusters remember, so that savings (and,
//! later, preemption history) survive restarts and Kubernetes' short event and object memory.
//!
//! # Layout
//! - `store`: the database (SQLite file by default, PostgreSQL with `--database-url`).
//! - `recorder`: turns the hub's nodes into lifetimes.

mod recorder;
mod savings;
mod store;

pub use recorder::{Recorder, Write, lifetime};
pub use savings::Savings;
pub use store::{Health, Ledger};

use crate::hub::Observations;

/// Records at every look at the hub until the looks stop; a failed step is logged and its
/// writes stay queued for the next look (nothing seen is lost, nothing is written twice).
pub fn spawn_recorder(ledger: Ledger, mut looks: Observations) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut recorder = Recorder::default();
        let mut failing = false;
        loop {
            let inputs = looks.borrow_and_update().clone();
            let step = recorder.step(&ledger, &inputs, chrono::Utc::now()).await;
            match ledger.track(step) {
                Ok(()) => failing = false,
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, queued = recorder.queued(),
                        "ledger step failed; changes stay queued and are written when it answers");
                }
                Err(_) => {}
            }
            if looks.changed().await.is_err() {
                return;
            }
        }
    })
}
