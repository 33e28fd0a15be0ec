//! `/preemptions`: every preempted node's path through its provider's notice window, live:
//! phases coloured, "now" moving, time left to the next phase, and the pods it held at T=0
//! with their SIGTERM, grace-period end and SIGKILL risk.

mod alerts;
mod cards;
pub mod chart;
mod evictions;
mod lookup;
mod pool;
mod readiness;
mod signals;

pub use pool::PoolPreemptions;
pub use readiness::{ReadinessSection, anchor as readiness_anchor};

use chrono::{DateTime, Utc};
use leptos::prelude::*;

use crate::components::time::use_now;
use crate::domain::preemption::rates::RateBy;
use crate::live::{LiveStore, use_live};
use crate::model::{PodImpact, PreemptionView, Scope, Wave};

/// `m:ss` for a number of seconds (negative shows as 0:00).
pub fn clock_s(s: i64) -> String {
    let s = s.max(0);
    format!("{}:{:02}", s / 60, s % 60)
}

/// The page. Everything on it arrives on the tab's one stream (scope
/// [`Scope::preemptions`]); the countdowns tick on the browser's clock.
#[component]
pub fn PreemptionsPage() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    // Kept across the Suspense's re-renders.
    let rates_scope = RwSignal::new(RateBy::Pool);
    let snapshot = use_live(Scope::preemptions);
    let keys = Memo::new(move |_| cards::card_order(live, None));
    crate::components::chart::dispose_on_unmount(chart::CHART_ID);
    #[cfg(feature = "hydrate")]
    draw_at_most_every(live, keys, chart::CHART_ID);
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
        <Suspense fallback=|| view! { <p class="loading" role="status">"Loading preemptions…"</p> }>
            {move || snapshot.get().map(|r| match r {
                Err(e) => view! { <p class="error" role="alert">"Could not load preemptions: " {e.to_string()}</p> }.into_any(),
                Ok(snap) => {
                    live.adopt(&Scope::preemptions(), &snap);
                    view! {
                        <alerts::FiringAlerts />
                        <alerts::Undelivered />
                        <LatestWave />
                        <Show
                            when=move || !keys.with(cards::CardOrder::is_empty)
                            fallback=|| view! { <p class="empty" data-testid="no-preemptions">"No preemption in the last hour."</p> }
                        >
                            <div id=chart::CHART_ID class="chart" role="img" aria-label="Preempted nodes' phases over time"></div>
                            <cards::Cards order=keys />
                        </Show>
                        <signals::SignalsTable scope=rates_scope />
                    }.into_any()
                }
            })}
        </Suspense>
        <lookup::PodLookup />
        <super::survival::SurvivalSection />
        <ReadinessSection />
    }
}

/// Draws the timeline chart of the first [`chart::CHART_NODES`] of `keys` (page order) in
/// element `id`: at once, then when rows change, at most once a second. A wave of 2,000
/// notices changes rows thousands of times; each drawing copies the rows it shows and hands
/// ECharts a bar per phase of each.
#[cfg(feature = "hydrate")]
pub(crate) fn draw_at_most_every(live: LiveStore, keys: Memo<cards::CardOrder>, id: &'static str) {
    const EVERY: std::time::Duration = std::time::Duration::from_secs(1);
    let scheduled = StoredValue::new(false);
    let drawn = StoredValue::new(false);
    let owner = Owner::current();
    Effect::new(move |_| {
        // The index and every row: `keys` changes with them, and a row's other fields too.
        for row in live.preemptions.signals() {
            row.track();
        }
        if scheduled.try_get_value() != Some(false) {
            return;
        }
        scheduled.set_value(true);
        let owner = owner.clone();
        let delay = if drawn.get_value() {
            EVERY
        } else {
            std::time::Duration::ZERO
        };
        set_timeout(
            move || {
                // `Some`: the page is gone, and its chart with it.
                if scheduled.try_set_value(false).is_some() {
                    return;
                }
                drawn.set_value(true);
                let draw = || {
                    let (nodes, of) = untrack(|| {
                        keys.with(|order| {
                            let nodes: Vec<PreemptionView> = order
                                .iter()
                                .take(chart::CHART_NODES)
                                .filter_map(|k| live.preemptions.get(k).map(|r| r.get()))
                                .collect();
                            (nodes, order.len())
                        })
                    });
                    if !nodes.is_empty() {
                        crate::components::chart::draw(
                            id,
                            chart::timeline_chart(&nodes, of, Utc::now()),
                        );
                    }
                };
                match &owner {
                    Some(o) => o.with(draw),
                    None => draw(),
                }
            },
            delay,
        );
    });
}

/// One preemption's card, re-rendered only when its own row changes.
#[component]
pub fn LiveTimeline(uid: String) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let row = live.preemptions.row(&uid);
    move || row.map(|r| view! { <NodeTimeline v=r.get() /> })
}

