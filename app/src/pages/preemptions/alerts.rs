//! The alerts on `/preemptions`: what fires now (the header counts the same rows on every
//! page), and the messages the `--alert-webhook` did not take.

use leptos::prelude::*;

use crate::live::LiveStore;

/// The alerts firing now, oldest first, each with where to look.
#[component]
pub fn FiringAlerts() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    move || {
        let mut firing = live.firing.values();
        firing.sort_by(|a, b| a.started.cmp(&b.started).then_with(|| a.key.cmp(&b.key)));
        (!firing.is_empty()).then(|| {
            view! {
                <section id="alerts" class="alerts" data-testid="alerts" aria-label="Alerts firing">
                    <h2>"Alerts firing"</h2>
                    <ul class="findings">
                        {firing.into_iter().map(|a| view! {
                            <li data-alert=a.key.clone() data-kind=a.kind.as_str()>
                                <span class="badge sev-error">{a.kind.as_str()}</span>
                                " "{a.summary.clone()}" "
                                <span class="small muted">{a.started.map(|t| format!("since {}", crate::components::time::clock(t)))}</span>
                                " "<a class="small" href=a.path.clone()>"look"</a>
                            </li>
                        }).collect_view()}
                    </ul>
                </section>
            }
        })
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
