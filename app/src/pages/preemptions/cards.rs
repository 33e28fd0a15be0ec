//! The order of the preemption cards, and the two keyed lists that show them.

use leptos::prelude::*;

use super::LiveTimeline;
use crate::{
    components::virtual_rows::{Scroll, use_virtual_rows},
    live::LiveStore,
};

/// The card uids of a page: nodes still under notice, then removed nodes, each oldest T=0
/// first (then by node name), so the node closest to removal leads.
///
/// Why two lists, each growing at its end: a new notice has the newest T=0 and a removal is
/// (mostly) the oldest still active, so each lands at the end of its list, below the cards
/// a person is reading at the top: a wave's new cards do not move the ones on screen.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CardOrder {
    pub active: Vec<String>,
    pub removed: Vec<String>,
}

impl CardOrder {
    /// Every uid in page order.
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.active.iter().chain(&self.removed)
    }

    pub fn len(&self) -> usize {
        self.active.len() + self.removed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The cards of the preemptions in the tab's store, of one pool (`cluster`, `pool`) or all.
/// Tracks every row; reads each row's order fields in place, not copies of whole rows (pods
/// and all): in a wave every row changes several times.
pub fn card_order(live: LiveStore, pool: Option<(&str, &str)>) -> CardOrder {
    let (mut active, mut removed) = (Vec::new(), Vec::new());
    live.preemptions.for_each(|v| {
        if pool.is_none_or(|(c, p)| v.cluster == c && v.pool.as_deref() == Some(p)) {
            let key = (v.timeline.t0, v.node.clone(), v.uid.clone());
            if v.timeline.removed() {
                removed.push(key);
            } else {
                active.push(key);
            }
        }
    });
    active.sort();
    removed.sort();
    let uids = |keys: Vec<(_, String, String)>| keys.into_iter().map(|(.., uid)| uid).collect();
    CardOrder {
        active: uids(active),
        removed: uids(removed),
    }
}

/// A card's height before one is measured, with the gap below it (CSS pixels).
const CARD_PX: f64 = 254.0;

/// The cards of `order` near the scroll box's viewport, each re-rendered only when its own
/// row changes: a 2,000-node wave draws a handful of cards, not 2,000 with a countdown each.
/// Type-erased: inside the pool page's view, its type nests deeper than the server crate's
/// recursion limit.
#[component]
pub fn Cards(order: Memo<CardOrder>) -> AnyView {
    let uids = Memo::new(move |_| order.with(|o| o.iter().cloned().collect::<Vec<_>>()));
    let cards = use_virtual_rows(uids, "preemption-cards", Scroll::Own, CARD_PX);
    view! {
        // A scroll box of its own (style/main.css), so focusable for the keyboard.
        <div
            id="preemption-cards"
            class="preemptions"
            tabindex="0"
            role="region"
            aria-label="Preempted nodes"
            data-cards=move || uids.with(|u| u.len())
            on:scroll=move |_| cards.schedule()
        >
            <div class="spacer" aria-hidden="true" style:height=move || cards.before_css()></div>
            <For each=move || cards.window.with(|w| w.keys.clone()) key=|k| k.clone() let:uid>
                {
                    let row = uid.clone();
                    view! { <div class="card-slot" data-row=row><LiveTimeline uid /></div> }
                }
            </For>
            <div class="spacer" aria-hidden="true" style:height=move || cards.after_css()></div>
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};

    use super::*;
    use crate::domain::preemption::{
        CapacityType, Provider,
        timeline::{Observation, derive},
    };
    use crate::model::{PreemptionView, Snapshot};

    fn card(node: &str, pool: &str, t0_s: i64, gone: bool) -> PreemptionView {
        let t0 = Utc.with_ymd_and_hms(2026, 11, 24, 8, 0, 0).unwrap() + Duration::seconds(t0_s);
        let mut seen = vec![Observation {
            at: t0,
            notice: true,
            draining: false,
            gone: false,
        }];
        if gone {
            seen.push(Observation {
                at: t0 + Duration::minutes(7),
                notice: true,
                draining: true,
                gone: true,
            });
        }
        PreemptionView {
            cluster: "c".into(),
            node: node.into(),
            uid: format!("uid-{node}"),
            pool: Some(pool.into()),
            zone: None,
            instance_type: None,
            capacity_type: CapacityType::Spot,
            timeline: derive(Provider::Cks, &seen).unwrap(),
            pods: None,
            pods_error: None,
            evictions: Vec::new(),
            drill: false,
        }
    }

    #[test]
    fn active_then_removed_each_oldest_first_so_a_wave_appends() {
        Owner::new().with(|| {
            let live = LiveStore::new();
            let seed = |rows: Vec<PreemptionView>, rev| {
                live.seed(Snapshot {
                    rev,
                    preemptions: rows,
                    ..Default::default()
                })
            };
            let before = vec![
                card("old-gone", "p", 0, true),
                card("b", "p", 600, false),
                card("a", "p", 600, false),
                card("other-pool", "q", 610, false),
            ];
            seed(before.clone(), 1);
            let first = card_order(live, Some(("c", "p")));
            assert_eq!(first.active, ["uid-a", "uid-b"], "same T=0: by node name");
            assert_eq!(first.removed, ["uid-old-gone"]);
            assert_eq!(
                first.iter().collect::<Vec<_>>(),
                ["uid-a", "uid-b", "uid-old-gone"]
            );

            // Newer notices land after every card already shown: a keyed list appends them.
            let mut after = before;
            after.extend([card("z", "p", 660, false), card("y", "p", 660, false)]);
            seed(after, 2);
            let second = card_order(live, Some(("c", "p")));
            assert_eq!(second.active[..2], first.active[..]);
            assert_eq!(second.active[2..], ["uid-y", "uid-z"]);
            assert_eq!(card_order(live, None).len(), 6, "every pool without one");
        });
    }
}
