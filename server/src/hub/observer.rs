//! One look at the hub per second for everyone who follows nodes over time (the ledger's
//! recorder, the preemption tracker, the readiness audit): copying every node once, not once
//! per follower.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Hub, LedgerInputs};

/// How often the hub is looked at.
pub const OBSERVE_EVERY: Duration = Duration::from_secs(1);

/// The latest look; followers wait on `changed()` and read it without copying.
pub type Observations = watch::Receiver<Arc<LedgerInputs>>;

/// Starts looking at `hub` every `every`; the first look is taken before this returns.
pub fn spawn_observer(hub: Hub, every: Duration) -> (Observations, JoinHandle<()>) {
    let (tx, rx) = watch::channel(Arc::new(hub.ledger_inputs()));
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            if tx.send(Arc::new(hub.ledger_inputs())).is_err() {
                return; // every follower is gone
            }
        }
    });
    (rx, task)
}
