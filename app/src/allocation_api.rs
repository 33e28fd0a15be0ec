//! The pool page's GPU utilisation: DCGM exporter figures read from Prometheus by the server
//! (`--prometheus-url`), polled by the page beside the live allocation by requests.

use leptos::prelude::*;

use crate::json_text::Json;
use crate::model::PoolUtilisation;

/// What the server provides (by Leptos context): a pool's nodes' utilisation.
#[cfg(feature = "ssr")]
pub trait UtilisationSource: Send + Sync {
    /// The reader's status (`None` without `--prometheus-url`) and the figures of the nodes
    /// of `pool` in `cluster`.
    fn pool(&self, cluster: &str, pool: &str) -> PoolUtilisation;
}

/// The context handle of [`UtilisationSource`].
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct UtilisationSourceHandle(pub std::sync::Arc<dyn UtilisationSource>);

/// The GPU utilisation of the nodes of `pool` in `cluster`, with where it comes from. Cheap:
/// the server answers from its last poll of Prometheus, never by asking it.
///
/// Errors: 500 when the server was wired without a source.
#[server(endpoint = "pool-utilisation", input = Json, output = Json)]
pub async fn load_pool_utilisation(
    cluster: String,
    pool: String,
) -> Result<PoolUtilisation, crate::api_error::ApiError> {
    let source = use_context::<UtilisationSourceHandle>().ok_or_else(|| {
        crate::api_error::ApiError::internal("no utilisation source in this server")
    })?;
    Ok(source.0.pool(&cluster, &pool))
}
