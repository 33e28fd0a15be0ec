//! Karpenter's refused launches (`InsufficientCapacityError`), live: the table under the
//! capacity grid on `/capacity`, and the line on a Karpenter pool's page. Both read the
//! stream's `launch_failure` rows; neither shows anything for a fleet without Karpenter.

use leptos::prelude::*;

use crate::components::time::{age, use_now};
use crate::domain::capacity::launch_failures::sentence;
use crate::live::LiveStore;
use crate::model::{LaunchFailureRow, PoolRow};

/// The rows, most failures in 24 h first (then 7 d, then by key), as the server orders them.
fn ordered(mut rows: Vec<LaunchFailureRow>) -> Vec<LaunchFailureRow> {
    rows.sort_by(|a, b| {
        (b.failures_24h, b.failures_7d)
            .cmp(&(a.failures_24h, a.failures_7d))
            .then_with(|| a.key().cmp(&b.key()))
    });
    rows
}

/// The table on `/capacity`: one line per cluster × zone × instance type Karpenter could not
/// launch in the last 7 days.
#[component]
pub fn LaunchFailures() -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let now = use_now();
    move || {
        let rows = ordered(live.launch_failures.values());
        (!rows.is_empty()).then(|| {
            let lines = rows
                .into_iter()
                .map(|r| {
                    let or_unknown = |s: &str| if s.is_empty() { "—".to_string() } else { s.to_string() };
                    let pools = r.pools.join(", ");
                    view! {
                        <tr data-launch-failure=r.key()>
                            <td title=r.cluster.clone()>{r.cluster.clone()}</td>
                            <td>{or_unknown(&r.zone)}</td>
                            <td><code>{or_unknown(&r.instance_type)}</code></td>
                            <td class="pools" title=pools.clone()>{if pools.is_empty() { "—".to_string() } else { pools.clone() }}</td>
                            <td class="num" data-col="24h">{r.failures_24h}</td>
                            <td class="num" data-col="7d">{r.failures_7d}</td>
                            <td class="num">{move || age(r.last_at, now.get())}</td>
                            <td class="note" title=r.last_message.clone()>{r.last_message.clone()}</td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <section data-testid="launch-failures">
                    <h2>"Karpenter launch failures"</h2>
                    <p class="hint">
                        "InsufficientCapacityError events on NodeClaims: the provider refused the launch for want \
                         of capacity, per zone and instance type its error names. Karpenter deletes the NodeClaim \
                         and tries another offering; the ledger keeps them past the hour Kubernetes \
                         keeps events."
                    </p>
                    <div class="table-wrap" tabindex="0" role="region" aria-label="Karpenter launch failures">
                        <table class="launch-failures">
                            <thead><tr>
                                <th scope="col">"Cluster"</th>
                                <th scope="col">"Zone"</th>
                                <th scope="col">"Instance type"</th>
                                <th scope="col" title="Karpenter NodePools whose NodeClaims failed here">"NodePools"</th>
                                <th scope="col" class="num">"24 h"</th>
                                <th scope="col" class="num">"7 d"</th>
                                <th scope="col" class="num" title="age of the last failure">"Last"</th>
                                <th scope="col">"Provider's error (last)"</th>
                            </tr></thead>
                            <tbody>{lines}</tbody>
                        </table>
                    </div>
                </section>
            }
        })
    }
}

/// A Karpenter pool page's line: where its NodeClaims could not launch in the last 7 days.
#[component]
pub fn PoolLaunchFailures(row: RwSignal<PoolRow>) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let now = use_now();
    let (cluster, name) = row.with_untracked(|r| (r.cluster.clone(), r.name.clone()));
    move || {
        let rows: Vec<LaunchFailureRow> = ordered(live.launch_failures.values())
            .into_iter()
            .filter(|r| r.cluster == cluster && r.pools.contains(&name))
            .collect();
        (!rows.is_empty()).then(|| {
            view! {
                <section class="info-box" aria-label="Launch failures" data-testid="pool-launch-failures">
                    <h2>"Launch failures"</h2>
                    {rows.into_iter().map(|r| {
                        let last = r.last_at;
                        view! {
                            <p title=r.last_message.clone()>
                                {sentence(&r)} " Last " {move || age(last, now.get())} " ago."
                            </p>
                        }
                    }).collect_view()}
                    <p class="hint">"Every zone and instance type on Capacity by zone and GET /api/v1/capacity."</p>
                </section>
            }
        })
    }
}
