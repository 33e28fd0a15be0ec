//! Alerts, stepped once a second: the episodes of `spotboard_core::domain::alerts` judged from what the
//! preemption watch holds (waves, cards, the ledger's rates) and the hub's pools. Each
//! firing and resolved message is logged and, with `--alert-webhook`, POSTed in order by one
//! delivery task; the alerts firing now are published for every page's header.
//!
//! Every replica steps the same episodes from the same data and shows them; only the
//! ledger's writer POSTs. The writer keeps what it has POSTed: each alert firing that it has
//! not announced yet is POSTed `firing` (so alerts already true when it starts or takes over
//! are announced, not lost), and each it announced that no longer fires is POSTed `resolved`.
//! Delivery is at least once: a replica that starts or takes over announces again what
//! still fires, with the same `key`.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use spotboard_core::domain::alerts::{Episodes, Inputs, Thresholds, now_wrong};
use spotboard_core::domain::preemption::rates::RateRow;
use spotboard_core::model::{Alert, AlertStatus, PoolRow, Preemptions, WaitingPool};
use tokio::sync::mpsc;

use super::webhook::Webhook;

/// The alert episodes and what they are judged from besides the tracker.
pub struct Alerting {
    episodes: Episodes,
    thresholds: Thresholds,
    /// The ledger's rates as last computed (flagged).
    rates: Vec<RateRow>,
    /// The alerts this replica has POSTed `firing` and not yet `resolved`, by key, with their
    /// latest figures.
    posted: BTreeMap<String, Alert>,
}

/// One step's outcome.
pub struct Step {
    /// Episodes that started or ended (logged on every replica).
    pub changed: Vec<Alert>,
    /// Messages for the webhook, in order (the writer's only).
    pub post: Vec<Alert>,
    /// The alerts firing now.
    pub firing: Vec<Alert>,
}

impl Alerting {
    pub fn new(thresholds: Thresholds) -> Self {
        Alerting {
            episodes: Episodes::default(),
            thresholds,
            rates: Vec::new(),
            posted: BTreeMap::new(),
        }
    }

    /// The ledger's rates, as the watch last computed them.
    pub fn set_rates(&mut self, rates: Vec<RateRow>) {
        self.rates = rates;
    }

    /// One step at `now`; `writer`: this replica holds the ledger, and POSTs.
    pub fn step(
        &mut self,
        preemptions: &Preemptions,
        (pools, waiting): (&[std::sync::Arc<PoolRow>], &[WaitingPool]),
        now: DateTime<Utc>,
        writer: bool,
    ) -> Step {
        let wrong = now_wrong(
            Inputs {
                waves: &preemptions.waves,
                rates: &self.rates,
                preemptions: &preemptions.nodes,
                pools,
                waiting,
            },
            &self.thresholds,
            now,
        );
        let changed = self.episodes.step(wrong, now);
        let firing = self.episodes.firing();
        let post = if writer {
            self.messages(&firing, now)
        } else {
            // Another replica announces; on taking over this one starts afresh.
            self.posted.clear();
            Vec::new()
        };
        Step {
            changed,
            post,
            firing,
        }
    }

    /// The writer's messages: `firing` for what fires and was not announced by it,
    /// `resolved` (with the episode's last figures, kept in `posted`) for what it announced
    /// and no longer fires.
    fn messages(&mut self, firing: &[Alert], now: DateTime<Utc>) -> Vec<Alert> {
        let mut post = Vec::new();
        let firing_keys: BTreeSet<&str> = firing.iter().map(|a| a.key.as_str()).collect();
        let ended: Vec<String> = self
            .posted
            .keys()
            .filter(|k| !firing_keys.contains(k.as_str()))
            .cloned()
            .collect();
        for key in ended {
            let Some(last) = self.posted.remove(&key) else {
                continue;
            };
            post.push(Alert {
                status: AlertStatus::Resolved,
                resolved: Some(now),
                ..last
            });
        }
        for a in firing {
            if self.posted.insert(a.key.clone(), a.clone()).is_none() {
                post.push(a.clone());
            }
        }
        post
    }
}

/// Logs an announced message.
///
/// The summary goes in as a quoted field, never spliced into the message: a pending-work
/// summary carries a cause built from pod authors' text (selector and affinity values, gate
/// names), whose newlines and control characters must not forge log lines.
pub fn log(a: &Alert) {
    match a.status {
        AlertStatus::Firing => {
            tracing::warn!(alert = %a.key, kind = a.kind.as_str(), summary = ?a.summary, "alert firing")
        }
        AlertStatus::Resolved => {
            tracing::info!(alert = %a.key, kind = a.kind.as_str(), summary = ?a.summary, "alert resolved")
        }
    }
}

/// Messages waiting for the webhook at most; past that (a webhook down for long, each
/// message retried for 7 s) new ones are dropped with an error in the log.
pub const QUEUE: usize = 256;

/// A task POSTing each message to `hook` in the order sent, so that an episode's `resolved`
/// never overtakes its `firing` while that one is retried.
pub fn deliveries(hook: Webhook) -> mpsc::Sender<Alert> {
    let (tx, mut rx) = mpsc::channel::<Alert>(QUEUE);
    tokio::spawn(async move {
        while let Some(a) = rx.recv().await {
            hook.deliver(&a).await;
        }
    });
    tx
}

#[cfg(test)]
mod tests {
    use super::*;
    use spotboard_core::model::ConditionView;
    use spotboard_core::nodepool::ConditionType;

    fn queued(capacity_false: bool) -> Vec<std::sync::Arc<PoolRow>> {
        vec![std::sync::Arc::new(PoolRow {
            cluster: "c1".into(),
            name: "p".into(),
            conditions: vec![ConditionView {
                type_: ConditionType::Capacity,
                status: if capacity_false { "False" } else { "True" }.into(),
                last_transition: Some(Utc::now() - chrono::Duration::hours(1)),
                ..ConditionView::default()
            }],
            ..PoolRow::default()
        })]
    }

    fn statuses(step: &Step) -> Vec<AlertStatus> {
        step.post.iter().map(|a| a.status).collect()
    }

    #[test]
    fn the_writer_announces_what_fires_once_even_if_it_started_before_it_held_the_lease() {
        let mut a = Alerting::new(Thresholds::default());
        let none = Preemptions::default();
        let now = Utc::now();
        // A follower: shows the alert, POSTs nothing.
        let s = a.step(&none, (&queued(true), &[]), now, false);
        assert_eq!((s.changed.len(), s.firing.len()), (1, 1));
        assert!(s.post.is_empty());
        // It takes the Lease: the alert, already open, is announced now, once.
        let s = a.step(&none, (&queued(true), &[]), now, true);
        assert!(s.changed.is_empty(), "the episode did not change");
        assert_eq!(statuses(&s), [AlertStatus::Firing]);
        assert!(
            a.step(&none, (&queued(true), &[]), now, true)
                .post
                .is_empty()
        );
        // It ends: resolved, with the episode's start.
        let s = a.step(&none, (&queued(false), &[]), now, true);
        assert_eq!(statuses(&s), [AlertStatus::Resolved]);
        assert!(s.post[0].started.is_some() && s.post[0].resolved.is_some());
        assert!(
            a.step(&none, (&queued(false), &[]), now, true)
                .post
                .is_empty()
        );
    }
}
