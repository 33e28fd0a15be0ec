//! Preemptions, live: every node's path through its provider's notice window, the pods it
//! held at T=0 (read once, with spotboard's read-only account, when T=0 is seen), waves and
//! Prometheus counters.
//!
//! # Layout
//! - `tracker`: observations → timelines (pure derivation in `spotboard_core::domain::preemption`).
//! - `metrics`: `spotboard_preemptions_total`, `spotboard_preemption_waves_total`.
//! - `pods`: reading a node's pods into blast-radius rows; `shared_reads`: what a wave's
//!   reads share (a cap on how many run at once, replica counts, budgets).
//! - `workload_reads`, `readiness`: the spot readiness audit over the hub's pods (pure part in
//!   `spotboard_core::domain::preemption::readiness`) and the blast radius's reads.
//! - `alerting`: the alert episodes (waves, rates, replacement latency, eviction errors,
//!   NodePool conditions), stepped once a second; `webhook` delivers them (retries,
//!   redacted destinations, undelivered kept).

mod alerting;
mod metrics;
mod pods;
mod rates_pace;
mod readiness;
mod shared_reads;
mod tracker;
mod webhook;
mod workload_reads;

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use chrono::Utc;
use spotboard_core::model::{Preemptions, Scope};

use crate::hub::{Fact, Hub};

pub use metrics::Metrics;
pub use readiness::ReadinessAudit;
pub use tracker::Tracker;
pub use webhook::{Webhook, redact};

/// The pods bound to `node` of `cluster` now, as a preemption's blast radius reads them (owner,
/// replicas, covering budget, grace period), read with `client`: the preemption drill's plan.
///
/// Errors: the pods could not be listed (the message names the node).
pub async fn blast_radius(
    client: kube::Client,
    cluster: &str,
    node: &str,
) -> Result<Vec<spotboard_core::model::PodImpact>, String> {
    let reads = shared_reads::SharedReads::default();
    pods::on_node(client, cluster, node, &reads)
        .await
        .map(|pods| pods.into_iter().map(|(p, _)| p).collect())
}

/// How often the preemption rows are published at most while they change: a wave of 2,000
/// nodes changes them thousands of times a second, a person reads them at a glance.
const PUBLISH_EVERY: Duration = Duration::from_millis(100);

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
    /// The webhook's delivery task, in order.
    deliveries: Option<tokio::sync::mpsc::Sender<spotboard_core::model::Alert>>,
    alerting: Arc<std::sync::Mutex<alerting::Alerting>>,
    /// Rates above this percent on a key still running spot nodes are flagged.
    rate_alert_pct: f64,
    blast_radius: Arc<shared_reads::SharedReads>,
}

/// How the preemption watch judges and announces.
#[derive(Clone, Debug)]
pub struct PreemptionSettings {
    /// Where alerts are POSTed, firing and resolved.
    pub webhook: Option<String>,
    /// `--rate-alert-pct`: a rate above this percent on a key running spot nodes is flagged.
    pub rate_alert_pct: f64,
    /// Waves (their gap and size) and the other alerts' thresholds.
    pub thresholds: spotboard_core::domain::alerts::Thresholds,
}

impl PreemptionWatch {
    /// Starts following the hub's nodes (every change, as it happens); `clients` (per
    /// cluster, spotboard's own read-only identity) read the pods of a node at T=0.
    ///
    /// The pods read at T=0 are also linked to the node's lifetime in `ledger`.
    /// Alerts (a wave of `settings.thresholds.wave_min_nodes` preemptions less than
    /// `wave_gap` apart, and the other kinds of `spotboard_core::domain::alerts`) are judged once a
    /// second: each is logged when it fires and when it resolves and, with a webhook, POSTed
    /// there both times as an [`spotboard_core::model::Alert`].
    pub fn start(
        hub: Hub,
        clients: HashMap<String, kube::Client>,
        settings: PreemptionSettings,
        ledger: Option<crate::ledger::Ledger>,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let webhook = settings.webhook.map(Webhook::new);
        let watch = PreemptionWatch {
            hub: hub.clone(),
            tracker: Arc::new(std::sync::Mutex::new(Tracker::new(
                settings.thresholds.wave_gap,
                settings.thresholds.wave_min_nodes,
            ))),
            metrics: Arc::new(Metrics::default()),
            ledger,
            readiness: ReadinessAudit::new(hub, clients.clone()),
            // One webhook: the delivery task fills the undelivered list the page reads.
            deliveries: webhook.clone().map(alerting::deliveries),
            webhook,
            alerting: Arc::new(std::sync::Mutex::new(alerting::Alerting::new(
                settings.thresholds,
            ))),
            rate_alert_pct: settings.rate_alert_pct,
            blast_radius: Arc::default(),
        };
        let w = watch.clone();
        // Ends with the process, like the loop below; it holds no state worth a clean stop.
        drop(watch.readiness.spawn_publisher(watch.hub.clone()));
        let task = tokio::spawn(async move { w.follow(clients).await });
        (watch, task)
    }

