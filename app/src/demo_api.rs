//! The embedded cluster's "Play a preemption": a spot node's row on the pool page starts its
//! provider's preemption, as `kubectl annotate node <name> sim.spotboard.dev/preempt=now`
//! would, through the embedded API server as the local user. With real clusters there is
//! nothing to play: both functions say so (`false`, and 404).

use leptos::prelude::*;

use crate::json_text::Json;

/// What the server provides (by Leptos context) to play preemptions; `None` with real
/// clusters, or when spotboard is not serving the local user (an authenticating proxy).
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct DemoHandle(pub Option<std::sync::Arc<dyn DemoPreempter>>);

/// Starts a spot node's preemption in the embedded cluster.
#[cfg(feature = "ssr")]
pub trait DemoPreempter: Send + Sync {
    /// Starts the preemption of `node` in `cluster`; the error says why not.
    fn preempt<'a>(
        &'a self,
        cluster: &'a str,
        node: &'a str,
    ) -> crate::create_api::BoxFuture<'a, Result<(), crate::api_error::ApiError>>;
}

#[cfg(feature = "ssr")]
fn preempter() -> Option<std::sync::Arc<dyn DemoPreempter>> {
    use_context::<DemoHandle>().and_then(|h| h.0)
}

/// Whether preemptions can be played here (the embedded cluster, served to the local user).
///
/// Errors: none in practice (the signature is a server function's).
#[server(endpoint = "demo_available", input = Json, output = Json)]
pub async fn demo_available() -> Result<bool, crate::api_error::ApiError> {
    Ok(preempter().is_some())
}

/// Starts the preemption of spot node `node` in `cluster` (the embedded cluster only).
///
/// Errors: 404 with real clusters or for an unknown node, 400 for a node that is not spot or
/// is already leaving.
#[server(endpoint = "play_preemption", input = Json, output = Json)]
pub async fn play_preemption(
    cluster: String,
    node: String,
) -> Result<(), crate::api_error::ApiError> {
    match preempter() {
        Some(p) => p.preempt(&cluster, &node).await,
        None => Err(crate::api_error::ApiError::not_found(
            "preemptions are played only on the embedded cluster",
        )),
    }
}
