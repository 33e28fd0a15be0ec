//! The browser side of the live stream: one EventSource per tab, applying keyed deltas to
//! keyed stores so that one changed row re-renders one row.
//!
//! Flow: a page asks for its [`Scope`](crate::model::Scope) with [`use_live`]; the snapshot
//! comes from the [`get_snapshot`] server function (rendered into the page on SSR, reused on
//! hydration), then `source` opens `GET /api/v1/stream?since=<rev>` and applies deltas. The
//! browser's EventSource reconnects by itself and sends `Last-Event-ID`, so the server replays
//! what was missed, or sends a fresh snapshot when it no longer has it.

mod api;
pub mod patch;
#[cfg(feature = "hydrate")]
mod source;
mod store;

pub use api::*;
pub use store::*;

use leptos::prelude::*;

use crate::model::Scope;

/// Loads the snapshot of `scope` into the tab's [`LiveStore`] and keeps it live.
///
/// Returns the snapshot resource, so pages can show a loading state until it resolves and an
/// error if it fails.
pub fn use_live(scope: impl Fn() -> Scope + Send + Sync + 'static) -> Resource<Result<u64, ServerFnError>> {
    let live = expect_context::<LiveStore>();
    let scope = Memo::new(move |_| scope());
    let snapshot = Resource::new(
        move || scope.get(),
        move |scope| async move {
            let snap = get_snapshot(scope).await?;
            let rev = snap.rev;
            live.seed(snap);
            Ok(rev)
        },
    );
    #[cfg(feature = "hydrate")]
    {
        Effect::new(move |_| {
            if let Some(Ok(rev)) = snapshot.get() {
                source::connect(live, scope.get_untracked(), rev);
            }
        });
        on_cleanup(source::disconnect);
    }
    snapshot
}
