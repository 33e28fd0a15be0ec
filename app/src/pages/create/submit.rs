//! Dry run, then create: the server's verdict, the large-pool confirmation, and the way to
//! the new pool's page.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_navigate;

use crate::create_api::submit_pool;
use crate::domain::cost;
use crate::domain::validation::FieldError;
use crate::model::{CreateAccess, SubmitMode, SubmitOutcome, encode_component};

use super::state::FormState;

/// The buttons and the verdict.
#[component]
pub fn SubmitBar(
    state: FormState,
    access: StoredValue<CreateAccess>,
    problems: Memo<Vec<FieldError>>,
) -> impl IntoView {
    let d = state.draft;
    let cluster_access = Memo::new(move |_| {
        d.with(|d| {
            access.with_value(|a| a.clusters.iter().find(|c| c.cluster == d.cluster).cloned())
        })
    });
    let blocked = Memo::new(move |_| match cluster_access.get() {
        Some(c) if !c.allowed => Some(c.reason),
        None if !d.with(|d| d.cluster.is_empty()) => Some("unknown cluster".to_string()),
        _ => None,
    });
    let large = Memo::new(move |_| {
        d.with(|d| {
            let zone = cluster_access
                .get()
                .and_then(|c| c.zone)
                .unwrap_or_default();
            cost::preview(&d.spec, &zone).is_some_and(|p| p.needs_confirmation())
        })
    });
    let dry_run_ok = Memo::new(move |_| {
        state
            .dry_run_ok_for
            .with(|ok| ok.as_ref().is_some_and(|ok| d.with(|d| ok == d)))
    });
    let unsupported = Memo::new(move |_| {
        state
            .outcome
            .with(|o| o.as_ref().is_some_and(|o| o.dry_run_unsupported))
    });
    let confirmed = move || !large.get() || state.confirm.with(|c| d.with(|d| *c == d.name));
    let can_dry_run =
        move || problems.with(Vec::is_empty) && blocked.get().is_none() && !state.busy.get();
    let can_create =
        move || can_dry_run() && (dry_run_ok.get() || unsupported.get()) && confirmed();
    // Dry run is pressable with problems left: pressing it is the submit attempt that shows
    // every field's messages (a disabled button tells nobody why).
    let can_press_dry_run = move || blocked.get().is_none() && !state.busy.get();

    let navigate = use_navigate();
    let send = move |mode: SubmitMode| {
        let draft = d.get_untracked();
        let confirm = Some(state.confirm.get_untracked()).filter(|c| !c.is_empty());
        state.busy.set(true);
        let navigate = navigate.clone();
        spawn_local(async move {
            let outcome = match submit_pool(draft.clone(), mode, confirm).await {
                Ok(o) => o,
                Err(e) => SubmitOutcome::refused(mode, format!("the request failed: {e}")),
            };
            state.busy.set(false);
            if outcome.accepted && mode == SubmitMode::DryRun {
                state.dry_run_ok_for.set(Some(draft.clone()));
            }
            let created = outcome.accepted && mode == SubmitMode::Create;
            state.outcome.set(Some(outcome));
            if created {
                navigate(
                    &format!(
                        "/pools/{}/{}",
                        encode_component(&draft.cluster),
                        encode_component(&draft.name)
                    ),
                    Default::default(),
                );
            }
        });
    };
    let send_dry = send.clone();

    view! {
        <section class="submit" aria-label="Submit">
            {move || blocked.get().map(|why| view! {
                <p class="notice" data-testid="blocked">"Creating is disabled: " {why}</p>
            })}
            <div hidden=move || !large.get()>
                <label>
                    <span>"Type the pool name to confirm this large pool"</span>
                    <input type="text" name="confirm" autocomplete="off"
                        prop:value=move || state.confirm.get()
                        on:input=move |ev| state.confirm.set(event_target_value(&ev)) />
                </label>
            </div>
            <div class="buttons">
                <button type="button" disabled=move || !can_press_dry_run()
                    on:click=move |_| {
                        if can_dry_run() {
                            send_dry(SubmitMode::DryRun);
                        } else {
                            state.attempted.set(true);
                        }
                    }>
                    "Dry run"
                </button>
                <button type="button" class="primary" disabled=move || !can_create()
                    on:click=move |_| send(SubmitMode::Create)>
                    {move || if unsupported.get() && !dry_run_ok.get() {
                        "Create without a dry run"
                    } else {
                        "Create"
                    }}
                </button>
                <span class="muted">{move || {
                    if state.busy.get() {
                        "Asking the API server…"
                    } else if !problems.with(Vec::is_empty) && state.attempted.get() {
                        "Fix the fields marked above first."
                    } else if !problems.with(Vec::is_empty) {
                        "Dry run checks every field first."
                    } else if !dry_run_ok.get() && !unsupported.get() {
                        "Create is offered after the API server accepts a dry run of this exact pool."
                    } else {
                        ""
                    }
                }}</span>
            </div>
            {move || state.outcome.get().map(|o| {
                let class = if o.accepted { "verdict ok" } else { "verdict refused" };
                let mode = match o.mode { SubmitMode::DryRun => "Dry run", SubmitMode::Create => "Create" };
                view! {
                    <div class=class role="status" data-testid="verdict">
                        <strong>{format!("{mode}: {}", if o.accepted { "accepted" } else { "refused" })}</strong>
                        " " {o.message.clone()}
                        {o.reason.clone().map(|r| view! { <span class="badge">{r}</span> })}
                        {o.dry_run_unsupported.then(|| view! {
                            <p>"An admission webhook in this cluster does not support dry runs. You may create without one."</p>
                        })}
                        <ul class="field-errors">
                            {o.errors.iter().map(|e| view! { <li>{e.to_string()}</li> }).collect_view()}
                        </ul>
                        {o.identity.clone().map(|who| view! { <p class="muted">{format!("Sent as {who}.")}</p> })}
                    </div>
                }
            })}
        </section>
    }
    .into_any()
}
