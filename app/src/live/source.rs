//! The tab's one EventSource (browser only).

use std::cell::RefCell;

use leptos::prelude::*;
use wasm_bindgen::{JsCast, closure::Closure};
use web_sys::{Event, EventSource, MessageEvent};

use crate::model::{Delta, Scope, Snapshot, sse};

use super::{ConnState, LiveStore};

struct Connection {
    source: EventSource,
    // The closures must live as long as the EventSource calls them.
    _handlers: Vec<Closure<dyn FnMut(Event)>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.source.close();
    }
}

thread_local! {
    // One stream per tab (browsers allow about six connections per host, and a socket per
    // watch hits that limit, worst with many clusters): a page that wants another scope
    // replaces the connection rather than opening a second one.
    static CURRENT: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

/// Closes the tab's stream, if open.
pub fn disconnect() {
    CURRENT.with(|c| c.borrow_mut().take());
}

/// Opens the stream for `scope`, resuming after revision `since` of the store's epoch.
pub fn connect(live: LiveStore, scope: Scope, since: u64) {
    disconnect();
    let query = scope.query();
    let epoch = live.epoch.get_untracked();
    let url = if query.is_empty() {
        format!("/api/v1/stream?epoch={epoch}&since={since}")
    } else {
        format!("/api/v1/stream?epoch={epoch}&since={since}&{query}")
    };
    let Ok(source) = EventSource::new(&url) else {
        live.conn.set(ConnState::Reconnecting);
        return;
    };
    let mut handlers: Vec<Closure<dyn FnMut(Event)>> = Vec::new();

    let on_snapshot = Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
        if let Some(text) = data_of(&ev) {
            match serde_json::from_str::<Snapshot>(&text) {
                Ok(snap) => {
                    live.seed(snap);
                    live.last_message.set(Some(chrono::Utc::now()));
                    live.conn.set(ConnState::Live);
                }
                Err(e) => leptos::logging::error!("spotboard: bad snapshot: {e}"),
            }
        }
    });
    let on_delta = {
        let scope = scope.clone();
        Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
            let Some(text) = data_of(&ev) else { return };
            let applied = serde_json::from_str::<Delta>(&text)
                .map_err(|e| e.to_string())
                .and_then(|d| live.apply(&d));
            live.last_message.set(Some(chrono::Utc::now()));
            if let Err(e) = applied {
                // The store and the server disagree; start over from a snapshot rather than
                // show a half-applied view.
                leptos::logging::warn!("spotboard: {e}; reloading snapshot");
                let scope = scope.clone();
                leptos::task::spawn_local(async move { connect(live, scope, 0) });
            }
        })
    };
    let on_open = Closure::<dyn FnMut(Event)>::new(move |_| live.conn.set(ConnState::Live));
    let on_error = {
        let scope = scope.clone();
        Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
            live.conn.set(ConnState::Reconnecting);
            // The browser retries by itself while the source is CONNECTING; a CLOSED source
            // (e.g. the server answered an error status) must be reopened by hand.
            let closed = ev
                .target()
                .and_then(|t| t.dyn_into::<EventSource>().ok())
                .is_some_and(|s| s.ready_state() == EventSource::CLOSED);
            if closed {
                let scope = scope.clone();
                let rev = live.rev.get_untracked();
                set_timeout(
                    move || connect(live, scope, rev),
                    std::time::Duration::from_secs(3),
                );
            }
        })
    };
    let _ = source
        .add_event_listener_with_callback(sse::SNAPSHOT, on_snapshot.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback(sse::DELTA, on_delta.as_ref().unchecked_ref());
    source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    handlers.extend([on_snapshot, on_delta, on_open, on_error]);
    CURRENT.with(|c| {
        *c.borrow_mut() = Some(Connection {
            source,
            _handlers: handlers,
        })
    });
}

fn data_of(ev: &Event) -> Option<String> {
    ev.dyn_ref::<MessageEvent>()?.data().as_string()
}
