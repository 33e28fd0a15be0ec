//! `/`: every NodePool across the watched clusters, live.

use leptos::prelude::*;
use leptos_router::{
    components::A,
    hooks::{use_navigate, use_query_map},
};

use crate::{
    components::{
        badges::{ClassBadge, ClusterBadge, ConditionMark},
        time::{age, use_now},
        virtual_rows::{Scroll, VirtualTbody, use_virtual_rows},
    },
    domain::{
        paging::{PAGE_SIZES, Page, page_size},
        pools_view::{Density, OPTIONAL_COLUMNS, PoolQuery, SortKey, WaitingKey},
    },
    live::{LiveStore, use_live},
    model::{PoolRow, Scope, encode_component},
};

/// The Node Pools dashboard.
#[component]
pub fn Dashboard() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let snapshot = use_live(Scope::pools);
    let query_map = use_query_map();
    let query = Memo::new(move |_| query_map.with(|q| PoolQuery::from_params(|k| q.get(k))));

    let navigate = use_navigate();
    let set_query = move |q: PoolQuery| {
        let q = q.navigated_from(&query.get_untracked());
        let params: Vec<String> = q
            .to_params()
            .into_iter()
            .map(|(k, v)| format!("{k}={}", encode_component(&v)))
            .collect();
        let url = if params.is_empty() {
            "/".to_string()
        } else {
            format!("/?{}", params.join("&"))
        };
        navigate(
            &url,
            leptos_router::NavigateOptions {
                replace: true,
                scroll: false,
                ..Default::default()
            },
        );
    };

    // Only the keys in display order: a patch to one pool re-renders that row, and the table
    // re-orders only when the order changed. The rows are compared in place (the filter
    // reads, and so tracks, every row), not copied: at 2,000 pools a copy per change was most
    // of what the tab did.
    let keys = Memo::new(move |_| {
        let q = query.get();
        let mut rows: Vec<RwSignal<PoolRow>> = live
            .pools
            .signals()
            .into_iter()
            .filter(|s| s.with(|r| q.matches(r)))
            .collect();
        // Sorting by waiting work reads (and so tracks) the waiting rows, once per pool
        // before the sort; any other key reads none of them.
        let waits: std::collections::HashMap<String, WaitingKey> = if q.sort == SortKey::Waiting {
            rows.iter()
                .filter_map(|s| {
                    s.with(|r| {
                        let w = live.waiting.get(&format!("{}/{}", r.cluster, r.name))?;
                        Some((r.key.clone(), w.with(|w| (w.gpus, w.pods, w.oldest_since))))
                    })
                })
                .collect()
        } else {
            Default::default()
        };
        rows.sort_by(|a, b| {
            a.with_untracked(|a| {
                b.with_untracked(|b| q.compare_with(a, b, |r| waits.get(&r.key).copied()))
            })
        });
        rows.into_iter()
            .map(|s| s.with_untracked(|r| r.key.clone()))
            .collect::<Vec<_>>()
    });
    // The page's rows alone are rendered: a change elsewhere in the list that does not move
    // this page's rows re-renders nothing.
    let page = Memo::new(move |_| keys.with(|k| query.with(|q| q.page_of(k.len()))));
    let shown = Memo::new(move |_| {
        let rows = page.get().rows;
        keys.with(|k| k[rows].to_vec())
    });

    view! {
        <Suspense fallback=|| view! {
            <section class="page-head"><h1>"Node Pools"</h1></section>
            <p class="loading" role="status">"Loading node pools…"</p>
        }>
            {move || snapshot.get().map(|r| match r {
                Err(e) => view! {
                    <section class="page-head"><h1>"Node Pools"</h1></section>
                    <p class="error" role="alert">"Could not load the node pools: " {e.to_string()}</p>
                }.into_any(),
                Ok(snap) => {
                    live.adopt(&Scope::pools(), &snap);
                    view! {
                        <section class="page-head">
                            <h1>"Node Pools"</h1>
                            <Clusters />
                        </section>
                        <crate::pages::fleet_summary::FleetSummaryBand />
                        <Filters query set_query=set_query.clone() />
                        <PoolTable keys=shown query set_query=set_query.clone() />
                        <Pager page query set_query=set_query.clone() />
                        <crate::pages::queues::KueueQueues />
                    }.into_any()
                }
            })}
        </Suspense>
    }
}

