//! Spot node survival and checkpoint advice, on `/preemptions` (every pool) and on a spot
//! pool's page (that pool): the Kaplan–Meier curves (charming) and Young's checkpoint
//! interval from each pool's restricted mean, with its arithmetic.
//!
//! History, not live: the curves are read once when the page loads (and again only when the
//! person picks another range), through the `load_survival` server function; a page renders
//! them on the server, so a live tab makes no request for them. C and R are the URL's
//! `checkpoint_s` and `restart_s`: changing them recomputes the advice in the browser
//! ([`CheckpointAdvice::new`]), without a request.

use charming::{
    Chart,
    component::{Axis, Legend},
    element::{AxisType, LineStyle, LineStyleType, Step, Tooltip, Trigger},
    series::Line,
};
use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_navigate, use_query_map};

use crate::components::virtual_rows::ReportTbody;
use crate::domain::preemption::rates::Window;
use crate::domain::preemption::readiness::shutdown_budget_s;
use crate::domain::survival::checkpoint::{CheckpointAdvice, Costs, fits_notice};
use crate::domain::survival::report::{EstimateStatus, SurvivalRow};
use crate::savings_api::load_survival;
use spotboard_core::Provider;

/// The chart's element id.
pub const CHART_ID: &str = "survival-chart";

/// Curves drawn at most (the pools with the most nodes): more lines than this are a tangle;
/// the table below lists every pool.
pub const CHART_CURVES: usize = 8;

/// On-demand departure curves drawn at most, dashed, for comparison (the pools with the
/// most nodes).
pub const DEPARTURE_CURVES: usize = 4;

/// The survival curves of `rows` (at most [`CHART_CURVES`]) as step lines: hours since Ready
/// against the share of nodes still running; then, dashed, the on-demand pools' departure
/// curves of `departures` (at most [`DEPARTURE_CURVES`]).
pub fn survival_chart(rows: &[SurvivalRow], departures: &[SurvivalRow]) -> Chart {
    let mut chart = Chart::new()
        .tooltip(Tooltip::new().trigger(Trigger::Axis))
        .legend(Legend::new().top("bottom"))
        .x_axis(Axis::new().type_(AxisType::Value).name("h since Ready"))
        .y_axis(
            Axis::new()
                .type_(AxisType::Value)
                .name("still running")
                .min(0)
                .max(1),
        );
    for r in rows.iter().take(CHART_CURVES) {
        chart = chart.series(step_line(r).name(r.key.clone()));
    }
    for r in departures.iter().take(DEPARTURE_CURVES) {
        chart = chart.series(
            step_line(r)
                .name(format!("{} (on-demand, any departure)", r.key))
                .line_style(LineStyle::new().type_(LineStyleType::Dashed)),
        );
    }
    chart
}

/// `r`'s curve as a step line without symbols: hours since Ready against the share still
/// running.
fn step_line(r: &SurvivalRow) -> Line {
    let points: Vec<Vec<f64>> = r
        .curve
        .iter()
        .map(|p| vec![p.t_s / 3600.0, p.survival])
        .collect();
    Line::new().step(Step::End).show_symbol(false).data(points)
}

/// `11.2 h`, `49 min`, `45 s`.
fn human(s: f64) -> String {
    crate::domain::capacity::score::human(s.max(0.0).round() as u64)
}

/// The costs in the URL (`checkpoint_s`, `restart_s`), defaults where absent; the message
/// when one does not parse or is out of range (then the defaults).
fn costs_in(c: Option<String>, r: Option<String>) -> (Costs, Option<String>) {
    let num = |name: &str, v: Option<String>| -> Result<Option<f64>, String> {
        match v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("{name} \"{v}\" is not a number of seconds")),
        }
    };
    match (num("checkpoint_s", c), num("restart_s", r)) {
        (Ok(c), Ok(r)) => match Costs::new(c, r) {
            Ok(costs) => (costs, None),
            Err(e) => (Costs::default(), Some(e.to_string())),
        },
        (Err(e), _) | (_, Err(e)) => (Costs::default(), Some(e)),
    }
}

