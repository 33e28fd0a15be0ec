//! `/pools/:cluster/:name`: one NodePool's spec, conditions, nodes and events, live.

use leptos::prelude::*;
use leptos_router::{components::A, hooks::use_params_map};

use crate::{
    components::{
        badges::{ClassBadge, ConditionBadge},
        time::stamp,
    },
    live::{LiveStore, use_live},
    model::{PoolRow, Scope},
};

use super::pool_parts::{EventList, NodeTable, SpecList};

/// The pool detail page.
#[component]
pub fn PoolPage() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let params = use_params_map();
    let cluster = move || params.with(|p| p.get("cluster").unwrap_or_default());
    let name = move || params.with(|p| p.get("name").unwrap_or_default());
    let snapshot = use_live(move || Scope::pool(cluster(), name()));
    // Tracks the index only: a row's cluster and name never change, and reading every row
    // would re-run this on each change of any of the other pools (thousands a second).
    let pool = Memo::new(move |_| {
        let (c, n) = (cluster(), name());
        live.pools
            .signals()
            .into_iter()
            .find(|s| s.with_untracked(|r| r.cluster == c && r.name == n))
    });

    view! {
        // Outside the Suspense: a head element rendered after streaming starts is lost.
        <leptos_meta::Script src=crate::components::chart::ECHARTS_SRC />
        <nav class="crumbs" aria-label="Breadcrumb">
            <A href="/">"Node Pools"</A>
            " / "
            {cluster}
            " / "
            <span aria-current="page">{name}</span>
        </nav>
        <Suspense fallback=|| view! { <p class="loading" role="status">"Loading pool…"</p> }>
            {move || snapshot.get().map(|r| match r {
                Err(e) => view! { <p class="error" role="alert">"Could not load the pool: " {e.to_string()}</p> }.into_any(),
                Ok(snap) => {
                    live.adopt(&Scope::pool(cluster(), name()), &snap);
                    match pool.get() {
                    None => view! {
                        <section class="empty">
                            <h1>{name}</h1>
                            <p>"No NodePool of this name in cluster " {cluster} ". It may have been deleted; the page updates if it appears."</p>
                        </section>
                    }.into_any(),
                    Some(row) => view! { <PoolDetail row /> }.into_any(),
                    }
                }
            })}
        </Suspense>
    }
}

/// The work waiting for this pool, live, when there is any: pods, GPUs, since when, and why
/// in one sentence.
#[component]
fn PoolWaiting(row: RwSignal<PoolRow>) -> impl IntoView {
    let live = expect_context::<crate::live::LiveStore>();
    let key = row.with_untracked(|r| format!("{}/{}", r.cluster, r.name));
    let waiting = move || live.waiting.get(&key).map(|w| w.get());
    move || {
        waiting().map(|w| {
            view! {
                <section class="problems-box" aria-label="Waiting for this pool" data-testid="pool-waiting">
                    <h2>"Waiting for this pool"</h2>
                    <p>{super::pool_parts::waiting_sentence(&w)}</p>
                    <p class="hint">"Every pod on GET /api/v1/waiting, with the scheduler's reasons."</p>
                </section>
            }
        })
    }
}

/// The fallback pair this pool is in (as its on-demand or a spot side), live from the
/// stream's 24-hour rows, when it is in one.
#[component]
fn PoolFallback(row: RwSignal<PoolRow>) -> impl IntoView {
    let live = expect_context::<crate::live::LiveStore>();
    let (cluster, name) = row.with_untracked(|r| (r.cluster.clone(), r.name.clone()));
    move || {
        let pairs: Vec<crate::model::FallbackRow> = live
            .fallback
            .values()
            .into_iter()
            .filter(|f| {
                f.cluster == cluster && (f.on_demand_pool == name || f.spot_pools.contains(&name))
            })
            .collect();
        (!pairs.is_empty()).then(|| {
            view! {
                <section class="problems-box" aria-label="Fallback to on-demand" data-testid="pool-fallback">
                    <h2>"Fallback to on-demand"</h2>
                    {pairs.iter().map(|f| view! {
                        <p>{super::pool_parts::fallback_sentence(f, &name)}</p>
                    }).collect_view()}
                    <p class="hint">"Every pair, for any range, on Cost savings and GET /api/v1/fallback."</p>
                </section>
            }
        })
    }
}

/// The Kueue flavors that land on this pool (their `nodeLabels` match its nodes), live: what
/// each ClusterQueue admitted into them and what it holds back. Absent without Kueue.
#[component]
fn PoolKueue(row: RwSignal<PoolRow>) -> impl IntoView {
    let live = expect_context::<crate::live::LiveStore>();
    let (cluster, name) = row.with_untracked(|r| (r.cluster.clone(), r.name.clone()));
    move || {
        let mut queues: Vec<crate::model::QueueRow> = live
            .queues
            .values()
            .into_iter()
            .filter(|q| q.cluster == cluster)
            .collect();
        queues.sort_by(|a, b| a.name.cmp(&b.name));
        let lines: Vec<String> = queues
            .iter()
            .flat_map(|q| {
                q.flavors
                    .iter()
                    .filter(|f| f.pools.contains(&name))
                    .map(move |f| crate::domain::kueue::pool_sentence(q, f))
            })
            .collect();
        (!lines.is_empty()).then(|| {
            view! {
                <section class="info-box" aria-label="Kueue" data-testid="pool-kueue">
                    <h2>"Kueue"</h2>
                    {lines.into_iter().map(|l| view! { <p>{l}</p> }).collect_view()}
                    <p class="hint">"Every ClusterQueue on Node Pools and GET /api/v1/kueue, with Kueue's message for what waits."</p>
                </section>
            }
        })
    }
}

