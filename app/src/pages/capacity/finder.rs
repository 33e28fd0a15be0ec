//! `/capacity-finder`: zones ranked for an instance type × node count, each score part shown,
//! a chart of score against count, and "Create Spot Node Pool here".

use leptos::prelude::*;
use leptos_meta::Script;
use leptos_router::hooks::{use_navigate, use_query_map};

use crate::capacity_api::find_capacity;
use crate::catalog;
use crate::live::{LiveStore, use_live};
use crate::model::{FinderResult, Scope, ZoneScore, encode_component};

use super::ConfidentialBanner;
use super::chart::CHART_ID;

/// The inputs, as they are in the URL.
#[derive(Clone, Debug, PartialEq)]
struct Inputs {
    instance_type: String,
    count: u32,
    region: String,
}

impl Inputs {
    fn url(&self) -> String {
        format!(
            "/capacity-finder?instanceType={}&count={}&region={}",
            encode_component(&self.instance_type),
            self.count,
            encode_component(&self.region)
        )
    }
}

/// The page.
#[component]
pub fn CapacityFinderPage() -> impl IntoView {
    let query = use_query_map();
    let inputs = Memo::new(move |_| {
        query.with(|q| Inputs {
            instance_type: q
                .get("instanceType")
                .unwrap_or_else(|| "gd-8xh100ib-i128".into()),
            count: q
                .get("count")
                .and_then(|c| c.parse().ok())
                .unwrap_or(1)
                .max(1),
            region: q.get("region").unwrap_or_default(),
        })
    });
    crate::components::typed::keep_typed("form[aria-label=Request] :is(input, select)");
    let navigate = use_navigate();
    let set = move |f: &dyn Fn(&mut Inputs)| {
        let mut next = inputs.get_untracked();
        f(&mut next);
        navigate(
            &next.url(),
            leptos_router::NavigateOptions {
                replace: true,
                scroll: false,
                ..Default::default()
            },
        );
    };
    let live = expect_context::<LiveStore>();
    let snapshot = use_live(Scope::pools);
    let result = Resource::new(
        move || inputs.get(),
        |i| find_capacity(i.instance_type, i.count, Some(i.region)),
    );
    crate::components::chart::dispose_on_unmount(CHART_ID);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(Ok(r)) = result.get()
            && r.eligible
        {
            crate::components::chart::draw(CHART_ID, super::chart::score_chart(&r));
        }
    });

    let mut regions: Vec<String> = catalog::zones()
        .into_iter()
        .map(|z| catalog::region_of(z).to_string())
        .collect();
    regions.dedup();
    let (set_type, set_count, set_region) = (set.clone(), set.clone(), set);
    view! {
        <Script src=crate::components::chart::ECHARTS_SRC />
        <section class="page-head">
            <h1>"Capacity Finder"</h1>
            <p class="muted">"Rank zones for Spot placement of an instance type and node count, then create the pool where it fits best."</p>
        </section>
        <form class="filters" aria-label="Request" on:submit=|ev| ev.prevent_default()>
            <label>
                "Instance type"
                <select name="instanceType"
                    prop:value=move || inputs.with(|i| i.instance_type.clone())
                    on:change=move |ev| { let v = event_target_value(&ev); set_type(&|i| i.instance_type = v.clone()) }>
                    <optgroup label="Spot-eligible">
                        {catalog::instance_types().iter().filter(|t| t.spot_ok).map(|t| {
                            let id = t.id.clone();
                            let sel = id.clone();
                            view! { <option value=id selected=move || inputs.with(|i| i.instance_type == sel)>{type_label(t)}</option> }
                        }).collect_view()}
                    </optgroup>
                    <optgroup label="Not eligible for Spot (Superchip)">
                        {catalog::instance_types().iter().filter(|t| !t.spot_ok).map(|t| view! {
                            <option value=t.id.clone() disabled=true>{format!("{}: not eligible, Superchip", type_label(t))}</option>
                        }).collect_view()}
                    </optgroup>
                </select>
            </label>
            <label>
                "Nodes"
                <input type="number" name="count" min="1" step="1"
                    value=inputs.with_untracked(|i| i.count.to_string())
                    prop:value=move || inputs.with(|i| i.count.to_string())
                    on:change=move |ev| {
                        let n = event_target_value(&ev).trim().parse::<u32>().unwrap_or(1).max(1);
                        set_count(&|i| i.count = n)
                    } />
            </label>
            <label>
                "Region"
                <select name="region" prop:value=move || inputs.with(|i| i.region.clone())
                    on:change=move |ev| { let v = event_target_value(&ev); set_region(&|i| i.region = v.clone()) }>
                    <option value="">"All regions"</option>
                    {regions.into_iter().map(|r| { let value = r.clone(); view! { <option value=value>{r}</option> } }).collect_view()}
                </select>
            </label>
        </form>
        <Transition fallback=|| view! { <p class="loading" role="status">"Ranking zones…"</p> }>
            {move || {
                crate::live::adopt_pools(live, snapshot);
                result.get()
            }.map(|r| match r {
                Err(e) => view! { <p class="error" role="alert">"Could not rank zones: " {e.to_string()}</p> }.into_any(),
                Ok(r) => result_view(r).into_any(),
            })}
        </Transition>
        <div id=CHART_ID class="chart" role="img" aria-label="Score against node count per zone"></div>
        <p class="hint definition">
            "Score (0–100) = 100 × (0.50 availability for this count + 0.20 preemption + 0.15 price \
             + 0.10 time to fulfil + 0.05 freshness), and 0 when the zone cannot place the request \
             (its pools report NoneAvailable or QueuedAwaitingCapacity, or no node is free). \
             Availability is free nodes ÷ requested nodes from the capacity feed (without a feed, \
             the pools' Capacity condition times what they have delivered); preemption is \
             1 − rate ÷ 20 %, with the ledger's 24 h rate of the type in the zone (as on Preemptions); price is the cheapest zone's spot price ÷ this zone's; time to \
             fulfil is 1 ÷ (1 + median minutes ÷ 10); freshness falls from 1 at one minute to 0 at \
             one hour. Only availability depends on the count, so a larger request never scores higher."
        </p>
    }
}

