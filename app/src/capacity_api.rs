//! The Capacity Finder's server function and the seam through which the server supplies the
//! grid (`/capacity` itself gets the grid's cells on the live stream). The Capacity Finder's ranking is the pure [`rank`](crate::domain::capacity::rank) over
//! that grid, so the page, `GET /api/v1/capacity-finder` and the tests agree.

use leptos::prelude::*;

use crate::json_text::Json;
use crate::model::FinderResult;

/// What the server provides (by Leptos context): the current capacity grid.
#[cfg(feature = "ssr")]
pub trait CapacityReader: Send + Sync {
    /// The grid built from the clusters and feeds as they are now.
    fn grid(&self) -> crate::model::CapacityGrid;
}

/// The context value carrying the server's [`CapacityReader`].
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct CapacityReaderHandle(pub std::sync::Arc<dyn CapacityReader>);

#[cfg(feature = "ssr")]
fn reader() -> Result<CapacityReaderHandle, crate::api_error::ApiError> {
    use_context::<CapacityReaderHandle>()
        .ok_or_else(|| crate::api_error::ApiError::internal("no capacity reader in context"))
}

/// Zones ranked for `instance_type` × `count`, optionally within `region`.
///
/// Errors: a server error only when the server was wired without a capacity reader.
#[server(endpoint = "capacity_finder", input = Json, output = Json)]
pub async fn find_capacity(
    instance_type: String,
    count: u32,
    region: Option<String>,
) -> Result<FinderResult, crate::api_error::ApiError> {
    let grid = reader()?.0.grid();
    Ok(crate::domain::capacity::rank(
        &grid,
        &instance_type,
        count,
        region.as_deref().filter(|r| !r.is_empty()),
        chrono::Utc::now(),
    ))
}
