//! The pool page's preemptions: the same live timelines as `/preemptions`, for one pool.

use leptos::prelude::*;

use super::NodeTimeline;
use crate::preemptions_api::load_preemptions;

/// The element the pool page's timeline chart is drawn in.
const POOL_CHART_ID: &str = "pool-preemption-chart";

/// How often the pool page asks for fresh timelines, milliseconds.
const REFRESH_MS: u64 = 2000;

/// Active and recent preemptions of pool `name` in `cluster`.
#[component]
pub fn PoolPreemptions(cluster: String, name: String) -> impl IntoView {
    let tick = crate::components::time::use_tick(REFRESH_MS);
    let data = Resource::new(move || tick.get(), |_| load_preemptions());
    let (c, n) = (cluster.clone(), name.clone());
    let mine = move |p: crate::model::Preemptions| {
        p.nodes
            .into_iter()
            .filter(|v| v.cluster == c && v.pool.as_deref() == Some(n.as_str()))
            .collect::<Vec<_>>()
    };
    #[cfg(feature = "hydrate")]
    {
        let mine = mine.clone();
        Effect::new(move |_| {
            if let Some(Ok(p)) = data.get() {
                let now = p.now.unwrap_or_else(chrono::Utc::now);
                let nodes = mine(p);
                if !nodes.is_empty() {
                    crate::components::chart::draw(
                        POOL_CHART_ID,
                        super::chart::timeline_chart(&nodes, now),
                        50,
                    );
                }
            }
        });
    }
    view! {
        <section class="pool-preemptions" data-testid="pool-preemptions">
            <h2>"Preemptions"</h2>
            <Transition fallback=|| view! { <p class="loading" role="status">"Loading preemptions…"</p> }>
                {move || data.get().map(|r| match r {
                    Err(e) => view! { <p class="error" role="alert">"Could not load preemptions: " {e.to_string()}</p> }.into_any(),
                    Ok(p) => {
                        let nodes = mine(p);
                        if nodes.is_empty() {
                            view! { <p class="empty">"No preemption in this pool in the last hour."</p> }.into_any()
                        } else {
                            view! {
                                <div id=POOL_CHART_ID class="chart" role="img" aria-label="This pool's preempted nodes' phases over time"></div>
                                {nodes.into_iter().map(|v| view! { <NodeTimeline v /> }).collect_view()}
                            }.into_any()
                        }
                    }
                })}
            </Transition>
        </section>
    }
}
