//! The Node Pools page's summary band: nodes, spot share, pools with a problem, nodes under
//! preemption notice, and nodes by capacity type per provider, live from the stream; and what
//! spot saves, read again when the fleet's node counts change.
//!
//! The provider chart is plain HTML bars rather than an ECharts canvas: the front page then
//! loads no chart library (1 MB of script) before its first paint, and the bars read as text
//! to a screen reader.

use leptos::prelude::*;
use leptos_router::components::A;

use crate::domain::fleet::{FleetSummary, ProviderNodes, summarize};
use crate::live::LiveStore;

/// The band, above the pools table.
#[component]
pub fn FleetSummaryBand() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let summary = Memo::new(move |_| summarize(|f| live.pools.for_each(f)));
    let figure = |label: &'static str, testid: &'static str, value: Signal<String>| {
        view! {
            <div class="figure" data-testid=testid>
                <span class="value">{value}</span>
                <span class="label">{label}</span>
            </div>
        }
    };
    let with = move |f: fn(&FleetSummary) -> String| Signal::derive(move || summary.with(f));
    view! {
        <section class="fleet-summary" aria-label="Fleet summary" data-testid="fleet-summary">
            {figure("nodes", "fleet-nodes", with(|s| s.nodes.to_string()))}
            {figure("spot", "fleet-spot-share", with(|s| match s.spot_share_pct {
                Some(p) => format!("{p:.0} %"),
                None => "—".into(),
            }))}
            <A href="/?problem=1" attr:class="figure link" attr:data-testid="fleet-problems">
                <span class="value">{move || summary.with(|s| s.pools_with_problem.to_string())}</span>
                <span class="label">{move || summary.with(|s| format!("of {} pools with a problem", s.pools))}</span>
            </A>
            <A href="/preemptions" attr:class="figure link" attr:data-testid="fleet-preempting">
                <span class="value">{move || summary.with(|s| s.preempting_now.to_string())}</span>
                <span class="label">"nodes under preemption notice"</span>
            </A>
            // Only where the fleet has GPUs: a CPU fleet has no figure to read here.
            {move || summary.with(|s| s.spot_gpus > 0).then(|| view! {
                <div class="figure" data-testid="fleet-idle-gpus"
                    title=move || summary.with(|s| format!(
                        "{} of the fleet's {} GPUs are requested by running pods; of the {} on spot nodes, {} are requested by none",
                        s.gpus_requested, s.gpus, s.spot_gpus, s.spot_gpus_idle
                    ))>
                    <span class="value">{move || summary.with(|s| format!("{} of {}", s.spot_gpus_idle, s.spot_gpus))}</span>
                    <span class="label">"spot GPUs idle"</span>
                </div>
            })}
            <WaitingFigure />
            <ProviderBars summary />
            <crate::pages::savings::SavingsSummary fleet=Signal::derive(move || {
                summary.with(|s| (s.nodes, s.spot_nodes, s.spot_gpus_idle))
            }) />
        </section>
    }
}

/// Pods waiting for a node, fleet-wide (each cluster's row counts each pod once), with their
/// GPUs, the longest wait and the commonest cause on hover.
#[component]
fn WaitingFigure() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let sums = Memo::new(move |_| {
        let (mut pods, mut gpus, mut oldest, mut causes) = (0u32, 0u32, None, Vec::new());
        live.waiting.for_each(|w| {
            if w.pool.is_none() {
                pods += w.pods;
                gpus += w.gpus;
                oldest = match (oldest, w.oldest_since) {
                    (Some(a), Some(b)) => Some(std::cmp::min(a, b)),
                    (a, b) => a.or(b),
                };
                if !w.cause.is_empty() {
                    causes.push(format!("{}: {}", w.cluster, w.cause));
                }
            }
        });
        (pods, gpus, oldest, causes)
    });
    view! {
        <div class="figure" data-testid="fleet-waiting"
            title=move || sums.with(|(pods, gpus, oldest, causes)| {
                let mut t = format!("{pods} pods wait for a node, asking {gpus} GPUs");
                if let Some(o) = oldest {
                    t.push_str(&format!("; waiting since {}", crate::components::time::minute(*o)));
                }
                for c in causes {
                    t.push_str(&format!("\n{c}"));
                }
                t
            })>
            <span class="value">{move || sums.with(|s| s.0.to_string())}</span>
            <span class="label">{move || sums.with(|s| {
                let noun = if s.0 == 1 { "pod waiting" } else { "pods waiting" };
                if s.1 > 0 { format!("{noun} ({} GPUs)", s.1) } else { noun.to_string() }
            })}</span>
        </div>
    }
}

/// Nodes by capacity type, one bar per provider, scaled to the largest provider.
#[component]
fn ProviderBars(summary: Memo<FleetSummary>) -> impl IntoView {
    view! {
        <ul class="provider-bars" aria-label="Nodes by provider and capacity type">
            {move || summary.with(|s| {
                let widest = s.by_provider.iter().map(ProviderNodes::total).max().unwrap_or(0).max(1);
                s.by_provider.iter().map(|p| bar(p, widest)).collect_view()
            })}
        </ul>
    }
}

fn bar(p: &ProviderNodes, widest: u32) -> impl IntoView + use<> {
    let pct = |n: u32| format!("width: {:.1}%", f64::from(n) * 100.0 / f64::from(widest));
    let parts: Vec<String> = [
        (p.spot, "spot"),
        (p.on_demand, "on-demand"),
        (p.reserved, "reserved"),
        (p.other, "mixed"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    let text = format!(
        "{}: {} nodes{}",
        p.provider,
        p.total(),
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        }
    );
    view! {
        <li data-provider=p.provider.to_string()>
            <span class="bar-label">{text}</span>
            <span class="bar" aria-hidden="true">
                <span class="seg cap-spot" style=pct(p.spot)></span>
                <span class="seg cap-on-demand" style=pct(p.on_demand)></span>
                <span class="seg cap-reserved" style=pct(p.reserved)></span>
                <span class="seg cap-mixed" style=pct(p.other)></span>
            </span>
        </li>
    }
}
