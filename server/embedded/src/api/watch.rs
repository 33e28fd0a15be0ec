//! Watch streams: newline-delimited JSON events over a chunked response.
//!
//! Each watch is one task that replays the kind's change history from its resourceVersion
//! and then follows it, woken by the store after every write (see `history`). Events hold
//! `Arc`'d objects, so a watcher costs a cursor, not a copy of the objects.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use chrono::Utc;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use super::history::{Change, EventType};
use super::object;
use super::resources::Kind;
use super::selectors::{FieldSelector, LabelSelector};
use super::status::ApiError;
use super::store::Store;
use super::stored::{Obj, Stored};
use super::table::{self, Format};

/// Events buffered per watch before the task waits for the client to read.
const BUFFER: usize = 64;

/// What one watch request asked for.
#[derive(Debug)]
pub struct WatchSpec {
    pub kind: Kind,
    /// `None`: all namespaces.
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// Changes after this resourceVersion are sent; `None` (`""` or `"0"`) first sends the
    /// current objects as `ADDED`.
    pub resource_version: Option<u64>,
    /// `sendInitialEvents=true`: current objects first, then a bookmark annotated
    /// `k8s.io/initial-events-end` (the streaming-list protocol).
    pub send_initial_events: bool,
    /// `allowWatchBookmarks=true`: periodic `BOOKMARK` events.
    pub bookmarks: bool,
    /// When the stream ends (`timeoutSeconds`).
    pub timeout: Duration,
    pub format: Format,
}

/// What ends every watch early: the server's outage switch and its shutdown; and, for the
/// fault suite, the reader's fault and forced expiry.
#[derive(Clone, Debug)]
pub struct Stops {
    pub outage: watch::Receiver<bool>,
    pub shutdown: watch::Receiver<bool>,
    /// The fault applied to this watch's user (always `None` for the administrator).
    pub fault: watch::Receiver<ReaderFault>,
    /// Bumped to end every open watch with `410 Expired`.
    pub expire: watch::Receiver<u64>,
}

/// A fault the fault suite applies to the reader (spotboard's own account) while the
/// administrator (the behaviour model, kubectl) keeps working, so the cluster changes while
/// spotboard cannot see it. Test handles only: no request can set one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReaderFault {
    #[default]
    None,
    /// Requests get 503 and open watches end: a stopped API server.
    Down,
    /// Requests are held unanswered and open watches fall silent: an API server that
    /// accepts connections and never answers.
    Stall,
}

impl WatchSpec {
    fn matches(&self, obj: &Stored) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| obj.namespace() == ns)
            && obj.matches(&self.labels, &self.fields)
    }

    /// What this watcher sees of a change: an object that starts matching its selectors
    /// arrives as `ADDED`, one that stops matching as `DELETED` (its previous version with
    /// the change's resourceVersion), as from a real API server.
    pub fn visible(&self, change: &Change) -> Option<(EventType, Obj)> {
        let now = self.matches(&change.object);
        match change.kind {
            EventType::Added | EventType::Deleted => {
                now.then(|| (change.kind, change.object.clone()))
            }
            EventType::Modified => {
                let before = change.prev.as_ref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some((EventType::Modified, change.object.clone())),
                    (false, true) => Some((EventType::Added, change.object.clone())),
                    (true, false) => {
                        let mut gone = change.prev.as_ref().map(|p| p.value()).unwrap_or_default();
                        object::set_resource_version(&mut gone, change.rv);
                        Some((EventType::Deleted, Arc::new(Stored::new(&gone))))
                    }
                    (false, false) => None,
                }
            }
        }
    }

    /// One event line: `{"type":"ADDED","object":{...}}\n`, the object rendered in the
    /// requested format (the stored JSON as it is for plain watches).
    pub fn encode(&self, kind: EventType, obj: &Stored) -> Bytes {
        match self.format {
            Format::Plain => raw_line(kind.as_str(), obj.json_len(), |b| obj.write_json(b)),
            Format::Metadata => line(kind.as_str(), &table::partial_metadata(&obj.value())),
            Format::Table(include) => {
                let meta = json!({"resourceVersion": obj.resource_version()});
                let value = obj.value();
                let t = table::table(self.kind, [&value], include, meta, Utc::now());
                line(kind.as_str(), &t)
            }
        }
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let info = self.kind.info();
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({"kind": info.kind, "apiVersion": info.api_version, "metadata": meta});
        line("BOOKMARK", &obj)
    }
}