    /// The tracker's loop: applies each node change as it comes (a node's pods are read the
    /// moment it reaches T=0), publishes the preemption rows at most every
    /// [`PUBLISH_EVERY`] while they change, and once a second expires removed nodes,
    /// announces closed waves and refreshes the rates when the ledger changed.
    async fn follow(&self, clients: HashMap<String, kube::Client>) {
        use tokio::sync::broadcast::error::RecvError;
        let mut following = self.hub.follow();
        let fresh = self.start_from(&following.take_initial(), Utc::now());
        self.read_pods(fresh, &clients);
        let (mut dirty, mut alerts_due) = (true, false);
        let mut publish = tokio::time::interval(PUBLISH_EVERY);
        let mut second = tokio::time::interval(Duration::from_secs(1));
        let (mut rates, mut removed) = (rates_pace::RatesPace::default(), 0);
        let mut preemptions = 0;
        loop {
            tokio::select! {
                fact = following.rx.recv() => {
                    let now = Utc::now();
                    let fresh = match fact {
                        Ok(f) => match &*f {
                            Fact::Node { row: Some(n), .. } => {
                                let mut t = self.lock();
                                let fresh = t.node(n, now, &self.metrics);
                                dirty |= fresh.is_some() || t.follows_preemption(&n.key);
                                fresh.into_iter().collect()
                            }
                            Fact::Node { key, row: None } => {
                                let mut t = self.lock();
                                dirty |= t.follows_preemption(key);
                                t.gone(key, now);
                                Vec::new()
                            }
                            Fact::EvictionSignal { key, row } => {
                                self.lock().refusal(key, row.as_deref());
                                dirty = true;
                                Vec::new()
                            }
                            _ => Vec::new(),
                        },
                        Err(RecvError::Lagged(skipped)) => {
                            crate::hub::fell_behind("preemption tracker", skipped);
                            following = self.hub.follow();
                            dirty = true;
                            self.start_from(&following.take_initial(), now)
                        }
                        Err(RecvError::Closed) => return,
                    };
                    preemptions += fresh.len();
                    self.read_pods(fresh, &clients);
                }
                _ = publish.tick(), if dirty => {
                    dirty = false;
                    let now_removed = self.publish(std::mem::take(&mut alerts_due));
                    // The ledger changes when a preemption starts or a node's lifetime
                    // ends; the rates follow it then, and as the windows slide (at the
                    // pace of `rates_pace`).
                    if preemptions > 0 || now_removed != removed {
                        (preemptions, removed) = (0, now_removed);
                        rates.changed();
                    }
                    if let Some(pass) = rates.start() {
                        self.spawn_rates(pass);
                    }
                }
                _ = second.tick() => {
                    self.lock().expire(Utc::now());
                    self.note_past_grace();
                    if let Some(pass) = rates.start() {
                        self.spawn_rates(pass);
                    }
                    // Removed nodes age, undelivered alerts change, alerts are judged: all
                    // from the next publication's view.
                    alerts_due = true;
                    dirty = true;
                }
            }
        }
    }

    /// A whole look at the hub's nodes and refusal events; returns the nodes that just
    /// reached T=0.
    fn start_from(
        &self,
        initial: &crate::hub::LedgerInputs,
        now: chrono::DateTime<Utc>,
    ) -> Vec<tracker::NeedsPods> {
        let mut t = self.lock();
        t.refusals_from(&initial.evictions);
        t.observe(&initial.nodes, now, &self.metrics)
    }

