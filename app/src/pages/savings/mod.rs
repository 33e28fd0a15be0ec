//! `/savings`: spot against the on-demand baseline, from the ledger and the price catalog.

pub mod chart;
mod fallback;
mod showback;
mod whatif;

use leptos::prelude::*;
use leptos_meta::Script;
use leptos_router::hooks::use_query_map;

use crate::components::chart::ECHARTS_SRC;
use crate::components::virtual_rows::ReportTbody;
use crate::domain::cost::usd;
use crate::domain::savings::range::RANGES;
use crate::live::{LiveStore, use_live};
use crate::model::{CostRow, SavingsReport, Scope, encode_component};
use crate::savings_api::load_savings;

use chart::CHART_ID;

/// The URL's range parameters, as given.
#[derive(Clone, Debug, PartialEq)]
struct RangeParams {
    range: Option<String>,
    from: Option<String>,
    to: Option<String>,
}

impl RangeParams {
    fn query(&self) -> String {
        let mut q = Vec::new();
        for (k, v) in [
            ("range", &self.range),
            ("from", &self.from),
            ("to", &self.to),
        ] {
            if let Some(v) = v {
                q.push(format!("{k}={}", encode_component(v)));
            }
        }
        q.join("&")
    }
}

/// The page.
#[component]
pub fn SavingsPage() -> impl IntoView {
    let query = use_query_map();
    let params = Memo::new(move |_| {
        query.with(|q| RangeParams {
            range: q.get("range"),
            from: q.get("from"),
            to: q.get("to"),
        })
    });
    let report = Resource::new(
        move || params.get(),
        |p| load_savings(p.range, p.from, p.to),
    );
    let by = Memo::new(move |_| {
        query.with(|q| {
            q.get("by")
                .and_then(|b| crate::model::ShowbackBy::parse(&b).ok())
                .unwrap_or_default()
        })
    });
    let live = expect_context::<LiveStore>();
    let snapshot = use_live(Scope::pools);
    crate::components::chart::dispose_on_unmount(CHART_ID);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(Ok(r)) = report.get() {
            crate::components::chart::draw(CHART_ID, chart::cost_chart(&r));
        }
    });
    view! {
        <Script src=ECHARTS_SRC />
        <section class="page-head">
            <h1>"Cost savings"</h1>
            <nav class="ranges" aria-label="Range">
                {RANGES.iter().map(|r| view! {
                    <a href=format!("/savings?range={r}")
                        aria-current=move || (params.with(|p| p.range.as_deref().unwrap_or("24h") == *r && p.from.is_none())).then_some("page")>
                        {format!("last {r}")}
                    </a>
                }).collect_view()}
            </nav>
        </section>
        // The figures and the chart first (what a person came for), the breakdowns below.
        <Transition fallback=|| view! { <p class="loading" role="status">"Reading the ledger…"</p> }>
            {move || {
                crate::live::adopt_pools(live, snapshot);
                report.get()
            }.map(|r| match r {
                Err(e) => view! { <p class="error" role="alert">"Could not compute savings: " {e.to_string()}</p> }.into_any(),
                Ok(r) => summary_view(r, params.get_untracked().query()).into_any(),
            })}
        </Transition>
        <div id=CHART_ID class="chart" role="img" aria-label="Actual cost against the on-demand baseline over time"></div>
        <showback::Showback params by />
        <Transition fallback=|| ()>
            {move || report.get().and_then(Result::ok).map(details_view)}
        </Transition>
    }
}

fn inputs_of(r: &SavingsReport, what: &str) -> String {
    format!(
        "{what}: Σ over {} priced nodes of hours in range × USD per instance-hour. {:.2} node-hours. Prices: {}.",
        r.lines.len() as u32 - r.unpriced_nodes.min(r.lines.len() as u32),
        r.node_hours,
        if r.price_sources.is_empty() {
            "none".to_string()
        } else {
            r.price_sources.join("; ")
        }
    )
}

