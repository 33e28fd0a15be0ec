//! Alerts, stepped once a second: the episodes of `app::domain::alerts` judged from what the
//! preemption watch holds (waves, cards, the ledger's rates) and the hub's pools. Each
//! firing and resolved message is logged and, with `--alert-webhook`, POSTed in order by one
//! delivery task; the alerts firing now are published for every page's header.
//!
//! Every replica steps the same episodes from the same data, so a replica that takes over
//! the ledger knows which alerts are already firing; only the ledger's writer POSTs, so a
//! team behind two replicas gets each message once.

use app::domain::alerts::{Episodes, Inputs, Thresholds, now_wrong};
use app::domain::preemption::rates::RateRow;
use app::model::{Alert, AlertStatus, PoolRow, Preemptions};
use chrono::{DateTime, Utc};
use tokio::sync::mpsc;

use super::webhook::Webhook;

/// The alert episodes and what they are judged from besides the tracker.
pub struct Alerting {
    episodes: Episodes,
    thresholds: Thresholds,
    /// The ledger's rates as last computed (flagged).
    rates: Vec<RateRow>,
}

impl Alerting {
    pub fn new(thresholds: Thresholds) -> Self {
        Alerting {
            episodes: Episodes::default(),
            thresholds,
            rates: Vec::new(),
        }
    }

    /// The ledger's rates, as the watch last computed them.
    pub fn set_rates(&mut self, rates: Vec<RateRow>) {
        self.rates = rates;
    }

    /// One step at `now`: the messages to announce (new episodes firing, ended ones
    /// resolved) and the alerts firing now.
    pub fn step(
        &mut self,
        preemptions: &Preemptions,
        pools: &[PoolRow],
        now: DateTime<Utc>,
    ) -> (Vec<Alert>, Vec<Alert>) {
        let wrong = now_wrong(
            Inputs {
                waves: &preemptions.waves,
                rates: &self.rates,
                preemptions: &preemptions.nodes,
                pools,
            },
            &self.thresholds,
            now,
        );
        let announce = self.episodes.step(wrong, now);
        (announce, self.episodes.firing())
    }
}

/// Logs an announced message.
pub fn log(a: &Alert) {
    match a.status {
        AlertStatus::Firing => {
            tracing::warn!(alert = %a.key, kind = a.kind.as_str(), "alert firing: {}", a.summary)
        }
        AlertStatus::Resolved => {
            tracing::info!(alert = %a.key, kind = a.kind.as_str(), "alert resolved: {}", a.summary)
        }
    }
}

/// A task POSTing each message to `hook` in the order sent, so that an episode's `resolved`
/// never overtakes its `firing` while that one is retried.
pub fn deliveries(hook: Webhook) -> mpsc::UnboundedSender<Alert> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Alert>();
    tokio::spawn(async move {
        while let Some(a) = rx.recv().await {
            hook.deliver(&a).await;
        }
    });
    tx
}
