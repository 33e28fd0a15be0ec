//! HTTP: the pages (Leptos SSR), the live stream, the JSON API, health, and the guards in
//! front of them.
//!
//! # Layout
//! - `api`: `GET /api/v1/pools`, `GET /api/v1/pools/{cluster}/{name}`.
//! - `capacity`: `GET /api/v1/capacity`, `GET /api/v1/capacity-finder`.
//! - `preemptions`: `GET /api/v1/preemptions`, `GET /api/v1/readiness`.
//! - `metrics`: `GET /metrics`, here and alone on `--metrics-listen`.
//! - `savings`: `GET /api/v1/prices`, `/api/v1/savings[.csv]`, `/api/v1/ledger[.csv]`.
//! - `survival`: `GET /api/v1/survival` (spot nodes' survival curves), `GET /api/v1/checkpoint`
//!   (Young's checkpoint interval from a pool's curve).
//! - `stream`: `GET /api/v1/stream` (Server-Sent Events: snapshot, then keyed deltas).
//! - `streams`: open streams per client, limited.
//! - `validate`: `POST /api/v1/pools/validate` (lint a NodePool manifest).
//! - `drill`: `POST /api/v1/drill` (the preemption drill, as the user).
//! - `guard`: Host allowlist, trusted-proxy authentication, Origin check, 400 for server
//!   function bodies that do not decode.
//! - `hosts`: the Host names spotboard answers to (DNS rebinding).
//! - `proxy`: the authenticating proxy and when its headers are believed.
//! - `serve`: the accept loop (header and body deadlines, connections in all and per peer,
//!   peer address, graceful stop).
//! - `health`: `/healthz`, `/readyz`.

mod allocation;
mod api;
mod capacity;
mod drill;
mod guard;
mod health;
mod hosts;
pub mod metrics;
mod preemptions;
mod proxy;
mod savings;
mod serve;
mod showback;
pub mod site;
mod stream;
mod streams;
mod survival;
mod validate;
mod waiting;

use std::sync::Arc;

use app::{
    App, capacity_api::CapacityReaderHandle, create_api::PoolWriterHandle, demo_api::DemoHandle,
    live::SnapshotSourceHandle, preemptions_api::PreemptionSourceHandle,
    savings_api::SavingsSourceHandle, shell,
};
use axum::{
    Router,
    extract::FromRef,
    http::header,
    routing::{get, post},
};
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes, generate_route_list};

use crate::{hub::Hub, ledger::Savings, preemption::PreemptionWatch};

pub use guard::GuardSettings;
pub use hosts::AllowedHosts;
pub use proxy::{Auth, Proxy, SECRET_HEADER};
pub use serve::{BODY_TIMEOUT, CONNECTIONS_PER_PEER, HEADER_READ_TIMEOUT, Limits, serve};
pub use streams::{ClientKey, StreamSlots};

/// Turns true once the server is asked to stop; live streams end on it, so a graceful
/// shutdown does not wait for browsers that would never hang up.
#[derive(Clone)]
pub struct Shutdown(pub tokio::sync::watch::Receiver<bool>);

/// The Content-Security-Policy of every response.
///
/// - `frame-ancestors 'none'` (and `X-Frame-Options: DENY` for older browsers): no page of
///   another site may frame ours; `/pools/new?…` pre-fills the form, so a framing page was two
///   clicks from a create as the local user.
/// - Scripts from our origin only, plus inline ones: Leptos writes its hydration bootstrap and
///   each resource's data as inline `<script>`s that differ per page and per render, so a
///   hash cannot name them; a nonce (leptos' `use_nonce`) could, and is the next step.
///   `'wasm-unsafe-eval'` lets the page compile its wasm, nothing else (no `eval`).
/// - Styles from our origin plus inline ones (Leptos and ECharts set `style` attributes).
/// - ECharts (`/vendor`), the wasm and its lazily loaded parts (`/pkg`) are on our origin;
///   the live stream and server functions go to our origin (`connect-src 'self'`).
/// - `img-src data: blob:`: ECharts' "save as image" makes a data URL.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; \
     script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; \
     font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// Largest request body accepted (server functions, later the create form).
pub const BODY_LIMIT_BYTES: usize = 64 * 1024;

/// What every handler can reach.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub hub: Hub,
    pub leptos_options: LeptosOptions,
    pub guard: GuardSettings,
    /// Creates pools for users (the create form's server functions).
    pub writer: PoolWriterHandle,
    /// Plays preemptions on the embedded cluster (none with real clusters).
    pub demo: DemoHandle,
    /// The capacity grid (capacity pages and API).
    pub capacity: CapacityReaderHandle,
    /// The ledger and prices (savings page and API).
    pub savings: Arc<Savings>,
    /// Live preemptions (page, API, metrics).
    pub preemptions: PreemptionWatch,
    /// Open live streams per client.
    pub streams: Arc<StreamSlots>,
    /// Ends live streams when the server stops.
    pub shutdown: Shutdown,
    /// Preemption drills, as the user.
    pub drills: Arc<crate::drill::Driller>,
    /// GPU utilisation from Prometheus (`--prometheus-url`); `None` without it.
    pub dcgm: Option<crate::dcgm::DcgmReader>,
}

