//! The spot readiness audit: per pool, the workloads a preemption will hurt and why. Each
//! check's explanation is given once, in a legend; pools are collapsed to a line each.

use leptos::prelude::*;

use crate::components::virtual_rows::{Scroll, VirtualRows, use_virtual_rows};
use crate::live::LiveStore;
use crate::model::{Check, PoolReadiness};

/// A pool's line before one is measured (CSS pixels; closed).
const AUDIT_LINE_PX: f64 = 34.0;

/// The audit of every pool with spot nodes, or of one pool (`cluster`, `pool`), from the
/// tab's stream: the server audits every 15 s while such a page is open. Keyed by pool: a
/// pool's line is drawn again only when its audit changed (2,000 pools were all drawn again
/// each time one changed). The lines near the viewport only are drawn (2,000 spot pools were
/// 50,000 elements); a link to a pool's audit (`#readiness-…`) scrolls to it.
#[component]
pub fn ReadinessSection(#[prop(optional)] only: Option<(String, String)>) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let open = only.is_some();
    let only_key = only.as_ref().map(|(c, n)| format!("{c}/{n}"));
    let only_pool = only.clone();
    let clusters = move || {
        live.audits
            .values()
            .into_iter()
            .filter(|a| only.as_ref().is_none_or(|(c, _)| &a.cluster == c))
            .collect::<Vec<_>>()
    };
    let keys = Memo::new(move |_| {
        let mut keys = live.pool_audits.keys();
        keys.retain(|k| only_key.as_ref().is_none_or(|o| o == k));
        keys
    });
    // One pool's audit (its page) is a list short enough to be drawn whole.
    let lines = use_virtual_rows(keys, "readiness-pools", Scroll::Page, AUDIT_LINE_PX);
    follow_links(keys, lines);
    let checks = Memo::new(move |_| {
        let mut checks: Vec<Check> = Vec::new();
        live.pool_audits.for_each(|p| {
            if only_pool
                .as_ref()
                .is_none_or(|(c, n)| &p.cluster == c && &p.pool == n)
            {
                checks.extend(p.findings.iter().map(|f| f.check));
            }
        });
        checks.sort();
        checks.dedup();
        checks
    });
    let status = move || {
        let audits = clusters();
        if audits.is_empty() {
            return view! { <p class="loading" role="status">"Auditing spot pools…"</p> }
                .into_any();
        }
        let errors: Vec<String> = audits.into_iter().flat_map(|a| a.errors).collect();
        view! {
            {errors.into_iter().map(|e| view! { <p class="error">{e}</p> }).collect_view()}
            {keys.with(Vec::is_empty).then(|| view! { <p class="empty">"No spot nodes to audit."</p> })}
            {move || legend(checks.get())}
        }
        .into_any()
    };
    view! {
        <section class="readiness" id="readiness" data-testid="readiness">
            <h2>"Spot readiness"</h2>
            <p class="hint definition">
                "Workloads on spot nodes, checked for what makes a preemption hurt: one replica, no \
                 PodDisruptionBudget, a grace period longer than the provider's time from SIGTERM to removal \
                 (CKS 300 s, GKE 15 s, AWS 120 s), all replicas in one zone of a multi-zone cluster, \
                 StatefulSets, graceful-interruptible pods and no preStop hook. DaemonSet pods are not checked."
            </p>
            {status}
            // A click may open or close a line: measure it.
            <div id="readiness-pools" on:click=move |_| lines.schedule()>
                <div class="spacer" aria-hidden="true" style:height=move || lines.before_css()></div>
                <For each=move || lines.window.with(|w| w.keys.clone()) key=|k| k.clone() let:key>
                    {
                        let slot = key.clone();
                        view! {
                            <div data-row=slot>
                                {live.pool_audits.row(&key).map(|row| move || pool_audit(row.get(), open).into_any())}
                            </div>
                        }
                    }
                </For>
                <div class="spacer" aria-hidden="true" style:height=move || lines.after_css()></div>
            </div>
        </section>
    }
}

/// Follows links to a pool's audit (`#readiness-…`, from preemption cards and the survival
/// table): the line may not be drawn, so the browser cannot find it by itself. On a click on
/// such a link, on a change of the URL's fragment and on load, scrolls the list to the line,
/// then the line into view once drawn; a line not audited yet is revealed when it arrives.
fn follow_links(keys: Memo<Vec<String>>, lines: VirtualRows) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let wanted = RwSignal::new(None::<String>);
        let from_url = move || {
            let hash = window().location().hash().unwrap_or_default();
            let id = hash.strip_prefix('#').unwrap_or_default();
            if id.starts_with("readiness-") {
                wanted.set(Some(id.to_string()));
            }
        };
        from_url();
        let on_hash = window_event_listener(leptos::ev::hashchange, move |_| from_url());
        // A click on a link to the fragment already in the URL changes nothing, so no
        // `hashchange`: the click asks for the line itself.
        let on_click = window_event_listener(leptos::ev::click, move |ev| {
            let href = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .and_then(|e| e.closest("a[href^='#readiness-']").ok().flatten())
                .and_then(|a| a.get_attribute("href"));
            if let Some(id) = href.as_deref().and_then(|h| h.strip_prefix('#')) {
                wanted.set(Some(id.to_string()));
            }
        });
        on_cleanup(move || {
            on_hash.remove();
            on_click.remove();
        });
        Effect::new(move |_| {
            let Some(id) = wanted.get() else {
                return;
            };
            let key = keys.with(|keys| {
                keys.iter()
                    .find(|k| k.split_once('/').is_some_and(|(c, p)| anchor(c, p) == id))
                    .cloned()
            });
            // Not audited yet: this runs again when the lines change.
            let Some(key) = key else {
                return;
            };
            wanted.update_untracked(|w| *w = None);
            lines.reveal(&key);
            set_timeout(
                move || {
                    if let Some(line) = document().get_element_by_id(&id) {
                        line.scroll_into_view();
                    }
                },
                std::time::Duration::from_millis(150),
            );
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (keys, lines);
}

/// The id of a pool's audit on the page, for links from preemption cards.
pub fn anchor(cluster: &str, pool: &str) -> String {
    let safe = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    };
    format!("readiness-{}-{}", safe(cluster), safe(pool))
}