/// The watched clusters, each a badge with its lasting note (e.g. no NodePool CRD on a GKE
/// or Karpenter cluster) as a quiet line under it: expected, not a problem, so not a warning.
#[component]
fn Clusters() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    view! {
        <div class="clusters" aria-label="Watched clusters">
            <For each=move || live.clusters.keys() key=|k| k.clone() let:key>
                {live.clusters.row(&key).map(|row| view! {
                    <div class="cluster-item">
                        <ClusterBadge row=row.into() />
                        {move || row.with(|r| r.note.clone()).map(|n| view! {
                            <span class="cluster-note" title=n.clone()>{short_note(&n)}</span>
                        })}
                    </div>
                })}
            </For>
        </div>
    }
}

/// A cluster note's first clause, for the quiet line (the whole note is its title).
fn short_note(note: &str) -> String {
    note.split(':').next().unwrap_or(note).trim().to_string()
}

#[component]
fn Filters<F>(query: Memo<PoolQuery>, set_query: F) -> impl IntoView
where
    F: Fn(PoolQuery) + Clone + Send + Sync + 'static,
{
    let live = expect_context::<LiveStore>();
    crate::components::typed::keep_typed("form[role=search] :is(input, select)");
    // A memo per drop-down: its options re-render only when the set of values changes, not
    // on every pool change.
    let options = move |f: fn(&PoolRow) -> String| {
        Memo::new(move |_| {
            let mut values = Vec::new();
            live.pools.for_each(|r| values.push(f(r)));
            values.sort();
            values.dedup();
            values
        })
    };
    let select = {
        let set_query = set_query.clone();
        move |label: &'static str,
              name: &'static str,
              get: fn(&PoolQuery) -> Option<String>,
              set: fn(&mut PoolQuery, Option<String>),
              f: fn(&PoolRow) -> String| {
            let set_query = set_query.clone();
            let options = options(f);
            view! {
                <label>
                    {label}
                    <select
                        name=name
                        prop:value=move || get(&query.get()).unwrap_or_default()
                        on:change=move |ev| {
                            let v = event_target_value(&ev);
                            let mut q = query.get_untracked();
                            set(&mut q, (!v.is_empty()).then_some(v));
                            set_query(q);
                        }
                    >
                        <option value="">"All"</option>
                        {move || {
                            let current = get(&query.get()).unwrap_or_default();
                            options
                                .get()
                                .into_iter()
                                .map(|o| {
                                    let selected = o == current;
                                    view! { <option value=o.clone() selected=selected>{o.clone()}</option> }
                                })
                                .collect_view()
                        }}
                    </select>
                </label>
            }
        }
    };
    let set_problem = set_query.clone();
    let set_text = set_query.clone();
    let set_columns = set_query.clone();
    let set_density = set_query.clone();
    view! {
        <form class="filters" role="search" on:submit=|ev| ev.prevent_default()>
            {select("Zone", "zone", |q| q.zone.clone(), |q, v| q.zone = v, |r| r.zone.clone().unwrap_or_else(|| r.cluster.clone()))}
            {select("Provider", "provider", |q| q.provider.clone(), |q, v| q.provider = v, |r| r.provider.to_string())}
            {select("Capacity type", "capacity", |q| q.capacity.clone(), |q, v| q.capacity = v, |r| r.capacity_type.to_string())}
            {select("computeClass", "class", |q| q.class.clone(), |q, v| q.class = v, |r| r.compute_class_text().to_string())}
            {select("Instance type", "type", |q| q.instance_type.clone(), |q, v| q.instance_type = v, |r| r.instance_type.clone())}
            <label class="check">
                <input
                    type="checkbox"
                    name="problem"
                    checked=query.with_untracked(|q| q.problem)
                    prop:checked=move || query.get().problem
                    on:change=move |ev| {
                        let mut q = query.get_untracked();
                        q.problem = event_target_checked(&ev);
                        set_problem(q);
                    }
                />
                "Has a problem"
            </label>
            <label>
                "Name"
                <input
                    type="search"
                    name="q"
                    placeholder="filter by name"
                    value=query.with_untracked(|q| q.text.clone())
                    prop:value=move || query.get().text.unwrap_or_default()
                    on:input=move |ev| {
                        let v = event_target_value(&ev);
                        let mut q = query.get_untracked();
                        q.text = (!v.is_empty()).then_some(v);
                        set_text(q);
                    }
                />
            </label>
            <ColumnChooser query set_query=set_columns />
            <DensityChooser query set_query=set_density />
        </form>
    }
}

