//! The tab's one EventSource (browser only).

use std::{cell::RefCell, rc::Rc, time::Duration};

use leptos::prelude::*;
use wasm_bindgen::{JsCast, closure::Closure};
use web_sys::{Event, EventSource, MessageEvent};

use crate::model::{Delta, Scope, Snapshot, sse};

use super::{
    ConnState, LiveStore,
    inbox::{Applied, FRAME_BUDGET_MS, Inbox, Next, apply_within},
};

struct Connection {
    source: EventSource,
    inbox: Rc<RefCell<Inbox>>,
    // The closures must live as long as the EventSource calls them.
    _handlers: Vec<Closure<dyn FnMut(Event)>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.source.close();
        // A flush already scheduled must not apply this stream's deltas after another
        // stream (another scope, or a resume from the store's revision) has taken over.
        self.inbox.borrow_mut().close();
    }
}

/// How often a hidden tab applies what it received: browsers draw no frames there.
const HIDDEN_FLUSH: Duration = Duration::from_millis(500);

/// Applies the queued deltas in order: within [`FRAME_BUDGET_MS`] when `budget` (a frame's
/// flush; the rest waits for the next frame), else all of them. At the first one that does
/// not fit the store, the rest are dropped and the stream starts over from a snapshot.
fn flush(live: LiveStore, scope: &Scope, inbox: &Rc<RefCell<Inbox>>, budget: bool) {
    let queue = inbox.borrow_mut().take();
    if queue.is_empty() {
        return;
    }
    let started = js_sys::Date::now();
    let applied = apply_within(
        queue,
        budget.then_some(FRAME_BUDGET_MS),
        || js_sys::Date::now() - started,
        |text| {
            serde_json::from_str::<Delta>(text)
                .map_err(|e| e.to_string())
                .and_then(|d| live.apply(&d))
        },
    );
    match applied {
        Applied::All => {}
        Applied::Rest(rest) => {
            if inbox.borrow_mut().put_back(rest) {
                schedule(live, scope, inbox);
            }
        }
        Applied::Failed(e) => {
            // The store and the server disagree; start over from a snapshot rather than
            // show a half-applied view.
            leptos::logging::warn!("spotboard: {e}; reloading snapshot");
            inbox.borrow_mut().close();
            let scope = scope.clone();
            leptos::task::spawn_local(async move { connect(live, scope, 0) });
            return;
        }
    }
    live.last_message.set(Some(chrono::Utc::now()));
}

/// Asks for a flush: before the next frame, or after [`HIDDEN_FLUSH`] in a hidden tab.
fn schedule(live: LiveStore, scope: &Scope, inbox: &Rc<RefCell<Inbox>>) {
    let (scope, inbox) = (scope.clone(), inbox.clone());
    let hidden = web_sys::window()
        .and_then(|w| w.document())
        .is_some_and(|d| d.hidden());
    if hidden {
        set_timeout(move || flush(live, &scope, &inbox, false), HIDDEN_FLUSH);
    } else {
        request_animation_frame(move || flush(live, &scope, &inbox, true));
    }
}

/// Queues one delta and makes sure a flush comes: before the next frame, at once when the
/// queue is full.
fn receive(live: LiveStore, scope: &Scope, inbox: &Rc<RefCell<Inbox>>, text: String) {
    let next = inbox.borrow_mut().push(text);
    match next {
        Next::Wait => {}
        Next::FlushNow => flush(live, scope, inbox, false),
        Next::Schedule => schedule(live, scope, inbox),
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
    let inbox = Rc::new(RefCell::new(Inbox::default()));

    let on_snapshot = {
        let inbox = inbox.clone();
        Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
            if let Some(text) = data_of(&ev) {
                // Whatever is queued came before this snapshot, which already holds it.
                inbox.borrow_mut().clear();
                match serde_json::from_str::<Snapshot>(&text) {
                    Ok(snap) => {
                        live.seed(snap);
                        live.last_message.set(Some(chrono::Utc::now()));
                        live.conn.set(ConnState::Live);
                    }
                    Err(e) => leptos::logging::error!("spotboard: bad snapshot: {e}"),
                }
            }
        })
    };
    let on_delta = {
        let (scope, inbox) = (scope.clone(), inbox.clone());
        Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
            if let Some(text) = data_of(&ev) {
                receive(live, &scope, &inbox, text);
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
            inbox,
            _handlers: handlers,
        })
    });
}

fn data_of(ev: &Event) -> Option<String> {
    ev.dyn_ref::<MessageEvent>()?.data().as_string()
}