fn type_label(t: &catalog::InstanceType) -> String {
    if t.gpus > 0 {
        format!("{} ({} × {})", t.id, t.gpus, t.gpu_model)
    } else {
        format!("{} (CPU)", t.id)
    }
}

fn result_view(r: FinderResult) -> impl IntoView {
    if !r.eligible {
        return view! {
            <p class="notice" role="status" data-testid="not-eligible">
                {r.reason.clone().unwrap_or_default()}
            </p>
        }
        .into_any();
    }
    let count = r.count;
    let instance_type = r.instance_type.clone();
    let rows = r
        .ranked
        .iter()
        .enumerate()
        .map(|(i, z)| zone_row(i + 1, z.clone(), &instance_type, count))
        .collect_view();
    view! {
        {r.confidential.then(|| view! { <ConfidentialBanner /> })}
        <div class="table-wrap" tabindex="0" role="region" aria-label="Zones ranked">
            <table class="finder" data-testid="finder-results">
                <thead><tr>
                    <th scope="col">"#"</th>
                    <th scope="col">"Zone"</th>
                    <th scope="col">"Score"</th>
                    <th scope="col">"Availability"</th>
                    <th scope="col">"Preemption"</th>
                    <th scope="col">"Price"</th>
                    <th scope="col">"Time to fulfil"</th>
                    <th scope="col">"Freshness"</th>
                    <th scope="col" title="This fleet's own pools of the type in the zone, from the ledger's condition history">"This fleet here"</th>
                    <th scope="col"></th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

fn zone_row(rank: usize, z: ZoneScore, instance_type: &str, count: u32) -> impl IntoView {
    let create = format!(
        "/pools/new?cluster={}&zone={}&instanceType={}&computeClass=spot&targetNodes={count}",
        encode_component(&z.cluster),
        encode_component(&z.zone),
        encode_component(instance_type)
    );
    let parts = z
        .parts
        .iter()
        .map(|p| {
            view! {
                <td class="num" title=p.why.clone() data-part=p.name.clone()>
                    {format!("{:.0} %", p.value * 100.0)}
                    <div class="small muted why">{p.why.clone()}</div>
                </td>
            }
        })
        .collect_view();
    view! {
        <tr data-zone=z.zone.clone()>
            <td class="num">{rank}</td>
            <td class="zone"><strong>{z.zone.clone()}</strong><div class="small muted">{z.cluster.clone()}</div></td>
            <td class="num score" data-testid="score">{format!("{:.1}", z.score)}</td>
            {parts}
            <td class="history" data-testid="history" title=z.history.clone().unwrap_or_default()>
                {z.history_warning.clone().map(|w| view! { <div class="history-warning" data-testid="history-warning" title=w.clone()>{format!("⚠ {w}")}</div> })}
                <div class="small muted why">{z.history.clone().unwrap_or_else(|| "no history of its own".into())}</div>
            </td>
            <td><a class="button" href=create>"Create Spot Node Pool here"</a></td>
        </tr>
    }
}