#[component]
fn PoolDetail(row: RwSignal<PoolRow>) -> impl IntoView {
    let f = move |g: fn(&PoolRow) -> Option<i32>| {
        move || row.with(|r| g(r).map(|n| n.to_string()).unwrap_or_else(|| "—".into()))
    };
    view! {
        <section class="page-head">
            <h1>
                {move || row.with(|r| r.name.clone())}
                " "
                {move || row.with(|r| r.compute_class.clone()).map(|class| view! { <ClassBadge class /> })}
                " "
                <span class=move || row.with(|r| format!("badge cap-{}", r.capacity_type))>{move || row.with(|r| r.capacity_type.to_string())}</span>
            </h1>
            <p class="muted">
                <code>{move || row.with(|r| r.instance_type.clone())}</code>
                " · " {move || row.with(|r| r.provider.to_string())}
                " · " {move || row.with(|r| r.cluster.clone())}
                {move || row.with(|r| r.zone.clone().map(|z| format!(" · {z}")).unwrap_or_default())}
                " · created " {move || stamp(row.with(|r| r.created))}
            </p>
        </section>
        {move || row.with(|r| r.malformed.clone()).map(|m| view! {
            <p class="error" role="alert">"This object could not be read as a NodePool: " {m}</p>
        })}
        <section class="counts" aria-label="Node counts">
            <div><span class="label">"Target"</span><span class="value" data-count="target">{move || row.with(|r| r.target_nodes.to_string())}</span></div>
            <div><span class="label">"Current"</span><span class="value" data-count="current">{f(|r| r.current_nodes)}</span></div>
            <div><span class="label">"Queued"</span><span class="value" data-count="queued">{f(|r| r.queued_nodes)}</span></div>
            <div><span class="label">"In progress"</span><span class="value" data-count="inprogress">{f(|r| r.in_progress)}</span></div>
            <div><span class="label">"Min / max"</span><span class="value">{f(|r| r.min_nodes)} " / " {f(|r| r.max_nodes)}</span></div>
            <div><span class="label">"Preempting"</span><span class="value" data-count="preempting">{move || row.with(|r| r.nodes_preempting.to_string())}</span></div>
        </section>
        <PoolWaiting row />
        <PoolFallback row />
        <PoolKueue row />
        <super::capacity::PoolLaunchFailures row />
        {move || {
            let p = row.with(|r| r.problems.clone());
            (!p.is_empty()).then(|| view! {
                <section class="problems-box" aria-label="Problems">
                    <h2>"Needs attention"</h2>
                    <ul>{p.into_iter().map(|x| view! { <li>{x}</li> }).collect_view()}</ul>
                </section>
            })
        }}
        {move || row.with(|r| (r.provider != spotboard_core::Provider::Cks).then(|| view! {
            <p class="hint">"This pool is read from its nodes' labels (" {r.provider.to_string()} "): targets, queues and the five \
              conditions are CoreWeave NodePool fields and do not apply."</p>
        }))}
        <section>
            <h2>"Conditions"</h2>
            <table class="conditions">
                <thead><tr><th scope="col">"Type"</th><th scope="col">"Status"</th><th scope="col">"Reason"</th><th scope="col">"Message"</th><th scope="col">"Last transition"</th></tr></thead>
                <tbody>
                    {move || row.with(|r| r.conditions.clone()).into_iter().map(|c| view! {
                        <tr data-condition=c.type_.as_str().to_string()>
                            <th scope="row"><ConditionBadge cond=c.clone() /></th>
                            <td>{if c.status.is_empty() { "not reported".to_string() } else { c.status.clone() }}</td>
                            <td>{c.reason.clone()}</td>
                            <td>{c.message.clone()}</td>
                            <td>{stamp(c.last_transition)}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
        <SpecList row />
        <NodeTable row />
        // Read once: a row's cluster and name never change, and the sections poll on their own.
        {
            let (cluster, name, spot, provider) = row
                .with_untracked(|r| (r.cluster.clone(), r.name.clone(), r.capacity_type == spotboard_core::CapacityType::Spot, r.provider));
            view! {
                <super::condition_history::ConditionHistorySection cluster=cluster.clone() pool=name.clone() />
                <super::preemptions::PoolPreemptions cluster=cluster.clone() name=name.clone() />
                {spot.then(|| view! { <super::survival::SurvivalSection only=(cluster.clone(), name.clone(), provider) /> })}
                {spot.then(|| view! { <super::preemptions::ReadinessSection only=(cluster.clone(), name.clone()) /> })}
                {spot.then(|| view! { <super::drill::DrillPanel cluster pool=name /> })}
            }
        }
        <EventList row />
    }
}
