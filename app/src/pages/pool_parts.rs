//! The parts of the pool page: spec, nodes, events.

use leptos::prelude::*;

use crate::{
    components::{
        time::{age, stamp, use_now},
        virtual_rows::{Scroll, VirtualTbody, use_virtual_rows},
    },
    live::LiveStore,
    model::{GpuSource, NodeRow, PoolRow, PoolUtilisation},
};

/// The work waiting for a pool in one sentence: "2 pods (16 GPUs) since 09:12: waiting for
/// spot capacity in …" (the pools table's Waiting cell on hover, the pool page's section).
pub fn waiting_sentence(w: &crate::model::WaitingPool) -> String {
    format!(
        "{} pod{} ({} GPUs){}: {}",
        w.pods,
        if w.pods == 1 { "" } else { "s" },
        w.gpus,
        w.oldest_since
            .map(|t| format!(" since {}", crate::components::time::minute(t)))
            .unwrap_or_default(),
        w.cause
    )
}

/// A fallback pair on the page of `pool` (its on-demand or one of its spot pools), in two
/// sentences: who stands in for whom and what it ran while spot was short in the last
/// 24 h, then the advice.
pub fn fallback_sentence(f: &crate::model::FallbackRow, pool: &str) -> String {
    let who = match f.kind {
        crate::model::PairKind::Karpenter => {
            "This NodePool allows spot and on-demand: Karpenter launches on-demand here when spot is unavailable".to_string()
        }
        _ if f.on_demand_pool == pool => format!("Stands in for {}", f.spot_pools.join(", ")),
        _ => format!("{} stands in for this pool", f.on_demand_pool),
    };
    let mut advice = f.note.clone();
    if let Some(first) = advice.get(..1) {
        advice = first.to_uppercase() + &advice[1..];
    }
    format!(
        "{who}. Last 24 h: {} of {} on-demand node-hours while spot was short, {} beyond spot. {advice}.",
        f.short_node_hours,
        f.on_demand_node_hours,
        crate::domain::cost::usd(Some(f.extra_usd)),
    )
}

/// The pool's spec and configuration status as a definition list.
#[component]
pub fn SpecList(row: RwSignal<PoolRow>) -> impl IntoView {
    let items = move || {
        row.with(|r| {
            let d = &r.detail;
            // GKE and Karpenter pools have none of the NodePool fields below.
            if r.provider != spotboard_core::Provider::Cks {
                return d
                    .provider_spec
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Vec<_>>();
            }
            let mut v: Vec<(&'static str, String)> = vec![
                ("autoscaling", r.autoscaling.to_string()),
                (
                    "lifecycle.scaleDownStrategy",
                    d.scale_down_strategy
                        .clone()
                        .unwrap_or_else(|| "IdleOnly (default)".into()),
                ),
                (
                    "nodeConfigurationUpdateStrategy.type",
                    d.update_strategy
                        .clone()
                        .unwrap_or_else(|| "OnSpecUpdate (default)".into()),
                ),
            ];
            if let Some(i) = &d.image {
                v.push(("image", i.clone()));
            }
            if let Some(g) = &d.gpu_version {
                let note = if d.image.is_some() {
                    " (ignored: image is set and wins)"
                } else {
                    ""
                };
                v.push(("gpu.version", format!("{g}{note}")));
            }
            for (k, val) in &d.node_labels {
                v.push(("nodeLabels", format!("{k}={val}")));
            }
            for (k, val) in &d.node_annotations {
                v.push(("nodeAnnotations", format!("{k}={val}")));
            }
            for t in &d.node_taints {
                v.push(("nodeTaints", t.clone()));
            }
            if let Some(p) = &d.node_profile {
                v.push(("status.nodeProfile", p.clone()));
            }
            for s in &d.pending_configuration {
                v.push(("status.pendingNodeConfiguration", s.clone()));
            }
            for u in &d.unknown_fields {
                v.push(("unknown field (shown as sent)", u.clone()));
            }
            if let Some(g) = d.generation {
                v.push(("metadata.generation", g.to_string()));
            }
            v.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
        })
    };
    view! {
        <section>
            <h2>"Spec"</h2>
            <dl class="spec">
                {move || items().into_iter().map(|(k, v)| view! { <dt>{k}</dt><dd>{v}</dd> }).collect_view()}
            </dl>
        </section>
    }
}

/// A node row's height before one is measured (CSS pixels).
const NODE_ROW_PX: f64 = 31.0;

