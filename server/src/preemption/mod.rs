//! Preemptions, live: every node's path through its provider's notice window, the pods it
//! held at T=0 (read once, with spotboard's read-only account, when T=0 is seen), waves and
//! Prometheus counters.
//!
//! # Layout
//! - `tracker`: observations → timelines (pure derivation in `app::domain::preemption`).
//! - `metrics`: `spotboard_preemptions_total`, `spotboard_preemption_waves_total`.
//! - `pods`: reading a node's pods into blast-radius rows.

mod metrics;
mod pods;
mod tracker;

use std::{collections::HashMap, sync::Arc};

use app::model::Preemptions;
use chrono::Utc;

use crate::hub::Hub;

pub use metrics::Metrics;
pub use tracker::Tracker;

/// How often the tracker looks.
pub const TRACK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The live preemption state, shared with the HTTP handlers.
#[derive(Clone)]
pub struct PreemptionWatch {
    tracker: Arc<std::sync::Mutex<Tracker>>,
    pub metrics: Arc<Metrics>,
}

impl PreemptionWatch {
    /// Starts following `hub`'s nodes; `clients` (per cluster, spotboard's own read-only
    /// identity) read the pods of a node at T=0.
    pub fn start(
        hub: Hub,
        clients: HashMap<String, kube::Client>,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let watch = PreemptionWatch {
            tracker: Arc::new(std::sync::Mutex::new(Tracker::default())),
            metrics: Arc::new(Metrics::default()),
        };
        let w = watch.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(TRACK_EVERY);
            loop {
                tick.tick().await;
                let inputs = hub.ledger_inputs();
                let fresh = w
                    .lock()
                    .observe(&inputs.nodes, &inputs.pools, Utc::now(), &w.metrics);
                for need in fresh {
                    let Some(client) = clients.get(&need.cluster).cloned() else {
                        continue;
                    };
                    let w = w.clone();
                    tokio::spawn(async move {
                        let pods = pods::on_node(client, &need.node).await;
                        w.lock().set_pods(&need.uid, pods);
                    });
                }
            }
        });
        (watch, task)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tracker> {
        self.tracker.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Active and recent preemptions now.
    pub fn view(&self) -> Preemptions {
        self.lock().view(Utc::now())
    }
}

impl app::preemptions_api::PreemptionSource for PreemptionWatch {
    fn preemptions(&self) -> Preemptions {
        self.view()
    }
}