    /// Notes, for each node under notice, its pods still terminating past their grace period
    /// (from the hub's Pod watch).
    fn note_past_grace(&self) {
        let late = self.hub.pods_past_grace(Utc::now());
        self.lock().set_past_grace(&late);
    }

    /// Steps the alert episodes on `view` (the preemptions as just published): announces
    /// what started or ended (logged on every replica, POSTed only by the ledger's writer)
    /// and publishes what fires now.
    fn step_alerts(&self, view: &Preemptions, now: chrono::DateTime<Utc>) {
        let pools = self.hub.shared_pool_rows();
        let waiting = self.hub.waiting_clusters();
        let writer = self.ledger.as_ref().is_none_or(|l| l.writer().holds());
        let step = self
            .alerting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .step(
                view,
                (&pools, &waiting),
                now,
                writer && self.deliveries.is_some(),
            );
        step.changed.iter().for_each(alerting::log);
        if let Some(tx) = &self.deliveries {
            for a in step.post {
                if let Err(e) = tx.try_send(a) {
                    tracing::error!(error = %e, "alert webhook queue full: message dropped");
                }
            }
        }
        self.hub.publish(step.firing);
    }

    /// Runs a rates pass; `pass` ends with it.
    fn spawn_rates(&self, pass: rates_pace::RatesPass) {
        let w = self.clone();
        tokio::spawn(async move {
            w.publish_rates().await;
            drop(pass);
        });
    }

    /// Reads the pods of each node that just reached T=0, each in its own task.
    fn read_pods(&self, fresh: Vec<tracker::NeedsPods>, clients: &HashMap<String, kube::Client>) {
        for need in fresh {
            let Some(client) = clients.get(&need.cluster).cloned() else {
                continue;
            };
            let w = self.clone();
            tokio::spawn(async move { w.pods_of(client, need).await });
        }
    }

