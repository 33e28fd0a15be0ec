//! The alerts on `/preemptions`: what fires now (the header counts the same rows on every
//! page), and the messages the `--alert-webhook` did not take.

use leptos::prelude::*;

use crate::components::virtual_rows::{Scroll, use_virtual_rows};
use crate::live::LiveStore;
use crate::model::Alert;

/// An alert line's height before one is measured (CSS px): one line of text.
const ALERT_LINE_PX: f64 = 26.0;

/// The alerts firing now, oldest first, each with where to look. Drawn near the viewport: a
/// wave over 2,000 pools fires hundreds at once (one per pool whose rate crosses its
/// threshold), and the list was 2,000 elements laid out again at each.
#[component]
pub fn FiringAlerts() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let keys = Memo::new(move |_| {
        let mut firing = Vec::new();
        live.firing
            .for_each(|a| firing.push((a.started, a.key.clone())));
        // Oldest first (one not yet dated first of all), then by key.
        firing.sort();
        firing.into_iter().map(|(_, k)| k).collect::<Vec<_>>()
    });
    let lines = use_virtual_rows(keys, "alert-list", Scroll::Page, ALERT_LINE_PX);
    view! {
        <Show when=move || keys.with(|k| !k.is_empty())>
            <section id="alerts" class="alerts" data-testid="alerts" aria-label="Alerts firing">
                <h2>"Alerts firing " <span class="muted">{move || format!("({})", keys.with(Vec::len))}</span></h2>
                <ul class="findings" id="alert-list">
                    <li class="spacer" aria-hidden="true" style:height=move || lines.before_css()></li>
                    <For each=move || lines.window.with(|w| w.keys.clone()) key=|k| k.clone() let:key>
                        {live.firing.row(&key).map(|alert| view! { <AlertLine key alert /> })}
                    </For>
                    <li class="spacer" aria-hidden="true" style:height=move || lines.after_css()></li>
                </ul>
            </section>
        </Show>
    }
}

#[component]
fn AlertLine(key: String, alert: RwSignal<Alert>) -> impl IntoView {
    view! {
        <li data-row=key.clone() data-alert=key data-kind=move || alert.with(|a| a.kind.as_str())>
            {move || alert.with(|a| view! {
                <span class="badge sev-error">{a.kind.as_str()}</span>
                " "{a.summary.clone()}" "
                <span class="small muted">{a.started.map(|t| format!("since {}", crate::components::time::clock(t)))}</span>
                " "<a class="small" href=a.path.clone()>"look"</a>
            })}
        </li>
    }
}

/// The newest alert message the `--alert-webhook` did not take, with how many there are.
#[component]
pub fn Undelivered() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    move || {
        let mut all = live.alerts.values();
        all.sort_by_key(|a| std::cmp::Reverse(a.at));
        all.first().map(|u| view! {
            <p class="error" role="alert" data-testid="undelivered">{format!(
                "{} alert message(s) not delivered to {}: the latest ({:?}, {}) failed {} times, last: {}",
                all.len(), u.destination, u.status, u.summary, u.attempts, u.error
            )}</p>
        })
    }
}