/// The table's optional columns, each a checkbox; the choice is kept in the URL (`hide=`).
#[component]
fn ColumnChooser<F>(query: Memo<PoolQuery>, set_query: F) -> impl IntoView
where
    F: Fn(PoolQuery) + Clone + Send + Sync + 'static,
{
    view! {
        <details class="columns">
            <summary>"Columns"</summary>
            <fieldset>
                <legend class="sr-only">"Columns shown"</legend>
                {OPTIONAL_COLUMNS.map(|(id, label)| {
                    let set_query = set_query.clone();
                    view! {
                        <label class="check">
                            <input
                                type="checkbox"
                                name=format!("col-{id}")
                                checked=query.with_untracked(|q| q.shows(id))
                                prop:checked=move || query.with(|q| q.shows(id))
                                on:change=move |ev| {
                                    set_query(query.get_untracked().with_column(id, event_target_checked(&ev)));
                                }
                            />
                            {label}
                        </label>
                    }
                })}
            </fieldset>
        </details>
    }
}

/// Comfortable or compact rows; the choice is kept in the URL (`density=`).
#[component]
fn DensityChooser<F>(query: Memo<PoolQuery>, set_query: F) -> impl IntoView
where
    F: Fn(PoolQuery) + Clone + Send + Sync + 'static,
{
    view! {
        <fieldset class="density">
            <legend>"Rows"</legend>
            {[Density::Comfortable, Density::Compact].map(|d| {
                let set_query = set_query.clone();
                view! {
                    <label class="check">
                        <input
                            type="radio"
                            name="density"
                            value=d.as_str()
                            checked=query.with_untracked(|q| q.density == d)
                            prop:checked=move || query.with(|q| q.density == d)
                            on:change=move |_| set_query(PoolQuery { density: d, ..query.get_untracked() })
                        />
                        {d.as_str()}
                    </label>
                }
            })}
        </fieldset>
    }
}

/// Previous / next, where this page is, and how many rows a page holds.
#[component]
fn Pager<F>(page: Memo<Page>, query: Memo<PoolQuery>, set_query: F) -> impl IntoView
where
    F: Fn(PoolQuery) + Clone + Send + Sync + 'static,
{
    let to_page = {
        let set_query = set_query.clone();
        move |number: usize| {
            set_query(PoolQuery {
                page: number,
                ..query.get_untracked()
            })
        }
    };
    let (previous, next) = (to_page.clone(), to_page);
    let number = move || page.get().number;
    view! {
        <nav class="pager" aria-label="Pages of node pools" data-testid="pager" hidden=move || page.with(|p| p.total == 0)>
            <span class="range" data-testid="page-range">{move || page.get().label()}</span>
            <button type="button" disabled=move || page.with(|p| p.number == 1) on:click=move |_| previous(number() - 1)>
                "‹ Previous"
            </button>
            <span class="muted">{move || format!("Page {} of {}", number(), page.get().count)}</span>
            <button type="button" disabled=move || page.with(|p| p.number == p.count) on:click=move |_| next(number() + 1)>
                "Next ›"
            </button>
            <label>
                "Rows per page"
                <select
                    name="per"
                    prop:value=move || query.get().per_page.to_string()
                    on:change=move |ev| {
                        let per = page_size(Some(&event_target_value(&ev)));
                        set_query(PoolQuery { per_page: per, ..query.get_untracked() });
                    }
                >
                    // `selected` as well: the server-rendered page shows the size before hydration.
                    {PAGE_SIZES.map(|n| view! {
                        <option value=n.to_string() selected=move || query.with(|q| q.per_page == n)>{n}</option>
                    })}
                </select>
            </label>
        </nav>
    }
}

/// A pools table row's height before one is measured (CSS pixels; comfortable density, one
/// line).
const POOL_ROW_PX: f64 = 33.0;

