//! Pods and PodDisruptionBudgets as the readiness audit and the blast radius read them.

use app::domain::preemption::readiness::{PdbFacts, PodFacts, pdb_selector};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{Api, ResourceExt, api::ListParams};

use super::slim_pod::SlimPod;

/// Kubernetes' default `terminationGracePeriodSeconds`.
pub const DEFAULT_GRACE_S: i64 = 30;

/// A pod's facts: owner (the controller reference, else the first), grace period, preStop.
pub fn pod(p: &SlimPod) -> PodFacts {
    let owners = p.owner_references();
    let owner = owners
        .iter()
        .find(|o| o.controller == Some(true))
        .or(owners.first());
    let spec = p.spec.as_ref();
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    PodFacts {
        namespace: p.namespace().unwrap_or_default(),
        name: p.name_any(),
        uid: p.uid().unwrap_or_default(),
        labels: p.labels().clone(),
        owner_kind: owner.map(|o| o.kind.clone()),
        owner_name: owner.map(|o| o.name.clone()),
        node: spec.and_then(|s| s.node_name.clone()),
        grace_s: spec
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(DEFAULT_GRACE_S),
        pre_stop: spec.is_some_and(|s| {
            s.containers
                .iter()
                .any(|c| c.lifecycle.as_ref().is_some_and(|l| l.pre_stop.is_some()))
        }),
        active: !matches!(phase, Some("Succeeded" | "Failed")),
        system: spec
            .and_then(|s| s.priority_class_name.as_deref())
            .is_some_and(|c| c.starts_with("system-")),
    }
}

/// A budget's facts.
pub fn pdb(b: &PodDisruptionBudget) -> PdbFacts {
    let selector = b
        .spec
        .as_ref()
        .and_then(|s| s.selector.as_ref())
        .and_then(|sel| {
            pdb_selector(
                sel.match_labels.clone().unwrap_or_default(),
                sel.match_expressions.iter().flatten().map(|e| {
                    (
                        e.key.clone(),
                        e.operator.clone(),
                        e.values.clone().unwrap_or_default(),
                    )
                }),
            )
        });
    let text = |v: Option<&IntOrString>| {
        v.map(|v| match v {
            IntOrString::Int(i) => i.to_string(),
            IntOrString::String(s) => s.clone(),
        })
    };
    let spec = b.spec.as_ref();
    PdbFacts {
        namespace: b.namespace().unwrap_or_default(),
        name: b.name_any(),
        selector,
        min_available: text(spec.and_then(|s| s.min_available.as_ref())),
        max_unavailable: text(spec.and_then(|s| s.max_unavailable.as_ref())),
    }
}

/// Pods listed per page: a 50,000-pod cluster is read a page at a time (decoded only as far
/// as [`SlimPod`] reaches) and kept only as facts.
pub const PAGE: u32 = 500;

/// The pods of `namespace` (every namespace with `None`) that `lp`'s selectors keep, as facts,
/// read [`PAGE`] at a time.
///
/// Errors: the API server could not be asked; the message names what was listed.
pub async fn pods(
    client: &kube::Client,
    namespace: Option<&str>,
    lp: ListParams,
) -> Result<Vec<PodFacts>, String> {
    let mut out = Vec::new();
    each_pod(client, namespace, lp, |p| out.push(p)).await?;
    Ok(out)
}

/// Hands the facts of each pod `lp` selects to `visit`, [`PAGE`] pods at a time, keeping
/// none: for a caller that folds a whole cluster's pods into something smaller.
///
/// Errors: the API server could not be asked; the message names what was listed.
pub async fn each_pod(
    client: &kube::Client,
    namespace: Option<&str>,
    lp: ListParams,
    mut visit: impl FnMut(PodFacts),
) -> Result<(), String> {
    each_page(client, namespace, lp, |page| {
        page.iter().map(pod).for_each(&mut visit)
    })
    .await
}

/// The active pods of `workload` (namespace, `Kind/name` as [`PodFacts::workload`] writes
/// it) among those `lp` selects in its namespace. Counted page by page and nothing else
/// kept: an owner's siblings can be most of a 50,000-pod cluster.
///
/// Errors: the API server could not be asked.
pub async fn replicas_of(
    client: &kube::Client,
    workload: &(String, String),
    lp: ListParams,
) -> Result<u32, String> {
    let mut n = 0;
    each_pod(client, Some(&workload.0), lp, |p| {
        if p.replica_of().as_ref() == Some(workload) {
            n += 1;
        }
    })
    .await?;
    Ok(n)
}

/// Lists the pods `lp` selects [`PAGE`] at a time, handing each page to `visit` before the
/// next is read.
async fn each_page(
    client: &kube::Client,
    namespace: Option<&str>,
    lp: ListParams,
    mut visit: impl FnMut(&[SlimPod]),
) -> Result<(), String> {
    let api: Api<SlimPod> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let mut lp = lp.limit(PAGE);
    loop {
        let page = api
            .list(&lp)
            .await
            .map_err(|e| format!("could not list pods: {e}"))?;
        visit(&page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => return Ok(()),
        }
    }
}

/// Labels that differ between pods of one owner (set per pod or per revision); the rest of
/// a pod's labels come from its owner's template and select its siblings.
const PER_POD_LABELS: [&str; 6] = [
    "statefulset.kubernetes.io/pod-name",
    "apps.kubernetes.io/pod-index",
    "batch.kubernetes.io/job-completion-index",
    "controller-revision-hash",
    "pod-template-generation",
    "pod-template-hash",
];

/// A label selector for `p`'s siblings (pods made from the same template), or `None` when
/// the pod has no template labels to select by.
pub fn sibling_selector(p: &PodFacts) -> Option<String> {
    let parts: Vec<String> = p
        .labels
        .iter()
        .filter(|(k, _)| !PER_POD_LABELS.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    (!parts.is_empty()).then(|| parts.join(","))
}

/// Every PodDisruptionBudget. A cluster that does not serve policy/v1 has none.
///
/// Errors: the API server could not be asked, or refused (403: the read-only role predates
/// the budgets rule in `server/deploy/base/rbac.yaml`).
pub async fn pdbs(client: &kube::Client) -> Result<Vec<PdbFacts>, String> {
    match Api::<PodDisruptionBudget>::all(client.clone())
        .list(&ListParams::default())
        .await
    {
        Ok(list) => Ok(list.items.iter().map(pdb).collect()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(Vec::new()),
        Err(e) => Err(format!("could not list PodDisruptionBudgets: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_are_selected_by_template_labels_only() {
        let mut p = PodFacts::default();
        assert_eq!(
            sibling_selector(&p),
            None,
            "no labels: nothing to select by"
        );
        for (k, v) in [
            ("app", "web"),
            ("tier", "api"),
            ("pod-template-hash", "7c9d"),
            ("statefulset.kubernetes.io/pod-name", "web-0"),
        ] {
            p.labels.insert(k.into(), v.into());
        }
        assert_eq!(sibling_selector(&p).as_deref(), Some("app=web,tier=api"));
    }
}
