//! The pool page's preemptions: the same live timelines as `/preemptions`, for one pool,
//! from the pool page's stream (its scope carries the pool's preemption rows).

use leptos::prelude::*;

use super::cards::{CardOrder, Cards, card_order};
use crate::live::LiveStore;

/// The element the pool page's timeline chart is drawn in.
const POOL_CHART_ID: &str = "pool-preemption-chart";

/// Active and recent preemptions of pool `name` in `cluster`.
#[component]
pub fn PoolPreemptions(cluster: String, name: String) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let keys = Memo::new(move |_| card_order(live, Some((&cluster, &name))));
    crate::components::chart::dispose_on_unmount(POOL_CHART_ID);
    #[cfg(feature = "hydrate")]
    super::draw_at_most_every(live, keys, POOL_CHART_ID);
    view! {
        <section class="pool-preemptions" data-testid="pool-preemptions">
            <h2>"Preemptions"</h2>
            <Show
                when=move || !keys.with(CardOrder::is_empty)
                fallback=|| view! { <p class="empty">"No preemption in this pool in the last hour."</p> }
            >
                <div id=POOL_CHART_ID class="chart" role="img" aria-label="This pool's preempted nodes' phases over time"></div>
                <Cards order=keys />
            </Show>
        </section>
    }
}