/// The line for `w` (as the stream carries it) when it took more than one node: its cluster,
/// its size, and the nodes it names ([`Wave::STREAM_NODES`]); the cards below list every one.
pub fn wave_line(w: &Wave) -> Option<String> {
    let count = w.size();
    if count < 2 {
        return None;
    }
    let more = match count.saturating_sub(w.nodes.len()) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    Some(format!(
        "Preemption wave in {}: {count} nodes ({}{more})",
        w.cluster,
        w.nodes.join(", ")
    ))
}

/// The newest wave, when it took more than one node.
#[component]
fn LatestWave() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let line = Memo::new(move |_| {
        let mut newest = None;
        live.waves.for_each(|w| {
            if newest
                .as_ref()
                .is_none_or(|(started, _)| w.started > *started)
            {
                newest = Some((w.started, wave_line(w)));
            }
        });
        newest.and_then(|(_, line)| line)
    });
    move || {
        line.get()
            .map(|text| view! { <p class="notice" role="status" data-testid="wave">{text}</p> })
    }
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
            let start = p.starts();
            let stop = tl.phases[i + 1].starts();
            let width = ((stop - start).num_milliseconds().max(0) as f64 / span * 100.0).max(1.0);
            let class = format!("phase phase-{}", p.name.replace(' ', "-"));
            view! { <div class=class style=format!("width:{width:.1}%") title=format!("{} from T+{}", p.name, clock_s((start - t0).num_seconds()))>{p.name.clone()}</div> }
        })
        .collect_view();
    // The phase, the time to the next one and the "now" marker as of the ticking clock, in one
    // memo: the card is one reader of the page's clock, not three. Leptos keeps a signal's
    // readers in an ordered set that re-running readers leave and re-join, so a tick costs the
    // square of the readers: 6,000 in a 2,000-node wave made each tick take most of a second.
    // A removed node's card does not tick at all.
    let removed = tl.removed();
    let tl_now = tl.clone();
    let status = Memo::new(move |_| {
        let n = if removed { end } else { now.get() };
        let phase = tl_now.phase_at(n).to_string();
        let left = tl_now.next_in_s(n).map(|(next, s)| (next.to_string(), s));
        let pos = ((n - t0).num_milliseconds() as f64 / span * 100.0).clamp(0.0, 100.0);
        (phase, left, format!("left:{pos:.1}%"))
    });
    let marker = move || status.with(|s| s.2.clone());
    let pods = v.pods.clone();
    view! {
        <article class="preemption" class:drill=v.drill data-node=v.node.clone() data-testid="preemption">
            <header>
                <strong>{v.node.clone()}</strong>
                {v.drill.then(|| view! {
                    <span class="badge drill-badge" data-testid="drill" title="A preemption drill started from spotboard: the provider's sequence rehearsed on this node. Not counted in rates, waves, alerts or savings.">"drill"</span>
                })}
                <span class="muted">{format!(
                    " · {} · {} · {} · {} · {} · {}",
                    v.cluster,
                    v.pool.clone().unwrap_or_else(|| "no pool".into()),
                    v.zone.clone().unwrap_or_default(),
                    v.instance_type.clone().unwrap_or_default(),
                    tl.provider.as_str(),
                    v.capacity_type
                )}</span>
                <span class="badge phase-badge" data-testid="phase">{move || status.with(|s| s.0.clone())}</span>
                <span class="countdown" data-testid="countdown">{move || match status.with(|s| s.1.clone()) {
                    Some((next, s)) => format!("{next} in {}", clock_s(s)),
                    None => format!("removed at T+{}", clock_s((end - t0).num_seconds())),
                }}</span>
            </header>
            <div class="phasebar" aria-hidden="true">
                {bars}
                <div class="now" style=marker></div>
            </div>
            <p class="small muted">{format!("T=0 {}", crate::components::time::clock(t0))}</p>
            {evictions::eviction_errors(&v)}
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
        <div class="table-wrap" tabindex="0" role="region" aria-label="Blast radius">
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

    #[test]
    fn a_wave_line_names_its_first_nodes_and_counts_the_rest() {
        let wave = |n: usize| {
            super::Wave {
                cluster: "cks-a".into(),
                started: None,
                last: None,
                nodes: (0..n).map(|i| format!("n{i}")).collect(),
                node_count: n,
            }
            .for_stream()
        };
        assert_eq!(super::wave_line(&wave(1)), None, "one node is no wave");
        assert_eq!(
            super::wave_line(&wave(3)).unwrap(),
            "Preemption wave in cks-a: 3 nodes (n0, n1, n2)"
        );
        let big = super::wave_line(&wave(2000)).unwrap();
        assert!(
            big.starts_with("Preemption wave in cks-a: 2000 nodes (n0, n1,")
                && big.ends_with("n8, n9 and 1990 more)"),
            "{big}"
        );
    }
}