#[component]
fn PoolTable<F>(keys: Memo<Vec<String>>, query: Memo<PoolQuery>, set_query: F) -> impl IntoView
where
    F: Fn(PoolQuery) + Clone + Send + Sync + 'static,
{
    let live = expect_context::<LiveStore>();
    // The page's rows near the viewport only: 500 rows of live cells are 17,000 elements.
    let rows = use_virtual_rows(keys, "pool-rows", Scroll::Page, POOL_ROW_PX);
    let header = move |label: &'static str,
                       key: SortKey,
                       col: &'static str,
                       title: &'static str| {
        let set_query = set_query.clone();
        let aria = move || {
            let q = query.get();
            if q.sort != key {
                "none"
            } else if q.desc {
                "descending"
            } else {
                "ascending"
            }
        };
        view! {
            <th aria-sort=aria scope="col" data-col=col title=(!title.is_empty()).then_some(title)>
                <button
                    type="button"
                    class="sort"
                    on:click=move |_| {
                        let mut q = query.get_untracked();
                        q.desc = q.sort == key && !q.desc;
                        q.sort = key;
                        set_query(q);
                    }
                >
                    {label}
                </button>
            </th>
        }
    };
    view! {
        <Show
            when=move || !keys.get().is_empty()
            fallback=move || {
                if live.pools.is_empty() {
                    view! { <p class="empty">"No NodePools in the watched clusters yet. Create one with kubectl apply, and it appears here."</p> }
                } else {
                    view! { <p class="empty">"No pools match these filters."</p> }
                }
            }
        >
            <div class="table-wrap" tabindex="0" role="region" aria-label="Node pools">
                // Hidden columns are hidden by the table's classes (CSS), so choosing columns
                // re-renders no row.
                <table
                    class=move || query.with(|q| {
                        let mut c = format!("pools density-{}", q.density.as_str());
                        for h in &q.hidden {
                            c.push_str(" hide-");
                            c.push_str(h);
                        }
                        c
                    })
                    data-testid="pools"
                    aria-rowcount=move || keys.with(|k| k.len()) + 1
                >
                    <thead>
                        <tr>
                            {header("Name", SortKey::Name, "name", "")}
                            {header("Zone", SortKey::Cluster, "where", "")}
                            {header("Provider", SortKey::Provider, "provider", "")}
                            {header("Capacity", SortKey::CapacityType, "capacity", "")}
                            {header("Instance type", SortKey::InstanceType, "type", "")}
                            {header("computeClass", SortKey::ComputeClass, "class", "")}
                            {header("Target", SortKey::Target, "target", "")}
                            {header("Current", SortKey::Current, "current", "")}
                            {header("Queued", SortKey::Queued, "queued", "")}
                            {header("Waiting", SortKey::Waiting, "waiting", "Pods waiting for a node that could land on this pool: pods (GPUs) and the longest wait")}
                            {header("Starting", SortKey::InProgress, "inprogress", "")}
                            <th scope="col" data-col="minmax">"Min / max"</th>
                            <th scope="col" data-col="conditions">"Conditions"</th>
                            {header("Problems", SortKey::Problems, "problems", "")}
                            {header("Age", SortKey::Age, "age", "")}
                        </tr>
                    </thead>
                    <VirtualTbody rows columns=15 row=move |key: String| {
                        live.pools.row(&key).map(|row| view! { <PoolRowView row /> })
                    } />
                </table>
            </div>
        </Show>
    }
}

/// The instance type, its GPUs per node (the catalog's), and the pool's GPU allocation now
/// (its nodes' GPUs and what running pods request of them) when it has GPU nodes.
fn type_title(r: &PoolRow) -> String {
    let mut title = match r.gpus_per_node.filter(|g| *g > 0) {
        Some(g) => format!("{} · {g} GPU per node", r.instance_type),
        None => r.instance_type.clone(),
    };
    if r.gpus_allocatable > 0 {
        title.push_str(&format!(
            " · {} of {} GPUs requested",
            r.gpus_in_use(),
            r.gpus_allocatable
        ));
    }
    title
}

/// The work waiting for the pool (its row on the stream, `cluster/pool`): `pods (GPUs)` and
/// the longest wait, kubectl-style; the cause in the title; `—` when nothing waits.
#[component]
fn WaitingCell(row: RwSignal<PoolRow>) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let now = use_now();
    let key = row.with_untracked(|r| format!("{}/{}", r.cluster, r.name));
    let waiting = {
        let key = key.clone();
        move || live.waiting.get(&key).map(|w| w.get())
    };
    let title = {
        let waiting = waiting.clone();
        move || waiting().map(|w| super::pool_parts::waiting_sentence(&w))
    };
    view! {
        <td class="num waiting" data-col="waiting" title=title>
            {move || match waiting() {
                None => "—".to_string(),
                Some(w) if w.gpus > 0 => format!("{} ({} GPU) {}", w.pods, w.gpus, age(w.oldest_since, now.get())),
                Some(w) => format!("{} {}", w.pods, age(w.oldest_since, now.get())),
            }}
        </td>
    }
}

fn count(v: Option<i32>) -> String {
    v.map(|n| n.to_string()).unwrap_or_else(|| "—".into())
}

