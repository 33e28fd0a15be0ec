//! The preemption drill's server function and the seam through which the server runs drills
//! (`POST /api/drill`, the same as `POST /api/v1/drill` minus the status codes: a refusal is
//! an `Ok` outcome with `refusal` set).

use leptos::prelude::*;

use crate::json_text::Json;
use crate::model::{DrillOutcome, DrillRequest};

/// What the server provides (by Leptos context) to run drills with the user's identity.
#[cfg(feature = "ssr")]
pub trait DrillRunner: Send + Sync {
    /// Plans, starts or aborts a drill as the user behind `request`.
    fn drill<'a>(
        &'a self,
        request: &'a http::request::Parts,
        req: DrillRequest,
    ) -> crate::create_api::BoxFuture<'a, DrillOutcome>;
}

/// The context value carrying the server's [`DrillRunner`].
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct DrillRunnerHandle(pub std::sync::Arc<dyn DrillRunner>);

/// Plans (`mode: dryRun`), starts (`run`, with `confirm` equal to the node's name) or aborts
/// a preemption drill on one spot node, as the user.
///
/// Errors: a server error only when the server was wired without a drill runner (a defect).
#[server(endpoint = "drill", input = Json, output = Json)]
pub async fn run_drill(req: DrillRequest) -> Result<DrillOutcome, crate::api_error::ApiError> {
    let runner = use_context::<DrillRunnerHandle>()
        .ok_or_else(|| crate::api_error::ApiError::internal("no drill runner in context"))?;
    let request: http::request::Parts = leptos_axum::extract()
        .await
        .map_err(|e| crate::api_error::ApiError::internal(e.to_string()))?;
    Ok(runner.0.drill(&request, req).await)
}
