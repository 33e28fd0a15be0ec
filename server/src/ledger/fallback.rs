//! The fallback pairs over the last 24 hours on the stream, so the pool pages show them live
//! without polling: read from the ledger every [`FALLBACK_EVERY`] and published through the
//! hub's one interface for derived rows. `/savings` and `GET /api/v1/fallback` compute the
//! same rows for any range on request.

use std::sync::Arc;
use std::time::Duration;

use super::Savings;
use crate::hub::Hub;

/// How often the pairs are read again. Their hours move by the minute; a read prices every
/// lifetime of the last day.
pub const FALLBACK_EVERY: Duration = Duration::from_secs(60);

/// How long after the clusters have listed the first read waits: the recorder writes the
/// nodes it found at its first steps (one a second), and a pair read before them would say
/// for a whole [`FALLBACK_EVERY`] that no on-demand node runs.
pub const FIRST_READ_AFTER: Duration = Duration::from_secs(5);

/// Publishes the pairs every `every`, starting [`FIRST_READ_AFTER`] after the hub has listed
/// every cluster (the pairs come from the pools). A ledger that cannot be read leaves the
/// rows as last published, with one log line until it reads again.
pub fn spawn_publisher(
    savings: Arc<Savings>,
    hub: Hub,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while !hub.ready() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(FIRST_READ_AFTER.min(every)).await;
        let mut tick = tokio::time::interval(every);
        let mut failing = false;
        loop {
            tick.tick().await;
            let now = chrono::Utc::now();
            match savings
                .fallback(now - chrono::Duration::hours(24), now)
                .await
            {
                Ok(r) => {
                    failing = false;
                    hub.publish(r.pairs);
                }
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, "fallback pairs not read; keeping the last ones");
                }
                Err(_) => {}
            }
        }
    })
}
