//! The browser side of the live stream: one EventSource per tab, applying keyed deltas to
//! keyed stores so that one changed row re-renders one row.
//!
//! Flow: a page asks for its [`Scope`](crate::model::Scope) with [`use_live`]; the snapshot
//! comes from the [`get_snapshot`] server function (rendered into the page on SSR, reused on
//! hydration), then `source` opens `GET /api/v1/stream?since=<rev>` and applies deltas. The
//! browser's EventSource reconnects by itself and sends `Last-Event-ID`, so the server replays
//! what was missed, or sends a fresh snapshot when it no longer has it.

mod api;
#[cfg(any(feature = "hydrate", test))]
mod inbox;

#[cfg(feature = "hydrate")]
mod source;
mod store;
pub use api::*;
pub use store::*;

use leptos::prelude::*;

use crate::model::{Scope, Snapshot};

/// The snapshot of `scope`, kept live once the page has it.
///
/// The resource's value is serialized into the server-rendered page, so a hydrating browser
/// has the same snapshot without asking again. Pages render their store-backed parts inside
/// `<Suspense>` after calling [`LiveStore::adopt`] with it, so server and browser render from
/// the same rows. In the browser, the stream then opens after the snapshot's revision.
pub fn use_live(
    scope: impl Fn() -> Scope + Send + Sync + 'static,
) -> Resource<Result<Snapshot, crate::api_error::ApiError>> {
    let scope = Memo::new(move |_| scope());
    let snapshot = Resource::new(move || scope.get(), get_snapshot);
    #[cfg(feature = "hydrate")]
    {
        let live = expect_context::<LiveStore>();
        Effect::new(move |_| {
            let rev = snapshot.with(|r| r.as_ref().and_then(|r| r.as_ref().ok()).map(|s| s.rev));
            if let Some(rev) = rev {
                source::connect(
                    live,
                    scope.get_untracked(),
                    rev.max(live.rev.get_untracked()),
                );
            }
        });
        on_cleanup(source::disconnect);
    }
    snapshot
}

/// For pages whose own data is another resource but whose header should be live: adopts the
/// dashboard scope's snapshot once it has loaded. Call inside the page's `<Suspense>` or
/// `<Transition>` so server and browser render alike.
pub fn adopt_pools(
    live: LiveStore,
    snapshot: Resource<Result<Snapshot, crate::api_error::ApiError>>,
) {
    if let Some(Ok(s)) = snapshot.get() {
        live.adopt(&Scope::pools(), &s);
    }
}
