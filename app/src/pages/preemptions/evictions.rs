//! A preemption card's eviction errors: evictions a PodDisruptionBudget refused (from the
//! node's events, as they happen), and once the node is gone, pods past their grace period
//! or killed at removal. Each links to the readiness finding that predicted it.

use leptos::prelude::*;

use super::readiness::anchor;
use crate::domain::preemption::evictions::{ErrorKind, counts};
use crate::model::PreemptionView;

fn severity(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Refused => "sev-warning",
        ErrorKind::PastGrace | ErrorKind::Killed => "sev-error",
    }
}

/// The card's eviction errors, or nothing when it has none.
pub fn eviction_errors(v: &PreemptionView) -> Option<impl IntoView + use<>> {
    if v.evictions.is_empty() {
        return None;
    }
    let summary = counts(&v.evictions).to_string();
    let finding_href = anchor(&v.cluster, v.pool.as_deref().unwrap_or("(no pool)"));
    let items = v
        .evictions
        .iter()
        .map(|e| {
            let times = (e.count > 1).then(|| format!(" (seen {} times)", e.count));
            let finding = e.finding.map(|c| {
                view! {
                    " "<a class="small" href=format!("#{finding_href}") data-finding=format!("{c:?}")>
                        {format!("readiness check: {}", c.title())}
                    </a>
                }
            });
            view! {
                <li data-kind=e.kind.as_str()>
                    <span class=format!("badge {}", severity(e.kind))>{e.kind.title()}</span>
                    " "
                    <strong>{e.pod.clone().unwrap_or_else(|| "pods on the node".into())}</strong>
                    <span class="small">{format!(" — {}: {}", e.reason, e.detail)}{times}</span>
                    {finding}
                </li>
            }
        })
        .collect_view();
    Some(view! {
        <section class="eviction-errors" data-testid="eviction-errors">
            <p class="small"><strong>"Eviction errors: "</strong><span data-testid="eviction-summary">{summary}</span></p>
            <ul class="findings">{items}</ul>
        </section>
    })
}