/// A layer setting `name: value` on every response (replacing a handler's own).
fn set_header(
    name: header::HeaderName,
    value: &'static str,
) -> tower_http::set_header::SetResponseHeaderLayer<header::HeaderValue> {
    tower_http::set_header::SetResponseHeaderLayer::overriding(
        name,
        header::HeaderValue::from_static(value),
    )
}

/// The whole router.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let hub = state.hub.clone();
    let options = state.leptos_options.clone();
    let writer = state.writer.clone();
    let demo = state.demo.clone();
    let capacity = state.capacity.clone();
    let savings = state.savings.clone();
    let preemptions = state.preemptions.clone();
    let drills = state.drills.clone();
    let utilisation = Arc::new(crate::dcgm::PoolUtilisationSource {
        hub: hub.clone(),
        dcgm: state.dcgm.clone(),
    });
    Router::new()
        .route("/api/v1/pools", get(api::pools))
        .route("/api/v1/allocation", get(allocation::allocation))
        .route("/api/v1/waiting", get(waiting::waiting))
        .route("/api/v1/kueue", get(waiting::kueue))
        .route("/api/v1/pools/validate", post(validate::validate))
        .route("/api/v1/pools/{cluster}/{name}", get(api::pool))
        .route(
            "/api/v1/pools/{cluster}/{name}/conditions",
            get(savings::pool_conditions),
        )
        .route("/api/v1/stream", get(stream::stream))
        .route("/api/v1/capacity", get(capacity::grid))
        .route("/api/v1/prices", get(savings::prices))
        .route("/api/v1/preemptions", get(preemptions::list))
        .route("/api/v1/readiness", get(preemptions::readiness))
        .route("/metrics", get(metrics::metrics))
        .route("/api/v1/savings", get(savings::savings))
        .route("/api/v1/savings.csv", get(savings::savings_csv))
        .route("/api/v1/showback", get(showback::showback))
        .route("/api/v1/showback.csv", get(showback::showback_csv))
        .route("/api/v1/fallback", get(savings::fallback))
        .route("/api/v1/ledger", get(savings::ledger))
        .route("/api/v1/ledger.csv", get(savings::ledger_csv))
        .route("/api/v1/ledger/pods", get(savings::ledger_pods))
        .route("/api/v1/ledger/conditions", get(savings::ledger_conditions))
        .route("/api/v1/ledger/pod-hits", get(savings::ledger_pod_hits))
        .route("/api/v1/capacity-finder", get(capacity::finder))
        .route("/api/v1/survival", get(survival::survival))
        .route("/api/v1/checkpoint", get(survival::checkpoint))
        .route("/api/v1/drill", post(drill::drill))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .leptos_routes_with_context(
            &state,
            routes,
            move || {
                provide_context(SnapshotSourceHandle(Arc::new(hub.clone())));
                provide_context(writer.clone());
                provide_context(demo.clone());
                provide_context(capacity.clone());
                provide_context(SavingsSourceHandle(savings.clone()));
                provide_context(PreemptionSourceHandle(Arc::new(preemptions.clone())));
                provide_context(app::drill_api::DrillRunnerHandle(drills.clone()));
                provide_context(app::allocation_api::UtilisationSourceHandle(
                    utilisation.clone(),
                ));
            },
            move || shell(options.clone()),
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(axum::middleware::from_fn(guard::undecodable_is_bad_request))
        .layer(axum::middleware::from_fn_with_state(
            state.guard.clone(),
            guard::guard,
        ))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(
            BODY_LIMIT_BYTES,
        ))
        // gzip for pages, the JSON API and the wasm and JS a first visit downloads (the wasm
        // is ~3 MB, ~1 MB gzipped) when the browser asks for it; tower-http's default
        // predicate leaves the SSE stream (text/event-stream), images and small bodies alone.
        // Compressing a server-side rendered page needs the deeper worker stacks of
        // [`crate::run::runtime`] in debug builds.
        .layer(tower_http::compression::CompressionLayer::new())
        // The framing, content and referrer headers on every response (pages, static files,
        // the API, and the guard's own refusals: outside every other layer). See
        // [`CONTENT_SECURITY_POLICY`].
        .layer(set_header(
            header::CONTENT_SECURITY_POLICY,
            CONTENT_SECURITY_POLICY,
        ))
        .layer(set_header(header::X_FRAME_OPTIONS, "DENY"))
        .layer(set_header(header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        // No page address (which names clusters and pools) leaves with a link.
        .layer(set_header(header::REFERRER_POLICY, "no-referrer"))
        .with_state(state)
}
