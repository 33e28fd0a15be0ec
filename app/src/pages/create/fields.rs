//! The form's fields, each with its per-field messages from the shared validation.

use leptos::prelude::*;

use crate::catalog;
use crate::domain::validation::{self, FieldError};
use crate::model::CreateAccess;
use crate::nodepool::{
    ComputeClass, Gpu, Image, Lifecycle, NodeConfigurationUpdateStrategy, NodePoolSpec,
    ScaleDownStrategy, UpdateStrategyType,
};

use super::state::FormState;

/// The messages for one field (exact path, or any path under it).
#[component]
fn Messages(field: &'static str, problems: Memo<Vec<FieldError>>) -> impl IntoView {
    let mine = move || {
        problems.with(|all| {
            all.iter()
                .filter(|e| e.field == field || e.field.starts_with(&format!("{field}.")))
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
        })
    };
    view! {
        <ul class="field-errors" id=format!("err-{field}") data-field=field aria-live="polite">
            {move || mine().into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}
        </ul>
    }
}

fn invalid(problems: Memo<Vec<FieldError>>, field: &'static str) -> impl Fn() -> &'static str {
    move || {
        if problems.with(|all| all.iter().any(|e| e.field == field)) {
            "true"
        } else {
            "false"
        }
    }
}

/// Marks the input an event came from (by its `name`) as touched.
fn touch_target(state: FormState, ev: &leptos::ev::Event) {
    let target = event_target::<leptos::web_sys::Element>(ev);
    if let Some(name) = target.get_attribute("name") {
        state.touch(&name);
    }
}

fn number(text: &str) -> Option<i32> {
    text.trim().parse().ok()
}

/// Every field of the NodePool spec the form offers (CoreWeave: Node Pool reference).
#[component]
pub fn PoolForm(
    state: FormState,
    access: StoredValue<CreateAccess>,
    problems: Memo<Vec<FieldError>>,
) -> impl IntoView {
    let d = state.draft;
    let instance = Memo::new(move |_| d.with(|d| d.spec.instance_type.clone()));
    let autoscaling = Memo::new(move |_| d.with(|d| d.spec.autoscaling));
    let is_spot = Memo::new(move |_| d.with(|d| d.spec.compute_class == ComputeClass::Spot));

    view! {
        // Leaving an input, or typing in it, touches it: its messages may show from then on.
        <form class="pool-form" aria-label="NodePool" on:submit=|ev| ev.prevent_default()
            on:focusout=move |ev| touch_target(state, &ev)
            on:input=move |ev| touch_target(state, &ev)
            on:change=move |ev| touch_target(state, &ev)>
            <label>
                <span>"Name"</span>
                <input type="text" name="name" autocomplete="off" spellcheck="false"
                    placeholder="h100-spot-east"
                    aria-invalid=invalid(problems, "metadata.name")
                    aria-describedby="err-metadata.name"
                    value=d.with_untracked(|d| d.name.clone())
                    prop:value=move || d.with(|d| d.name.clone())
                    on:input=move |ev| state.edit(|d| d.name = event_target_value(&ev)) />
            </label>
            <Messages field="metadata.name" problems />

            <label>
                <span>"Cluster (zone)"</span>
                <select name="cluster" aria-describedby="err-cluster"
                    prop:value=move || d.with(|d| d.cluster.clone())
                    on:change=move |ev| state.edit(|d| d.cluster = event_target_value(&ev))>
                    <option value="">"Choose a cluster"</option>
                    {access.with_value(|a| a.clusters.iter().map(|c| {
                        let label = match &c.zone {
                            Some(z) => format!("{} ({z})", c.cluster),
                            None => c.cluster.clone(),
                        };
                        let label = if c.allowed { label } else { format!("{label}: you may not create here") };
                        let value = c.cluster.clone();
                        let selected = value.clone();
                        view! {
                            <option value=value selected=move || d.with(|d| d.cluster == selected)>{label}</option>
                        }
                    }).collect_view())}
                </select>
            </label>
            <Messages field="cluster" problems />

            <fieldset class="inline">
                <legend>"computeClass"</legend>
                {["spot", "default"].into_iter().map(|class| view! {
                    <label class="check">
                        <input type="radio" name="computeClass" value=class
                            checked=d.with_untracked(|d| d.spec.compute_class.as_str() == class)
                            prop:checked=move || d.with(|d| d.spec.compute_class.as_str() == class)
                            on:change=move |_| state.edit(|d| d.spec.compute_class = class.into()) />
                        {class}
                    </label>
                }).collect_view()}
            </fieldset>
            <p class="hint" hidden=move || is_spot.get()>
                "This form is for Spot pools; default (on-demand and reserved) is allowed too."
            </p>
            <Messages field="spec.computeClass" problems />

            <label>
                <span>"instanceType"</span>
                <select name="instanceType" aria-describedby="err-spec.instanceType"
                    aria-invalid=invalid(problems, "spec.instanceType")
                    prop:value=move || instance.get()
                    on:change=move |ev| state.edit(|d| d.spec.instance_type = event_target_value(&ev))>
                    <option value="">"Choose an instance type"</option>
                    {catalog::instance_types().iter().map(|t| {
                        let id = t.id.clone();
                        let selected = id.clone();
                        let label = if t.superchip {
                            format!("{} ({}): Superchip, no Spot", t.id, t.gpu_model)
                        } else if t.gpus > 0 {
                            format!("{} ({} × {})", t.id, t.gpus, t.gpu_model)
                        } else {
                            format!("{} (CPU, {} vCPU)", t.id, t.vcpus)
                        };
                        view! { <option value=id selected=move || instance.get() == selected>{label}</option> }
                    }).collect_view()}
                </select>
            </label>
            <p class="hint" data-testid="instance-details">
                {move || match catalog::instance_type(&instance.get()) {
                    Some(t) => format!(
                        "{} GPU × {} · {} vCPU · {} GB RAM · {}{}. instanceType cannot be changed after creation.",
                        t.gpus,
                        if t.gpu_model.is_empty() { "none" } else { &t.gpu_model },
                        t.vcpus, t.ram_gb, t.arch,
                        if t.superchip { format!(". {}", validation::SUPERCHIP_SPOT_REASON) } else { String::new() },
                    ),
                    None => "instanceType cannot be changed after creation.".to_string(),
                }}
            </p>
            <Messages field="spec.instanceType" problems />

            <label>
                <span>"targetNodes"</span>
                <input type="number" name="targetNodes" min="0" step="1"
                    aria-invalid=invalid(problems, "spec.targetNodes")
                    aria-describedby="err-spec.targetNodes"
                    value=d.with_untracked(|d| d.spec.target_nodes.to_string())
                    prop:value=move || d.with(|d| d.spec.target_nodes.to_string())
                    on:input=move |ev| state.edit(|d| d.spec.target_nodes = number(&event_target_value(&ev)).unwrap_or(0)) />
            </label>
            <Messages field="spec.targetNodes" problems />

            <label class="check">
                <input type="checkbox" name="autoscaling"
                    checked=autoscaling.get_untracked()
                    prop:checked=move || autoscaling.get()
                    on:change=move |ev| state.edit(|d| d.spec.autoscaling = event_target_checked(&ev)) />
                "autoscaling (the cluster autoscaler moves targetNodes between minNodes and maxNodes)"
            </label>
            <div class="pair" hidden=move || !autoscaling.get()>
                <OptionalCount state problems field="spec.minNodes" label="minNodes"
                    get=|s| s.min_nodes set=|s, v| s.min_nodes = v />
                <OptionalCount state problems field="spec.maxNodes" label="maxNodes"
                    get=|s| s.max_nodes set=|s, v| s.max_nodes = v />
            </div>
            <Messages field="spec.minNodes" problems />
            <Messages field="spec.maxNodes" problems />

            <TextLines state problems field="spec.nodeLabels" label="nodeLabels"
                hint="One key=value per line, as kubectl label. Not in *.coreweave.cloud or *.coreweave.com."
                text=state.labels />
            <TextLines state problems field="spec.nodeAnnotations" label="nodeAnnotations"
                hint="One key=value per line."
                text=state.annotations />
            <TextLines state problems field="spec.nodeTaints" label="nodeTaints"
                hint="One key=value:Effect per line, as kubectl taint; Effect is NoSchedule, PreferNoSchedule or NoExecute."
                text=state.taints />

            <Strategies state problems />
        </form>
    }
    .into_any()
}

/// A select over an optional enum field; the `""` option means unset.
#[component]
fn EnumSelect(
    state: FormState,
    problems: Memo<Vec<FieldError>>,
    field: &'static str,
    label: &'static str,
    options: &'static [(&'static str, &'static str)],
    get: fn(&NodePoolSpec) -> Option<&str>,
    set: fn(&mut NodePoolSpec, Option<&str>),
) -> impl IntoView {
    let d = state.draft;
    view! {
        <label>
            <span>{label}</span>
            <select name=label
                prop:value=move || d.with(|d| get(&d.spec).unwrap_or_default().to_string())
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    state.edit(|d| set(&mut d.spec, Some(v.as_str()).filter(|v| !v.is_empty())))
                }>
                {options.iter().map(|(value, text)| view! { <option value=*value>{*text}</option> }).collect_view()}
            </select>
        </label>
        <Messages field problems />
    }
}