fn severity(c: Check) -> &'static str {
    match c {
        Check::SingleReplica | Check::GraceExceedsNotice | Check::PdbBlocksDrain => "sev-error",
        Check::NoPdb | Check::OneZone | Check::GracefulInterruptible => "sev-warning",
        Check::StatefulSet | Check::NoPreStop => "sev-info",
    }
}

/// What each check found means (`checks`, sorted, once each), once for the page instead of
/// on every row.
fn legend(checks: Vec<Check>) -> impl IntoView + use<> {
    (!checks.is_empty()).then(|| {
        view! {
            <dl class="legend" data-testid="readiness-legend">
                {checks.into_iter().map(|c| view! {
                    <dt><span class=format!("badge {}", severity(c))>{c.title()}</span></dt>
                    <dd>{c.why()}</dd>
                }).collect_view()}
            </dl>
        }
    })
}

/// One workload's findings in a pool: each check with the figures behind it.
struct Workload {
    name: String,
    pods: u32,
    found: Vec<(Check, String)>,
}

/// One pool, collapsed to a line (its findings counted by severity) until opened; inside, one
/// row per workload with its findings.
fn pool_audit(p: PoolReadiness, open: bool) -> impl IntoView {
    let errors = p
        .findings
        .iter()
        .filter(|f| severity(f.check) == "sev-error")
        .count();
    let warnings = p
        .findings
        .iter()
        .filter(|f| severity(f.check) == "sev-warning")
        .count();
    let verdict = match (errors, warnings, p.findings.len()) {
        (_, _, 0) => view! { <span class="badge sev-ok">"ready"</span> }.into_any(),
        (e, w, n) => view! {
            {(e > 0).then(|| view! { <span class="badge sev-error">{format!("{e} to fix")}</span> })}
            {(w > 0).then(|| view! { <span class="badge sev-warning">{format!("{w} to review")}</span> })}
            {(n > e + w).then(|| view! { <span class="badge sev-info">{format!("{} to know", n - e - w)}</span> })}
        }
        .into_any(),
    };
    // Findings grouped by workload, in the order the audit gave them.
    let mut workloads: Vec<Workload> = Vec::new();
    for f in p.findings {
        let name = format!("{}/{}", f.namespace, f.workload);
        match workloads.iter_mut().find(|w| w.name == name) {
            Some(w) => {
                w.pods = w.pods.max(f.pods);
                w.found.push((f.check, f.detail));
            }
            None => workloads.push(Workload {
                name,
                pods: f.pods,
                found: vec![(f.check, f.detail)],
            }),
        }
    }
    let has_rows = !workloads.is_empty();
    view! {
        <details class="pool-audit" id=anchor(&p.cluster, &p.pool) data-pool=p.pool.clone() open=open>
            <summary>
                <strong>{p.pool.clone()}</strong>
                <span class="muted">{format!(" · {} · {} — {} spot nodes, {} pods ", p.cluster, p.provider, p.nodes, p.pods)}</span>
                {verdict}
            </summary>
            {has_rows.then(|| view! {
                <div class="table-wrap" tabindex="0" role="region" aria-label=format!("Readiness of {}", p.pool)>
                    <table class="readiness-table">
                        <thead><tr>
                            <th scope="col">"Workload"</th>
                            <th scope="col">"Pods"</th>
                            <th scope="col">"Findings"</th>
                        </tr></thead>
                        <tbody>
                            {workloads.into_iter().map(|Workload { name, pods, found }| view! {
                                <tr data-pool=p.pool.clone() data-workload=name.clone()>
                                    <th scope="row">{name.clone()}</th>
                                    <td class="num">{pods}</td>
                                    <td>
                                        <ul class="findings">
                                            {found.into_iter().map(|(check, detail)| view! {
                                                <li data-check=format!("{check:?}")>
                                                    <span class=format!("badge {}", severity(check))>{check.title()}</span>
                                                    " "
                                                    <span class="small">{detail}</span>
                                                </li>
                                            }).collect_view()}
                                        </ul>
                                    </td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            })}
        </details>
    }
}