/// The pool's nodes, keyed by uid.
#[component]
pub fn NodeTable(row: RwSignal<PoolRow>) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    // Tracks only the index (nodes added or removed): a node's name and pool do not change
    // with its state, so a cordon re-renders that node's row and nothing else.
    let all_keys = Memo::new(move |_| {
        let (cluster, name) = row.with_untracked(|r| (r.cluster.clone(), r.name.clone()));
        let mut nodes: Vec<(String, String)> = live
            .nodes
            .signals()
            .into_iter()
            .filter_map(|s| {
                s.with_untracked(|n| {
                    (n.cluster == cluster && n.pool.as_deref() == Some(name.as_str()))
                        .then(|| (n.name.clone(), n.key.clone()))
                })
            })
            .collect();
        nodes.sort();
        nodes.into_iter().map(|(_, key)| key).collect::<Vec<_>>()
    });
    // Every node of the pool, drawn near the viewport only: a pool of thousands of nodes
    // keeps the page as light as one of ten (generic dashboards grind to a halt on hundreds).
    let rows = use_virtual_rows(all_keys, "node-rows", Scroll::Page, NODE_ROW_PX);
    // Whether "Play a preemption" exists here (the embedded cluster only). Asked by the
    // browser once hydrated, so the server's page and the hydrated one agree (no button in
    // either until the answer). Not a resource: a resource here would take a place in the
    // order the server's resources are matched to the page's on hydration, and the condition
    // history below would wait for data that went to this one.
    let playable = RwSignal::new(false);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        leptos::task::spawn_local(async move {
            if let Ok(true) = crate::demo_api::demo_available().await {
                playable.set(true);
            }
        });
    });
    // GPU utilisation, asked by the browser once hydrated and every 30 s (the server's own
    // poll of Prometheus), for the same reason as `playable`.
    let utilisation = RwSignal::new(None::<PoolUtilisation>);
    #[cfg(feature = "hydrate")]
    {
        let (cluster, name) = row.with_untracked(|r| (r.cluster.clone(), r.name.clone()));
        let load = move || {
            let (cluster, name) = (cluster.clone(), name.clone());
            leptos::task::spawn_local(async move {
                if let Ok(u) = crate::allocation_api::load_pool_utilisation(cluster, name).await {
                    utilisation.set(Some(u));
                }
            });
        };
        load();
        let _ = leptos_use::use_interval_fn(load, 30_000);
    }
    let measured = move || utilisation.with(|u| u.as_ref().is_some_and(|u| u.dcgm.is_some()));
    view! {
        <section>
            <h2>"Nodes " <span class="muted">{move || format!("({})", all_keys.with(|k| k.len()))}</span></h2>
            {move || utilisation.get().map(|u| view! { <p class="muted small" data-testid="gpu-source">{gpu_figures_sentence(&u)}</p> })}
            <Show when=move || all_keys.with(|k| !k.is_empty()) fallback=|| view! { <p class="empty">"No nodes in this pool right now."</p> }>
                <div class="table-wrap" tabindex="0" role="region" aria-label="Nodes">
                    <table class="nodes" data-testid="nodes" aria-rowcount=move || all_keys.with(|k| k.len()) + 1>
                        <thead><tr>
                            <th scope="col">"Name"</th><th scope="col">"State"</th><th scope="col">"Ready"</th>
                            <th scope="col">"Schedulable"</th><th scope="col">"Preemption"</th><th scope="col">"Pods"</th>
                            <th scope="col" title="GPUs requested by the node's running pods, of the GPUs it has">"GPUs"</th>
                            <Show when=measured>
                                <th scope="col" title="Mean GPU utilisation of the node's GPUs (DCGM exporter, from Prometheus)">"GPU util"</th>
                            </Show>
                            <th scope="col">"Age"</th>
                        </tr></thead>
                        <VirtualTbody rows columns=9 row=move |key: String| {
                            live.nodes.row(&key).map(|n| view! { <NodeRowView node=n playable utilisation measured /> })
                        } />
                    </table>
                </div>
            </Show>
        </section>
    }
}

#[component]
fn NodeRowView(
    node: RwSignal<NodeRow>,
    playable: RwSignal<bool>,
    utilisation: RwSignal<Option<PoolUtilisation>>,
    measured: impl Fn() -> bool + Send + Sync + Copy + 'static,
) -> impl IntoView {
    let util = move || {
        let name = node.with(|n| n.name.clone());
        utilisation
            .with(|u| u.as_ref().and_then(|u| u.nodes.get(&name).copied()))
            .map(|v| format!("{v} %"))
            .unwrap_or_else(|| "—".into())
    };
    let now = use_now();
    // The answer of the last "Play a preemption" on this node, when it was refused.
    let refused = RwSignal::new(None::<String>);
    let play = move |_| {
        let (cluster, name) = node.with_untracked(|n| (n.cluster.clone(), n.name.clone()));
        leptos::task::spawn_local(async move {
            let answer = crate::demo_api::play_preemption(cluster, name).await;
            refused.set(answer.err().map(|e| e.to_string()));
        });
    };
    // A spot node that is not leaving already (no notice, not cordoned).
    let free_spot = move || {
        node.with(|n| {
            n.capacity_type == spotboard_core::CapacityType::Spot
                && !n.notice
                && !n.pending_preemption
                && n.evicted_at.is_none()
                && !n.cordoned
        })
    };
    let preemption = move || {
        node.with(|n| match (&n.evicted_at, n.pending_preemption) {
            (Some(at), _) => ("draining", format!("drain started {at}")),
            (None, true) => ("pending", "pending (cordoned, T=0)".to_string()),
            (None, false) => ("none", "—".to_string()),
        })
    };
    view! {
        <tr data-row=node.with_untracked(|n| n.key.clone()) data-node=move || node.with(|n| n.name.clone())>
            <th scope="row"><code>{move || node.with(|n| n.name.clone())}</code></th>
            <td>{move || node.with(|n| n.state.clone().unwrap_or_else(|| "—".into()))}</td>
            <td>{move || node.with(|n| match n.ready { Some(true) => "Ready", Some(false) => "NotReady", None => "unknown" })}</td>
            <td>{move || node.with(|n| if n.cordoned { view! { <span class="badge sev-warning">"cordoned"</span> }.into_any() } else { "yes".into_any() })}</td>
            <td data-preemption=move || preemption().0>
                {move || {
                    let (kind, text) = preemption();
                    view! { <span class=format!("badge preempt-{kind}")>{text}</span> }
                }}
                // The embedded cluster only: the simulator's annotation, written as the local
                // user, starts the provider's timeline for this spot node.
                {move || (playable.get() && free_spot()).then(|| view! {
                    " "
                    <button type="button" class="play" data-testid="play-preemption"
                        title="Embedded cluster only: annotate this node sim.spotboard.dev/preempt=now, as kubectl would"
                        on:click=play>
                        "Play a preemption"
                    </button>
                })}
                {move || refused.get().map(|why| view! { <span class="small error-text" role="alert">{why}</span> })}
            </td>
            <td class="num">{move || node.with(|n| n.pods.to_string())}</td>
            <td class="num" data-col="gpus" title=move || node.with(gpu_source)>{move || node.with(gpu_cell)}</td>
            <Show when=measured>
                <td class="num" data-col="gpu-util">{util}</td>
            </Show>
            <td class="num" title=move || stamp(node.with(|n| n.created))>{move || age(node.with(|n| n.created), now.get())}</td>
        </tr>
    }
}

