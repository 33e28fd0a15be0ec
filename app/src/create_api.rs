//! The create form's server functions and the seam through which the server does the work.
//!
//! Both functions take JSON (`input = Json`) so scripts can call them as the form does:
//! `POST /api/create_access` and `POST /api/submit_pool`. The server checks Origin in front of
//! them and maps undecodable bodies to 400 (see the server's `http::guard`).

use leptos::prelude::*;

use crate::json_text::Json;
use crate::model::{CreateAccess, PoolDraft, SubmitMode, SubmitOutcome};

/// A boxed future, for the object-safe [`PoolWriter`].
#[cfg(feature = "ssr")]
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// What the server provides (by Leptos context) to create pools with the user's identity.
#[cfg(feature = "ssr")]
pub trait PoolWriter: Send + Sync {
    /// Whether the user behind `request` (its headers, and what the server's layers put in
    /// its extensions, such as the client it came from) may create NodePools, per cluster.
    fn access<'a>(&'a self, request: &'a http::request::Parts) -> BoxFuture<'a, CreateAccess>;

    /// Validates `draft`, then dry-runs or creates it as the user behind `request`.
    /// `confirm` is the pool name typed again, required for large pools.
    fn submit<'a>(
        &'a self,
        request: &'a http::request::Parts,
        draft: PoolDraft,
        mode: SubmitMode,
        confirm: Option<String>,
    ) -> BoxFuture<'a, SubmitOutcome>;
}

/// The context value carrying the server's [`PoolWriter`].
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct PoolWriterHandle(pub std::sync::Arc<dyn PoolWriter>);

#[cfg(feature = "ssr")]
async fn writer_and_request()
-> Result<(PoolWriterHandle, http::request::Parts), crate::api_error::ApiError> {
    let writer = use_context::<PoolWriterHandle>()
        .ok_or_else(|| crate::api_error::ApiError::internal("no pool writer in context"))?;
    let request: http::request::Parts = leptos_axum::extract()
        .await
        .map_err(|e| crate::api_error::ApiError::internal(e.to_string()))?;
    Ok((writer, request))
}

/// Whether the current user may create NodePools, per cluster.
///
/// Errors: a server error only when the server was wired without a pool writer (a defect).
#[server(endpoint = "create_access", input = Json, output = Json)]
pub async fn load_create_access() -> Result<CreateAccess, crate::api_error::ApiError> {
    let (writer, request) = writer_and_request().await?;
    Ok(writer.0.access(&request).await)
}

/// Validates `draft` and, when valid, dry-runs (`mode: dryRun`) or creates it with the user's
/// identity. Refusals (invalid fields, no permission, rate limit, the API server's verdict)
/// are an `Ok` outcome with `accepted: false`; only wiring defects are errors.
#[server(endpoint = "submit_pool", input = Json, output = Json)]
pub async fn submit_pool(
    draft: PoolDraft,
    mode: SubmitMode,
    confirm: Option<String>,
) -> Result<SubmitOutcome, crate::api_error::ApiError> {
    let (writer, request) = writer_and_request().await?;
    Ok(writer.0.submit(&request, draft, mode, confirm).await)
}
