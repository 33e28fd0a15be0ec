//! The preemptions page's server function and the seam through which the server supplies
//! its live preemption state.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::model::Preemptions;

/// What the server provides (by Leptos context): preemptions now.
#[cfg(feature = "ssr")]
pub trait PreemptionSource: Send + Sync {
    /// Preemptions now, with the ledger's rates.
    fn preemptions(&self) -> crate::create_api::BoxFuture<'_, Preemptions>;
}

/// The context value carrying the server's [`PreemptionSource`].
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct PreemptionSourceHandle(pub std::sync::Arc<dyn PreemptionSource>);

/// Active and recent preemptions, with their timelines and blast radius.
///
/// Errors: a server error only when the server was wired without a preemption source.
#[server(endpoint = "preemptions", input = Json)]
pub async fn load_preemptions() -> Result<Preemptions, ServerFnError> {
    let source = use_context::<PreemptionSourceHandle>()
        .ok_or_else(|| ServerFnError::new("no preemption source in context"))?;
    Ok(source.0.preemptions().await)
}
