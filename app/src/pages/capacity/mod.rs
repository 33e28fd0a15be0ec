//! `/capacity` (zones × instance types) and `/capacity-finder` (zones ranked for a request).

pub mod chart;
mod finder;
mod grid;
mod launch_failures;

pub use finder::CapacityFinderPage;
pub use grid::CapacityPage;
pub use launch_failures::PoolLaunchFailures;

use leptos::prelude::*;

use crate::components::time::{age, use_now};
use crate::model::SourceStatus;

/// The badge class of a Capacity condition reason.
pub fn reason_class(reason: &str) -> &'static str {
    match reason {
        "Sufficient" => "badge sev-ok",
        "Partial" | "PartialNodeAffinity" => "badge sev-warning",
        _ => "badge sev-error",
    }
}

/// The banner shown above anything holding CoreWeave's confidential capacity data.
#[component]
pub fn ConfidentialBanner() -> impl IntoView {
    view! {
        <p class="notice confidential" role="note" data-testid="confidential">
            "Confidential: this view includes CoreWeave Capacity Data, confidential to your \
             organization. Do not share it or its exports; spotboard offers no share links for it."
        </p>
    }
}

/// Where the figures come from, with their age or the error that made them stale.
#[component]
pub fn Sources(sources: Vec<SourceStatus>) -> impl IntoView {
    let now = use_now();
    view! {
        <ul class="sources" aria-label="Capacity sources">
            <li>"clusters: live"</li>
            {sources.into_iter().map(|s| {
                let label = s.source.clone().unwrap_or_else(|| s.name.clone());
                let as_of = s.as_of;
                let error = s.error.clone();
                view! {
                    <li title=s.name.clone()>
                        {label}
                        {move || match (&error, as_of) {
                            (Some(e), Some(_)) => format!(" · stale since {} ago: {e}", age(as_of, now.get())),
                            (Some(e), None) => format!(" · unavailable: {e}"),
                            (None, Some(_)) => format!(" · {} old", age(as_of, now.get())),
                            (None, None) => " · not read yet".to_string(),
                        }}
                        {s.confidential.then_some(" · confidential")}
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}