/// The survival section. `only`: a pool's page, `(cluster, pool, provider)`; `None` on
/// `/preemptions`, every pool (its notice fit then names each provider's window).
#[component]
pub fn SurvivalSection(
    #[prop(optional)] only: Option<(String, String, Provider)>,
) -> impl IntoView {
    let query = use_query_map();
    let costs =
        Memo::new(move |_| query.with(|q| costs_in(q.get("checkpoint_s"), q.get("restart_s"))));
    let range = RwSignal::new(Window::Last30d);
    let report = Resource::new(
        move || range.get(),
        |r| load_survival("pool".into(), r.as_str().into()),
    );
    let only_key = only.as_ref().map(|(c, p, _)| format!("{c}/{p}"));
    let rows = {
        let only_key = only_key.clone();
        move || -> Option<Result<Vec<SurvivalRow>, String>> {
            report.get().map(|r| {
                r.map(|r| {
                    let mut rows: Vec<SurvivalRow> = r
                        .rows
                        .into_iter()
                        .filter(|row| only_key.as_ref().is_none_or(|k| *k == row.key))
                        .collect();
                    rows.sort_by(|a, b| b.nodes.cmp(&a.nodes).then(a.key.cmp(&b.key)));
                    rows
                })
                .map_err(|e| e.to_string())
            })
        }
    };
    crate::components::chart::dispose_on_unmount(CHART_ID);
    #[cfg(feature = "hydrate")]
    {
        let rows = rows.clone();
        // On a pool's page, the on-demand pools of its cluster; on `/preemptions`, every one.
        let departures = {
            let cluster = only.as_ref().map(|(c, _, _)| format!("{c}/"));
            move || -> Vec<SurvivalRow> {
                let mut rows: Vec<SurvivalRow> = report
                    .get()
                    .and_then(Result::ok)
                    .map(|r| r.departures)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|row| {
                        cluster
                            .as_ref()
                            .is_none_or(|c| row.key.starts_with(c.as_str()))
                    })
                    .collect();
                rows.sort_by(|a, b| b.nodes.cmp(&a.nodes).then(a.key.cmp(&b.key)));
                rows
            }
        };
        Effect::new(move |_| {
            if let Some(Ok(rows)) = rows()
                && !rows.is_empty()
            {
                crate::components::chart::draw(CHART_ID, survival_chart(&rows, &departures()));
            }
        });
    }
    let navigate = use_navigate();
    let location = use_location();
    let set_cost = move |name: &'static str, value: String| {
        let mut q = query.get_untracked();
        q.replace(name, value);
        navigate(
            &format!(
                "{}{}",
                location.pathname.get_untracked(),
                q.to_query_string()
            ),
            leptos_router::NavigateOptions {
                replace: true,
                scroll: false,
                ..Default::default()
            },
        );
    };
    let set_restart = set_cost.clone();
    let provider = only.as_ref().map(|(_, _, p)| *p);
    let readiness_link = match &only {
        Some((c, p, _)) => format!("#{}", super::preemptions::readiness_anchor(c, p)),
        None => "#readiness".to_string(),
    };
    let only_pool = only.clone();
    view! {
        <section class="survival" data-testid="survival">
            <h2>"How long spot nodes live"</h2>
            <p class="hint definition">
                "Kaplan–Meier estimate of the share of spot nodes still running t hours after Ready, from the ledger's \
                 nodes that turned Ready in the range. A node still running, or gone for another reason than a \
                 preemption, counts as censored, not as preempted. Dashed: on-demand pools' nodes, for comparison, \
                 where any departure (scale-down, deletion) ends a life. The median's interval is the 95 % log-log one; \
                 M is the restricted mean (the area under the curve up to the last observed time)."
            </p>
            <form class="filters" aria-label="Checkpoint costs" on:submit=|ev| ev.prevent_default()>
                <label>"Over "
                    <select name="survival-range" on:change=move |ev| {
                        if let Ok(w) = Window::parse(&event_target_value(&ev)) { range.set(w) }
                    }>
                        {[Window::Last7d, Window::Last30d].map(|w| view! {
                            <option value=w.as_str() selected=w == Window::Last30d>{w.as_str()}</option>
                        })}
                    </select>
                </label>
                <label>"Checkpoint cost C (s) "
                    <input type="number" name="checkpoint_s" min="1" step="1"
                        prop:value=move || costs.with(|c| c.0.checkpoint_s.to_string())
                        on:change=move |ev| set_cost("checkpoint_s", event_target_value(&ev)) />
                </label>
                <label>"Restart cost R (s) "
                    <input type="number" name="restart_s" min="0" step="1"
                        prop:value=move || costs.with(|c| c.0.restart_s.to_string())
                        on:change=move |ev| set_restart("restart_s", event_target_value(&ev)) />
                </label>
            </form>
            {move || costs.with(|c| c.1.clone()).map(|e| view! { <p class="hint" role="status">{e} "; the defaults are used."</p> })}
            <p class="hint" data-testid="notice-fit">
                {move || notice_line(costs.with(|c| c.0.checkpoint_s), provider)} " See the "
                <a href=readiness_link>"readiness audit"</a>
                "'s grace-period check for the pods themselves."
            </p>
            <Suspense fallback=|| view! { <p class="loading" role="status">"Reading the ledger…"</p> }>
                {
                    let rows = rows.clone();
                    let only_pool = only_pool.clone();
                    move || rows().map(|r| match r {
                        Err(e) => view! { <p class="error" role="alert">"Could not read the survival curves: " {e}</p> }.into_any(),
                        Ok(rows) if rows.is_empty() => view! {
                            <p class="empty" data-testid="survival-empty">
                                {if only_pool.is_some() { "No spot node of this pool turned Ready in this range." } else { "No spot node turned Ready in this range." }}
                            </p>
                        }.into_any(),
                        Ok(rows) => view! {
                            <div id=CHART_ID class="chart" role="img" aria-label="Share of spot nodes still running by hours since Ready, per pool"></div>
                            <AdviceTable rows costs provider range=range.get_untracked() />
                        }.into_any(),
                    })
                }
            </Suspense>
        </section>
    }
}

