//! The preemption drill panel on a spot pool's page: pick a node, dry-run (who would be hit,
//! their findings, what each budget would say, what refuses the drill), type the node's name,
//! run; abort at any point. The drill's live timeline is its card on `/preemptions` (and this
//! page's preemptions section), marked "drill".
//!
//! Requests go through the `run_drill` server function as the user (Origin-checked like the
//! create form's); nothing is asked until the person presses a button.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::drill_api::run_drill;
use crate::live::LiveStore;
use crate::model::{DrillMode, DrillOutcome, DrillPlan, DrillRefusal, DrillRequest, DrillState};
use spotboard_core::CapacityType;

/// The panel for pool `name` of `cluster`.
#[component]
pub fn DrillPanel(cluster: String, pool: String) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let cluster = StoredValue::new(cluster);
    // Spot nodes of the pool a drill may start on (not cordoned, not under notice), and those
    // under a drill now (to abort, after a reload too), by name; `true` for a drilled one.
    let candidates = Memo::new(move |_| {
        let c = cluster.get_value();
        let mut names: Vec<(String, bool)> = live
            .nodes
            .signals()
            .into_iter()
            .filter_map(|s| {
                s.with(|n| {
                    let mine = n.cluster == c
                        && n.pool.as_deref() == Some(pool.as_str())
                        && n.capacity_type == CapacityType::Spot;
                    (mine && (n.drill || (!n.cordoned && !n.notice)))
                        .then(|| (n.name.clone(), n.drill))
                })
            })
            .collect();
        names.sort();
        names
    });
    let node = RwSignal::new(String::new());
    let confirm = RwSignal::new(String::new());
    let busy = RwSignal::new(false);
    let outcome = RwSignal::new(None::<DrillOutcome>);
    // The node a drill was started on from this page (abort targets it).
    let started = RwSignal::new(None::<String>);
    let send = move |mode: DrillMode| {
        let target = if mode == DrillMode::Abort {
            started
                .get_untracked()
                .unwrap_or_else(|| node.get_untracked())
        } else {
            node.get_untracked()
        };
        if target.is_empty() {
            return;
        }
        let req = DrillRequest {
            cluster: cluster.get_value(),
            node: target.clone(),
            mode,
            confirm: (mode == DrillMode::Run).then(|| confirm.get_untracked()),
        };
        busy.set(true);
        spawn_local(async move {
            let out = run_drill(req).await.unwrap_or_else(|e| {
                DrillOutcome::refused(DrillRefusal::Upstream, format!("the request failed: {e}"))
            });
            busy.set(false);
            if out.refusal.is_none() {
                match mode {
                    DrillMode::Run => started.set(Some(target)),
                    DrillMode::Abort => started.set(None),
                    DrillMode::DryRun => {}
                }
            }
            outcome.set(Some(out));
        });
    };
    let selected = move || node.with(|n| !n.is_empty());
    // The chosen node is under a drill now (started here or elsewhere, before a reload).
    let selected_drilled = move || {
        node.with(|n| candidates.with(|c| c.iter().any(|(name, drill)| *drill && name == n)))
    };
    let confirmed = move || node.with(|n| confirm.with(|c| !n.is_empty() && n == c));
    view! {
        <section class="drill" data-testid="drill-panel">
            <h2>"Preemption drill"</h2>
            <p class="small muted">
                "Rehearse this provider's preemption on one spot node as you: cordon and notice at T=0, "
                "drain by eviction (budgets respected), and at the window's end the node is left cordoned, never deleted. "
                "Not counted as a preemption. Abort restores the node."
            </p>
            <div class="drill-controls">
                <label>"Node "
                    <select data-testid="drill-node" prop:value=move || node.get()
                        on:change=move |ev| { node.set(event_target_value(&ev)); confirm.set(String::new()); outcome.set(None); }>
                        <option value="">"choose a spot node"</option>
                        <For each=move || candidates.get() key=|n| n.clone() let:n>
                            <option value=n.0.clone()>{if n.1 { format!("{} (drill running)", n.0) } else { n.0.clone() }}</option>
                        </For>
                    </select>
                </label>
                <button type="button" data-testid="drill-dry-run" disabled=move || busy.get() || !selected()
                    on:click=move |_| send(DrillMode::DryRun)>"Dry run"</button>
                <label>"Type the node's name to confirm "
                    <input type="text" data-testid="drill-confirm" autocomplete="off" spellcheck="false"
                        prop:value=move || confirm.get()
                        on:input=move |ev| confirm.set(event_target_value(&ev)) />
                </label>
                <button type="button" class="danger" data-testid="drill-run"
                    disabled=move || busy.get() || !confirmed()
                    on:click=move |_| send(DrillMode::Run)>"Run drill"</button>
                <button type="button" data-testid="drill-abort"
                    disabled=move || busy.get() || (started.with(Option::is_none) && !selected_drilled())
                    on:click=move |_| send(DrillMode::Abort)>"Abort"</button>
            </div>
            {move || outcome.get().map(outcome_view)}
        </section>
    }
}

