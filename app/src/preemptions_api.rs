//! The preemptions page's server function and the seam through which the server supplies
//! its live preemption state.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::model::{PodHit, Preemptions, Readiness};

/// What the server provides (by Leptos context): preemptions now.
#[cfg(feature = "ssr")]
pub trait PreemptionSource: Send + Sync {
    /// Preemptions now, with the ledger's rates.
    fn preemptions(&self) -> crate::create_api::BoxFuture<'_, Preemptions>;
    /// The spot readiness audit, at most a few seconds old.
    fn readiness(&self) -> crate::create_api::BoxFuture<'_, Readiness>;
    /// The preemptions that hit pods of `namespace` named `name…`, from the ledger.
    fn pod_hits<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> crate::create_api::BoxFuture<'a, Result<Vec<PodHit>, String>>;
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

/// The spot readiness audit of every pool with spot nodes.
///
/// Errors: a server error only when the server was wired without a preemption source; a
/// cluster that could not be read is named in the result's `errors`.
#[server(endpoint = "readiness", input = Json)]
pub async fn load_readiness() -> Result<Readiness, ServerFnError> {
    let source = use_context::<PreemptionSourceHandle>()
        .ok_or_else(|| ServerFnError::new("no preemption source in context"))?;
    Ok(source.0.readiness().await)
}

/// "Why did my pod stop?": the preemptions that hit pods of `namespace` named `name…`, newest
/// first, from the ledger (kept beyond Kubernetes' event TTL).
///
/// Errors: a namespace or name that is not a Kubernetes name (400); the ledger could not be
/// read (503).
#[server(endpoint = "pod_hits", input = Json)]
pub async fn find_pod_hits(namespace: String, name: String) -> Result<Vec<PodHit>, ServerFnError> {
    crate::domain::preemption::readiness::pod_lookup(&namespace, &name)
        .map_err(crate::refusal::invalid)?;
    let source = use_context::<PreemptionSourceHandle>()
        .ok_or_else(|| ServerFnError::new("no preemption source in context"))?;
    source
        .0
        .pod_hits(&namespace, &name)
        .await
        .map_err(crate::refusal::unavailable)
}
