//! `/preemptions`: every preempted node's path through its provider's notice window, live:
//! phases coloured, "now" moving, time left to the next phase, and the pods it held at T=0
//! with their SIGTERM, grace-period end and SIGKILL risk.

pub mod chart;
mod lookup;
mod pool;
mod readiness;

pub use pool::PoolPreemptions;
pub use readiness::ReadinessSection;

use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::components::time::use_now;
use crate::domain::preemption::rates::RateRow;
use crate::live::{LiveStore, adopt_pools, use_live};
use crate::model::{PodImpact, PreemptionView, Scope};
use crate::preemptions_api::load_preemptions;

/// How often the page asks for fresh timelines, milliseconds (the countdown ticks every second
/// on its own).
const REFRESH_MS: u64 = 1000;

/// `m:ss` for a number of seconds (negative shows as 0:00).
pub fn clock_s(s: i64) -> String {
    let s = s.max(0);
    format!("{}:{:02}", s / 60, s % 60)
}

/// The page.
#[component]
pub fn PreemptionsPage() -> impl IntoView {
    let tick = crate::components::time::use_tick(REFRESH_MS);
    let data = Resource::new(move || tick.get(), |_| load_preemptions());
    let live = expect_context::<LiveStore>();
    let snapshot = use_live(Scope::pools);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(Ok(p)) = data.get()
            && !p.nodes.is_empty()
        {
            let now = p.now.unwrap_or_else(Utc::now);
            crate::components::chart::draw(
                chart::CHART_ID,
                chart::timeline_chart(&p.nodes, now),
                50,
            );
        }
    });
    view! {
        <leptos_meta::Script src=crate::components::chart::ECHARTS_SRC />
        <section class="page-head">
            <h1>"Preemptions"</h1>
            <p class="muted">
                "Each preempted spot node's notice window, from the provider's own signals: CKS cordons at T=0 \
                 and drains at T+2 min, the node is gone by T+7 min; GKE gives 30 s (15 s for pods, then \
                 15 s for system pods); AWS warns 2 min ahead. A label added by hand plays the same timeline."
            </p>
        </section>
        <Transition fallback=|| view! { <p class="loading" role="status">"Loading preemptions…"</p> }>
            {move || {
                adopt_pools(live, snapshot);
                data.get()
            }.map(|r| match r {
                Err(e) => view! { <p class="error" role="alert">"Could not load preemptions: " {e.to_string()}</p> }.into_any(),
                Ok(p) => {
                    let rates = p.rates.clone();
                    view! {
                        {p.undelivered.first().map(|u| view! {
                            <p class="error" role="alert" data-testid="undelivered">{format!(
                                "{} wave alert(s) not delivered to {}: the latest ({} in {}, {} node(s)) failed {} times, last: {}",
                                p.undelivered.len(), u.destination, u.started.map(|t| t.format("%H:%M:%S UTC").to_string()).unwrap_or_default(),
                                u.cluster, u.nodes, u.attempts, u.error
                            )}</p>
                        })}
                        {p.waves.first().filter(|w| w.nodes.len() > 1).map(|w| view! {
                            <p class="notice" role="status" data-testid="wave">{format!(
                                "Preemption wave in {}: {} nodes ({})",
                                w.cluster, w.nodes.len(), w.nodes.join(", ")
                            )}</p>
                        })}
                        {if p.nodes.is_empty() {
                            view! { <p class="empty" data-testid="no-preemptions">"No preemption in the last hour."</p> }.into_any()
                        } else {
                            view! {
                                <div id=chart::CHART_ID class="chart" role="img" aria-label="Preempted nodes' phases over time"></div>
                                <div class="preemptions">
                                    {p.nodes.into_iter().map(|v| view! { <NodeTimeline v /> }).collect_view()}
                                </div>
                            }.into_any()
                        }}
                        <RatesTable rates />
                    }.into_any()
                }
            })}
        </Transition>
        // Outside the Transition, which re-renders every second: the form keeps what is typed
        // and the audit polls on its own.
        <lookup::PodLookup />
        <ReadinessSection />
    }
}