fn line(event_type: &str, obj: &Value) -> Bytes {
    let json = serde_json::to_vec(obj).expect("a JSON value serializes");
    raw_line(event_type, json.len(), |b| b.extend_from_slice(&json))
}

/// `{"type":"…","object":<json>}` and a newline around already-serialized JSON of `len`
/// bytes, which `write_json` appends.
fn raw_line(event_type: &str, len: usize, write_json: impl FnOnce(&mut Vec<u8>)) -> Bytes {
    let mut buf = Vec::with_capacity(len + 32);
    buf.extend_from_slice(b"{\"type\":\"");
    buf.extend_from_slice(event_type.as_bytes());
    buf.extend_from_slice(b"\",\"object\":");
    write_json(&mut buf);
    buf.extend_from_slice(b"}\n");
    Bytes::from(buf)
}

/// Starts the watch and returns its response body. The stream ends at the timeout, on
/// outage or shutdown, when the client goes away, or after an `ERROR` event (410 when the
/// history no longer reaches back to the requested resourceVersion).
pub fn stream(store: Arc<Store>, spec: WatchSpec, stops: Stops, bookmark_every: Duration) -> Body {
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(run(store, spec, stops, tx, bookmark_every));
    Body::from_stream(ReceiverStream::new(rx).map(Ok::<Bytes, Infallible>))
}

async fn run(
    store: Arc<Store>,
    spec: WatchSpec,
    mut stops: Stops,
    tx: mpsc::Sender<Bytes>,
    bookmark_every: Duration,
) {
    let deadline = Instant::now() + spec.timeout;
    let mut notify = store.subscribe(spec.kind);
    let mut last = match spec.resource_version {
        Some(rv) if !spec.send_initial_events => rv,
        _ => {
            let (objects, rv) = store.snapshot(spec.kind);
            for o in objects.iter().filter(|o| spec.matches(o)) {
                if tx.send(spec.encode(EventType::Added, o)).await.is_err() {
                    return;
                }
            }
            if spec.send_initial_events
                && spec.bookmarks
                && tx.send(spec.bookmark(rv, true)).await.is_err()
            {
                return;
            }
            rv
        }
    };
    let mut ticker = tokio::time::interval_at(Instant::now() + bookmark_every, bookmark_every);
    loop {
        // A stalled server sends nothing, and a stopped one ends the watch.
        loop {
            let fault = *stops.fault.borrow_and_update();
            match fault {
                ReaderFault::None => break,
                ReaderFault::Down => return,
                ReaderFault::Stall => changed(&mut stops.fault).await,
            }
        }
        let (changes, seen) = match store.changes_since(spec.kind, last) {
            Ok(found) => found,
            Err(e) => {
                let _ = tx.send(line("ERROR", &e.to_status())).await;
                return;
            }
        };
        for change in &changes {
            if let Some((kind, obj)) = spec.visible(change)
                && tx.send(spec.encode(kind, &obj)).await.is_err()
            {
                return;
            }
        }
        // Everything of this kind up to `seen` has been sent: bookmarks may carry it.
        last = seen;
        tokio::select! {
            changed = notify.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = ticker.tick(), if spec.bookmarks => {
                if tx.send(spec.bookmark(last, false)).await.is_err() {
                    return;
                }
            }
            _ = tokio::time::sleep_until(deadline) => return,
            _ = until_set(&mut stops.outage) => return,
            _ = until_set(&mut stops.shutdown) => return,
            _ = changed(&mut stops.fault) => {}
            _ = changed(&mut stops.expire) => {
                let _ = tx.send(line("ERROR", &ApiError::expired(last, last + 1).to_status())).await;
                return;
            }
            _ = tx.closed() => return,
        }
    }
}

/// Resolves when a new value is sent; never when the sender is gone (a switch nobody can
/// flip again has nothing more to say).
async fn changed<T>(rx: &mut watch::Receiver<T>) {
    if rx.changed().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Resolves once the flag is set or its sender is gone. (The `Ref` that `wait_for` yields
/// is dropped here, so the watch task stays `Send`.)
async fn until_set(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|on| *on).await;
}

/// Parses a watch's `resourceVersion`: `""` and `"0"` mean "from the current state".
/// Errors: 400 for anything that is not a number.
pub fn parse_resource_version(text: Option<&str>) -> Result<Option<u64>, ApiError> {
    match text {
        None | Some("") | Some("0") => Ok(None),
        Some(t) => t
            .parse()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {t:?}"))),
    }
}

#[cfg(test)]
mod tests;
