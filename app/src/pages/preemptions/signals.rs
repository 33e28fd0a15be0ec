//! The signals table on `/preemptions`: for one dimension at a time (pool, zone, instance
//! type, zone × instance type), the preemption rate over 24 h / 7 d / 30 d in the Spot Advisor
//! bands, the replacement latency over 7 d (p50 / p95 / max; amber above 60 s, red above
//! 90 s), the eviction errors of the same preemptions over 7 d, and the rate flag with the
//! advice for the key's provider. The figures are the ledger's, computed on the server
//! (`domain::preemption::rates`).

use std::collections::{BTreeMap, HashMap};

use leptos::prelude::*;

use crate::components::virtual_rows::{Scroll, VirtualTbody, use_virtual_rows};
use crate::domain::preemption::rates::{RateBy, RateRow, Window, advice};
use crate::domain::preemption::replacement;
use crate::live::LiveStore;
use crate::model::PoolRow;
use spotboard_core::Provider;

/// The window the latency column reads (replacements are rarer than preemptions).
const LATENCY_WINDOW: Window = Window::Last7d;
/// The window the eviction errors column reads.
const EVICTIONS_WINDOW: Window = Window::Last7d;

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

/// A latency figure as shown: its band (`replacement::band`) and `N s`.
pub type Latency = (&'static str, String);

/// One key's line of the table, as shown. The table is keyed by whole lines, so a rates pass
/// (every 15 s, thousands of rows in a wave) redraws only the lines whose figures changed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SignalLine {
    pub key: String,
    /// 24 h, 7 d and 30 d: `band (preemptions of spot nodes)`, or `—` without a row.
    pub rates: [String; 3],
    /// Replacements in [`LATENCY_WINDOW`] and their p50 / p95 / max; `None` when none was
    /// replaced.
    pub latency: Option<(u32, [Option<Latency>; 3])>,
    /// Eviction errors in [`EVICTIONS_WINDOW`]: their total and text; `None` without a row.
    pub evictions: Option<(u32, String)>,
    /// Spot nodes that went for another reason in the last 24 h: their total and text
    /// ("2 scaled-down · 1 consolidated"); `None` without a row.
    pub departures: Option<(u32, String)>,
    /// The first flagged window's `above N % (W window)`, the advice for the key's provider,
    /// and whether the Capacity Finder applies (CKS keys).
    pub flag: Option<(String, &'static str, bool)>,
}

/// A line's height before one is measured (CSS px).
const SIGNAL_ROW_PX: f64 = 33.0;

/// The lines of dimension `by`, flagged keys first, then by 24 h rate (highest first), then
/// by key, from every rate row `each_rate` visits (once each: a pass is linear in the rows,
/// where looking each cell up among all rows was the square of them, most of a second at
/// 2,000 pools); `providers` from [`providers`].
pub fn lines(
    by: RateBy,
    each_rate: impl FnOnce(&mut dyn FnMut(&RateRow)),
    providers: &HashMap<String, Provider>,
) -> Vec<SignalLine> {
    let mut keys: BTreeMap<String, [Option<RateRow>; 3]> = BTreeMap::new();
    each_rate(&mut |r| {
        if r.by != by {
            return;
        }
        keys.entry(r.key.clone()).or_default()[r.window.index()] = Some(r.clone());
    });
    let rate_24h = |rows: &[Option<RateRow>; 3]| {
        rows[Window::Last24h.index()]
            .as_ref()
            .map_or(-1.0, |r| r.rate_pct)
    };
    let flagged = |rows: &[Option<RateRow>; 3]| rows.iter().flatten().any(|r| r.alert);
    let mut keys: Vec<_> = keys.into_iter().collect();
    // Stable: equal keys keep their key order.
    keys.sort_by(|(_, a), (_, b)| {
        flagged(b)
            .cmp(&flagged(a))
            .then(rate_24h(b).total_cmp(&rate_24h(a)))
    });
    keys.into_iter()
        .map(|(key, rows)| {
            let rates = rows.each_ref().map(|r| {
                r.as_ref()
                    .map(|r| format!("{} ({} of {})", r.band, r.preemptions, r.spot_nodes))
                    .unwrap_or_else(|| "—".into())
            });
            let latency = rows[LATENCY_WINDOW.index()]
                .as_ref()
                .filter(|r| r.replaced > 0)
                .map(|r| {
                    let shown =
                        |v: Option<f64>| v.map(|s| (replacement::band(s), format!("{s:.0} s")));
                    (
                        r.replaced,
                        [
                            shown(r.latency_p50_s),
                            shown(r.latency_p95_s),
                            shown(r.latency_max_s),
                        ],
                    )
                });
            let evictions = rows[EVICTIONS_WINDOW.index()]
                .as_ref()
                .map(|r| (r.evictions.total(), r.evictions.to_string()));
            let departures = rows[Window::Last24h.index()]
                .as_ref()
                .map(|r| (r.departures.total(), r.departures.to_string()));
            let provider = providers.get(&key).copied();
            let flag = rows.iter().flatten().find(|r| r.alert).map(|r| {
                (
                    format!("above {} % ({} window)", r.alert_pct, r.window),
                    advice(provider),
                    provider == Some(Provider::Cks),
                )
            });
            SignalLine {
                key,
                rates,
                latency,
                evictions,
                departures,
                flag,
            }
        })
        .collect()
}

fn seconds(v: Option<Latency>) -> impl IntoView {
    v.map(|(band, text)| view! { <span class=format!("latency latency-{band}")>{text}</span> })
}

fn line_view(line: SignalLine) -> impl IntoView {
    let [r24, r7, r30] = line.rates;
    let latency_cell = match line.latency {
        Some((replaced, [p50, p95, max])) => view! {
            <td data-latency title=format!("{replaced} replaced in 7 d")>
                {seconds(p50)}" / "{seconds(p95)}" / "{seconds(max)}
            </td>
        }
        .into_any(),
        None => view! { <td>"—"</td> }.into_any(),
    };
    let evictions_cell = match line.evictions {
        Some((total, text)) if total > 0 => view! {
            <td class="eviction-errors" data-evictions=total>{text}</td>
        }
        .into_any(),
        Some(_) => view! { <td data-evictions="0">"none"</td> }.into_any(),
        None => view! { <td>"—"</td> }.into_any(),
    };
    let departures_cell = match line.departures {
        Some((total, text)) => {
            let title = text.clone();
            view! { <td class="departures" data-departures=total title=title>{text}</td> }
                .into_any()
        }
        None => view! { <td>"—"</td> }.into_any(),
    };
    let flag_cell = match line.flag {
        Some((text, advice, finder)) => view! {
            <td class="flag" data-flag>
                <strong>{text}</strong>
                <span class="advice">" "{advice}</span>
                {finder.then(|| view! { " "<a href="/capacity-finder">"Capacity Finder"</a> })}
            </td>
        }
        .into_any(),
        None => view! { <td></td> }.into_any(),
    };
    view! {
        <tr data-key=line.key.clone() data-row=line.key.clone()>
            <th scope="row">{line.key.clone()}</th>
            <td>{r24}</td>
            <td>{r7}</td>
            <td>{r30}</td>
            {latency_cell}
            {evictions_cell}
            {departures_cell}
            {flag_cell}
        </tr>
    }
}

/// The table, for the dimension `scope` names, from the tab's rate rows.
#[component]
pub fn SignalsTable(scope: RwSignal<RateBy>) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    // Read again only when pools come or go: a pool's counts change thousands of times in a
    // wave, its provider, zone and instance type not.
    let providers = Memo::new(move |_| {
        live.pools.len();
        untrack(|| providers(|f| live.pools.for_each(f)))
    });
    let lines = Memo::new(move |_| {
        let by = scope.get();
        providers.with(|p| lines(by, |f| live.rates.for_each(f), p))
    });
    // Every line, drawn near the viewport: a table of 2,000 pools took the tab 150-270 ms to
    // lay out again each time its rows changed.
    let keys =
        Memo::new(move |_| lines.with(|ls| ls.iter().map(|l| l.key.clone()).collect::<Vec<_>>()));
    let at = Memo::new(move |_| {
        keys.with(|ks| {
            ks.iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), i))
                .collect::<HashMap<String, usize>>()
        })
    });
    let rows = use_virtual_rows(keys, "signal-rows", Scroll::Page, SIGNAL_ROW_PX);
    // A drawn line is drawn again when its own figures change, not when another's do.
    let row = move |key: String| {
        let line = Memo::new(move |_| {
            at.with(|at| at.get(&key).copied())
                .and_then(|i| lines.with(|ls| ls.get(i).cloned()))
        });
        move || line.get().map(line_view)
    };
    let first = scope.get_untracked();
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
             graceful node shutdown is involuntary), so a GKE key has no refusals. Other \
             departures: spot nodes that went in 24 h for another reason (scaled-down, consolidated, \
             drifted, expired, repaired, deleted, unobserved), which the rate leaves out; each node's \
             reason and its evidence are in the ledger. A key still running spot nodes whose rate is \
             above the threshold is flagged."
        </p>
        <label class="rates-scope">"Signals by "
            <select name="rates-by" on:change=move |ev| {
                if let Some(by) = RateBy::parse(&event_target_value(&ev)) {
                    scope.set(by);
                }
            }>
                {RateBy::ALL.map(|s| view! { <option value=s.as_str() selected=s == first>{s.as_str()}</option> })}
            </select>
        </label>
        <div class="table-wrap" tabindex="0" role="region" aria-label="Spot signals">
            <table class="rates" data-testid="signals" aria-rowcount=move || keys.with(Vec::len) + 1>
                <thead><tr>
                    <th scope="col">{move || scope.get().as_str()}</th>
                    <th scope="col">"rate 24 h"</th><th scope="col">"7 d"</th><th scope="col">"30 d"</th>
                    <th scope="col">"replacement p50 / p95 / max, 7 d"</th>
                    <th scope="col">"eviction errors, 7 d"</th>
                    <th scope="col" title="spot nodes that went away in 24 h for another reason than a preemption: not in the rate">"other departures, 24 h"</th>
                    <th scope="col">"flag"</th>
                </tr></thead>
                <VirtualTbody rows columns=8 row />
            </table>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::capacity::score::Band;

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

    fn rate(by: RateBy, key: &str, window: Window, preemptions: u32) -> RateRow {
        RateRow {
            by,
            key: key.into(),
            window,
            preemptions,
            spot_nodes: 10,
            band: Band::From10To15,
            ..Default::default()
        }
    }

    #[test]
    fn one_line_per_key_of_the_dimension_with_its_three_windows() {
        let mut rows = vec![
            rate(RateBy::Pool, "c/b", Window::Last30d, 3),
            rate(RateBy::Pool, "c/a", Window::Last24h, 1),
            rate(RateBy::Zone, "US-EAST-04A", Window::Last24h, 9),
            rate(RateBy::Pool, "c/a", Window::Last7d, 2),
            rate(RateBy::Pool, "c/a", Window::Last30d, 3),
        ];
        rows[3].replaced = 2;
        rows[3].latency_p50_s = Some(45.0);
        rows[3].latency_max_s = Some(95.4);
        rows[3].evictions.refused = 2;
        rows[4].alert = true;
        rows[4].alert_pct = 20.0;
        let mut busy = rate(RateBy::Pool, "c/0-busy", Window::Last24h, 5);
        busy.rate_pct = 50.0;
        rows.push(busy);
        rows[1].rate_pct = 10.0;
        let providers = HashMap::from([("c/a".to_string(), Provider::Cks)]);
        let got = lines(RateBy::Pool, |f| rows.iter().for_each(f), &providers);
        assert_eq!(
            got.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(),
            ["c/a", "c/0-busy", "c/b"],
            "flagged first, then by 24 h rate, then by key; another dimension's rows left out"
        );
        let a = &got[0];
        assert_eq!(
            a.rates,
            [
                "10–15 % (1 of 10)",
                "10–15 % (2 of 10)",
                "10–15 % (3 of 10)"
            ]
        );
        assert_eq!(
            a.latency,
            Some((
                2,
                [
                    Some(("ok", "45 s".to_string())),
                    None,
                    Some(("red", "95 s".to_string()))
                ]
            ))
        );
        assert_eq!(a.evictions, Some((2, "2 refused".to_string())));
        let (text, advice_text, finder) = a.flag.clone().expect("the 30 d window is flagged");
        assert_eq!(text, "above 20 % (30d window)");
        assert_eq!(advice_text, advice(Some(Provider::Cks)));
        assert!(finder, "a CKS key points at the Capacity Finder");
        let b = &got[2];
        assert_eq!(b.rates[..2], ["—", "—"]);
        assert_eq!(
            (b.latency.clone(), b.evictions.clone(), b.flag.clone()),
            (None, None, None)
        );
    }
}
