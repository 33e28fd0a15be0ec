//! `GET /api/v1/stream`: one Server-Sent Events stream per browser tab.
//!
//! Query: `since=<rev>` (the revision of the snapshot the page was rendered with),
//! `cluster=&pool=` (the scope). A reconnecting EventSource sends `Last-Event-ID`, which
//! wins over `since`. The stream starts with the missed deltas, or a `snapshot` event when
//! they are no longer kept, then sends `delta` events as they happen. A subscriber that
//! falls more than [`crate::hub::SUBSCRIBER_BUFFER`] deltas behind gets a fresh snapshot.

use std::{convert::Infallible, time::Duration};

use app::model::{Scope, Snapshot, sse};
use axum::{
    extract::{Query, State},
    http::HeaderMap,
    response::sse::{Event, KeepAlive, Sse},
};
use futures::{Stream, StreamExt, stream};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;

use crate::hub::{Hub, Start};

/// The stream's query parameters.
#[derive(Deserialize, Default)]
pub struct StreamQuery {
    pub since: Option<u64>,
    pub cluster: Option<String>,
    pub pool: Option<String>,
}

fn snapshot_event(s: &Snapshot) -> Event {
    Event::default()
        .event(sse::SNAPSHOT)
        .id(s.rev.to_string())
        .data(serde_json::to_string(s).unwrap_or_default())
}

/// The SSE handler.
pub async fn stream(
    State(hub): State<Hub>,
    Query(q): Query<StreamQuery>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let scope = match (q.cluster, q.pool) {
        (Some(c), Some(p)) => Scope::pool(c, p),
        _ => Scope::pools(),
    };
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let since = last_event_id.or(q.since).filter(|s| *s > 0);
    let sub = hub.subscribe(&scope, since);

    let (first, last): (Vec<Event>, u64) = match sub.start {
        Start::Snapshot(s) => (vec![snapshot_event(&s)], s.rev),
        Start::Replay(ps) => {
            let last = ps.last().map(|p| p.rev).unwrap_or(since.unwrap_or(0));
            let evs = ps
                .iter()
                .map(|p| {
                    Event::default()
                        .event(sse::DELTA)
                        .id(p.rev.to_string())
                        .data(p.data.clone())
                })
                .collect();
            (evs, last.max(since.unwrap_or(0)))
        }
    };
    let live = stream::unfold(
        (hub, scope, sub.rx, last),
        |(hub, scope, mut rx, mut last)| async move {
            loop {
                match rx.recv().await {
                    Ok(p) => {
                        if p.rev <= last || !p.wanted_by(&scope) {
                            continue;
                        }
                        last = p.rev;
                        let ev = Event::default()
                            .event(sse::DELTA)
                            .id(p.rev.to_string())
                            .data(p.data.clone());
                        return Some((ev, (hub, scope, rx, last)));
                    }
                    Err(RecvError::Lagged(skipped)) => {
                        // Catching up delta by delta would only fall further behind; one snapshot
                        // costs the same as a page load and bounds the server's memory per client.
                        tracing::debug!(
                            skipped,
                            "stream subscriber lagged; sending a fresh snapshot"
                        );
                        let s = hub.snapshot(&scope);
                        last = s.rev;
                        return Some((snapshot_event(&s), (hub, scope, rx, last)));
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        },
    );
    Sse::new(stream::iter(first).chain(live).map(Ok))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
