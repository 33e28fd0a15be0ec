//! The preemptions page's server function (the pod lookup) and the seam through which the
//! server supplies it. Timelines, waves, rates and the readiness audit arrive on the live
//! stream.

use leptos::prelude::*;

use crate::json_text::Json;
use crate::model::PodHit;

/// What the server provides (by Leptos context): the ledger's pod hits.
#[cfg(feature = "ssr")]
pub trait PreemptionSource: Send + Sync {
    /// The preemptions that hit pods of `namespace` named `name…`, from the ledger.
    fn pod_hits<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> crate::create_api::BoxFuture<'a, spotboard_core::Result<Vec<PodHit>>>;
}

/// The context value carrying the server's [`PreemptionSource`].
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct PreemptionSourceHandle(pub std::sync::Arc<dyn PreemptionSource>);

/// "Why did my pod stop?": the preemptions that hit pods of `namespace` named `name…`, newest
/// first, from the ledger (kept beyond Kubernetes' event TTL).
///
/// Errors: a namespace or name that is not a Kubernetes name (400); the ledger could not be
/// read (503).
#[server(endpoint = "pod_hits", input = Json, output = Json)]
pub async fn find_pod_hits(
    namespace: String,
    name: String,
) -> Result<Vec<PodHit>, crate::api_error::ApiError> {
    crate::domain::preemption::readiness::pod_lookup(&namespace, &name)
        .map_err(crate::api_error::ApiError::invalid)?;
    let source = use_context::<PreemptionSourceHandle>()
        .ok_or_else(|| crate::api_error::ApiError::internal("no preemption source in context"))?;
    source
        .0
        .pod_hits(&namespace, &name)
        .await
        .map_err(crate::api_error::ApiError::from)
}
