//! The signals table on `/preemptions`: for one dimension at a time (pool, zone, instance
//! type, zone × instance type), the preemption rate over 24 h / 7 d / 30 d in the Spot Advisor
//! bands, the replacement latency over 7 d (p50 / p95 / max; amber above 60 s, red above
//! 90 s), the eviction errors of the same preemptions over 7 d, and the rate flag with the
//! advice for the key's provider. The figures are the ledger's, computed on the server
//! (`domain::preemption::rates`).

use std::collections::HashMap;

use leptos::prelude::*;

use crate::domain::preemption::Provider;
use crate::domain::preemption::rates::{BY_ZONE_TYPE, RateRow, advice};
use crate::domain::preemption::replacement;
use crate::model::PoolRow;

/// The dimensions the table can be read by, as [`RateRow::by`] names them.
const SCOPES: [&str; 4] = ["pool", "zone", "instance type", BY_ZONE_TYPE];

/// The window the latency column reads (replacements are rarer than preemptions).
const LATENCY_WINDOW: &str = "7d";
/// The window the eviction errors column reads.
const EVICTIONS_WINDOW: &str = "7d";

/// The provider of each key the table can show, from the pools in the store: a pool's
/// `cluster/name`, a zone, an instance type. A key two providers share has none.
///
/// `each_pool` calls what it is given with every pool: the browser's rows are one signal
/// each, read in place rather than copied.
pub fn providers(each_pool: impl FnOnce(&mut dyn FnMut(&PoolRow))) -> HashMap<String, Provider> {
    let mut out: HashMap<String, Option<Provider>> = HashMap::new();
    let mut note = |k: String, p: Provider| {
        out.entry(k)
            .and_modify(|v| {
                if *v != Some(p) {
                    *v = None;
                }
            })
            .or_insert(Some(p));
    };
    each_pool(&mut |p| {
        note(format!("{}/{}", p.cluster, p.name), p.provider);
        if let Some(z) = &p.zone {
            note(z.clone(), p.provider);
        }
        if !p.instance_type.is_empty() {
            note(p.instance_type.clone(), p.provider);
        }
    });
    out.into_iter().filter_map(|(k, v)| Some((k, v?))).collect()
}

fn seconds(v: Option<f64>) -> impl IntoView {
    v.map(|s| {
        let class = format!("latency latency-{}", replacement::band(s));
        view! { <span class=class>{format!("{s:.0} s")}</span> }
    })
}

