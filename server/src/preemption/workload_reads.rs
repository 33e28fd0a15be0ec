//! Pods, PodDisruptionBudgets and replica counts as read from an API server for the readiness
//! audit and the blast radius (not `hub::facts`, the hub's typed changes).

use chrono::{DateTime, Utc};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{Api, ResourceExt, api::ListParams};
use spotboard_core::domain::preemption::readiness::{PdbFacts, PodFacts, pdb_selector};

use crate::watch::{slim_pod::SlimPod, trim::pod_facts};

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

/// Pods listed per page by the blast radius (a node's pods, an owner's siblings, which can be
/// most of a 50,000-pod cluster), decoded only as far as [`SlimPod`] reaches and kept only
/// as facts.
///
/// Why 100 and not kubectl's 500: kube-rs holds a page's whole response body twice while
/// decoding it (the received bytes, then a `String` copy), about 8 kB a pod from the
/// embedded cluster (real pods run 5–20 kB). At 500 a page, each pass over 50,000 pods lifted
/// the dashboard's RSS by 5–6 MB for a moment, and every such peak left the allocator a little
/// more resident. The price is five times the list requests; the bytes the API server sends
/// are the same.
pub const PAGE: u32 = 100;

/// The pods of `namespace` (every namespace with `None`) that `lp`'s selectors keep, as facts
/// with each pod's last start while it runs ([`SlimPod::last_start`]), read [`PAGE`] at a
/// time.
///
/// Errors: the API server could not be asked; the message names what was listed.
pub async fn pods(
    client: &kube::Client,
    namespace: Option<&str>,
    lp: ListParams,
) -> Result<Vec<(PodFacts, Option<DateTime<Utc>>)>, String> {
    let mut out = Vec::new();
    each_page(client, namespace, lp, |page| {
        out.extend(page.iter().map(|p| (pod_facts(p), p.last_start())));
    })
    .await?;
    Ok(out)
}

/// Hands the facts of each pod `lp` selects to `visit`, [`PAGE`] pods at a time, keeping
/// none: for a caller that folds many pods into something smaller (a count).
///
/// Errors: the API server could not be asked; the message names what was listed.
pub async fn each_pod(
    client: &kube::Client,
    namespace: Option<&str>,
    lp: ListParams,
    mut visit: impl FnMut(PodFacts),
) -> Result<(), String> {
    each_page(client, namespace, lp, |page| {
        page.iter().map(pod_facts).for_each(&mut visit)
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
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use kube::api::PostParams;
    use serde_json::json;

    /// More pods than two pages: each is handed over once across the continue tokens, and an
    /// owner's replicas are counted over every page.
    #[tokio::test]
    async fn every_pod_is_read_once_across_pages() {
        let dir = tempfile::tempdir().unwrap();
        let zone = "US-EAST-04A";
        let cluster = spotboard_embedded::EmbeddedCluster::start(
            spotboard_embedded::EmbeddedOptions::empty(zone, dir.path().join("kubeconfig")),
        )
        .await
        .unwrap();
        let client = cluster.admin_client(zone).unwrap();
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "web"}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
        let pods = Api::<Pod>::namespaced(client.clone(), "web");
        let n = PAGE as usize * 2 + 17;
        for i in 0..n {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {
                    "name": format!("api-{i:03}"),
                    "labels": {"app": "api"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "name": "api-1", "uid": "u1", "controller": true}],
                },
                "spec": {"containers": [{"name": "c", "image": "api:1"}]},
            }))
            .unwrap();
            pods.create(&PostParams::default(), &pod).await.unwrap();
        }

        let mut pages = Vec::new();
        each_page(&client, None, ListParams::default(), |page| {
            pages.push(page.len())
        })
        .await
        .unwrap();
        assert_eq!(
            pages,
            [PAGE as usize, PAGE as usize, 17],
            "read {PAGE} at a time"
        );
        let mut seen = Vec::new();
        each_pod(&client, None, ListParams::default(), |p| seen.push(p.name))
            .await
            .unwrap();
        seen.sort();
        let want: Vec<String> = (0..n).map(|i| format!("api-{i:03}")).collect();
        assert_eq!(
            seen,
            want,
            "every pod once, in {} pages",
            n.div_ceil(PAGE as usize)
        );

        let workload = ("web".to_string(), "ReplicaSet/api-1".to_string());
        let lp = ListParams::default().labels("app=api");
        assert_eq!(replicas_of(&client, &workload, lp).await.unwrap(), n as u32);
    }

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
