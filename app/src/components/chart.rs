//! Charts: charming builds the ECharts option (pure, testable); the browser draws it with
//! ECharts, which is served from our own origin at [`ECHARTS_SRC`] (copied from the npm
//! package by `tasks.sh`; no CDN).

/// Where the page loads ECharts from.
pub const ECHARTS_SRC: &str = "/vendor/echarts.min.js";

/// Draws `chart` into the element `id` in the page's light or dark theme, once ECharts has
/// loaded (it is a separate script that may arrive after the wasm). Call it inside an
/// `Effect`: the effect then re-runs when the theme changes. New data updates the chart in
/// place; a new theme redraws it. Pair it with [`dispose_on_unmount`] in the component.
#[cfg(feature = "hydrate")]
pub fn draw(id: &'static str, chart: charming::Chart) {
    let dark = leptos::prelude::use_context::<crate::components::header::Theme>()
        .is_some_and(|t| t.is_dark());
    draw_when_loaded(id, chart, dark, 50);
}

/// Disposes the chart in element `id` when the calling component unmounts: an ECharts
/// instance otherwise outlives its element, with its listeners and canvas.
pub fn dispose_on_unmount(id: &'static str) {
    #[cfg(feature = "hydrate")]
    leptos::prelude::on_cleanup(move || {
        if let Some(el) = element(id) {
            let _ = echarts_dispose(&el);
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = id;
}

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// `echarts.dispose(element)`; throws when ECharts has not loaded.
    #[wasm_bindgen(catch, js_namespace = echarts, js_name = dispose)]
    fn echarts_dispose(element: &web_sys::Element) -> Result<(), wasm_bindgen::JsValue>;
    /// `echarts.getInstanceByDom(element)`: the instance drawn there, or `undefined`.
    #[wasm_bindgen(catch, js_namespace = echarts, js_name = getInstanceByDom)]
    fn echarts_instance(
        element: &web_sys::Element,
    ) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue>;
}

#[cfg(feature = "hydrate")]
fn element(id: &str) -> Option<web_sys::Element> {
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
}

/// The element's attribute naming the theme its chart was drawn in.
#[cfg(feature = "hydrate")]
const DRAWN_THEME: &str = "data-chart-theme";

/// Retries every 100 ms up to `tries_left` times while ECharts is not loaded yet.
#[cfg(feature = "hydrate")]
fn draw_when_loaded(id: &'static str, chart: charming::Chart, dark: bool, tries_left: u32) {
    use wasm_bindgen::JsCast;
    let loaded = web_sys::window()
        .map(|w| js_sys::Reflect::has(&w, &"echarts".into()).unwrap_or(false))
        .unwrap_or(false);
    if !loaded {
        if tries_left > 0 {
            leptos::prelude::set_timeout(
                move || draw_when_loaded(id, chart, dark, tries_left - 1),
                std::time::Duration::from_millis(100),
            );
        }
        return;
    }
    let Some(el) = element(id) else { return };
    let theme_name = if dark { "dark" } else { "light" };
    // The card behind the chart gives the background in both themes.
    let chart = chart.background_color("transparent");
    let current = echarts_instance(&el)
        .ok()
        .filter(|i| !i.is_undefined() && !i.is_null());
    if let Some(instance) = current {
        if el.get_attribute(DRAWN_THEME).as_deref() == Some(theme_name) {
            charming::WasmRenderer::update(&instance.unchecked_into(), &chart);
            return;
        }
        // ECharts keeps an element's first theme: another theme needs a new instance.
        let _ = echarts_dispose(&el);
    }
    let theme = if dark {
        charming::theme::Theme::Dark
    } else {
        charming::theme::Theme::Default
    };
    match charming::WasmRenderer::new_opt(None, Some(320))
        .theme(theme)
        .render(id, &chart)
    {
        Ok(_) => {
            let _ = el.set_attribute(DRAWN_THEME, theme_name);
        }
        Err(e) => leptos::logging::warn!("chart {id}: {e:?}"),
    }
}
