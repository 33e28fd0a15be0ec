//! What a person typed or chose in a server-rendered form before the page hydrated.
//!
//! The server renders every form, so a person can type into it while the wasm (or a lazy
//! route's part of it) is still loading. Hydration then sets each `prop:value` and
//! `prop:checked` to its signal's value, which wipes what was typed, with no sign; and the
//! form's `on:input` handlers were not there to see it. [`keep_typed`] puts it back.

/// Keeps the values typed or chosen before hydration in the controls `selector` matches
/// (a CSS selector such as `"[data-testid=pod-lookup] input"`).
///
/// Call it in the body of the component that builds those controls: a component's body runs
/// before its view hydrates, so the controls still hold what the person did. It notes every
/// control whose value (or checked state) differs from what the server rendered; once the view
/// has hydrated it writes those back and fires `input` and `change` on each, so the form's own
/// handlers take them into its state as if they had just been typed. A control the server
/// rendered with the same value is left alone. On the server, and on a page rendered in the
/// browser (nothing was typed yet), it does nothing.
pub fn keep_typed(selector: &'static str) {
    #[cfg(feature = "hydrate")]
    browser::keep_typed(selector);
    #[cfg(not(feature = "hydrate"))]
    let _ = selector;
}

#[cfg(feature = "hydrate")]
mod browser {
    use leptos::prelude::*;
    use wasm_bindgen::JsCast;
    use web_sys::{
        Element, Event, EventInit, HtmlInputElement, HtmlSelectElement, HtmlTextAreaElement,
    };

    /// A control's state that differs from the server's rendering.
    enum Typed {
        Value(String),
        Checked(bool),
    }

    pub fn keep_typed(selector: &'static str) {
        let typed: Vec<(Element, Typed)> = controls(selector)
            .into_iter()
            .filter_map(|el| changed(&el).map(|t| (el, t)))
            .collect();
        if typed.is_empty() {
            return;
        }
        Effect::new(move |_| {
            for (el, t) in typed.iter() {
                if el.is_connected() {
                    restore(el, t);
                }
            }
        });
    }

    fn controls(selector: &str) -> Vec<Element> {
        let Some(found) = document().query_selector_all(selector).ok() else {
            return Vec::new();
        };
        (0..found.length())
            .filter_map(|i| found.item(i)?.dyn_into::<Element>().ok())
            .collect()
    }

    fn changed(el: &Element) -> Option<Typed> {
        if let Some(i) = el.dyn_ref::<HtmlInputElement>() {
            return match i.type_().as_str() {
                "checkbox" | "radio" => {
                    (i.checked() != i.default_checked()).then(|| Typed::Checked(i.checked()))
                }
                _ => (i.value() != i.default_value()).then(|| Typed::Value(i.value())),
            };
        }
        if let Some(t) = el.dyn_ref::<HtmlTextAreaElement>() {
            return (Ok(t.value()) != t.default_value()).then(|| Typed::Value(t.value()));
        }
        let s = el.dyn_ref::<HtmlSelectElement>()?;
        let options = s.options();
        // The server's choice: the option rendered `selected`, else the first one.
        let rendered = (0..options.length())
            .filter_map(|i| {
                options
                    .item(i)?
                    .dyn_into::<web_sys::HtmlOptionElement>()
                    .ok()
            })
            .find(|o| o.default_selected())
            .map(|o| o.value())
            .or_else(|| {
                options
                    .item(0)?
                    .dyn_into::<web_sys::HtmlOptionElement>()
                    .ok()
                    .map(|o| o.value())
            });
        (Some(s.value()) != rendered).then(|| Typed::Value(s.value()))
    }

    fn restore(el: &Element, typed: &Typed) {
        match typed {
            Typed::Checked(on) => {
                if let Some(i) = el.dyn_ref::<HtmlInputElement>() {
                    i.set_checked(*on);
                }
            }
            Typed::Value(v) => {
                if let Some(i) = el.dyn_ref::<HtmlInputElement>() {
                    i.set_value(v);
                } else if let Some(t) = el.dyn_ref::<HtmlTextAreaElement>() {
                    t.set_value(v);
                } else if let Some(s) = el.dyn_ref::<HtmlSelectElement>() {
                    s.set_value(v);
                }
            }
        }
        for kind in ["input", "change"] {
            let init = EventInit::new();
            init.set_bubbles(true);
            if let Ok(ev) = Event::new_with_event_init_dict(kind, &init) {
                let _ = el.dispatch_event(&ev);
            }
        }
    }
}