/// Preemption rates per pool, zone and instance type over 24 h / 7 d / 30 d, in bands.
#[component]
fn RatesTable(rates: Vec<RateRow>) -> impl IntoView {
    let mut keys: Vec<(String, String)> = rates
        .iter()
        .map(|r| (r.by.clone(), r.key.clone()))
        .collect();
    keys.dedup();
    keys.sort();
    keys.dedup();
    let cell = move |by: &str, key: &str, w: &str| {
        rates
            .iter()
            .find(|r| r.by == by && r.key == key && r.window == w)
            .map(|r| format!("{} ({} of {})", r.band, r.preemptions, r.spot_nodes))
            .unwrap_or_else(|| "—".into())
    };
    view! {
        <h2>"Preemption rate"</h2>
        <p class="hint definition">
            "Spot nodes whose preemption T=0 fell in the window, divided by the spot nodes that ran at any \
             time in it, from the ledger (kept beyond Kubernetes' event TTL), in the Spot Advisor bands \
             <5 %, 5–10 %, 10–15 %, 15–20 %, >20 %."
        </p>
        <div class="table-wrap">
            <table class="rates" data-testid="rates">
                <thead><tr>
                    <th scope="col">"By"</th><th scope="col">"Key"</th>
                    <th scope="col">"24 h"</th><th scope="col">"7 d"</th><th scope="col">"30 d"</th>
                </tr></thead>
                <tbody>
                    {keys.into_iter().map(|(by, key)| view! {
                        <tr>
                            <td>{by.clone()}</td><td>{key.clone()}</td>
                            <td>{cell(&by, &key, "24h")}</td>
                            <td>{cell(&by, &key, "7d")}</td>
                            <td>{cell(&by, &key, "30d")}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

fn at_or(t: Option<DateTime<Utc>>, planned: DateTime<Utc>) -> DateTime<Utc> {
    t.unwrap_or(planned)
}

/// One node's timeline: phase bar with "now", countdown, and its blast radius.
#[component]
pub fn NodeTimeline(v: PreemptionView) -> impl IntoView {
    let now = use_now();
    let tl = v.timeline.clone();
    let t0 = tl.t0;
    let end = tl.removal();
    let span = (end - t0).num_milliseconds().max(1) as f64;
    let last = tl.phases.len() - 1;
    let bars = tl
        .phases
        .iter()
        .enumerate()
        .take(last)
        .map(|(i, p)| {
            let start = at_or(p.observed, p.planned);
            let next = &tl.phases[i + 1];
            let stop = at_or(next.observed, next.planned);
            let width = ((stop - start).num_milliseconds().max(0) as f64 / span * 100.0).max(1.0);
            let class = format!("phase phase-{}", p.name.replace(' ', "-"));
            view! { <div class=class style=format!("width:{width:.1}%") title=format!("{} from T+{}", p.name, clock_s((start - t0).num_seconds()))>{p.name.clone()}</div> }
        })
        .collect_view();
    let tl_now = tl.clone();
    let marker = move || {
        let pos = ((now.get() - t0).num_milliseconds() as f64 / span * 100.0).clamp(0.0, 100.0);
        format!("left:{pos:.1}%")
    };
    // The phase as of the ticking clock, so the countdown walks between refreshes too.
    let status = move || {
        let n = now.get();
        let current = if tl_now.removed() {
            last
        } else {
            (0..last)
                .rev()
                .find(|&i| at_or(tl_now.phases[i].observed, tl_now.phases[i].planned) <= n)
                .unwrap_or(0)
        };
        let phase = tl_now.phases[current].name.clone();
        let left = (current < last).then(|| {
            let next = &tl_now.phases[current + 1];
            (
                next.name.clone(),
                (at_or(next.observed, next.planned) - n).num_seconds(),
            )
        });
        (phase, left)
    };
    let status2 = status.clone();
    let pods = v.pods.clone();
    view! {
        <article class="preemption" data-node=v.node.clone() data-testid="preemption">
            <header>
                <strong>{v.node.clone()}</strong>
                <span class="muted">{format!(
                    " · {} · {} · {} · {} · {} · {}",
                    v.cluster,
                    v.pool.clone().unwrap_or_else(|| "no pool".into()),
                    v.zone.clone().unwrap_or_default(),
                    v.instance_type.clone().unwrap_or_default(),
                    tl.provider.as_str(),
                    v.capacity_type
                )}</span>
                <span class="badge phase-badge" data-testid="phase">{move || status().0}</span>
                <span class="countdown" data-testid="countdown">{move || match status2().1 {
                    Some((next, s)) => format!("{next} in {}", clock_s(s)),
                    None => format!("removed at T+{}", clock_s((end - t0).num_seconds())),
                }}</span>
            </header>
            <div class="phasebar" aria-hidden="true">
                {bars}
                <div class="now" style=marker></div>
            </div>
            <p class="small muted">{format!("T=0 {}", t0.format("%H:%M:%S UTC"))}</p>
            {match (pods, v.pods_error.clone()) {
                (_, Some(e)) => view! { <p class="error">{e}</p> }.into_any(),
                (None, None) => view! { <p class="muted">"Reading the pods on the node…"</p> }.into_any(),
                (Some(p), None) => pods_table(p, t0).into_any(),
            }}
        </article>
    }
}

fn pods_table(pods: Vec<PodImpact>, t0: DateTime<Utc>) -> impl IntoView {
    let risky = pods
        .iter()
        .filter(|p| p.fit.as_ref().is_some_and(|f| f.sigkill_risk))
        .count();
    view! {
        <p class="small">{format!("Blast radius at T=0: {} pods, {} at SIGKILL risk.", pods.len(), risky)}</p>
        <div class="table-wrap">
            <table class="blast" data-testid="blast-radius">
                <thead><tr>
                    <th scope="col">"Pod"</th>
                    <th scope="col">"Owner"</th>
                    <th scope="col">"Replicas"</th>
                    <th scope="col">"PodDisruptionBudget"</th>
                    <th scope="col">"Grace period"</th>
                    <th scope="col">"SIGTERM"</th>
                    <th scope="col">"Grace ends"</th>
                    <th scope="col">"Fits?"</th>
                    <th scope="col">"CKS eviction label"</th>
                    <th scope="col">"Outcome"</th>
                </tr></thead>
                <tbody>
                    {pods.into_iter().map(|p| {
                        let fit = p.fit.clone();
                        view! {
                            <tr>
                                <td>
                                    {format!("{}/{}", p.namespace, p.name)}
                                    {p.system.then(|| view! { " " <span class="badge" title="system-node-critical or system-cluster-critical: GKE shuts it down in the last 15 s">"system"</span> })}
                                </td>
                                <td>{match (&p.owner_kind, &p.owner_name) {
                                    (Some(k), Some(n)) => format!("{k}/{n}"),
                                    _ => "none (bare pod)".into(),
                                }}</td>
                                <td class="num">{p.replicas.map(|n| n.to_string()).unwrap_or_else(|| "—".into())}</td>
                                <td>{p.pdb.clone().unwrap_or_else(|| "none".into())}</td>
                                <td class="num">{format!("{} s", p.grace_s)}</td>
                                <td class="num">{fit.as_ref().map(|f| format!("T+{}", clock_s((f.sigterm - t0).num_seconds())))}</td>
                                <td class="num">{fit.as_ref().map(|f| format!("T+{}", clock_s((f.grace_end - t0).num_seconds())))}</td>
                                <td>{fit.as_ref().map(|f| if f.sigkill_risk {
                                    view! { <span class="badge sev-error" title="the grace period ends after the node is gone: SIGKILL">"SIGKILL risk"</span> }.into_any()
                                } else {
                                    view! { <span class="badge sev-ok">"fits"</span> }.into_any()
                                })}</td>
                                <td>{p.eviction_label.clone().unwrap_or_else(|| "none".into())}</td>
                                <td data-col="outcome">{p.outcome.clone().unwrap_or_else(|| "—".into())}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clock() {
        assert_eq!(super::clock_s(0), "0:00");
        assert_eq!(super::clock_s(125), "2:05");
        assert_eq!(super::clock_s(-3), "0:00");
    }
}
