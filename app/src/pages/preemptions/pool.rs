//! The pool page's preemptions: the same live timelines as `/preemptions`, for one pool.

use leptos::prelude::*;

use super::NodeTimeline;
use crate::preemptions_api::load_preemptions;

/// How often the pool page asks for fresh timelines, milliseconds.
const REFRESH_MS: u64 = 2000;

/// Active and recent preemptions of pool `name` in `cluster`.
#[component]
pub fn PoolPreemptions(cluster: String, name: String) -> impl IntoView {
    let tick = crate::components::time::use_tick(REFRESH_MS);
    let data = Resource::new(move || tick.get(), |_| load_preemptions());
    view! {
        <section class="pool-preemptions" data-testid="pool-preemptions">
            <h2>"Preemptions"</h2>
            <Transition fallback=|| view! { <p class="loading" role="status">"Loading preemptions…"</p> }>
                {move || data.get().map(|r| match r {
                    Err(e) => view! { <p class="error" role="alert">"Could not load preemptions: " {e.to_string()}</p> }.into_any(),
                    Ok(p) => {
                        let mine: Vec<_> = p
                            .nodes
                            .into_iter()
                            .filter(|v| v.cluster == cluster && v.pool.as_deref() == Some(name.as_str()))
                            .collect();
                        if mine.is_empty() {
                            view! { <p class="empty">"No preemption in this pool in the last hour."</p> }.into_any()
                        } else {
                            mine.into_iter().map(|v| view! { <NodeTimeline v /> }).collect_view().into_any()
                        }
                    }
                })}
            </Transition>
        </section>
    }
}
