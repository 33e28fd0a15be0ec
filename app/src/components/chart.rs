//! Charts: charming builds the ECharts option (pure, testable); the browser draws it with
//! ECharts, which is served from our own origin at [`ECHARTS_SRC`] (copied from the npm
//! package by `tasks.sh`; no CDN).

/// Where the page loads ECharts from.
pub const ECHARTS_SRC: &str = "/vendor/echarts.min.js";

/// Draws `chart` into the element `id` once ECharts has loaded (it is a separate script that
/// may arrive after the wasm), retrying every 100 ms up to `tries_left` times.
#[cfg(feature = "hydrate")]
pub fn draw(id: &'static str, chart: charming::Chart, tries_left: u32) {
    let loaded = web_sys::window()
        .map(|w| js_sys::Reflect::has(&w, &"echarts".into()).unwrap_or(false))
        .unwrap_or(false);
    if loaded {
        if let Err(e) = charming::WasmRenderer::new_opt(None, Some(320)).render(id, &chart) {
            leptos::logging::warn!("chart {id}: {e:?}");
        }
    } else if tries_left > 0 {
        leptos::prelude::set_timeout(
            move || draw(id, chart, tries_left - 1),
            std::time::Duration::from_millis(100),
        );
    }
}
