//! The Node Pools page's "Kueue queues" section: each ClusterQueue, live from the stream (its
//! `queue` rows), one line each: its flavors (the pools they land on in their titles), the work waiting for
//! quota and how long, and what it admitted by capacity type. Absent on fleets without Kueue.

use leptos::prelude::*;

use crate::components::time::{age, use_now};
use crate::live::LiveStore;
use crate::model::{QueueFlavor, QueueRow};

/// `h100-spot (spot)`: a flavor and what its nodes are, the pools it lands on in the title;
/// "no pool" (a warning) when its node labels match none. Flavors are joined by "→", the order
/// Kueue tries them in.
fn flavor(f: &QueueFlavor) -> impl IntoView + use<> {
    let kind = f.kind_suffix();
    let quota = f
        .gpu_quota
        .map(|q| format!("; {} of {q} GPUs admitted", f.gpus_admitted))
        .unwrap_or_default();
    let lands = if f.pools.is_empty() {
        "no pool gives its nodes this flavor's nodeLabels: what Kueue admits here cannot run"
            .to_string()
    } else {
        format!("lands on {}", f.pools.join(", "))
    };
    let title = format!("ResourceFlavor {}{kind}: {lands}{quota}", f.name);
    let warn = f
        .pools
        .is_empty()
        .then(|| view! { " " <span class="warn-text">"no pool"</span> });
    view! {
        <span class="flavor" title=title>
            <code>{f.name.clone()}</code>{kind}{warn}
        </span>
    }
}

fn admitted(n: u32, gpus: u32) -> String {
    match (n, gpus) {
        (0, _) => "—".into(),
        (n, 0) => n.to_string(),
        (n, g) => format!("{n} ({g} GPU)"),
    }
}

#[component]
fn QueueLine(row: RwSignal<QueueRow>) -> impl IntoView {
    let now = use_now();
    let name = row.with_untracked(|r| r.name.clone());
    view! {
        <tr data-queue=name>
            {move || row.with(|r| {
                let cohort = r.cohort.clone().map(|c| format!("cohort {c}")).unwrap_or_default();
                let flavors = r
                    .flavors
                    .iter()
                    .map(flavor)
                    .collect_view();
                let quota = r.gpu_quota().map_or_else(
                    || "—".to_string(),
                    |(q, used)| format!("{used} / {q}"),
                );
                let status = (!r.active).then(|| {
                    let why = r.inactive_reason.clone().unwrap_or_default();
                    view! { <span class="badge sev-warning" title=why>"inactive"</span> }
                });
                let pending_title = match &r.oldest_pending {
                    Some(w) if !r.pending_message.is_empty() => format!("{w}: {}", r.pending_message),
                    Some(w) => w.clone(),
                    None => String::new(),
                };
                view! {
                    <th scope="row" class="name" title=cohort>{r.name.clone()}" "{status}</th>
                    <td class="where" title=r.cluster.clone()>{r.cluster.clone()}</td>
                    <td class="flavors">{flavors}</td>
                    <td class="num" data-col="pending" title=pending_title.clone()>
                        {admitted(r.pending_workloads, r.pending_gpus)}
                    </td>
                    <td class="num" data-col="oldest">{(r.pending_workloads > 0).then(|| age(r.oldest_pending_since, now.get()))}</td>
                    <td class="num" data-col="spot">{admitted(r.admitted_spot, r.admitted_gpus_spot)}</td>
                    <td class="num" data-col="on-demand">{admitted(r.admitted_on_demand, r.admitted_gpus_on_demand)}</td>
                    <td class="num" data-col="other" title="Admitted into a flavor whose pools are of another or mixed capacity type, or none">
                        {admitted(r.admitted_other, r.admitted_gpus_other)}
                    </td>
                    <td class="num" data-col="quota" title="GPUs admitted / nominalQuota over the queue's flavors">{quota}</td>
                    <td class="note" title=pending_title>{r.pending_message.clone()}</td>
                }
            })}
        </tr>
    }
}

/// The section, below the pools table; nothing while no cluster has a ClusterQueue.
#[component]
pub fn KueueQueues() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let keys = Memo::new(move |_| {
        let mut k = live.queues.keys();
        k.sort();
        k
    });
    move || {
        (!keys.with(Vec::is_empty)).then(|| {
            view! {
                <details class="section" open data-testid="kueue">
                    <summary><h2>"Kueue queues"</h2></summary>
                    <p class="muted">
                        "Work Kueue holds back for quota, per ClusterQueue, and what it admitted into spot and on-demand flavors. A flavor lands on the pools whose nodes carry its nodeLabels."
                    </p>
                    <div class="table-wrap" tabindex="0" role="region" aria-label="Kueue ClusterQueues">
                        <table class="breakdown queues">
                            <thead><tr>
                                <th scope="col">"ClusterQueue"</th>
                                <th scope="col">"Cluster"</th>
                                <th scope="col" title="ResourceFlavors in the order Kueue tries them; the pools each lands on, on hover">"Flavors"</th>
                                <th scope="col" title="Workloads without quota reserved, and their GPUs">"Pending"</th>
                                <th scope="col" title="How long the longest-waiting workload has waited">"Oldest"</th>
                                <th scope="col" title="Admitted workloads in spot flavors, and their GPUs">"Spot"</th>
                                <th scope="col" title="Admitted workloads in on-demand flavors, and their GPUs">"On-demand"</th>
                                <th scope="col">"Other"</th>
                                <th scope="col">"GPU quota"</th>
                                <th scope="col" title="Kueue's message on the longest-waiting workload">"Why waiting"</th>
                            </tr></thead>
                            <tbody>
                                <For each=move || keys.get() key=|k| k.clone() let:key>
                                    {live.queues.row(&key).map(|row| view! { <QueueLine row /> })}
                                </For>
                            </tbody>
                        </table>
                    </div>
                </details>
            }
        })
    }
}