/// A survival table row's height before one is measured (CSS px): the advice's arithmetic
/// takes two lines in most.
const SURVIVAL_ROW_PX: f64 = 44.0;

/// One line per pool: its figures and the checkpoint advice with its arithmetic. Drawn near
/// the viewport: at 2,000 pools the whole table is 18,000 elements.
#[component]
fn AdviceTable(
    rows: Vec<SurvivalRow>,
    costs: Memo<(Costs, Option<String>)>,
    provider: Option<Provider>,
    range: Window,
) -> impl IntoView {
    let items: Vec<(String, SurvivalRow)> = rows.into_iter().map(|r| (r.key.clone(), r)).collect();
    // The header's row counted too.
    let rowcount = items.len() + 1;
    view! {
        <div class="table-wrap" tabindex="0" role="region" aria-label="Survival and checkpoint advice per pool">
            <table class="survival-table" aria-rowcount=rowcount>
                <thead><tr>
                    <th scope="col">"Pool"</th>
                    <th scope="col" class="num">"Nodes"</th>
                    <th scope="col" class="num">"Preempted"</th>
                    <th scope="col" class="num">"Median (95 %)"</th>
                    <th scope="col">"Checkpoint every"</th>
                    <th scope="col" class="num">"Lost per preemption"</th>
                    <th scope="col" class="num">"Lost per day"</th>
                </tr></thead>
                <ReportTbody id="survival-rows" items columns=7 estimate_px=SURVIVAL_ROW_PX row=move |key: String, row: SurvivalRow| {
                        let (cluster, pool) = key.split_once('/').map(|(c, p)| (c.to_string(), p.to_string())).unwrap_or_default();
                        let advice = {
                            let row = row.clone();
                            let (cluster, pool) = (cluster.clone(), pool.clone());
                            Memo::new(move |_| CheckpointAdvice::new(
                                &row,
                                costs.with(|c| c.0),
                                provider.unwrap_or(Provider::Unknown),
                                &cluster,
                                &pool,
                                range,
                            ))
                        };
                        let estimated = row.status == EstimateStatus::Estimated;
                        let median = match (row.median_s, row.median_ci_s) {
                            (Some(m), [lo, hi]) => format!(
                                "{} ({}–{})",
                                human(m),
                                lo.map_or("?".into(), human),
                                hi.map_or("∞".into(), human)
                            ),
                            (None, _) if estimated => "beyond the longest observed".into(),
                            _ => "—".into(),
                        };
                        view! {
                            <tr data-key=key.clone() data-row=key.clone()>
                                <th scope="row">{key.clone()}</th>
                                <td class="num">{row.nodes}</td>
                                <td class="num">{row.preempted}</td>
                                <td class="num">{median}</td>
                                // The exact figures, for scripts and the end-to-end test.
                                <td data-testid="checkpoint-advice"
                                    data-m-s=move || advice.with(|a| a.m_s.map(|m| m.to_string()))
                                    data-interval-s=move || advice.with(|a| a.interval_s.map(|t| t.to_string()))>
                                    {if estimated {
                                        view! { <span data-testid="advice-arithmetic">{move || advice.with(CheckpointAdvice::arithmetic)}</span> }.into_any()
                                    } else {
                                        view! { <span class="muted" data-testid="too-few">"too few preemptions to estimate"</span> }.into_any()
                                    }}
                                    {move || advice.with(|a| (a.status == EstimateStatus::Estimated && !a.young_holds).then(|| view! {
                                        <br />
                                        <span class="hint" data-testid="young-rough">
                                            "C is more than a tenth of M: Young's interval is a rough guide here; Daly's (2006) higher-order interval: "
                                            <span data-testid="daly">{a.daly_interval_s.map_or("—".into(), human)}</span>
                                        </span>
                                    }))}
                                </td>
                                <td class="num">{move || advice.with(|a| a.lost_per_preemption_s.map_or("—".into(), human))}</td>
                                <td class="num">{move || advice.with(|a| a.lost_per_day_s.map_or("—".into(), human))}</td>
                            </tr>
                        }
                } />
            </table>
        </div>
    }
}

