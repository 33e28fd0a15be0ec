//! The savings page's "Fallback to on-demand" section: each fallback pair over the page's
//! range, what its on-demand side ran while spot was short and what that cost beyond spot,
//! and whether to move back.

use leptos::prelude::*;

use crate::components::virtual_rows::ReportTbody;
use crate::domain::cost::usd;
use crate::model::{FallbackReport, FallbackRow, MoveBack, PairKind, encode_component};

fn pool_link(cluster: &str, pool: &str) -> impl IntoView + use<> {
    let href = format!(
        "/pools/{}/{}",
        encode_component(cluster),
        encode_component(pool)
    );
    view! { <a href=href>{pool.to_string()}</a> }
}

fn kind_text(k: PairKind) -> (&'static str, &'static str) {
    match k {
        PairKind::SameInstanceType => (
            "same type",
            "A spot pool and an on-demand pool of the same instanceType in this cluster",
        ),
        PairKind::Annotation => (
            "annotation",
            "The on-demand NodePool's spotboard.dev/fallback-for annotation names the spot pool",
        ),
        PairKind::Karpenter => (
            "Karpenter",
            "One Karpenter NodePool that allows both spot and on-demand: every on-demand node stood in for spot",
        ),
    }
}

fn advice(r: &FallbackRow) -> impl IntoView + use<> {
    let (label, class) = match r.move_back {
        MoveBack::MoveBack => ("move back", "badge sev-progressing"),
        MoveBack::Wait => ("keep", "badge"),
        MoveBack::Nothing => ("—", "muted"),
    };
    view! {
        <td class="advice" title=r.note.clone()>
            <span class=class data-testid="move-back">{label}</span>" "
            <span class="note">{r.note.clone()}</span>
        </td>
    }
}

/// A fallback row's height before one is measured (CSS px): the advice's note wraps.
const FALLBACK_ROW_PX: f64 = 44.0;

fn row(key: String, r: FallbackRow) -> impl IntoView {
    let (kind, kind_title) = kind_text(r.kind);
    let spot = r
        .spot_pools
        .iter()
        .map(|p| pool_link(&r.cluster, p))
        .collect_view();
    let short_hours = r
        .spot_short_hours
        .map_or_else(|| "—".to_string(), |h| h.to_string());
    let unpriced = if r.unpriced_nodes > 0 {
        format!(
            "; {} nodes have no price and are left out",
            r.unpriced_nodes
        )
    } else {
        String::new()
    };
    view! {
        <tr data-pair=r.on_demand_pool.clone() data-row=key>
            <td class="pool">{pool_link(&r.cluster, &r.on_demand_pool)}</td>
            <td class="pool" title=format!("Paired by {kind}: {kind_title}")>{spot}</td>
            <td class="where" title=r.cluster.clone()>{r.zone.clone().unwrap_or_else(|| r.cluster.clone())}</td>
            <td><code>{r.instance_type.clone()}</code></td>
            <td class="num">{r.on_demand_node_hours.to_string()}</td>
            <td class="num" data-col="short" title=format!("The spot side was short {short_hours} h of the range")>
                {r.short_node_hours.to_string()}
            </td>
            <td class="num" data-col="extra" title=format!("on-demand − spot price × node-hours while short{unpriced}")>
                {usd(Some(r.extra_usd))}
            </td>
            <td class="num">{r.on_demand_nodes_now}</td>
            {advice(&r)}
        </tr>
    }
}

/// The section; nothing when the fleet has no fallback pair.
pub fn section(report: FallbackReport) -> impl IntoView {
    (!report.pairs.is_empty()).then(|| {
        let items: Vec<(String, FallbackRow)> = report
            .pairs
            .into_iter()
            .map(|r| (format!("{}/{}", r.cluster, r.on_demand_pool), r))
            .collect();
        // The header's row counted too.
        let rowcount = items.len() + 1;
        let summary = format!(
            "{} node-hours on-demand while spot was short, {} beyond spot. A move back is advised once the spot side has had capacity for {} min and the Capacity Finder scores its zone {:.0} or more.",
            report.short_node_hours,
            usd(Some(report.extra_usd)),
            report.move_back_after_minutes,
            crate::domain::fallback::MOVE_BACK_SCORE
        );
        view! {
            <details class="section" open data-testid="fallback">
                <summary><h2>"Fallback to on-demand"</h2></summary>
                <p class="muted">{summary}</p>
                <div class="table-wrap" tabindex="0" role="region" aria-label="Fallback pairs">
                    <table class="breakdown fallback" aria-rowcount=rowcount>
                        <thead><tr>
                            <th scope="col">"On-demand pool"</th>
                            <th scope="col">"Spot pool"</th>
                            <th scope="col">"Zone"</th>
                            <th scope="col">"Instance type"</th>
                            <th scope="col" title="On-demand node-hours in the range">"Node-hours"</th>
                            <th scope="col" title="On-demand node-hours while any spot pool's Capacity condition was not True">"While short"</th>
                            <th scope="col" title="Beyond spot: on-demand − spot price × node-hours while short">"Extra"</th>
                            <th scope="col" title="On-demand nodes running now">"Now"</th>
                            <th scope="col">"Advice"</th>
                        </tr></thead>
                        <ReportTbody id="fallback-rows" items columns=9 estimate_px=FALLBACK_ROW_PX row />
                    </table>
                </div>
            </details>
        }
    })
}