    /// The pods `need`'s node held at T=0, then how each ended once the node is gone; both
    /// shown on its card and kept in the ledger.
    async fn pods_of(&self, client: kube::Client, need: tracker::NeedsPods) {
        let read = pods::on_node(
            client.clone(),
            &need.cluster,
            &need.node,
            &self.blast_radius,
        )
        .await;
        let impacts = read.clone();
        // The ledger's writes are kept trying in their own task, in order (the outcomes
        // update the linked rows): the card must not wait for the database, and a database
        // away at T=0 must not lose the pods.
        let (outcomes_tx, outcomes_rx) =
            tokio::sync::oneshot::channel::<Vec<(String, String, String)>>();
        // A drill's pods are on its card only: "why did my pod stop?" finds preemptions.
        let ledger = self.ledger.clone().filter(|_| !need.drill);
        if let (Some(l), Ok(p)) = (ledger, &impacts) {
            let pods: Vec<_> = p.iter().map(|(p, _)| p.clone()).collect();
            let (uid, node) = (need.uid.clone(), need.node.clone());
            tokio::spawn(async move {
                let link = l.until_written("linking pods to a preemption", || {
                    l.preempted_pods(&uid, &pods)
                });
                if let Err(e) = link.await {
                    tracing::error!(error = %e, node = %node, "could not link pods to the preemption");
                    return;
                }
                let Ok(o) = outcomes_rx.await else {
                    return;
                };
                let write = l.until_written("recording pod outcomes", || l.pod_outcomes(&uid, &o));
                if let Err(e) = write.await {
                    tracing::error!(error = %e, node = %node, "could not record pod outcomes");
                }
            });
        }
        self.lock().set_pods(&need.uid, impacts);
        self.publish(false);
        // Then how each pod ended, once the node is gone: this ties pod failures (GKE's
        // `Terminated`) to the preemption.
        let Ok(held) = read else { return };
        match pods::outcomes(client, &need.node, &need.uid, &held, &self.hub).await {
            Ok(o) => {
                self.lock().set_outcomes(&need.uid, &o, &self.metrics);
                self.publish(false);
                let _ = outcomes_tx.send(o);
            }
            Err(e) => tracing::warn!(error = %e, node = %need.node, "pod outcomes unknown"),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tracker> {
        self.tracker.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publishes the tracker's timelines and waves, and the undelivered alerts, on the hub
    /// (only what changed goes out). Returns how many followed nodes are removed.
    /// With `step_alerts`, the alerts are judged on the same view.
    fn publish(&self, step_alerts: bool) -> usize {
        let now = Utc::now();
        let (v, refused) = {
            let mut t = self.lock();
            let v = t.view(now);
            let refused = t.new_refusals(&v.nodes, &self.metrics);
            (v, refused)
        };
        self.record_refusals(refused);
        if step_alerts {
            self.step_alerts(&v, now);
        }
        let removed = v.nodes.iter().filter(|n| n.timeline.removed()).count();
        self.hub.publish(v.nodes);
        self.hub.publish(v.waves);
        self.hub.publish(
            self.webhook
                .as_ref()
                .map(Webhook::undelivered)
                .unwrap_or_default(),
        );
        removed
    }

    /// Records the refusal counts of preempted nodes in the ledger, each write in its own
    /// task (kept trying like the pods' links: the card must not wait for the database).
    fn record_refusals(&self, refused: Vec<(String, u32)>) {
        let Some(l) = &self.ledger else { return };
        for (uid, n) in refused {
            let l = l.clone();
            tokio::spawn(async move {
                let write = l.until_written("recording refused evictions", || {
                    l.evictions_refused(&uid, n)
                });
                if let Err(e) = write.await {
                    tracing::error!(error = %e, node_uid = %uid, "could not record refused evictions");
                }
            });
        }
    }

    /// Recomputes the rates from the last 30 days of the ledger and publishes them; when the
    /// ledger cannot be read the last rates stay (the live part does not depend on them).
    async fn publish_rates(&self) {
        use spotboard_core::domain::preemption::rates;
        let Some(l) = &self.ledger else { return };
        let now = Utc::now();
        let read = Instant::now();
        let lifetimes = match l.between(now - chrono::Duration::days(30), now).await {
            Ok(lifetimes) => lifetimes,
            Err(e) => {
                tracing::warn!(error = %e, "preemption rates unavailable");
                return;
            }
        };
        let (read, count) = (read.elapsed(), lifetimes.len());
        // A pass over 30 days of lifetimes (10,000 and more at 10k nodes), off the runtime's
        // worker threads: on a 2-core machine it held one of the two that serve the streams
        // and the embedded API server.
        let (pct, metrics) = (self.rate_alert_pct, self.metrics.clone());
        let computed = tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            let mut rows = rates::rates(&lifetimes, now);
            rates::flag(&mut rows, pct);
            metrics.observe_replacements(&lifetimes);
            (rows, t.elapsed())
        })
        .await;
        let Ok((rows, took)) = computed else {
            tracing::error!("the preemption rates pass failed");
            return;
        };
        tracing::debug!(
            lifetimes = count,
            read_ms = read.as_millis() as u64,
            computed_ms = took.as_millis() as u64,
            "preemption rates"
        );
        self.metrics.set_rates(&rows);
        self.alerting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_rates(rows.clone());
        self.hub.publish(rows);
    }

    /// Active and recent preemptions now, as published on the stream (`/preemptions`' rows).
    pub async fn view(&self) -> Preemptions {
        let s = self.hub.snapshot(&Scope::preemptions());
        Preemptions {
            now: Some(Utc::now()),
            nodes: s.preemptions,
            waves: s.waves,
            rates: s.rates,
            firing: s.firing,
            undelivered: s.alerts,
        }
    }
}

impl app::preemptions_api::PreemptionSource for PreemptionWatch {
    fn pod_hits<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> app::create_api::BoxFuture<'a, spotboard_core::Result<Vec<spotboard_core::model::PodHit>>>
    {
        Box::pin(async move {
            let ledger = self.ledger.as_ref().ok_or_else(|| {
                spotboard_core::Error::Unavailable(
                    "no ledger: preemptions are not kept".to_string(),
                )
            })?;
            Ok(ledger.hits_on(namespace, name).await?)
        })
    }
}
