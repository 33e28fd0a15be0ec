//! "Why did my pod stop?": a pod (or a workload's pods, by name prefix) looked up in the
//! ledger's preemptions, beyond Kubernetes' event TTL (a pod killed by a preemption otherwise
//! looks like an unexplained SIGKILL or a user error).

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::domain::preemption::readiness::pod_lookup;
use crate::model::PodHit;
use crate::preemptions_api::find_pod_hits;

/// The lookup form and its answer.
#[component]
pub fn PodLookup() -> impl IntoView {
    let namespace = RwSignal::new(String::new());
    let name = RwSignal::new(String::new());
    let answer: RwSignal<Option<Result<Vec<PodHit>, String>>> = RwSignal::new(None);
    let asked = RwSignal::new(String::new());
    // Answers can arrive out of order: only the latest question's answer is shown.
    let latest = StoredValue::new(0u64);
    crate::components::typed::keep_typed("[data-testid=pod-lookup] input");
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (ns, n) = (namespace.get_untracked(), name.get_untracked());
        if let Err(e) = pod_lookup(&ns, &n) {
            answer.set(Some(Err(e)));
            return;
        }
        asked.set(format!("{ns}/{n}"));
        let ticket = latest.get_value() + 1;
        latest.set_value(ticket);
        spawn_local(async move {
            let r = find_pod_hits(ns, n).await.map_err(|e| e.to_string());
            if latest.get_value() == ticket {
                answer.set(Some(r));
            }
        });
    };
    view! {
        <section class="pod-lookup" data-testid="pod-lookup">
            <h2>"Why did my pod stop?"</h2>
            <p class="hint">
                "Every preemption's pods are kept in the ledger with how they ended. A name matches as a \
                 prefix, so a Deployment's or StatefulSet's name finds all its pods."
            </p>
            <form class="filters" on:submit=submit>
                <label>"Namespace"
                    <input name="namespace" required prop:value=move || namespace.get()
                        on:input=move |ev| namespace.set(event_target_value(&ev)) />
                </label>
                <label>"Pod name or prefix"
                    <input name="pod" required prop:value=move || name.get()
                        on:input=move |ev| name.set(event_target_value(&ev)) />
                </label>
                <button type="submit">"Look up"</button>
            </form>
            {move || answer.get().map(|r| match r {
                Err(e) => view! { <p class="error" role="alert">{e}</p> }.into_any(),
                Ok(hits) if hits.is_empty() => view! {
                    <p class="empty" role="status">{format!("No preemption hit {}… in the ledger.", asked.get_untracked())}</p>
                }.into_any(),
                Ok(hits) => hits_table(hits).into_any(),
            })}
        </section>
    }
}

fn hits_table(hits: Vec<PodHit>) -> impl IntoView {
    view! {
        <div class="table-wrap" tabindex="0" role="region" aria-label="Pods a preemption hit">
            <table class="pod-hits">
                <thead><tr>
                    <th scope="col">"T=0"</th>
                    <th scope="col">"Pod"</th>
                    <th scope="col">"Node"</th>
                    <th scope="col">"Pool · cluster · zone"</th>
                    <th scope="col">"Grace period"</th>
                    <th scope="col">"How it ended"</th>
                </tr></thead>
                <tbody>
                    {hits.into_iter().map(|h| view! {
                        <tr data-pod=h.pod.name.clone()>
                            <td>{crate::components::time::stamp(h.node.preemption_t0)}</td>
                            <td>{format!("{}/{}", h.pod.namespace, h.pod.name)}</td>
                            <td><code>{h.node.node.clone()}</code>" " <span class="muted small">{h.node.capacity_type.to_string()}</span></td>
                            <td>{format!(
                                "{} · {} · {}",
                                h.node.pool.clone().unwrap_or_else(|| "no pool".into()),
                                h.node.cluster,
                                h.node.zone.clone().unwrap_or_default()
                            )}</td>
                            <td class="num">{format!("{} s", h.pod.grace_s)}</td>
                            <td data-col="outcome">{h.pod.outcome.clone().unwrap_or_else(|| "not yet known".into())}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}
