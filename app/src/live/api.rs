//! The snapshot server function and the seam through which the server supplies its data.

use leptos::prelude::*;

use crate::json_text::Json;
use crate::model::{Scope, Snapshot};

/// What the server provides (by Leptos context) for [`get_snapshot`]: the hub's current
/// state for a scope.
#[cfg(feature = "ssr")]
pub trait SnapshotSource: Send + Sync {
    /// Everything in `scope` at the current revision.
    fn snapshot(&self, scope: &Scope) -> Snapshot;
}

/// The context value carrying the server's [`SnapshotSource`].
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct SnapshotSourceHandle(pub std::sync::Arc<dyn SnapshotSource>);

/// The current snapshot of `scope`.
///
/// Errors: a server error when the server was started without a snapshot source (a wiring
/// defect, not a user error).
// JSON, not the default form encoding: the dashboard's scope (`pool: None`) encodes to an
// empty form, which the server cannot tell from a missing argument.
#[server(endpoint = "snapshot", input = Json, output = Json)]
pub async fn get_snapshot(scope: Scope) -> Result<Snapshot, crate::api_error::ApiError> {
    let source = use_context::<SnapshotSourceHandle>()
        .ok_or_else(|| crate::api_error::ApiError::internal("no snapshot source in context"))?;
    Ok(source.0.snapshot(&scope))
}
