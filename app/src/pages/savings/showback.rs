//! `/savings`' showback: each namespace's, team's or pool's share of the fleet's cost over the
//! page's range, what preemptions took from it, and each pool's idle; the rows and the idle
//! rows add up to the total to the cent (`spotboard_core::domain::showback`).

use leptos::prelude::*;

use crate::components::virtual_rows::ReportTbody;
use crate::domain::cost::usd;
use crate::model::{IdleRow, ShowbackBy, ShowbackReport, ShowbackRow};
use crate::savings_api::load_showback;

use super::RangeParams;

/// The section: the grouping links, the table, the exports.
#[component]
pub fn Showback(params: Memo<RangeParams>, by: Memo<ShowbackBy>) -> impl IntoView {
    let report = Resource::new(
        move || (params.get(), by.get()),
        |(p, by)| load_showback(p.range, p.from, p.to, by.as_str().to_string()),
    );
    view! {
        <details class="section" open>
            <summary><h2>"Showback"</h2></summary>
            <nav class="ranges" aria-label="Showback by">
                {ShowbackBy::ALL.into_iter().map(|b| {
                    let href = move || {
                        let q = params.get().query();
                        let sep = if q.is_empty() { "" } else { "&" };
                        format!("/savings?{q}{sep}by={}", b.as_str())
                    };
                    view! {
                        <a href=href aria-current=move || (by.get() == b).then_some("page")>
                            {format!("by {}", b.as_str())}
                        </a>
                    }
                }).collect_view()}
            </nav>
            <Transition fallback=|| view! { <p class="loading" role="status">"Reading the pod intervals…"</p> }>
                {move || report.get().map(|r| match r {
                    Err(e) => view! { <p class="error" role="alert">"Could not compute showback: " {e.to_string()}</p> }.into_any(),
                    Ok(r) => table(r, params.get_untracked().query()).into_any(),
                })}
            </Transition>
        </details>
    }
}

/// A percent with no decimals of `part` in `whole`, or "—".
fn share(part: rust_decimal::Decimal, whole: rust_decimal::Decimal) -> String {
    if whole.is_zero() {
        "—".into()
    } else {
        format!(
            "{} %",
            (part / whole * rust_decimal::Decimal::from(100)).round()
        )
    }
}

/// A line of the table: a group's share, or a pool's idle.
#[derive(Clone)]
enum Line {
    Share(ShowbackRow),
    Idle(IdleRow),
}

/// A showback row's height before one is measured (CSS px).
const SHOWBACK_ROW_PX: f64 = 33.0;

fn row_view(key: String, r: ShowbackRow) -> impl IntoView {
    let unpriced = !r.unpriced_pod_hours.is_zero();
    let cost = if unpriced && r.cost_usd.is_zero() {
        "unpriced".to_string()
    } else {
        usd(Some(r.cost_usd))
    };
    let title = format!(
        "{} pod-hours{}{}",
        r.pod_hours,
        if unpriced {
            format!(
                "; {} on nodes without a price, left out",
                r.unpriced_pod_hours
            )
        } else {
            String::new()
        },
        if r.pods_without_requests > 0 {
            format!(
                "; {} pods request nothing and cost nothing",
                r.pods_without_requests
            )
        } else {
            String::new()
        }
    );
    view! {
        <tr data-showback-key=r.key.clone() data-row=key>
            <td>{r.key.clone()}</td>
            <td class="num" data-col="cost" title=title>{cost}</td>
            <td class="num" data-col="on-demand">{usd(Some(r.on_demand_usd))}</td>
            <td class="num" data-col="savings">{usd(Some(r.savings_usd))}</td>
            <td class="num" data-col="gpu-hours">{r.gpu_hours.to_string()}</td>
            <td class="num" data-col="spot-share">{share(r.spot_gpu_hours, r.gpu_hours)}</td>
            <td class="num" data-col="preemptions">{r.preemptions}</td>
            <td class="num" data-col="pods-killed">{r.pods_killed}</td>
            <td class="num" data-col="gpu-hours-lost">{r.gpu_hours_lost.to_string()}</td>
        </tr>
    }
}

