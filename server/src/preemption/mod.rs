//! Preemptions, live: every node's path through its provider's notice window, the pods it
//! held at T=0 (read once, with spotboard's read-only account, when T=0 is seen), waves and
//! Prometheus counters.
//!
//! # Layout
//! - `tracker`: observations → timelines (pure derivation in `app::domain::preemption`).
//! - `metrics`: `spotboard_preemptions_total`, `spotboard_preemption_waves_total`.
//! - `pods`: reading a node's pods into blast-radius rows.
//! - `facts`, `readiness`: the spot readiness audit (pure part in
//!   `app::domain::preemption::readiness`).
//! - `webhook`: delivering wave alerts (retries, redacted destinations, undelivered kept).

mod facts;
mod metrics;
mod pods;
mod readiness;
mod tracker;
mod webhook;

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use app::model::{Preemptions, Scope};
use chrono::Utc;

use crate::hub::{Hub, Observations};

pub use metrics::Metrics;
pub use readiness::ReadinessAudit;
pub use tracker::Tracker;
pub use webhook::{Webhook, redact};

/// How often the ledger's preemption rates are recomputed when no preemption starts or ends.
const RATES_EVERY: Duration = Duration::from_secs(60);

/// The live preemption state. It publishes its rows (timelines, waves, rates, undelivered
/// alerts) on the hub's stream; the HTTP handlers read them back from the hub.
#[derive(Clone)]
pub struct PreemptionWatch {
    hub: Hub,
    tracker: Arc<std::sync::Mutex<Tracker>>,
    pub metrics: Arc<Metrics>,
    ledger: Option<crate::ledger::Ledger>,
    pub readiness: ReadinessAudit,
    webhook: Option<Webhook>,
}

impl PreemptionWatch {
    /// Starts following the nodes in `looks` (the hub, once a second); `clients` (per cluster,
    /// spotboard's own read-only identity) read the pods of a node at T=0.
    ///
    /// The pods read at T=0 are also linked to the node's lifetime in `ledger`.
    /// A wave closes when no preemption follows it for `wave_gap`; each closed wave is logged
    /// once and, with `webhook`, POSTed there once as JSON (`{cluster, started, last, nodes}`).
    pub fn start(
        hub: Hub,
        looks: Observations,
        clients: HashMap<String, kube::Client>,
        wave_gap: chrono::Duration,
        webhook: Option<String>,
        ledger: Option<crate::ledger::Ledger>,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let watch = PreemptionWatch {
            hub,
            tracker: Arc::new(std::sync::Mutex::new(Tracker::new(wave_gap))),
            metrics: Arc::new(Metrics::default()),
            ledger: ledger.clone(),
            readiness: ReadinessAudit::new(looks.clone(), clients.clone()),
            webhook: webhook.map(Webhook::new),
        };
        let w = watch.clone();
        // Ends with the process, like the loop below; it holds no state worth a clean stop.
        drop(watch.readiness.spawn_publisher(watch.hub.clone()));
        let mut looks = looks;
        let task = tokio::spawn(async move {
            let mut rates_at: Option<Instant> = None;
            let mut removed = 0;
            loop {
                if looks.changed().await.is_err() {
                    return;
                }
                let inputs = looks.borrow_and_update().clone();
                let fresh = w.lock().observe(&inputs.nodes, Utc::now(), &w.metrics);
                let now_removed = w.publish();
                // The ledger changes when a preemption starts or a node's lifetime ends; the
                // rates follow it then, and once a minute as windows slide.
                if !fresh.is_empty()
                    || now_removed != removed
                    || rates_at.is_none_or(|t| t.elapsed() >= RATES_EVERY)
                {
                    removed = now_removed;
                    rates_at = Some(Instant::now());
                    let w = w.clone();
                    tokio::spawn(async move { w.publish_rates().await });
                }
                let closed = w.lock().closed_waves(Utc::now());
                for wave in closed {
                    tracing::warn!(cluster = %wave.cluster, nodes = wave.nodes.len(), "preemption wave");
                    if let Some(hook) = w.webhook.clone() {
                        tokio::spawn(async move { hook.deliver(&wave).await });
                    }
                }
                for need in fresh {
                    let Some(client) = clients.get(&need.cluster).cloned() else {
                        continue;
                    };
                    let w = w.clone();
                    let ledger = ledger.clone();
                    let gone = looks.clone();
                    tokio::spawn(async move {
                        let read = pods::on_node(client.clone(), &need.node).await;
                        let impacts = read
                            .as_ref()
                            .map(|v| v.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>())
                            .map_err(Clone::clone);
                        if let (Some(l), Ok(p)) = (&ledger, &impacts)
                            && let Err(e) = l.preempted_pods(&need.uid, p).await
                        {
                            tracing::warn!(error = %e, node = %need.node, "could not link pods to the preemption");
                        }
                        w.lock().set_pods(&need.uid, impacts);
                        w.publish();
                        // Then how each pod ended, once the node is gone: this ties pod
                        // failures (GKE's `Terminated`) to the preemption.
                        let Ok(held) = read else { return };
                        match pods::outcomes(client, &need.node, &need.uid, &held, gone).await {
                            Ok(o) => {
                                if let Some(l) = &ledger
                                    && let Err(e) = l.pod_outcomes(&need.uid, &o).await
                                {
                                    tracing::warn!(error = %e, node = %need.node, "could not record pod outcomes");
                                }
                                w.lock().set_outcomes(&need.uid, &o);
                                w.publish();
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, node = %need.node, "pod outcomes unknown")
                            }
                        }
                    });
                }
            }
        });
        (watch, task)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tracker> {
        self.tracker.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes the tracker's timelines and waves, and the undelivered alerts, on the hub
    /// (only what changed goes out). Returns how many followed nodes are removed.
    fn publish(&self) -> usize {
        let v = self.lock().view(Utc::now());
        let removed = v.nodes.iter().filter(|n| n.timeline.removed()).count();
        self.hub.set_preemptions(v.nodes, v.waves);
        self.hub.set_alerts(
            self.webhook
                .as_ref()
                .map(Webhook::undelivered)
                .unwrap_or_default(),
        );
        removed
    }

    /// Recomputes the rates from the last 30 days of the ledger and publishes them; when the
    /// ledger cannot be read the last rates stay (the live part does not depend on them).
    async fn publish_rates(&self) {
        let Some(l) = &self.ledger else { return };
        let now = Utc::now();
        match l.between(now - chrono::Duration::days(30), now).await {
            Ok(lifetimes) => self
                .hub
                .set_rates(app::domain::preemption::rates::rates(&lifetimes, now)),
            Err(e) => tracing::warn!(error = %e, "preemption rates unavailable"),
        }
    }

    /// Active and recent preemptions now, as published on the stream (`/preemptions`' rows).
    pub async fn view(&self) -> Preemptions {
        let s = self.hub.snapshot(&Scope::preemptions());
        Preemptions {
            now: Some(Utc::now()),
            nodes: s.preemptions,
            waves: s.waves,
            rates: s.rates,
            undelivered: s.alerts,
        }
    }
}

impl app::preemptions_api::PreemptionSource for PreemptionWatch {
    fn pod_hits<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> app::create_api::BoxFuture<'a, Result<Vec<app::model::PodHit>, String>> {
        Box::pin(async move {
            let ledger = self
                .ledger
                .as_ref()
                .ok_or_else(|| "no ledger: preemptions are not kept".to_string())?;
            ledger
                .hits_on(namespace, name)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
