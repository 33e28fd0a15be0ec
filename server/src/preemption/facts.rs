//! Pods and PodDisruptionBudgets as the readiness audit and the blast radius read them.

use app::domain::preemption::readiness::{PdbFacts, PodFacts, Requirement};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::{Api, ResourceExt, api::ListParams};

/// Kubernetes' default `terminationGracePeriodSeconds`.
pub const DEFAULT_GRACE_S: i64 = 30;

/// A pod's facts: owner (the controller reference, else the first), grace period, preStop.
pub fn pod(p: &Pod) -> PodFacts {
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
        .map(|sel| {
            (
                sel.match_labels.clone().unwrap_or_default(),
                sel.match_expressions
                    .iter()
                    .flatten()
                    .map(|e| Requirement {
                        key: e.key.clone(),
                        operator: e.operator.clone(),
                        values: e.values.clone().unwrap_or_default(),
                    })
                    .collect(),
            )
        });
    PdbFacts {
        namespace: b.namespace().unwrap_or_default(),
        name: b.name_any(),
        selector,
    }
}

/// The pods of `namespace` (every namespace with `None`), narrowed by a field selector.
///
/// Errors: the API server could not be asked; the message names what was listed.
pub async fn pods(
    client: &kube::Client,
    namespace: Option<&str>,
    fields: Option<&str>,
) -> Result<Vec<PodFacts>, String> {
    let api: Api<Pod> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let mut lp = ListParams::default();
    if let Some(f) = fields {
        lp = lp.fields(f);
    }
    let list = api
        .list(&lp)
        .await
        .map_err(|e| format!("could not list pods: {e}"))?;
    Ok(list.items.iter().map(pod).collect())
}

/// Every PodDisruptionBudget. A cluster that does not serve policy/v1 has none.
///
/// Errors: the API server could not be asked.
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