#[component]
fn PoolRowView(row: RwSignal<PoolRow>) -> impl IntoView {
    let now = use_now();
    let href = move || {
        row.with(|r| {
            format!(
                "/pools/{}/{}",
                encode_component(&r.cluster),
                encode_component(&r.name)
            )
        })
    };
    let problems = move || {
        row.with(|r| {
            let mut p = r.problems.clone();
            if let Some(m) = &r.malformed {
                p.insert(0, format!("Malformed object: {m}"));
            }
            p
        })
    };
    view! {
        <tr data-row=row.with_untracked(|r| r.key.clone()) data-pool=move || row.with(|r| r.name.clone()) data-cluster=move || row.with(|r| r.cluster.clone())>
            <th scope="row" class="name">
                <A href=href>{move || row.with(|r| r.name.clone())}</A>
            </th>
            // Zone as a badge, the cluster in its title (and for screen readers): one line.
            <td class="where" data-col="where" title=move || row.with(|r| r.cluster.clone())>
                {move || row.with(|r| match r.zone.clone() {
                    Some(z) => view! {
                        <span class="badge zone">{z}</span>
                        <span class="sr-only">{format!(" in {}", r.cluster)}</span>
                    }.into_any(),
                    None => view! { <span class="cluster">{r.cluster.clone()}</span> }.into_any(),
                })}
            </td>
            <td data-col="provider">{move || row.with(|r| r.provider.to_string())}</td>
            <td data-col="capacity">
                <span class=move || row.with(|r| format!("badge cap-{}", r.capacity_type))>{move || row.with(|r| r.capacity_type.to_string())}</span>
            </td>
            // The GPUs per node in the title (and for screen readers): the type's name says
            // them already (gd-8xh100ib), and the line has no room to say it twice.
            <td data-col="type" title=move || row.with(type_title)>
                <code>{move || row.with(|r| r.instance_type.clone())}</code>
                <span class="sr-only">{move || row.with(|r| r.gpus_per_node.filter(|g| *g > 0).map(|g| format!(", {g} GPU")).unwrap_or_default())}</span>
            </td>
            // GKE and Karpenter pools have no computeClass.
            <td data-col="class">{move || row.with(|r| r.compute_class.clone()).map(|class| view! { <ClassBadge class /> })}</td>
            <td class="num" data-col="target">{move || row.with(|r| r.target_nodes.to_string())}</td>
            <td class="num" data-col="current">{move || row.with(|r| count(r.current_nodes))}</td>
            <td class="num" data-col="queued">{move || row.with(|r| count(r.queued_nodes))}</td>
            <WaitingCell row />
            <td class="num" data-col="inprogress">{move || row.with(|r| count(r.in_progress))}</td>
            <td class="num" data-col="minmax">
                {move || row.with(|r| match (r.min_nodes, r.max_nodes) {
                    (None, None) => "—".to_string(),
                    (min, max) => format!("{} / {}", count(min), count(max)),
                })}
                {move || row.with(|r| r.autoscaling).then(|| view! { <span class="badge auto" title="autoscaling">"auto"</span> })}
            </td>
            // The five conditions as marks in their fixed order (the projection's), then how
            // many nodes are under notice.
            <td class="conds" data-col="conditions">
                {move || row.with(|r| r.conditions.iter().cloned().map(|c| view! { <ConditionMark cond=c /> }).collect_view())}
                {move || row.with(|r| (r.provider != spotboard_core::Provider::Cks).then(|| view! {
                    <span class="muted small" title="GKE and Karpenter pools are read from their nodes' labels; the five conditions are CoreWeave's">"node labels"</span>
                }))}
                {move || row.with(|r| (r.nodes_preempting > 0).then(|| {
                    let n = r.nodes_preempting;
                    let text = format!("{n} node(s) under their provider's preemption notice");
                    let title = text.clone();
                    view! {
                        <span class="badge preempting" title=title>
                            <span aria-hidden="true">{format!("{n} notice")}</span>
                            <span class="sr-only">{text}</span>
                        </span>
                    }
                }))}
            </td>
            // One sentence, cut with an ellipsis to the room left; all of it on hover and to
            // screen readers (the cell's text is whole, only drawn shorter).
            <td class="problems" data-col="problems" title=move || problems().join("; ")>
                {move || problems().join("; ")}
            </td>
            <td class="num" data-col="age" title=move || crate::components::time::stamp(row.with(|r| r.created))>
                {move || age(row.with(|r| r.created), now.get())}
            </td>
        </tr>
    }
}
