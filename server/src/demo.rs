//! "Play a preemption" on the embedded cluster: the seam [`app::demo_api::DemoPreempter`]
//! over the embedded cluster's own [`Preempter`], which annotates the node through the zone's
//! API server with the administrator's token (the local user's, on a loopback spotboard).

use app::api_error::ApiError;
use app::create_api::BoxFuture;
use app::demo_api::DemoPreempter;
use spotboard_embedded::sim::demo::{PreemptError, Preempter};

/// The embedded cluster's preempter, as the pages' server functions see it.
pub struct EmbeddedDemo(pub Preempter);

impl DemoPreempter for EmbeddedDemo {
    fn preempt<'a>(
        &'a self,
        cluster: &'a str,
        node: &'a str,
    ) -> BoxFuture<'a, Result<(), ApiError>> {
        Box::pin(async move {
            match self.0.preempt(cluster, node).await {
                Ok(()) => {
                    tracing::info!(
                        cluster,
                        node,
                        "demo: a preemption played from the pool page"
                    );
                    Ok(())
                }
                Err(e @ (PreemptError::NoCluster(_) | PreemptError::NoNode { .. })) => {
                    Err(ApiError::not_found(e.to_string()))
                }
                Err(e @ (PreemptError::NotSpot(_) | PreemptError::Already(_))) => {
                    Err(ApiError::invalid(e.to_string()))
                }
                Err(PreemptError::Kube(e)) => Err(ApiError::unavailable(format!(
                    "the embedded API server refused: {e}"
                ))),
            }
        })
    }
}
