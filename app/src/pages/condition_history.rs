//! A pool page's condition history, from the ledger: how long each condition held each status
//! and reason over 24 h / 7 d / 30 d, and its transitions (CoreWeave: Node Pool reference,
//! "Node Pool Conditions"). History, not live: read once per range chosen.

use leptos::prelude::*;

use crate::components::time::stamp;
use crate::model::ConditionHistory;
use crate::savings_api::load_condition_history;

const RANGES: [&str; 3] = ["24h", "7d", "30d"];

/// `3 h 12 min`, `45 s`: a span's length, to the minute above an hour.
pub fn span_text(seconds: i64) -> String {
    let (d, h, m) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{seconds} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

#[component]
pub fn ConditionHistorySection(cluster: String, pool: String) -> impl IntoView {
    let range = RwSignal::new("7d".to_string());
    let history = Resource::new(
        move || (cluster.clone(), pool.clone(), range.get()),
        |(c, p, r)| load_condition_history(c, p, r),
    );
    view! {
        <section class="condition-history" data-testid="condition-history">
            <h2>"Condition history"</h2>
            <label>"Over "
                <select name="history-range" on:change=move |ev| range.set(event_target_value(&ev))>
                    {RANGES.map(|r| view! { <option value=r selected=r == "7d">{r}</option> })}
                </select>
            </label>
            <Suspense fallback=|| view! { <p class="loading" role="status">"Reading the ledger…"</p> }>
                {move || history.get().map(|h| match h {
                    Err(e) => view! { <p class="error" role="alert">"Could not read the condition history: " {e.to_string()}</p> }.into_any(),
                    Ok(h) if h.transitions.is_empty() => view! { <p class="empty">"No condition recorded in this range."</p> }.into_any(),
                    Ok(h) => tables(h).into_any(),
                })}
            </Suspense>
        </section>
    }
}

fn tables(h: ConditionHistory) -> impl IntoView {
    view! {
        <div class="table-wrap" tabindex="0" role="region" aria-label="Time in each condition">
            <table class="condition-spans">
                <thead><tr>
                    <th scope="col">"Condition"</th><th scope="col">"Status"</th>
                    <th scope="col">"Reason"</th><th scope="col">"For"</th><th scope="col">"Entered"</th>
                </tr></thead>
                <tbody>
                    {h.spans.into_iter().map(|s| view! {
                        <tr data-condition=s.type_.as_str().to_string() data-reason=s.reason.clone()>
                            <th scope="row">{s.type_.as_str().to_string()}</th>
                            <td>{s.status}</td>
                            <td>{s.reason.clone()}</td>
                            <td class="num">{span_text(s.seconds)}</td>
                            <td class="num">{s.entered}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        <details class="transitions">
            <summary>{format!("{} transitions", h.transitions.len())}</summary>
            <ul>
                {h.transitions.into_iter().map(|t| view! {
                    <li>
                        {stamp(Some(t.since))} " · " <strong>{t.type_.as_str().to_string()}</strong>
                        {format!(" {} ({})", t.status, t.reason)}
                        {(!t.message.is_empty()).then(|| view! { <span class="muted">{format!(": {}", t.message)}</span> })}
                    </li>
                }).collect_view()}
            </ul>
        </details>
    }
}

#[cfg(test)]
mod tests {
    use super::span_text;

    #[test]
    fn spans_read_in_the_largest_units() {
        assert_eq!(span_text(45), "45 s");
        assert_eq!(span_text(600), "10 min");
        assert_eq!(span_text(3 * 3600 + 12 * 60), "3 h 12 min");
        assert_eq!(span_text(2 * 86_400 + 5 * 3600 + 59), "2 d 5 h");
    }
}
