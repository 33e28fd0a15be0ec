//! The pool page's preemptions: the same live timelines as `/preemptions`, for one pool,
//! from the pool page's stream (its scope carries the pool's preemption rows).

use leptos::prelude::*;

use super::{LiveTimeline, in_order};
use crate::live::LiveStore;

/// The element the pool page's timeline chart is drawn in.
const POOL_CHART_ID: &str = "pool-preemption-chart";

/// Active and recent preemptions of pool `name` in `cluster`.
#[component]
pub fn PoolPreemptions(cluster: String, name: String) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let keys = Memo::new(move |_| {
        in_order(live, Some((&cluster, &name)))
            .into_iter()
            .map(|v| v.uid)
            .collect::<Vec<_>>()
    });
    crate::components::chart::dispose_on_unmount(POOL_CHART_ID);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let uids = keys.get();
        let nodes: Vec<_> = uids
            .iter()
            .filter_map(|k| live.preemptions.get(k).map(|r| r.get()))
            .collect();
        if !nodes.is_empty() {
            crate::components::chart::draw(
                POOL_CHART_ID,
                super::chart::timeline_chart(&nodes, chrono::Utc::now()),
            );
        }
    });
    view! {
        <section class="pool-preemptions" data-testid="pool-preemptions">
            <h2>"Preemptions"</h2>
            <Show
                when=move || !keys.with(Vec::is_empty)
                fallback=|| view! { <p class="empty">"No preemption in this pool in the last hour."</p> }
            >
                <div id=POOL_CHART_ID class="chart" role="img" aria-label="This pool's preempted nodes' phases over time"></div>
                <For each=move || keys.get() key=|k| k.clone() let:uid>
                    <LiveTimeline uid />
                </For>
            </Show>
        </section>
    }
}