/// An optional node count (minNodes, maxNodes): empty means unset.
#[component]
fn OptionalCount(
    state: FormState,
    problems: Memo<Vec<FieldError>>,
    field: &'static str,
    label: &'static str,
    get: fn(&NodePoolSpec) -> Option<i32>,
    set: fn(&mut NodePoolSpec, Option<i32>),
) -> impl IntoView {
    let d = state.draft;
    view! {
        <label>
            <span>{label}</span>
            <input type="number" name=label min="0" step="1"
                aria-invalid=invalid(problems, field)
                value=d.with_untracked(|d| get(&d.spec).map(|n| n.to_string()))
                prop:value=move || d.with(|d| get(&d.spec).map(|n| n.to_string()).unwrap_or_default())
                on:input=move |ev| state.edit(|d| set(&mut d.spec, number(&event_target_value(&ev)))) />
        </label>
    }
}

/// A textarea edited as lines (labels, annotations, taints).
#[component]
fn TextLines(
    state: FormState,
    problems: Memo<Vec<FieldError>>,
    field: &'static str,
    label: &'static str,
    hint: &'static str,
    text: RwSignal<String>,
) -> impl IntoView {
    view! {
        <label>
            <span>{label}</span>
            <textarea name=label rows="3" spellcheck="false"
                aria-invalid=invalid(problems, field)
                aria-describedby=format!("err-{field}")
                prop:value=move || text.get()
                on:input=move |ev| {
                    text.set(event_target_value(&ev));
                    state.edit_text_fields();
                }></textarea>
        </label>
        <p class="hint">{hint}</p>
        <Messages field problems />
    }
}

