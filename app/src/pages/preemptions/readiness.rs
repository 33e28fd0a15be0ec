//! The spot readiness audit: per pool, the workloads a preemption will hurt and why.

use leptos::prelude::*;

use crate::live::LiveStore;
use crate::model::{Check, PoolReadiness};

/// The audit of every pool with spot nodes, or of one pool (`cluster`, `pool`), from the
/// tab's stream: the server audits every 15 s while such a page is open.
#[component]
pub fn ReadinessSection(#[prop(optional)] only: Option<(String, String)>) -> impl IntoView {
    let live = expect_context::<LiveStore>();
    let body = move || {
        let audits: Vec<_> = live
            .audits
            .values()
            .into_iter()
            .filter(|a| only.as_ref().is_none_or(|(c, _)| &a.cluster == c))
            .collect();
        if audits.is_empty() {
            return view! { <p class="loading" role="status">"Auditing spot pools…"</p> }
                .into_any();
        }
        let errors: Vec<String> = audits.iter().flat_map(|a| a.errors.clone()).collect();
        let pools: Vec<PoolReadiness> = audits
            .into_iter()
            .flat_map(|a| a.pools)
            .filter(|p| {
                only.as_ref()
                    .is_none_or(|(c, n)| &p.cluster == c && &p.pool == n)
            })
            .collect();
        view! {
            {errors.into_iter().map(|e| view! { <p class="error">{e}</p> }).collect_view()}
            {if pools.is_empty() {
                view! { <p class="empty">"No spot nodes to audit."</p> }.into_any()
            } else {
                table(pools).into_any()
            }}
        }
        .into_any()
    };
    view! {
        <section class="readiness" data-testid="readiness">
            <h2>"Spot readiness"</h2>
            <p class="hint definition">
                "Workloads on spot nodes, checked for what makes a preemption hurt: one replica, no \
                 PodDisruptionBudget, a grace period longer than the provider's time from SIGTERM to removal \
                 (CKS 300 s, GKE 15 s, AWS 120 s), all replicas in one zone of a multi-zone cluster, \
                 StatefulSets, graceful-interruptible pods and no preStop hook. DaemonSet pods are not checked."
            </p>
            {body}
        </section>
    }
}

fn severity(c: Check) -> &'static str {
    match c {
        Check::SingleReplica | Check::GraceExceedsNotice => "sev-error",
        Check::NoPdb | Check::OneZone | Check::GracefulInterruptible => "sev-warning",
        Check::StatefulSet | Check::NoPreStop => "sev-info",
    }
}

fn table(pools: Vec<PoolReadiness>) -> impl IntoView {
    view! {
        <div class="table-wrap" tabindex="0" role="region" aria-label="Readiness audit">
            <table class="readiness-table">
                <thead><tr>
                    <th scope="col">"Pool"</th>
                    <th scope="col">"Finding"</th>
                    <th scope="col">"Workload"</th>
                    <th scope="col">"Pods"</th>
                    <th scope="col">"Figures"</th>
                    <th scope="col">"Why it matters"</th>
                </tr></thead>
                <tbody>
                    {pools.into_iter().map(|p| {
                        let label = format!("{} · {} · {}", p.pool, p.cluster, p.provider);
                        let summary = format!("{} spot nodes, {} pods", p.nodes, p.pods);
                        if p.findings.is_empty() {
                            return view! {
                                <tr data-pool=p.pool.clone()>
                                    <th scope="row">{label}<br /><span class="muted small">{summary}</span></th>
                                    <td colspan="5"><span class="badge sev-ok">"ready"</span></td>
                                </tr>
                            }.into_any();
                        }
                        let n = p.findings.len();
                        p.findings.into_iter().enumerate().map(|(i, f)| view! {
                            <tr data-pool=p.pool.clone() data-check=format!("{:?}", f.check)>
                                {(i == 0).then(|| view! {
                                    <th scope="row" rowspan=n.to_string()>{label.clone()}<br /><span class="muted small">{summary.clone()}</span></th>
                                })}
                                <td><span class=format!("badge {}", severity(f.check))>{f.check.title()}</span></td>
                                <td>{format!("{}/{}", f.namespace, f.workload)}</td>
                                <td class="num">{f.pods}</td>
                                <td class="small">{f.detail}</td>
                                <td class="small muted">{f.check.why()}</td>
                            </tr>
                        }).collect_view().into_any()
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}
