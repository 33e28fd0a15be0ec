//! `/capacity`: what spotboard knows about spot for every instance type in every zone.

use leptos::prelude::*;

use crate::capacity_api::load_capacity_grid;
use crate::catalog;
use crate::components::time::{age, use_now};
use crate::domain::capacity::score::{band, human};
use crate::domain::cost::usd;
use crate::live::{LiveStore, use_live};
use crate::model::{CapacityCell, CapacityGrid, Scope, encode_component};

use super::{ConfidentialBanner, Sources, reason_class};

/// How often the page asks for a fresh grid, milliseconds.
const REFRESH_MS: u64 = 10_000;

/// The page.
#[component]
pub fn CapacityPage() -> impl IntoView {
    let tick = crate::components::time::use_tick(REFRESH_MS);
    let grid = Resource::new(move || tick.get(), |_| load_capacity_grid());
    // The pools' stream keeps the header's live badge true here too; the grid itself is
    // aggregated on the server and refreshed every few seconds.
    let live = expect_context::<LiveStore>();
    let snapshot = use_live(Scope::pools);
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
        <Transition fallback=|| view! { <p class="loading" role="status">"Loading capacity…"</p> }>
            {move || {
                crate::live::adopt_pools(live, snapshot);
                grid.get()
            }.map(|r| match r {
                Err(e) => view! { <p class="error" role="alert">"Could not load capacity: " {e.to_string()}</p> }.into_any(),
                Ok(g) => grid_view(g).into_any(),
            })}
        </Transition>
    }
}

fn grid_view(g: CapacityGrid) -> impl IntoView {
    let zones = g.zones.clone();
    let head = zones
        .iter()
        .map(|(cluster, zone)| view! { <th scope="col" title=cluster.clone()>{zone.clone()}</th> })
        .collect_view();
    let rows = g
        .instance_types
        .iter()
        .map(|t| {
            let label = catalog::instance_type(t)
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
                .map(|(_, z)| match g.cell(z, t) {
                    Some(c) => cell_view(c.clone()).into_any(),
                    None => view! { <td class="muted">"—"</td> }.into_any(),
                })
                .collect_view();
            let finder = format!("/capacity-finder?instanceType={}", encode_component(t));
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
        .collect_view();
    view! {
        {g.confidential.then(|| view! { <ConfidentialBanner /> })}
        <Sources sources=g.sources.clone() />
        <div class="table-wrap">
            <table class="capacity-grid" data-testid="capacity-grid">
                <thead><tr><th scope="col">"Instance type"</th>{head}</tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <p class="hint definition">
            "Preemption rate: nodes of the type that got \"Preemption pending\" in the trailing 24 h, \
             divided by the zone's spot nodes of that type (delivered plus preempted), shown in the \
             Spot Advisor bands <5 %, 5–10 %, 10–15 %, 15–20 %, >20 %. It is computed from events \
             still in the cluster; Kubernetes keeps events for about an hour. Free nodes come from \
             the capacity feeds, with their age on hover. Prices are list prices in USD per \
             instance-hour (coreweave.com/pricing, 2026-08-22)."
        </p>
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
                <div class="small" title="median time from falling below target to at target">{format!("fulfil {}", human(s))}</div>
            })}
            {c.preemption_rate_pct.map(|r| view! {
                <div class="small" title=format!("24 h: {r:.1} % of {} spot nodes that ran", c.spot_nodes) data-rate=format!("{r:.1}")>{format!("preempted {}", band(r))}</div>
            })}
            <div class="small muted" title="spot / on-demand, USD per instance-hour">{format!("{spot} / {od}")}</div>
        </td>
    }
}
