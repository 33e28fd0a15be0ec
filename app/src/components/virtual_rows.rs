//! Long lists drawn near the viewport only: the Node Pools table, a pool's nodes, the
//! preemption cards and the readiness audit's lines. Which rows to draw is
//! [`spotboard_core::domain::virtual_rows::drawn`]; this keeps what it needs up to date from the
//! browser: where the viewport is over the list (on scroll and resize) and how tall each drawn
//! row turned out (after each change of the drawn rows).
//!
//! A list's element has a page-unique `id` and holds a top spacer, the drawn rows, each with
//! `data-row` set to its key, and a bottom spacer, as its children. The server renders the
//! first rows for [`Viewport::INITIAL`], and the browser's first render agrees with it
//! (hydration), then measures.
//!
//! What it costs a person: the browser's find-in-page sees only the drawn rows (the tables'
//! filters search every row); the tables tell a screen reader their whole length
//! (`aria-rowcount`).

use std::collections::HashMap;

use leptos::prelude::*;
use spotboard_core::domain::virtual_rows::{Viewport, drawn};

/// Pixels drawn beyond each edge of the viewport: a scroll the compositor shows before the
/// page's next frame (a wheel notch is about 100 px) shows drawn rows, not a blank. 100 px is
/// 3 table rows, 5 at the compact density; 200 px made that density's rows alone more than
/// the page's 2,000 elements in a 1080-px window.
pub const MARGIN_PX: f64 = 100.0;

/// Lists this long or shorter are drawn whole: their elements are few, and a short list below
/// the fold (a pool's one node under its conditions) is in the page for find-in-page and for
/// a person who reads the page top to bottom. 40 pools-table rows are about 1,400 elements.
pub const DRAW_ALL_UP_TO: usize = 40;

/// What scrolls the list past the viewport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scroll {
    /// The page (the window): the list's element is in the page's flow.
    Page,
    /// The list's element itself, a scroll box (`overflow-y: auto`).
    Own,
}

/// The rows to draw now and the spacers' heights (CSS pixels).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Window {
    /// The keys of the drawn rows, in list order.
    pub keys: Vec<String>,
    /// The top spacer's height.
    pub before: f64,
    /// The bottom spacer's height.
    pub after: f64,
}

/// A list drawn near the viewport: the rows to draw ([`Self::window`]) and what the page
/// calls when the viewport may have moved ([`Self::schedule`]).
#[derive(Clone, Copy)]
pub struct VirtualRows {
    /// The rows to draw and the spacers.
    pub window: Memo<Window>,
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    keys: Memo<Vec<String>>,
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    estimate_px: f64,
    // What the browser measures into; the server only renders the first window.
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    viewport: RwSignal<Viewport>,
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    heights: RwSignal<HashMap<String, f64>>,
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    pending: StoredValue<bool>,
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    scroll: Scroll,
    // The list element's `id`: a report's tables are named by what they break down.
    id: StoredValue<String>,
}

impl VirtualRows {
    /// The list element's `id`, page-unique.
    pub fn id(&self) -> String {
        self.id.get_value()
    }

    /// The top spacer's height as a CSS length, for `style:height`.
    pub fn before_css(&self) -> String {
        format!("{}px", self.window.with(|w| w.before))
    }

    /// The bottom spacer's height as a CSS length.
    pub fn after_css(&self) -> String {
        format!("{}px", self.window.with(|w| w.after))
    }

    /// Whether the top spacer has no height (hidden then: a table row of no height still
    /// draws its borders).
    pub fn nothing_before(&self) -> bool {
        self.window.with(|w| w.before <= 0.0)
    }

    /// Whether the bottom spacer has no height.
    pub fn nothing_after(&self) -> bool {
        self.window.with(|w| w.after <= 0.0)
    }

