//! Capacity feeds: a JSON document (format in `spotboard_core::model::capacity`) read from a file or a
//! URL, polled, with the last good copy kept when a read fails ("stale since").
//!
//! # CoreWeave's capacity availability API
//! CoreWeave documents `POST https://api.coreweave.com/v1beta1/capacity/availability:get`
//! (beta, Spot only, bearer token, results confidential to the customer), but its request and
//! response schema is not in public documentation we could read. An adapter belongs here as
//! one more [`FeedSource`] variant: POST the instance types and counts, map the ranked zones to
//! [`FeedEntry`](spotboard_core::model::FeedEntry)s, and set `confidential: true` on the feed so every
//! view and export marks it. Until then, a script that calls the API can write a feed file.

use std::{path::PathBuf, sync::Arc, time::Duration};

use chrono::Utc;
use spotboard_core::model::{CapacityFeed, SourceStatus};
use std::sync::RwLock;

/// Where a feed comes from.
#[derive(Clone, Debug)]
pub enum FeedSource {
    File(PathBuf),
    /// An http(s) URL, with an optional bearer token.
    Url {
        url: String,
        token: Option<String>,
    },
}

impl FeedSource {
    /// `PATH` or `http(s)://…` from the command line.
    pub fn parse(text: &str) -> Self {
        if text.starts_with("http://") || text.starts_with("https://") {
            FeedSource::Url {
                url: text.to_string(),
                token: None,
            }
        } else {
            FeedSource::File(PathBuf::from(text))
        }
    }

    /// The name shown for the source (never the token).
    pub fn name(&self) -> String {
        match self {
            FeedSource::File(p) => p.display().to_string(),
            // A feed URL may carry a secret in its path or query.
            FeedSource::Url { url, .. } => crate::preemption::redact(url),
        }
    }

    /// Reads the feed once.
    ///
    /// Errors: a sentence naming the source and what failed (unreadable file, HTTP status,
    /// JSON that is not a capacity feed, with the path of the bad field).
    pub async fn fetch(&self, http: &reqwest::Client) -> Result<CapacityFeed, String> {
        let body = match self {
            FeedSource::File(path) => tokio::fs::read(path)
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?,
            FeedSource::Url { url, token } => {
                let mut req = http.get(url);
                if let Some(t) = token {
                    req = req.bearer_auth(t);
                }
                let name = self.name();
                let resp = req
                    .send()
                    .await
                    .map_err(|e| format!("{name}: {}", e.without_url()))?;
                let status = resp.status();
                if !status.is_success() {
                    return Err(format!("{name}: HTTP {status}"));
                }
                read_limited(resp, MAX_FEED_BYTES)
                    .await
                    .map_err(|e| format!("{name}: {e}"))?
            }
        };
        let de = &mut serde_json::Deserializer::from_slice(&body);
        serde_path_to_error::deserialize(de).map_err(|e| {
            format!(
                "{}: not a capacity feed at {}: {}",
                self.name(),
                e.path(),
                e.inner()
            )
        })
    }
}

/// The largest feed document read; a feed is a list of zone × type figures, far smaller.
pub const MAX_FEED_BYTES: usize = 8 * 1024 * 1024;

/// The body of `resp`, refused once it passes `limit` bytes (a feed gone wrong must not
/// fill the server's memory).
pub(crate) async fn read_limited(resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    use futures::StreamExt;
    let mut body = Vec::new();
    let mut chunks = resp.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| e.without_url().to_string())?;
        if body.len() + chunk.len() > limit {
            return Err(format!("larger than {} MiB", limit / (1024 * 1024)));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Every feed's status and last good document, in flag order.
pub type FeedStates = Arc<RwLock<Vec<(SourceStatus, Option<CapacityFeed>)>>>;

/// Polls every source every `every`, forever; the first round runs at once.
pub fn spawn_pollers(
    sources: Vec<FeedSource>,
    every: Duration,
) -> (FeedStates, tokio::task::JoinHandle<()>) {
    let states: FeedStates = Arc::new(RwLock::new(
        sources
            .iter()
            .map(|s| {
                (
                    SourceStatus {
                        name: s.name(),
                        ..Default::default()
                    },
                    None,
                )
            })
            .collect(),
    ));
    let out = states.clone();
    let task = tokio::spawn(async move {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            for (i, source) in sources.iter().enumerate() {
                let result = source.fetch(&http).await;
                let mut guard = states.write().unwrap_or_else(|p| p.into_inner());
                let Some((status, doc)) = guard.get_mut(i) else {
                    continue;
                };
                match result {
                    Ok(feed) => {
                        status.as_of = Some(Utc::now());
                        status.error = None;
                        status.source = Some(feed.source.clone());
                        status.confidential = feed.confidential;
                        *doc = Some(feed);
                    }
                    Err(e) => {
                        if status.error.is_none() {
                            tracing::warn!(source = %status.name, error = %e, "capacity feed unreadable; keeping the last good copy");
                        }
                        status.error = Some(e);
                    }
                }
            }
        }
    });
    (out, task)
}