/// The table, for `scope`'s dimension; `providers` from [`providers`].
#[component]
pub fn SignalsTable(
    rates: Vec<RateRow>,
    scope: RwSignal<String>,
    providers: HashMap<String, Provider>,
) -> impl IntoView {
    let by = scope.get_untracked();
    let mut keys: Vec<String> = rates
        .iter()
        .filter(|r| r.by == by)
        .map(|r| r.key.clone())
        .collect();
    keys.sort();
    keys.dedup();
    let find = |key: &str, w: &str| {
        rates
            .iter()
            .find(|r| r.by == by && r.key == key && r.window == w)
            .cloned()
    };
    let rows = keys
        .into_iter()
        .map(|key| {
            let rate = |w: &str| {
                find(&key, w)
                    .map(|r| format!("{} ({} of {})", r.band, r.preemptions, r.spot_nodes))
                    .unwrap_or_else(|| "—".into())
            };
            let (r24, r7, r30) = (rate("24h"), rate("7d"), rate("30d"));
            let latency = find(&key, LATENCY_WINDOW).filter(|r| r.replaced > 0);
            let flagged = ["24h", "7d", "30d"]
                .iter()
                .filter_map(|w| find(&key, w))
                .find(|r| r.alert);
            let provider = providers.get(&key).copied();
            let latency_cell = match latency {
                Some(r) => view! {
                    <td data-latency title=format!("{} replaced in 7 d", r.replaced)>
                        {seconds(r.latency_p50_s)}" / "{seconds(r.latency_p95_s)}" / "{seconds(r.latency_max_s)}
                    </td>
                }
                .into_any(),
                None => view! { <td>"—"</td> }.into_any(),
            };
            let evictions_cell = match find(&key, EVICTIONS_WINDOW) {
                Some(r) if r.evictions.total() > 0 => view! {
                    <td class="eviction-errors" data-evictions=r.evictions.total()>{r.evictions.to_string()}</td>
                }
                .into_any(),
                Some(_) => view! { <td data-evictions="0">"none"</td> }.into_any(),
                None => view! { <td>"—"</td> }.into_any(),
            };
            let flag_cell = match flagged {
                Some(r) => {
                    let finder = (provider == Some(Provider::Cks)).then(|| view! {
                        " "<a href="/capacity-finder">"Capacity Finder"</a>
                    });
                    view! {
                        <td class="flag" data-flag>
                            <strong>{format!("above {} % ({} window)", r.alert_pct, r.window)}</strong>
                            <span class="advice">" "{advice(provider)}</span>
                            {finder}
                        </td>
                    }
                    .into_any()
                }
                None => view! { <td></td> }.into_any(),
            };
            view! {
                <tr data-key=key.clone()>
                    <th scope="row">{key.clone()}</th>
                    <td>{r24}</td>
                    <td>{r7}</td>
                    <td>{r30}</td>
                    {latency_cell}
                    {evictions_cell}
                    {flag_cell}
                </tr>
            }
        })
        .collect_view();
    view! {
        <h2>"Spot signals"</h2>
        <p class="hint definition">
            "Preemption rate: spot nodes whose preemption T=0 fell in the window, divided by the spot nodes \
             that ran at any time in it, from the ledger (kept beyond Kubernetes' event TTL), in the Spot \
             Advisor bands <5 %, 5–10 %, 10–15 %, 15–20 %, >20 %. Replacement: seconds from T=0 until \
             the pool's next node is Ready (its Ready condition, not its creation), p50 / p95 / max over \
             7 days; amber above 60 s, red above 90 s (AWS's 2-minute notice leaves 30 s to reschedule \
             at 90 s; CKS's 7-minute window has the replacement in place before the drain at T+2 min \
             if it is Ready within 120 s). Eviction errors of the same preemptions over 7 days: \
             evictions a PodDisruptionBudget refused (CKS CWNodeDrainingPDBViolation, Karpenter \
             FailedDraining), and pods still terminating past their grace period or killed at removal \
             as the node went; each card below lists its own. GKE asks no budget at preemption (its \
             graceful node shutdown is involuntary), so a GKE key has no refusals. A key still \
             running spot nodes whose rate is above the threshold is flagged."
        </p>
        <label class="rates-scope">"Signals by "
            <select name="rates-by" on:change=move |ev| scope.set(event_target_value(&ev))>
                {SCOPES.map(|s| view! { <option value=s selected=s == by>{s}</option> })}
            </select>
        </label>
        <div class="table-wrap" tabindex="0" role="region" aria-label="Spot signals">
            <table class="rates" data-testid="signals">
                <thead><tr>
                    <th scope="col">{by.clone()}</th>
                    <th scope="col">"rate 24 h"</th><th scope="col">"7 d"</th><th scope="col">"30 d"</th>
                    <th scope="col">"replacement p50 / p95 / max, 7 d"</th>
                    <th scope="col">"eviction errors, 7 d"</th>
                    <th scope="col">"flag"</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(cluster: &str, name: &str, zone: &str, t: &str, provider: Provider) -> PoolRow {
        PoolRow {
            cluster: cluster.into(),
            name: name.into(),
            zone: Some(zone.into()),
            instance_type: t.into(),
            provider,
            ..Default::default()
        }
    }

    #[test]
    fn each_key_knows_its_provider_unless_two_share_it() {
        let pools = [
            pool(
                "cks-a",
                "spot",
                "US-EAST-04A",
                "gd-8xh100ib-i128",
                Provider::Cks,
            ),
            pool(
                "aws",
                "spot-general",
                "us-east-1a",
                "m5.xlarge",
                Provider::Karpenter,
            ),
            pool(
                "gke",
                "spot-l4",
                "us-east-1a",
                "g2-standard-8",
                Provider::Gke,
            ),
        ];
        let p = providers(|f| pools.iter().for_each(f));
        assert_eq!(p.get("cks-a/spot"), Some(&Provider::Cks));
        assert_eq!(p.get("US-EAST-04A"), Some(&Provider::Cks));
        assert_eq!(p.get("m5.xlarge"), Some(&Provider::Karpenter));
        assert_eq!(p.get("us-east-1a"), None, "shared by two providers");
        assert!(advice(None).contains("Capacity Finder") && advice(None).contains("Karpenter"));
        assert!(advice(Some(Provider::Karpenter)).contains("instance family"));
    }
}
