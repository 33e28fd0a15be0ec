//! spotboard's UI (Leptos, SSR + hydrate): pages, components, the browser's live store and the
//! server functions, over `spotboard-core` (the data shapes and pure logic, which the server
//! and the embedded cluster use without this crate).
//!
//! # Layout
//! - [`capacity_api`]: the capacity pages' server functions and the server-side seam.
//! - [`create_api`]: the create form's server functions and the server-side seam behind them.
//! - [`demo_api`]: "Play a preemption" on the embedded cluster (server functions and seam).
//! - [`live`]: the browser side of the stream: keyed stores fed by deltas, connection state.
//! - [`preemptions_api`]: the preemptions page's server function and the server-side seam.
//! - [`savings_api`]: the savings page's server function and the server-side seam.
//! - [`api_error`]: this crate's error, [`ApiError`]: what every server function returns, with
//!   its HTTP status.
//! - [`json_text`]: the server functions' JSON encoding (one JSON reader in the wasm).
//! - [`pages`] and [`components`]: what a person sees.

#![recursion_limit = "256"]

pub mod allocation_api;
pub mod api_error;
pub mod capacity_api;
pub mod components;
pub mod create_api;
pub mod demo_api;
pub mod drill_api;
pub mod json_text;
pub mod live;
pub mod pages;
pub mod preemptions_api;
pub mod savings_api;
mod shell;

// The core's modules under their own names, so this crate's code reads `crate::model::PoolRow`
// as it did before they moved; not re-exported (the server imports `spotboard_core` itself).
use spotboard_core::{catalog, domain, model, nodepool};

pub use api_error::{ApiError, Result};
pub use shell::{App, shell};

/// The browser entry point: hydrates the server-rendered page, once the part of the wasm its
/// route needs has loaded (the routes other than `/` are lazy: `pages::lazy`).
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_lazy(App);
}

/// Slack in the wasm's read-only data for the split step (`spotboard-site split`).
///
/// The splitter lays each part's data out again, aligned part by part, and where that comes
/// out even a few bytes longer than the linker's own layout it gives up and keeps all the
/// read-only data (every page's strings, some 80 KB) in the main wasm. These bytes are
/// referenced by no code, so no part takes them: they only lengthen the linker's layout. A
/// build measured 2026-11-26 came out 49 bytes over without them.
#[cfg(feature = "hydrate")]
#[used]
static SPLIT_DATA_SLACK: [u8; 4096] = [0x5b; 4096];