/// The pool's recent events, newest first.
#[component]
pub fn EventList(row: RwSignal<PoolRow>) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let now = use_now();
    let events = Memo::new(move |_| {
        let (cluster, name) = row.with(|r| (r.cluster.clone(), r.name.clone()));
        let mut ev: Vec<_> = live
            .events
            .values()
            .into_iter()
            .filter(|e| e.cluster == cluster && e.pool.as_deref() == Some(name.as_str()))
            .collect();
        ev.sort_by(|a, b| {
            b.last_seen
                .cmp(&a.last_seen)
                .then_with(|| a.key.cmp(&b.key))
        });
        ev.truncate(100);
        ev
    });
    view! {
        <section>
            <h2>"Events"</h2>
            <Show when=move || !events.get().is_empty() fallback=|| view! { <p class="empty">"No recent events."</p> }>
                <table class="events" data-testid="events">
                    <thead><tr><th scope="col">"Last seen"</th><th scope="col">"Type"</th><th scope="col">"Reason"</th><th scope="col">"Object"</th><th scope="col">"Message"</th></tr></thead>
                    <tbody>
                        <For each=move || events.get() key=|e| (e.key.clone(), e.count) let:e>
                            <tr class=format!("ev-{}", e.type_.as_str().to_ascii_lowercase())>
                                <td title=stamp(e.last_seen)>{move || age(e.last_seen, now.get())}</td>
                                <td>{e.type_.to_string()}</td>
                                <td>{e.reason.clone()}</td>
                                <td><code>{e.object.clone()}</code></td>
                                <td>{e.message.clone()}{(e.count > 1).then(|| format!(" (×{})", e.count))}</td>
                            </tr>
                        </For>
                    </tbody>
                </table>
            </Show>
        </section>
    }
}

/// Which GPU figures the node table shows: requests alone, or DCGM utilisation beside them
/// with its range, source and age (or why it could not be read).
fn gpu_figures_sentence(u: &PoolUtilisation) -> String {
    let Some(d) = &u.dcgm else {
        return "GPUs: requested by running pods, not measured use (no Prometheus with DCGM \
                exporter metrics configured: --prometheus-url)"
            .into();
    };
    let read = match d.as_of {
        Some(t) => format!("as of {}", crate::components::time::minute(t)),
        None => "not read yet".into(),
    };
    let failing = d
        .error
        .as_ref()
        .map(|e| format!("; the last read failed: {e}"))
        .unwrap_or_default();
    format!(
        "GPU util: DCGM_FI_DEV_GPU_UTIL, mean over {} per node, from Prometheus at {}, {read}{failing}",
        d.range, d.prometheus
    )
}

/// A node's GPUs as "requested / on the node"; "—" for a node without GPUs or whose count
/// nobody knows.
fn gpu_cell(n: &NodeRow) -> String {
    match n.gpus {
        Some(g) if g > 0 => format!("{} / {g}", n.gpus_requested),
        _ => "—".into(),
    }
}

/// Where the node's GPU count comes from, for the cell's tooltip.
fn gpu_source(n: &NodeRow) -> String {
    match n.gpus_from {
        GpuSource::Capacity => "the node's nvidia.com/gpu capacity".into(),
        GpuSource::Catalog => {
            "the instance-type catalog (the node reports no nvidia.com/gpu yet)".into()
        }
        GpuSource::Unknown => "no GPU count: neither the node nor the catalog gives one".into(),
    }
}
