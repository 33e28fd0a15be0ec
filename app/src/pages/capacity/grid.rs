//! `/capacity`: what spotboard knows about spot for every instance type in every zone.

use leptos::prelude::*;

use crate::catalog;
use crate::components::time::{age, use_now};
use crate::domain::capacity::score::{band, human};
use crate::domain::cost::usd;
use crate::live::{LiveStore, use_live};
use crate::model::{CapacityCell, CapacityGrid, Scope, encode_component};

use super::{ConfidentialBanner, Sources, reason_class};

/// The page. The grid arrives on the tab's stream (scope [`Scope::capacity`]), cell by cell:
/// a changed cell re-renders that cell only.
#[component]
pub fn CapacityPage() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let snapshot = use_live(Scope::capacity);
    view! {
        <section class="page-head">
            <h1>"Capacity by zone"</h1>
            <p class="muted">
                "Spot per instance type and zone: the Capacity condition of your pools of that type, \
                 queued against delivered nodes, the median time from queued to current, the ledger's 24 h \
                 preemption rate (spot nodes preempted in the window ÷ spot nodes that ran in it, the same \
                 figure as on Preemptions), what the capacity feeds say is free, and the list prices."
            </p>
        </section>
        <Suspense fallback=|| view! { <p class="loading" role="status">"Loading capacity…"</p> }>
            {move || snapshot.get().map(|r| match r {
                Err(e) => view! { <p class="error" role="alert">"Could not load capacity: " {e.to_string()}</p> }.into_any(),
                Ok(snap) => {
                    live.adopt(&Scope::capacity(), &snap);
                    grid_view(live).into_any()
                }
            })}
        </Suspense>
    }
}

fn grid_view(live: LiveStore) -> impl IntoView {
    // Columns, rows and the banner change only when cells come or go or turn confidential.
    let layout = Memo::new(move |_| {
        let g = CapacityGrid::from_rows(live.cells.values(), Vec::new());
        (g.zones, g.instance_types, g.confidential)
    });
    let sources = move || {
        let mut s = live.sources.values();
        s.sort_by(|a, b| a.name.cmp(&b.name));
        view! { <Sources sources=s /> }
    };
    let head = move || {
        layout.with(|(zones, _, _)| {
            zones
                .iter()
                .map(|(cluster, zone)| view! { <th scope="col" title=cluster.clone()>{zone.clone()}</th> })
                .collect_view()
        })
    };
    let rows = move || {
        let (zones, types, _) = layout.get();
        types
            .into_iter()
            .map(|t| {
                let label = catalog::instance_type(&t)
                    .map(|it| {
                        if it.gpus > 0 {
                            format!("{} × {}", it.gpus, it.gpu_model)
                        } else {
                            format!("CPU, {} vCPU", it.vcpus)
                        }
                    })
                    .unwrap_or_default();
                let cells = zones
                    .iter()
                    .map(|(cluster, _)| {
                        let row = live.cells.get(&format!("{cluster}/{t}"));
                        move || match row {
                            Some(r) => cell_view(r.get()).into_any(),
                            None => view! { <td class="muted">"—"</td> }.into_any(),
                        }
                    })
                    .collect_view();
                let finder = format!("/capacity-finder?instanceType={}", encode_component(&t));
                view! {
                    <tr data-type=t.clone()>
                        <th scope="row">
                            <code>{t.clone()}</code>
                            <div class="muted small">{label}</div>
                            <a class="small" href=finder>"Find a zone"</a>
                        </th>
                        {cells}
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        {move || layout.with(|l| l.2).then(|| view! { <ConfidentialBanner /> })}
        {sources}
        <div class="table-wrap" tabindex="0" role="region" aria-label="Capacity by zone">
            <table class="capacity-grid" data-testid="capacity-grid">
                <thead><tr><th scope="col">"Instance type"</th>{head}</tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <p class="hint definition">
            "Preemption rate: the ledger's, over the trailing 24 h: spot nodes of the type in the zone \
             whose preemption T=0 fell in the window, divided by the spot nodes of that type that ran \
             there at any time in it, in the Spot Advisor bands <5 %, 5–10 %, 10–15 %, 15–20 %, >20 % \
             (the rows of Preemptions; the ledger keeps them beyond Kubernetes' event TTL). Free nodes \
             come from the capacity feeds, with their age on hover. Prices are list prices in USD per \
             instance-hour (coreweave.com/pricing, 2026-08-22)."
        </p>
        <super::launch_failures::LaunchFailures />
    }
}

fn cell_view(c: CapacityCell) -> impl IntoView {
    let now = use_now();
    let free_title = c
        .available_as_of
        .map(|t| {
            format!(
                "free nodes from the capacity feed, observed {} ago",
                age(Some(t), now.get_untracked())
            )
        })
        .unwrap_or_default();
    let spot = usd(c.spot_usd_h.as_deref().and_then(|p| p.parse().ok()));
    let od = usd(c.on_demand_usd_h.as_deref().and_then(|p| p.parse().ok()));
    view! {
        <td class="cap-cell" data-zone=c.zone.clone()>
            {c.capacity_reason.clone().map(|r| { let class = reason_class(&r); view! {
                <span class=class title="worst Capacity condition among this zone's spot pools of the type">{r}</span>
            }})}
            {c.available_nodes.map(|n| view! {
                <div class="free" title=free_title.clone() data-testid="free">{format!("{n} free")}{c.confidential.then_some(" (confidential)")}</div>
            })}
            {(c.pools > 0).then(|| view! {
                <div class="small" title="queued / delivered nodes over the zone's spot pools of this type">
                    {format!("queued {} · delivered {}", c.queued_nodes, c.current_nodes)}
                </div>
            })}
            {c.median_fulfil_seconds.map(|s| view! {
                <div class="small" title=format!(
                    "median time from falling below target to at target{}",
                    c.p95_fulfil_seconds.map(|p| format!("; p95 {}", human(p))).unwrap_or_default()
                )>{format!("fulfil {}", human(s))}</div>
            })}
            {c.queued_seconds_24h.filter(|s| *s > 0).map(|s| view! {
                <div class="small" data-testid="queued-24h" title=format!(
                    "this fleet's pools of the type here sat QueuedAwaitingCapacity for {} in 24 h, {} in 7 d{}",
                    human(s),
                    human(c.queued_seconds_7d.unwrap_or(s)),
                    match (c.scale_ups_7d, c.fulfilled_7d) {
                        (Some(a), Some(f)) if a > 0 => format!("; {f} of {a} scale-ups fulfilled in 7 d"),
                        _ => String::new(),
                    }
                )>{format!("queued {} in 24 h", human(s))}</div>
            })}
            {c.preemption_rate_pct.map(|r| view! {
                <div class="small" title=format!("24 h: {r:.1} % of {} spot nodes that ran", c.spot_nodes) data-rate=format!("{r:.1}")>{format!("preempted {}", band(r))}</div>
            })}
            <div class="small muted" title="spot / on-demand, USD per instance-hour">{format!("{spot} / {od}")}</div>
        </td>
    }
}