/// scaleDownStrategy, nodeConfigurationUpdateStrategy, gpu.version and image.name.
#[component]
fn Strategies(state: FormState, problems: Memo<Vec<FieldError>>) -> impl IntoView {
    let d = state.draft;
    let notes = Memo::new(move |_| d.with(|d| validation::notes(&d.spec)));
    view! {
        <EnumSelect state problems field="spec.lifecycle" label="lifecycle.scaleDownStrategy"
            options=&[
                ("", "(CoreWeave's default, IdleOnly)"),
                ("IdleOnly", "IdleOnly: remove only idle nodes"),
                ("PreferIdle", "PreferIdle: idle nodes first, then active ones"),
            ]
            get=|s| s.lifecycle.as_ref().and_then(|l| l.scale_down_strategy.as_ref()).map(|v| v.as_str())
            set=|s, v| {
                let l = s.lifecycle.get_or_insert_with(Lifecycle::default);
                l.scale_down_strategy = v.map(ScaleDownStrategy::from);
                if l == &Lifecycle::default() {
                    s.lifecycle = None;
                }
            } />
        <EnumSelect state problems field="spec.nodeConfigurationUpdateStrategy"
            label="nodeConfigurationUpdateStrategy.type"
            options=&[
                ("", "(CoreWeave's default, OnSpecUpdate)"),
                ("Manual", "Manual"),
                ("OnSpecUpdate", "OnSpecUpdate"),
                ("Always", "Always"),
            ]
            get=|s| s.node_configuration_update_strategy.as_ref().and_then(|u| u.type_.as_ref()).map(|v| v.as_str())
            set=|s, v| {
                s.node_configuration_update_strategy = v.map(|v| NodeConfigurationUpdateStrategy {
                    type_: Some(UpdateStrategyType::from(v)),
                });
            } />
        <div class="pair">
            <label>
                <span>"gpu.version"</span>
                <input type="text" name="gpuVersion" placeholder="e.g. 570"
                    value=d.with_untracked(|d| d.spec.gpu.as_ref().and_then(|g| g.version.clone()))
                    prop:value=move || d.with(|d| d.spec.gpu.as_ref().and_then(|g| g.version.clone()).unwrap_or_default())
                    on:input=move |ev| {
                        let v = event_target_value(&ev);
                        state.edit(|d| d.spec.gpu = (!v.trim().is_empty()).then(|| Gpu { version: Some(v.trim().to_string()) }))
                    } />
            </label>
            <label>
                <span>"image.name"</span>
                <input type="text" name="imageName" placeholder="only when CoreWeave support says so"
                    value=d.with_untracked(|d| d.spec.image.as_ref().and_then(|i| i.name.clone()))
                    prop:value=move || d.with(|d| d.spec.image.as_ref().and_then(|i| i.name.clone()).unwrap_or_default())
                    on:input=move |ev| {
                        let v = event_target_value(&ev);
                        state.edit(|d| {
                            let mut image = d.spec.image.clone().unwrap_or_default();
                            image.name = (!v.trim().is_empty()).then(|| v.trim().to_string());
                            d.spec.image = (image != Image::default()).then_some(image);
                        })
                    } />
            </label>
        </div>
        <p class="hint">"gpu and image are mutually exclusive: when both are set, image wins and gpu is ignored (CoreWeave docs: Node Pool reference)."</p>
        <ul class="field-notes" role="status">
            {move || notes.get().into_iter().map(|n| view! { <li>{n.message}</li> }).collect_view()}
        </ul>
        <Messages field="spec.image" problems />
    }
}