fn outcome_view(out: DrillOutcome) -> impl IntoView {
    let class = if out.refusal.is_some() { "error" } else { "ok" };
    let state = out.drill.as_ref().map(|d| match d.state {
        DrillState::Running => "running",
        DrillState::Completed => "completed",
        DrillState::Aborted => "aborted",
        DrillState::Failed => "failed",
    });
    view! {
        <p class=class data-testid="drill-message" role="status">
            {out.message.clone()}
            {state.map(|s| format!(" (drill {s})"))}
        </p>
        {out.plan.map(plan_view)}
    }
}

fn plan_view(plan: DrillPlan) -> impl IntoView {
    let phases = plan
        .phases
        .iter()
        .map(|p| format!("T+{} s {}", p.at_s, p.name))
        .collect::<Vec<_>>()
        .join(" · ");
    let pods = plan.pods.clone();
    view! {
        <p class="small" data-testid="drill-phases">{format!("{} notice window: {phases}", plan.provider.as_str())}</p>
        {(!plan.refusals.is_empty()).then(|| view! {
            <ul class="error" data-testid="drill-refusals">
                {plan.refusals.iter().map(|r| view! { <li>{r.clone()}</li> }).collect_view()}
            </ul>
        })}
        <div class="table-wrap" tabindex="0" role="region" aria-label="Pods the drill would evict">
            <table class="blast" data-testid="drill-pods">
                <thead><tr>
                    <th scope="col">"Pod"</th><th scope="col">"Owner"</th><th scope="col">"PodDisruptionBudget"</th>
                    <th scope="col">"Grace period"</th><th scope="col">"Fits the window"</th><th scope="col">"Eviction now"</th>
                </tr></thead>
                <tbody>
                    {pods.into_iter().map(|p| view! {
                        <tr>
                            <td><code>{format!("{}/{}", p.namespace, p.name)}</code></td>
                            <td>{match (p.owner_kind, p.owner_name) {
                                (Some(k), Some(n)) => format!("{k}/{n}"),
                                _ => "bare pod".into(),
                            }}</td>
                            <td>{p.pdb.unwrap_or_else(|| "none".into())}</td>
                            <td class="num">{format!("{} s", p.grace_s)}</td>
                            <td>{if p.fits { "yes" } else { "no: killed mid-shutdown" }}</td>
                            <td>{p.refused.unwrap_or_else(|| "would be evicted".into())}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        {(!plan.findings.is_empty()).then(|| view! {
            <details>
                <summary>{format!("{} readiness findings", plan.findings.len())}</summary>
                <ul class="small">{plan.findings.iter().map(|f| view! { <li>{f.clone()}</li> }).collect_view()}</ul>
            </details>
        })}
    }
}
