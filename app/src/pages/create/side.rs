//! Beside the form: the cost preview and the live YAML manifest.

use leptos::prelude::*;
use leptos_use::{UseClipboardReturn, use_clipboard};

use crate::domain::cost::{self, Cost, HOURS_PER_MONTH, usd};
use crate::model::{CreateAccess, encode_component};

use super::state::FormState;

/// Cost preview and YAML.
#[component]
pub fn SidePanel(state: FormState, access: StoredValue<CreateAccess>) -> impl IntoView {
    view! {
        <aside class="create-side">
            <CostPreview state access />
            <YamlPane state />
        </aside>
    }
    .into_any()
}

fn cell(c: &Cost) -> String {
    format!("{}/h · {}/mo", usd(c.usd_per_hour), usd(c.usd_per_month))
}

fn title(c: &Cost, unit: Option<rust_decimal::Decimal>, label: &str) -> String {
    format!(
        "{} nodes × {} per instance-hour ({label}); month = {HOURS_PER_MONTH} h",
        c.nodes,
        usd(unit)
    )
}

#[component]
fn CostPreview(state: FormState, access: StoredValue<CreateAccess>) -> impl IntoView {
    let preview = Memo::new(move |_| {
        state.draft.with(|d| {
            let zone = access.with_value(|a| {
                a.clusters
                    .iter()
                    .find(|c| c.cluster == d.cluster)
                    .and_then(|c| c.zone.clone())
                    .unwrap_or_default()
            });
            cost::preview(&d.spec, &zone)
        })
    });
    view! {
        <section class="cost" aria-labelledby="cost-h" data-testid="cost">
            <h2 id="cost-h">"Cost"</h2>
            {move || match preview.get() {
                None => view! { <p class="muted">"Choose an instance type to see its price."</p> }.into_any(),
                Some(p) => {
                    let spot = p.prices.spot;
                    let od = p.prices.on_demand;
                    let max_cols = p.spot_at_max.clone().zip(p.on_demand_at_max.clone());
                    let has_max = max_cols.is_some();
                    view! {
                        <table class="cost-table">
                            <thead><tr>
                                <th></th>
                                <th>{format!("at targetNodes ({})", p.spot_at_target.nodes)}</th>
                                {max_cols.as_ref().map(|(s, _)| view! { <th>{format!("at maxNodes ({})", s.nodes)}</th> })}
                            </tr></thead>
                            <tbody>
                                <tr>
                                    <th scope="row">"Spot"</th>
                                    <td title=title(&p.spot_at_target, spot, "spot") data-testid="spot-target">{cell(&p.spot_at_target)}</td>
                                    {max_cols.as_ref().map(|(s, _)| view! { <td title=title(s, spot, "spot")>{cell(s)}</td> })}
                                </tr>
                                <tr>
                                    <th scope="row">"On-demand"</th>
                                    <td title=title(&p.on_demand_at_target, od, "on-demand") data-testid="od-target">{cell(&p.on_demand_at_target)}</td>
                                    {max_cols.as_ref().map(|(_, o)| view! { <td title=title(o, od, "on-demand")>{cell(o)}</td> })}
                                </tr>
                                <tr>
                                    <th scope="row">"Spot saves"</th>
                                    <td>{match p.monthly_saving_at_target() {
                                        Some(s) => format!("{}/mo", usd(Some(s))),
                                        None => "unknown: a price is not published".to_string(),
                                    }}</td>
                                    {has_max.then(|| view! { <td></td> })}
                                </tr>
                            </tbody>
                        </table>
                        <p class="hint">
                            {format!(
                                "{} per instance-hour: spot {}, on-demand {} ({}). Source: {}; as of {}.",
                                state.draft.with_untracked(|d| d.spec.instance_type.clone()),
                                usd(spot), usd(od), p.prices.geography, p.prices.source, p.prices.as_of
                            )}
                        </p>
                        {p.needs_confirmation().then(|| view! {
                            <p class="notice">{format!(
                                "Large pool: {} GPUs, {}/h at its largest. You will type its name to confirm.",
                                p.gpus_at_peak, usd(p.peak_usd_per_hour)
                            )}</p>
                        })}
                    }.into_any()
                }
            }}
        </section>
    }
}

#[component]
fn YamlPane(state: FormState) -> impl IntoView {
    let UseClipboardReturn {
        is_supported,
        copied,
        copy,
        ..
    } = use_clipboard();
    let href = move || {
        format!(
            "data:application/yaml;charset=utf-8,{}",
            encode_component(&state.yaml.get())
        )
    };
    let file = move || {
        let name = state.draft.with(|d| d.name.clone());
        format!("{}.yaml", if name.is_empty() { "nodepool" } else { &name })
    };
    view! {
        <section class="yaml" aria-labelledby="yaml-h">
            <h2 id="yaml-h">"YAML"</h2>
            <p class="hint">"Edit either side: the form and this manifest stay the same pool."</p>
            <textarea class="yaml-text" aria-label="NodePool YAML" rows="18" spellcheck="false"
                aria-invalid=move || if state.yaml_error.with(Option::is_some) { "true" } else { "false" }
                prop:value=move || state.yaml.get()
                on:input=move |ev| state.edit_yaml(event_target_value(&ev))></textarea>
            <p class="field-errors" role="alert" data-testid="yaml-error">
                {move || state.yaml_error.get().map(|e| format!("Invalid YAML, {e}"))}
            </p>
            <div class="buttons">
                <button type="button" disabled=move || !is_supported.get()
                    on:click=move |_| copy(&state.yaml.get_untracked())>
                    {move || if copied.get() { "Copied" } else { "Copy" }}
                </button>
                <a class="button" href=href download=file>"Download"</a>
            </div>
        </section>
    }
}
