//! Delivering alerts to `--alert-webhook`: each [`Alert`] (firing, then resolved) POSTed as
//! JSON, http or https (rustls); an answer other than 2xx is a failure, failures are retried
//! with backoff, and a message that could not be delivered after every attempt is kept for
//! `/preemptions` to show. The URL's path and
//! query (a Slack-style webhook's secret) never reach a log line or a viewer: both see
//! [`redact`]ed destinations and errors without the URL.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use chrono::Utc;
use spotboard_core::model::{Alert, UndeliveredAlert};

/// Waits between attempts; one attempt more than there are waits.
pub const BACKOFF: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// Undelivered alerts kept for the page, newest first.
const KEEP: usize = 20;

/// The scheme and host (and port) of `url`, for logs and viewers: `https://hooks.example`.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // Credentials in the authority (`user:pass@host`) are secrets too.
    let host = authority.rsplit('@').next().unwrap_or_default();
    if scheme.is_empty() {
        host.to_string()
    } else {
        format!("{scheme}://{host}")
    }
}

/// The alert webhook.
#[derive(Clone)]
pub struct Webhook {
    url: String,
    http: reqwest::Client,
    undelivered: Arc<Mutex<VecDeque<UndeliveredAlert>>>,
}

impl Webhook {
    /// A webhook POSTing to `url`, each attempt timing out after 10 s.
    pub fn new(url: String) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Webhook {
            url,
            http,
            undelivered: Arc::default(),
        }
    }

    /// Alerts that were not delivered, newest first.
    pub fn undelivered(&self) -> Vec<UndeliveredAlert> {
        self.undelivered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// POSTs `alert` as JSON, retrying after each of [`BACKOFF`]; keeps it as undelivered
    /// when the last attempt fails too.
    pub async fn deliver(&self, alert: &Alert) {
        let destination = redact(&self.url);
        let mut last_error = String::new();
        let attempts = BACKOFF.len() as u32 + 1;
        for attempt in 1..=attempts {
            match self.attempt(alert).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(%destination, attempt, error = %e, alert = %alert.key, "alert webhook failed");
                    last_error = e;
                }
            }
            if let Some(wait) = BACKOFF.get(attempt as usize - 1) {
                tokio::time::sleep(*wait).await;
            }
        }
        let mut kept = self.undelivered.lock().unwrap_or_else(|p| p.into_inner());
        kept.push_front(UndeliveredAlert {
            alert: alert.key.clone(),
            status: alert.status,
            summary: alert.summary.clone(),
            cluster: alert.cluster.clone(),
            started: alert.started,
            nodes: alert.nodes.len(),
            destination,
            attempts,
            error: last_error,
            at: Some(Utc::now()),
        });
        kept.truncate(KEEP);
    }

    async fn attempt(&self, alert: &Alert) -> Result<(), String> {
        let resp = self
            .http
            .post(&self.url)
            .json(alert)
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        let status = resp.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("answered HTTP {status}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_keep_scheme_and_host_only() {
        assert_eq!(
            redact("https://hooks.slack.com/services/T0/B0/SECRET"),
            "https://hooks.slack.com"
        );
        assert_eq!(
            redact("http://user:pass@127.0.0.1:9000/x?token=s"),
            "http://127.0.0.1:9000"
        );
        assert_eq!(redact("https://example.com?k=v"), "https://example.com");
        assert_eq!(redact("/var/feeds/capacity.json"), "");
    }
}
