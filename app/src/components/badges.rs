//! Badges: conditions, compute class, link and connection states.

use leptos::prelude::*;

use crate::{
    components::time::{clock, stamp},
    model::{ClusterRow, ConditionView, LinkState},
    nodepool::ComputeClass,
};

/// One condition as a coloured badge; status, reason, message and last transition on hover
/// and for screen readers.
#[component]
pub fn ConditionBadge(cond: ConditionView) -> impl IntoView {
    let reason = if cond.reason.is_empty() {
        if cond.status.is_empty() {
            "not reported".to_string()
        } else {
            cond.status.clone()
        }
    } else {
        cond.reason.clone()
    };
    let title = format!(
        "{}: {} ({})\n{}\nLast transition: {}",
        cond.type_,
        if cond.status.is_empty() {
            "not reported"
        } else {
            &cond.status
        },
        reason,
        cond.message,
        stamp(cond.last_transition)
    );
    let class = format!("badge cond sev-{}", cond.severity.as_str());
    view! {
        <span class=class title=title.clone() aria-label=title tabindex="0" data-type=cond.type_.as_str().to_string()>
            <span class="cond-type">{short_type(cond.type_.as_str())}</span>
            <span class="cond-reason">{reason}</span>
        </span>
    }
}

/// One condition as a small mark for the dense pools table: the colour and the glyph both
/// carry the severity (✓ ok, ↻ progressing, ! warning, ✕ error, ? unknown), so neither colour
/// alone nor shape alone has to be read; type, status, reason and message are in the title
/// for the mouse and the accessible name for screen readers (`role="img"`: a mark with a
/// name). The glyph is drawn by the stylesheet (`.cond.mark.sev-*::before`), and the name is
/// an attribute, not elements of their own: a table row holds five marks, and each element
/// saved is five a row.
#[component]
pub fn ConditionMark(cond: ConditionView) -> impl IntoView {
    let status = if cond.status.is_empty() {
        "not reported"
    } else {
        cond.status.as_str()
    };
    let reason = if cond.reason.is_empty() {
        String::new()
    } else {
        format!(" ({})", cond.reason)
    };
    let message = if cond.message.is_empty() {
        String::new()
    } else {
        format!(": {}", cond.message)
    };
    let text = format!("{}: {status}{reason}{message}", cond.type_);
    let class = format!("cond mark sev-{}", cond.severity.as_str());
    let title = text.clone();
    view! {
        <span class=class role="img" aria-label=text title=title data-type=cond.type_.as_str().to_string()></span>
    }
}

fn short_type(t: &str) -> String {
    match t {
        "NodeReconfigurationRequired" => "Reconfig".into(),
        other => other.to_string(),
    }
}

/// The computeClass as a badge (`spot` stands out; unknown classes show verbatim).
#[component]
pub fn ClassBadge(class: ComputeClass) -> impl IntoView {
    let variant = match class {
        ComputeClass::Spot => "spot",
        ComputeClass::Default => "default",
        ComputeClass::Other(_) => "other",
    };
    view! { <span class=format!("badge class-{variant}")>{class.as_str().to_string()}</span> }
}

/// A watched cluster's link state: live, connecting, or stale since the last good data.
#[component]
pub fn ClusterBadge(row: Signal<ClusterRow>) -> impl IntoView {
    let text = move || {
        row.with(|r| match (r.state, r.since) {
            (LinkState::Stale, Some(t)) => format!("{} · stale since {}", r.name, clock(t)),
            (state, _) => format!("{} · {}", r.name, state.as_str()),
        })
    };
    let title = move || {
        row.with(|r| {
            [r.message.clone(), r.note.clone()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("\n")
        })
    };
    let class = move || format!("badge link-{}", row.with(|r| r.state.as_str()));
    view! { <span class=class title=title data-cluster=move || row.with(|r| r.name.clone())>{text}</span> }
}
