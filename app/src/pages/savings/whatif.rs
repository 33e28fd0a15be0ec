//! The hybrid what-if: an on-demand floor (nodes or percent) and spot for the rest.

use leptos::prelude::*;
use rust_decimal::Decimal;

use crate::domain::cost::{HOURS_PER_MONTH, usd};
use crate::domain::savings::{Floor, hybrid};
use crate::model::FleetGroup;

/// The what-if over the running fleet.
#[component]
pub fn WhatIf(fleet: Vec<FleetGroup>) -> impl IntoView {
    let percent = RwSignal::new(true);
    let value = RwSignal::new(20u32);
    let fleet = StoredValue::new(fleet);
    crate::components::typed::keep_typed("section[aria-labelledby=whatif-h] :is(input, select)");
    let result = Memo::new(move |_| {
        let floor = if percent.get() {
            Floor::Percent(Decimal::from(value.get()))
        } else {
            Floor::Nodes(value.get())
        };
        fleet.with_value(|f| hybrid(f, floor))
    });
    view! {
        <section class="panel" aria-labelledby="whatif-h">
            <h2 id="whatif-h">"Hybrid what-if"</h2>
            <p class="hint">{format!(
                "Keep an on-demand floor and run the rest of today's fleet on spot; monthly figures are {HOURS_PER_MONTH} hours (365 days × 24 h ÷ 12)."
            )}</p>
            <div class="filters">
                <label>
                    "On-demand floor"
                    <input type="number" name="floor" min="0" step="1"
                        value=value.get_untracked().to_string()
                        prop:value=move || value.get().to_string()
                        on:input=move |ev| value.set(event_target_value(&ev).trim().parse().unwrap_or(0)) />
                </label>
                <label>
                    "as"
                    <select name="floorUnit"
                        on:change=move |ev| percent.set(event_target_value(&ev) == "percent")>
                        <option value="percent" selected=true>"% of nodes"</option>
                        <option value="nodes">"nodes"</option>
                    </select>
                </label>
            </div>
            {move || {
                let h = result.get();
                view! {
                    <table class="whatif" data-testid="whatif">
                        <tbody>
                            <tr><th scope="row">"Fleet"</th><td>{format!("{} nodes, {} kept on-demand", h.nodes, h.floor_nodes)}</td></tr>
                            <tr><th scope="row">"Blended, per month"</th><td data-testid="blended">{usd(Some(h.blended_usd))}</td></tr>
                            <tr><th scope="row">"All on-demand"</th><td>{usd(Some(h.all_on_demand_usd))}</td></tr>
                            <tr><th scope="row">"All spot"</th><td>{usd(Some(h.all_spot_usd))}</td></tr>
                            <tr><th scope="row">"Saving against all on-demand"</th><td>{format!("{} ({} %)", usd(Some(h.saving_usd)), h.saving_pct)}</td></tr>
                        </tbody>
                    </table>
                }
            }}
        </section>
    }
}
