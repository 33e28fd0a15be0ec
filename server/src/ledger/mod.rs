//! The ledger: node lifetimes kept beyond what the clusters remember, so that savings (and,
//! later, preemption history) survive restarts and Kubernetes' short event and object memory.
//!
//! # Layout
//! - `store`: the database (SQLite file by default, PostgreSQL with `--database-url`);
//!   `migrations`: its schema, the files of `server/migrations` compiled in.
//! - `lock`: one process per SQLite file.
//! - `recorder`: turns the hub's nodes into lifetimes.
//! - `pods`: the pods each preemption hit.
//! - `pod_intervals`, `pod_recorder`: each pod's stays on nodes, for showback.
//! - `conditions`: NodePool condition history.
//! - `launch_failures`: Karpenter's refused launches.
//! - `fallback`: the fallback pairs of the last 24 h, published on the stream.
//! - Writes only on the replica that holds the Lease (`crate::leader`).

mod conditions;
pub mod fallback;
pub mod last_known;
mod launch_failures;
mod lifetimes;
mod lock;
mod migrations;
mod pod_intervals;
pub mod pod_recorder;
mod pods;
mod recorder;
mod savings;
mod store;
#[cfg(test)]
mod store_tests;

pub use recorder::{Recorder, Write, lifetime};
pub use savings::{MOVE_BACK_AFTER_MINUTES, Savings};
pub use store::{Health, Ledger};

use crate::hub::Hub;

/// How long a replica that does not write keeps each write it would have made, in case the
/// holder stops before writing it: longer than a takeover (a lease duration plus a retry,
/// 17 s by default) plus the holder's own one-second step.
pub const FOLLOWER_KEEPS: std::time::Duration = std::time::Duration::from_secs(120);

/// How often the recorder writes what it queued, and beats.
pub const STEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Follows the hub's node changes into lifetimes, and writes them every [`STEP_EVERY`]; a
/// failed step is logged and its writes stay queued for the next (nothing seen is lost,
/// nothing is written twice).
pub fn spawn_recorder(ledger: Ledger, hub: Hub) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut recorder = Recorder::default();
        let mut failing = false;
        let mut following = hub.follow();
        recorder.observe(&following.take_initial(), chrono::Utc::now());
        let mut tick = tokio::time::interval(STEP_EVERY);
        loop {
            tokio::select! {
                fact = following.rx.recv() => {
                    let whole = match fact {
                        Ok(f) => !recorder.apply(&f, chrono::Utc::now()),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(skipped)) => {
                            crate::hub::fell_behind("ledger recorder", skipped);
                            true
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    };
                    if whole {
                        following = hub.follow();
                        recorder.observe(&following.take_initial(), chrono::Utc::now());
                    }
                    continue;
                }
                _ = tick.tick() => {}
            }
            let step = recorder.step(&ledger, chrono::Utc::now()).await;
            match ledger.track(step) {
                Ok(()) => failing = false,
                // The Lease ran out mid-step: what is left stays queued for a takeover.
                Err(crate::Error::NotWriter { .. }) => {}
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, queued = recorder.queued(),
                        "ledger step failed; changes stay queued and are written when it answers");
                }
                Err(_) => {}
            }
        }
    })
}