    /// Measures the viewport and the drawn rows before the next frame (once, however many
    /// times it is asked meanwhile). Call it from the list's own `scroll` event
    /// ([`Scroll::Own`]); the window's scroll and resize are followed already.
    pub fn schedule(&self) {
        #[cfg(feature = "hydrate")]
        {
            if self.pending.get_value() {
                return;
            }
            self.pending.set_value(true);
            let this = *self;
            request_animation_frame(move || {
                this.pending.set_value(false);
                this.measure();
            });
        }
    }

    /// Scrolls so that the row `key` is at the top of the viewport (it is drawn once the
    /// viewport has moved there): for a link to a row that may not be drawn. Does nothing when
    /// `key` is not in the list.
    #[cfg(feature = "hydrate")]
    pub fn reveal(&self, key: &str) {
        let Some(el) = self.id.with_value(|id| document().get_element_by_id(id)) else {
            return;
        };
        let offset = self.keys.with_untracked(|keys| {
            let i = keys.iter().position(|k| k == key)?;
            Some(self.heights.with_untracked(|known| {
                let mean = mean_height(known, self.estimate_px);
                keys[..i]
                    .iter()
                    .map(|k| known.get(k).copied().unwrap_or(mean))
                    .sum::<f64>()
            }))
        });
        let Some(offset) = offset else {
            return;
        };
        match self.scroll {
            Scroll::Page => {
                let top = el.get_bounding_client_rect().top();
                window().scroll_by_with_x_and_y(0.0, top + offset);
            }
            Scroll::Own => el.set_scroll_top(offset as i32),
        }
        self.schedule();
    }

    /// Reads where the viewport is over the list and how tall each drawn row is, and updates
    /// the signals when either changed (by at least half a pixel: sub-pixel layout noise
    /// would otherwise redraw the window forever).
    #[cfg(feature = "hydrate")]
    fn measure(&self) {
        use wasm_bindgen::JsCast;
        let Some(el) = self.id.with_value(|id| document().get_element_by_id(id)) else {
            return;
        };
        let viewport = match self.scroll {
            Scroll::Page => Viewport {
                top: -el.get_bounding_client_rect().top(),
                height: web_sys::window()
                    .and_then(|w| w.inner_height().ok())
                    .and_then(|h| h.as_f64())
                    .unwrap_or(Viewport::INITIAL.height),
            },
            Scroll::Own => Viewport {
                top: f64::from(el.scroll_top()),
                height: f64::from(el.client_height()),
            },
        };
        let old = self.viewport.get_untracked();
        if (old.top - viewport.top).abs() >= 0.5 || (old.height - viewport.height).abs() >= 0.5 {
            self.viewport.set(viewport);
        }
        let Ok(rows) = el.query_selector_all(":scope > [data-row]") else {
            return;
        };
        let mut changed = Vec::new();
        self.heights.with_untracked(|known| {
            for i in 0..rows.length() {
                let Some(row) = rows
                    .item(i)
                    .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
                else {
                    continue;
                };
                let Some(key) = row.get_attribute("data-row") else {
                    continue;
                };
                let h = row.get_bounding_client_rect().height();
                if known.get(&key).is_none_or(|k| (k - h).abs() >= 0.5) {
                    changed.push((key, h));
                }
            }
        });
        if !changed.is_empty() {
            self.heights.update(|known| known.extend(changed));
        }
    }
}