fn idle_view(key: String, i: IdleRow) -> impl IntoView {
    let title = if i.unpriced_node_hours.is_zero() {
        "What no pod requested of the pool's nodes".to_string()
    } else {
        format!(
            "What no pod requested of the pool's nodes; {} node-hours without a price left out",
            i.unpriced_node_hours
        )
    };
    view! {
        <tr class="idle" data-idle-pool=format!("{}/{}", i.cluster, i.pool) data-row=key title=title>
            <td>{format!("idle: {}/{}", i.cluster, i.pool)}</td>
            <td class="num" data-col="cost">{usd(Some(i.cost_usd))}</td>
            <td class="num">{usd(Some(i.on_demand_usd))}</td>
            <td class="num">{usd(Some(i.savings_usd))}</td>
            <td class="num">{i.gpu_hours.to_string()}</td>
            <td></td><td></td><td></td><td></td>
        </tr>
    }
}

fn table(r: ShowbackReport, query: String) -> impl IntoView {
    let by = r.by;
    let t = r.total.clone();
    // Keys apart: a group is a namespace, team or pool; an idle line is a pool's.
    let items: Vec<(String, Line)> = r
        .rows
        .into_iter()
        .map(|r| (format!("share:{}", r.key), Line::Share(r)))
        .chain(
            r.idle
                .into_iter()
                .map(|i| (format!("idle:{}/{}", i.cluster, i.pool), Line::Idle(i))),
        )
        .collect();
    // The header's row and the total's counted too.
    let rowcount = items.len() + 2;
    let sep = if query.is_empty() { "" } else { "&" };
    let exports = [
        (
            "JSON",
            format!("/api/v1/showback?{query}{sep}by={}", by.as_str()),
        ),
        (
            "CSV",
            format!("/api/v1/showback.csv?{query}{sep}by={}", by.as_str()),
        ),
    ];
    let head = match by {
        ShowbackBy::Namespace => "Namespace".to_string(),
        ShowbackBy::Team => format!("Team (label {})", r.team_label),
        ShowbackBy::Pool => "NodePool".to_string(),
    };
    view! {
        <p class="muted" data-testid="showback-sentence">{format!(
            "Each node's cost split among its pods by their share of its requests (GPU nodes by GPUs, others by the larger of CPU and memory), time-weighted: {} of {} requested, {} idle. GPU-hours lost are the killed pods' GPUs from their last start to their node's end: an upper bound on lost work.",
            usd(Some(t.allocated_usd)),
            usd(Some(t.cost_usd)),
            usd(Some(t.idle_usd)),
        )}</p>
        {r.truncated.then(|| view! {
            <p class="notice">"The ledger holds more pod intervals in this range than one report reads: the nodes past the bound (in node-uid order) count as idle. Choose a shorter range."</p>
        })}
        <div class="table-wrap" tabindex="0" role="region" aria-label="Showback">
            <table class="breakdown" data-testid="showback" data-by=by.as_str() aria-rowcount=rowcount>
                <thead><tr>
                    <th scope="col">{head}</th>
                    <th scope="col">"Cost"</th>
                    <th scope="col">"On-demand"</th>
                    <th scope="col">"Savings"</th>
                    <th scope="col" title="GPU-hours requested">"GPU-hours"</th>
                    <th scope="col" title="The share of its GPU-hours on spot nodes">"On spot"</th>
                    <th scope="col" title="Preemptions in the range that hit its pods">"Preemptions"</th>
                    <th scope="col">"Pods killed"</th>
                    <th scope="col" title="The killed pods' GPUs × time from their last start to their node's end: an upper bound">"GPU-hours lost"</th>
                </tr></thead>
                // Drawn near the viewport: by pool at 2,000 pools, 4,000 lines of 10 elements.
                <ReportTbody id="showback-rows" items columns=9 estimate_px=SHOWBACK_ROW_PX row=|key: String, line: Line| match line {
                    Line::Share(r) => row_view(key, r).into_any(),
                    Line::Idle(i) => idle_view(key, i).into_any(),
                } />
                <tfoot>
                    <tr data-testid="showback-total">
                        <th scope="row">"Total"</th>
                        <td class="num" data-col="cost">{usd(Some(t.cost_usd))}</td>
                        <td class="num">{usd(Some(t.on_demand_usd))}</td>
                        <td class="num">{usd(Some(t.savings_usd))}</td>
                        <td class="num">{t.gpu_hours.to_string()}</td>
                        <td></td><td></td><td></td><td></td>
                    </tr>
                </tfoot>
            </table>
        </div>
        <p class="exports">"Export showback: " {exports.into_iter().map(|(l, h)| view! { <a href=h download="">{l}</a>" " }).collect_view()}</p>
    }
}