/// Whether a final checkpoint of `c` seconds fits the notice window: the pool's provider's
/// on its page; every provider's on `/preemptions` (shown once, above the pools).
fn notice_line(c: f64, provider: Option<Provider>) -> String {
    match provider {
        Some(p) => format!(
            "A final checkpoint of {c} s {} the {} s from SIGTERM to removal on {p}.",
            if fits_notice(p, c) {
                "fits"
            } else {
                "does not fit"
            },
            shutdown_budget_s(p),
        ),
        None => {
            let each: Vec<String> = [Provider::Cks, Provider::Karpenter, Provider::Gke]
                .into_iter()
                .map(|p| {
                    format!(
                        "{p} {} s: {}",
                        shutdown_budget_s(p),
                        if fits_notice(p, c) {
                            "fits"
                        } else {
                            "does not fit"
                        }
                    )
                })
                .collect();
            format!(
                "A final checkpoint of {c} s from SIGTERM: {}.",
                each.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::survival::report::CurvePoint;

    #[test]
    fn one_step_line_per_pool_in_hours_and_at_most_eight() {
        let row = |key: &str| SurvivalRow {
            key: key.into(),
            curve: vec![
                CurvePoint {
                    t_s: 0.0,
                    survival: 1.0,
                    at_risk: 2,
                },
                CurvePoint {
                    t_s: 7200.0,
                    survival: 0.5,
                    at_risk: 2,
                },
            ],
            ..Default::default()
        };
        let rows: Vec<SurvivalRow> = (0..10).map(|i| row(&format!("c/p{i}"))).collect();
        let departures: Vec<SurvivalRow> = (0..6).map(|i| row(&format!("c/od{i}"))).collect();
        let json = serde_json::to_value(survival_chart(&rows, &departures)).unwrap();
        let series = json["series"].as_array().unwrap();
        assert_eq!(series.len(), CHART_CURVES + DEPARTURE_CURVES);
        assert_eq!(
            series[CHART_CURVES]["name"],
            "c/od0 (on-demand, any departure)"
        );
        assert_eq!(series[CHART_CURVES]["lineStyle"]["type"], "dashed");
        assert!(series[0]["lineStyle"].is_null(), "spot curves are solid");
        assert_eq!(series[0]["name"], "c/p0");
        assert_eq!(series[0]["step"], "end");
        assert_eq!(
            series[0]["data"],
            serde_json::json!([[0.0, 1.0], [2.0, 0.5]])
        );
    }

    #[test]
    fn costs_come_from_the_url_or_default_with_a_message() {
        assert_eq!(costs_in(None, None), (Costs::default(), None));
        let (c, e) = costs_in(Some("600".into()), Some("60".into()));
        assert_eq!((c.checkpoint_s, c.restart_s, e), (600.0, 60.0, None));
        let (c, e) = costs_in(Some("abc".into()), None);
        assert_eq!(c, Costs::default());
        assert!(e.unwrap().contains("checkpoint_s \"abc\""));
        assert!(costs_in(Some("0".into()), None).1.is_some());
    }

    #[test]
    fn the_notice_line_names_the_pools_provider_or_every_provider() {
        assert_eq!(
            notice_line(200.0, Some(Provider::Karpenter)),
            "A final checkpoint of 200 s does not fit the 120 s from SIGTERM to removal on karpenter."
        );
        assert_eq!(
            notice_line(200.0, None),
            "A final checkpoint of 200 s from SIGTERM: cks 300 s: fits, karpenter 120 s: does not fit, gke 15 s: does not fit."
        );
    }
}