/// Follows the list whose keys in order are `keys`, drawn in the element whose `id` is `id`,
/// scrolled by `scroll`. `estimate_px` is a row's height before any row was measured (after
/// that, the mean of the measured rows stands in for a row not yet drawn).
pub fn use_virtual_rows(
    keys: Memo<Vec<String>>,
    id: impl Into<String>,
    scroll: Scroll,
    estimate_px: f64,
) -> VirtualRows {
    let viewport = RwSignal::new(Viewport::INITIAL);
    let heights = RwSignal::new(HashMap::<String, f64>::new());
    let window = Memo::new(move |_| {
        heights.with(|known| {
            let mean = mean_height(known, estimate_px);
            keys.with(|keys| {
                if keys.len() <= DRAW_ALL_UP_TO {
                    return Window {
                        keys: keys.clone(),
                        before: 0.0,
                        after: 0.0,
                    };
                }
                let d = drawn(
                    keys.iter().map(|k| known.get(k).copied().unwrap_or(mean)),
                    viewport.get(),
                    MARGIN_PX,
                );
                Window {
                    keys: keys[d.rows].to_vec(),
                    before: d.before,
                    after: d.after,
                }
            })
        })
    });
    let rows = VirtualRows {
        window,
        keys,
        estimate_px,
        viewport,
        heights,
        pending: StoredValue::new(false),
        scroll,
        id: StoredValue::new(id.into()),
    };
    #[cfg(feature = "hydrate")]
    {
        // The heights of rows that left the list are dropped once they are most of what is
        // kept (pools deleted, a wave's cards gone).
        Effect::new(move |_| {
            let live = keys.with(|k| k.len());
            if heights.with_untracked(|h| h.len() > 2 * live.max(64)) {
                let keep: std::collections::HashSet<String> =
                    keys.with(|k| k.iter().cloned().collect());
                heights.update(|h| h.retain(|k, _| keep.contains(k)));
            }
        });
        // New rows drawn: measure them (and where the viewport is) before the next frame.
        Effect::new(move |_| {
            window.track();
            rows.schedule();
        });
        if scroll == Scroll::Page {
            let on_scroll = window_event_listener(leptos::ev::scroll, move |_| rows.schedule());
            let on_resize = window_event_listener(leptos::ev::resize, move |_| rows.schedule());
            on_cleanup(move || {
                on_scroll.remove();
                on_resize.remove();
            });
        } else {
            let on_resize = window_event_listener(leptos::ev::resize, move |_| rows.schedule());
            on_cleanup(move || on_resize.remove());
        }
    }
    rows
}

/// The height a row not yet drawn counts at: the mean of the rows measured, else `estimate_px`.
fn mean_height(known: &HashMap<String, f64>, estimate_px: f64) -> f64 {
    if known.is_empty() {
        estimate_px
    } else {
        known.values().sum::<f64>() / known.len() as f64
    }
}

/// A table body drawn near the viewport: the drawn rows between two spacer rows that span
/// the table's `columns`. `row` draws a key's row, a `<tr>` whose `data-row` is the key.
#[component]
pub fn VirtualTbody<F, V>(rows: VirtualRows, columns: u16, row: F) -> impl IntoView
where
    F: Fn(String) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    view! {
        <tbody id=rows.id()>
            <tr class="spacer" aria-hidden="true" hidden=move || rows.nothing_before()>
                <td colspan=columns style:height=move || rows.before_css()></td>
            </tr>
            <For each=move || rows.window.with(|w| w.keys.clone()) key=|k| k.clone() children=row />
            <tr class="spacer" aria-hidden="true" hidden=move || rows.nothing_after()>
                <td colspan=columns style:height=move || rows.after_css()></td>
            </tr>
        </tbody>
    }
}

/// The body of a report's table (rows read once, not live) drawn near the viewport: `items`
/// in table order, each with its page-unique key; `row` draws one, a `<tr>` whose `data-row`
/// is its key. `id`: the `<tbody>`'s, page-unique; `estimate_px`: a row's height before one
/// is measured (CSS px).
#[component]
pub fn ReportTbody<T, F, V>(
    #[prop(into)] id: String,
    items: Vec<(String, T)>,
    columns: u16,
    estimate_px: f64,
    row: F,
) -> impl IntoView
where
    T: Clone + Send + Sync + 'static,
    F: Fn(String, T) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let keys: Vec<String> = items.iter().map(|(k, _)| k.clone()).collect();
    let by_key = StoredValue::new(items.into_iter().collect::<HashMap<String, T>>());
    let keys = Memo::new(move |_| keys.clone());
    let rows = use_virtual_rows(keys, id, Scroll::Page, estimate_px);
    let row = move |key: String| {
        let item = by_key.with_value(|m| m.get(&key).cloned());
        let row = row.clone();
        item.map(move |item| row(key, item))
    };
    view! { <VirtualTbody rows columns row /> }
}