/// The range, the figures and the exports.
fn summary_view(r: SavingsReport, query: String) -> impl IntoView {
    let rr = r.run_rate.clone();
    let figures = [
        (
            "Actual cost",
            usd(Some(r.actual_usd)),
            inputs_of(&r, "Actual"),
            "actual",
        ),
        (
            "On-demand baseline",
            usd(Some(r.baseline_usd)),
            inputs_of(&r, "The same node-hours at on-demand prices"),
            "baseline",
        ),
        (
            "Savings",
            format!("{} ({} %)", usd(Some(r.savings_usd)), r.savings_pct),
            "baseline − actual; % of the baseline".to_string(),
            "savings",
        ),
        (
            "Projected month",
            usd(Some(r.projected_month_usd)),
            format!(
                "actual ÷ {} h in range × 730 h; on-demand: {}",
                r.hours,
                usd(Some(r.projected_month_baseline_usd))
            ),
            "month",
        ),
        (
            "Run rate now",
            format!("{}/h", usd(Some(rr.actual_usd_h))),
            format!(
                "{} running nodes; on-demand {}/h; spot saves {}/h",
                rr.running_nodes,
                usd(Some(rr.baseline_usd_h)),
                usd(Some(rr.difference_usd_h))
            ),
            "runrate",
        ),
        (
            "Preemption cost",
            usd(Some(r.preemption.lost_usd)),
            format!(
                "{} preemptions: {} node-hours ({} GPU-hours) from T=0 until the pool's next node started, at the preempted node's price",
                r.preemption.preemptions, r.preemption.lost_node_hours, r.preemption.lost_gpu_hours
            ),
            "preemption",
        ),
        (
            "Net savings",
            format!("{} ({} %)", usd(Some(r.net.net_usd)), r.net.net_pct),
            format!(
                "savings {} − capacity gap {} − lost work {} (the preempted pods' {} GPU-hours from their last start to their node's end, at on-demand prices per GPU-hour: an upper bound)",
                usd(Some(r.net.gross_usd)),
                usd(Some(r.net.gap_usd)),
                usd(Some(r.net.lost_work_usd)),
                r.net.lost_work_gpu_hours
            ),
            "net",
        ),
        (
            "Fallback to on-demand",
            usd(Some(r.fallback.extra_usd)),
            format!(
                "{} on-demand node-hours of {} fallback pairs ran while their spot pools were short, × (on-demand − spot price)",
                r.fallback.short_node_hours,
                r.fallback.pairs.len()
            ),
            "fallback",
        ),
        (
            "Idle spot GPUs now",
            format!("{}/h", usd(Some(r.idle_spot_gpus.usd_h))),
            format!(
                "{} of {} spot GPUs requested by no running pod, at their pools' spot prices per GPU (the node's price ÷ its GPUs){}",
                r.idle_spot_gpus.idle,
                r.idle_spot_gpus.gpus,
                if r.idle_spot_gpus.unpriced_gpus > 0 {
                    format!(
                        "; {} idle GPUs have no price and are left out",
                        r.idle_spot_gpus.unpriced_gpus
                    )
                } else {
                    String::new()
                }
            ),
            "idle-gpus",
        ),
    ];
    let exports = [
        ("report JSON", format!("/api/v1/savings?{query}")),
        ("report CSV", format!("/api/v1/savings.csv?{query}")),
        ("ledger JSON", format!("/api/v1/ledger?{query}")),
        ("ledger CSV", format!("/api/v1/ledger.csv?{query}")),
    ];
    view! {
        <p class="muted">{format!(
            "{} to {} ({} h). Every figure shows its inputs on hover.",
            r.from.map(crate::components::time::minute).unwrap_or_default(),
            r.to.map(crate::components::time::minute).unwrap_or_default(),
            r.hours
        )}</p>
        {(r.unpriced_nodes > 0).then(|| view! {
            <p class="notice" data-testid="unpriced">{format!(
                "{} nodes have an unknown price and are left out of every total (never guessed). Add them with --prices.",
                r.unpriced_nodes
            )}</p>
        })}
        <p data-testid="net-sentence" title="Break-even: the share of GPU-hours lost at which net savings reach 0, the capacity gap as observed. Set --reserved-discount-pct to compare with a reserved price.">
            {spotboard_core::domain::savings::net::sentence(&r.net)}
        </p>
        <div class="counts">
            {figures.into_iter().map(|(label, value, title, id)| view! {
                <div title=title.clone() tabindex="0" aria-label=format!("{label}: {value}. {title}")>
                    <span class="label">{label}</span>
                    <span class="value" data-testid=format!("fig-{id}")>{value.clone()}</span>
                </div>
            }).collect_view()}
        </div>
        <p class="exports">"Export: " {exports.into_iter().map(|(l, h)| view! { <a href=h download="">{l}</a>" " }).collect_view()}</p>
    }
}

/// Under the chart: the what-if, each breakdown (collapsible, open at first) and the price
/// sources.
fn details_view(r: SavingsReport) -> impl IntoView {
    let fleet = r.fleet.clone();
    view! {
        <whatif::WhatIf fleet />
        {fallback::section(r.fallback)}
        {r.breakdowns.into_iter().map(|(by, rows)| breakdown(by, rows)).collect_view()}
        <details class="section" open>
            <summary><h2>"Price sources"</h2></summary>
            <ul>{r.price_sources.into_iter().map(|s| view! { <li>{s}</li> }).collect_view()}</ul>
        </details>
    }
}

/// A breakdown row's height before one is measured (CSS px).
const BREAKDOWN_ROW_PX: f64 = 33.0;

