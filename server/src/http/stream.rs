//! `GET /api/v1/stream`: one Server-Sent Events stream per browser tab.
//!
//! Query: `epoch=<e>&since=<rev>` (the process epoch and revision of the snapshot the page was
//! rendered with), `cluster=&pool=`, `preemptions=1` or `capacity=1` (the scope, [`Scope::from_query`]). Event ids are `EPOCH-REV`; a reconnecting
//! EventSource sends the last as `Last-Event-ID`, which wins over the query. The stream starts
//! with the missed deltas when the epoch is this process's and the resume ring still holds
//! them, else with a `snapshot` event, then sends `delta` events as they happen. It ends when
//! the server stops; each client may hold `--streams-per-client` streams. A subscriber that
//! falls more than [`crate::hub::SUBSCRIBER_BUFFER`] deltas behind gets a fresh snapshot.

use std::{sync::Arc, time::Duration};

use axum::{
    Extension,
    extract::{Query, State},
    http::{HeaderMap, StatusCode},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
};
use futures::{StreamExt, stream};
use serde::Deserialize;
use spotboard_core::model::{Scope, Snapshot, sse};
use tokio::sync::broadcast::error::RecvError;

use super::{ClientKey, Shutdown, StreamSlots};
use crate::hub::{Hub, Start};

/// The stream's query parameters.
#[derive(Deserialize, Default)]
pub struct StreamQuery {
    pub since: Option<u64>,
    /// The epoch `since` belongs to; another process's (or none) gets a snapshot.
    pub epoch: Option<u64>,
    pub cluster: Option<String>,
    pub pool: Option<String>,
    /// Present (any value) on `/preemptions`: every preemption row too.
    pub preemptions: Option<String>,
    /// Present (any value) on `/capacity`: the capacity grid's rows too.
    pub capacity: Option<String>,
}

fn snapshot_event(s: &Snapshot) -> Event {
    Event::default()
        .event(sse::SNAPSHOT)
        .id(sse::event_id(s.epoch, s.rev))
        .data(serde_json::to_string(s).unwrap_or_default())
}

/// The SSE handler. 429 when the client holds `--streams-per-client` streams already.
pub async fn stream(
    State(hub): State<Hub>,
    State(slots): State<Arc<StreamSlots>>,
    State(Shutdown(shutdown)): State<Shutdown>,
    client: Option<Extension<ClientKey>>,
    Query(q): Query<StreamQuery>,
    headers: HeaderMap,
) -> Response {
    let key = client.map(|c| c.0).unwrap_or(ClientKey::of(None, None));
    let Some(slot) = slots.take(key) else {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "at most {} live streams per client; close a tab or two",
                slots.limit()
            ),
        )
            .into_response();
    };
    let scope = Scope::from_query(
        q.cluster,
        q.pool,
        q.preemptions.is_some(),
        q.capacity.is_some(),
    );
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(sse::parse_event_id);
    let epoch = hub.epoch();
    let since = last_event_id
        .or(q.since.zip(q.epoch).map(|(rev, e)| (e, rev)))
        .filter(|(e, rev)| *e == epoch && *rev > 0)
        .map(|(_, rev)| rev);
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
                        .id(sse::event_id(epoch, p.rev))
                        .data(p.data.clone())
                })
                .collect();
            (evs, last.max(since.unwrap_or(0)))
        }
    };
    let live = stream::unfold(
        // The stream slot and the viewer count are given back when the stream ends.
        (hub, scope, sub.rx, last, shutdown, (slot, sub.viewer)),
        move |(hub, scope, mut rx, mut last, mut shutdown, held)| async move {
            loop {
                let received = tokio::select! {
                    r = rx.recv() => r,
                    // A stopping server ends every stream (and gives back its slot).
                    _ = async { drop(shutdown.wait_for(|stop| *stop).await) } => return None,
                };
                match received {
                    Ok(p) => {
                        if p.rev <= last || !p.wanted_by(&scope) {
                            continue;
                        }
                        last = p.rev;
                        let ev = Event::default()
                            .event(sse::DELTA)
                            .id(sse::event_id(epoch, p.rev))
                            .data(p.data.clone());
                        return Some((ev, (hub, scope, rx, last, shutdown, held)));
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
                        return Some((snapshot_event(&s), (hub, scope, rx, last, shutdown, held)));
                    }
                    Err(RecvError::Closed) => return None,
                }
            }
        },
    );
    Sse::new(
        stream::iter(first)
            .chain(live)
            .map(Ok::<_, std::convert::Infallible>),
    )
    .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
    .into_response()
}
