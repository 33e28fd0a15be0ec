//! spotboard's shared crate: the UI (Leptos, SSR + hydrate), the view types that cross the
//! wire, and the pure domain logic both sides use.
//!
//! # Layout
//! - [`nodepool`]: CoreWeave's `NodePool` CRD as Rust types (the `kube` derive only under `ssr`).
//! - [`labels`]: CKS label, annotation and event names from CoreWeave's docs (`docs/sources.md`).
//! - [`catalog`]: the shipped instance types and zones, with their source and date.
//! - [`model`]: the rows and stream messages the browser receives.
//! - [`domain`]: pure logic: condition severity, what makes a pool a problem, filters and sorting.
//! - [`capacity_api`]: the capacity pages' server functions and the server-side seam.
//! - [`create_api`]: the create form's server functions and the server-side seam behind them.
//! - [`live`]: the browser side of the stream: merge patches, keyed stores, connection state.
//! - [`preemptions_api`]: the preemptions page's server function and the server-side seam.
//! - [`savings_api`]: the savings page's server function and the server-side seam.
//! - [`api_error`]: the typed error of every server function, with its HTTP status.
//! - [`json_text`]: the server functions' JSON encoding (one JSON reader in the wasm).
//! - [`pages`] and [`components`]: what a person sees.
//! - [`error`]: this crate's error type.

#![recursion_limit = "256"]

pub mod api_error;
pub mod capacity_api;
pub mod catalog;
pub mod components;
pub mod create_api;
pub mod domain;
pub mod error;
pub mod json_text;
pub mod labels;
pub mod live;
pub mod model;
pub mod nodepool;
pub mod pages;
pub mod preemptions_api;
pub mod savings_api;
mod shell;

pub use error::{Error, Result};
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