fn breakdown(by: String, rows: Vec<CostRow>) -> impl IntoView {
    let items: Vec<(String, CostRow)> = rows.into_iter().map(|r| (r.key.clone(), r)).collect();
    // The header's row counted too.
    let rowcount = items.len() + 1;
    view! {
        <details class="section" open>
        <summary><h2>{format!("By {by}")}</h2></summary>
        <div class="table-wrap" tabindex="0" role="region" aria-label=format!("Cost by {by}")>
            <table class="breakdown" data-by=by.clone() aria-rowcount=rowcount>
                <thead><tr>
                    <th scope="col">{by.clone()}</th>
                    <th scope="col">"Node-hours"</th>
                    <th scope="col">"Actual"</th>
                    <th scope="col">"On-demand"</th>
                    <th scope="col">"Savings"</th>
                    <th scope="col" title="Savings − capacity gap − lost work (an upper bound)">"Net savings"</th>
                    <th scope="col" title="The share of GPU-hours lost at which spot stops beating on-demand">"Break-even"</th>
                    <th scope="col">"Unpriced nodes"</th>
                </tr></thead>
                // Drawn near the viewport: by pool at 2,000 pools, 18,000 elements.
                <ReportTbody id=format!("breakdown-{}", by.replace(' ', "-")) items columns=8 estimate_px=BREAKDOWN_ROW_PX row=|key: String, row: CostRow| view! {
                        <tr data-row=key>
                            <td>{row.key.clone()}</td>
                            <td class="num">{row.node_hours.to_string()}</td>
                            <td class="num">{usd(Some(row.actual_usd))}</td>
                            <td class="num">{usd(Some(row.baseline_usd))}</td>
                            <td class="num">{usd(Some(row.savings_usd))}</td>
                            <td class="num" data-col="net" title=format!(
                                "{} preemptions: gap {}, lost work {} ({} GPU-hours)",
                                row.net.preemptions,
                                usd(Some(row.net.gap_usd)),
                                usd(Some(row.net.lost_work_usd)),
                                row.net.lost_work_gpu_hours
                            )>{usd(Some(row.net.net_usd))}</td>
                            <td class="num" data-col="break-even">{row.net.break_even_pct.map_or_else(
                                || "—".to_string(),
                                |b| format!("{b} %")
                            )}</td>
                            <td class="num">{row.unpriced_nodes}</td>
                        </tr>
                } />
            </table>
        </div>
        </details>
    }
}

/// How often, at most, the dashboard's savings line is read again while the fleet changes, ms.
/// A preemption wave changes the node counts many times a second; the run rate is per hour.
pub const SUMMARY_REFRESH_MS: f64 = 10_000.0;

/// One line on the dashboard: what spot saves now and over the last 24 hours, and what the
/// idle spot GPUs cost. Read again when `fleet` changes (the fleet's node counts and idle
/// spot GPUs from the stream), at once for the first
/// change and then at most every [`SUMMARY_REFRESH_MS`], so the run rate follows the fleet
/// without polling.
#[component]
pub fn SavingsSummary(#[prop(into)] fleet: Signal<(u32, u32, u32)>) -> impl IntoView {
    let fleet: Signal<(u32, u32, u32)> = leptos_use::signal_throttled(fleet, SUMMARY_REFRESH_MS);
    let report = Resource::new(
        move || fleet.get(),
        |_| crate::savings_api::load_savings_headline("24h".into()),
    );
    view! {
        <Suspense fallback=|| ()>
            {move || report.get().and_then(|r| r.ok()).map(|r| view! {
                <a class="savings-summary" href="/savings" data-testid="savings-summary"
                    title=format!("{} running nodes at the catalog's prices; unpriced nodes left out: {}", r.run_rate.running_nodes, r.unpriced_nodes)>
                    {format!(
                        "Spot saves {}/h now ({}/h paid against {}/h on-demand) · {} saved in 24 h",
                        usd(Some(r.run_rate.difference_usd_h)),
                        usd(Some(r.run_rate.actual_usd_h)),
                        usd(Some(r.run_rate.baseline_usd_h)),
                        usd(Some(r.savings_usd))
                    )}
                </a>
                // What the spot GPUs no pod asks for cost: only when there are some, priced.
                {(r.idle_spot_gpus.idle > 0 && !r.idle_spot_gpus.usd_h.is_zero()).then(|| view! {
                    <span class="idle-cost small" data-testid="idle-gpu-cost"
                        title=format!(
                            "{} of {} spot GPUs are requested by no running pod, at their pools' spot prices per GPU{}",
                            r.idle_spot_gpus.idle,
                            r.idle_spot_gpus.gpus,
                            if r.idle_spot_gpus.unpriced_gpus > 0 { format!("; {} idle GPUs have no price", r.idle_spot_gpus.unpriced_gpus) } else { String::new() }
                        )>
                        {format!("Idle spot GPUs cost {}/h", usd(Some(r.idle_spot_gpus.usd_h)))}
                    </span>
                })}
            })}
        </Suspense>
    }
}
