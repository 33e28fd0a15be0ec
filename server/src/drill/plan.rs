//! A drill's dry run: what it would do to one node and whom it would hit, asked of the API
//! server as the user, writing nothing.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use spotboard_core::domain::preemption::drill;
use spotboard_core::domain::preemption::readiness::shutdown_budget_s;
use spotboard_core::model::{Check, DrillPlan, DrillPod, DrillRefusal, NodeRow, PodImpact};

use super::writes::{self, PodName};

/// Pods asked a dry-run eviction at most; the rest are listed without the budget's answer (a
/// node of 110 pods would otherwise cost 110 calls per dry run).
pub const DRY_EVICTIONS_MAX: usize = 50;

/// The verbs a drill needs, as `(verb, resource, subresource, in words)`.
const VERBS: [(&str, &str, &str, &str); 2] = [
    ("patch", "nodes", "", "patch nodes"),
    ("create", "pods", "eviction", "create pods/eviction"),
];

/// The plan for `node`: phases, pods (read with spotboard's `read` client), their findings
/// and the budgets' answers (dry-run evictions as the `user`, each charged to `charge` first),
/// and the verbs the user lacks. Failures to read become refusals or findings: a plan is
/// always returned, with the kind of its first refusal (a missing verb `Forbidden`, an access
/// review that could not be asked `Upstream`).
pub async fn plan(
    node: &NodeRow,
    user: &kube::Client,
    read: &kube::Client,
    charge: &(dyn Fn(u32) -> Result<(), String> + Send + Sync),
) -> (DrillPlan, Option<DrillRefusal>) {
    let mut refusals = Vec::new();
    let mut kind = None;
    for (verb, resource, sub, words) in VERBS {
        match may(user, verb, resource, sub).await {
            Ok(true) => {}
            Ok(false) => {
                kind.get_or_insert(DrillRefusal::Forbidden);
                refusals.push(format!(
                    "you may not {words} in {} (SelfSubjectAccessReview)",
                    node.cluster
                ));
            }
            Err(e) => {
                kind.get_or_insert(DrillRefusal::Upstream);
                refusals.push(format!(
                    "could not ask {} whether you may {words}: {e}",
                    node.cluster
                ));
            }
        }
    }
    let mut findings = Vec::new();
    let impacts =
        match crate::preemption::blast_radius(read.clone(), &node.cluster, &node.name).await {
            Ok(p) => p,
            Err(e) => {
                findings.push(format!("the node's pods could not be read: {e}"));
                Vec::new()
            }
        };
    let budget = shutdown_budget_s(node.provider);
    let evictable: Vec<&PodImpact> = impacts
        .iter()
        .filter(|p| p.owner_kind.as_deref() != Some("DaemonSet"))
        .collect();
    // The dry-run evictions are calls as the user: charged before they are made.
    let not_asked = if !refusals.is_empty() {
        Some("not asked: the drill may not start".to_string())
    } else {
        charge(evictable.len().min(DRY_EVICTIONS_MAX) as u32)
            .err()
            .map(|why| format!("not asked: {why}"))
    };
    let mut pods = Vec::new();
    for (i, p) in evictable.into_iter().enumerate() {
        findings.extend(pod_findings(p, budget));
        let refused = if let Some(why) = &not_asked {
            Some(why.clone())
        } else if i >= DRY_EVICTIONS_MAX {
            Some(format!(
                "not asked: only the first {DRY_EVICTIONS_MAX} pods get a dry-run eviction"
            ))
        } else {
            let name = PodName {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
            };
            writes::evict(user, &name, true)
                .await
                .err()
                .map(|e| e.message().to_string())
        };
        pods.push(DrillPod {
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            owner_kind: p.owner_kind.clone(),
            owner_name: p.owner_name.clone(),
            pdb: p.pdb.clone(),
            grace_s: p.grace_s,
            fits: p.grace_s <= budget,
            refused,
        });
    }
    let plan = DrillPlan {
        cluster: node.cluster.clone(),
        node: node.name.clone(),
        provider: node.provider,
        phases: drill::phases(node.provider),
        pods,
        findings,
        refusals,
    };
    (plan, kind)
}

/// The readiness audit's per-pod checks for one pod about to be evicted, one sentence each
/// (`namespace/name: title`), in the audit's words ([`Check::title`]).
pub fn pod_findings(p: &PodImpact, budget_s: i64) -> Vec<String> {
    let mut checks = Vec::new();
    if p.replicas == Some(1) {
        checks.push(Check::SingleReplica);
    }
    if p.pdb.is_none() && p.owner_kind.is_some() {
        checks.push(Check::NoPdb);
    }
    if p.grace_s > budget_s {
        checks.push(Check::GraceExceedsNotice);
    }
    if p.owner_kind.as_deref() == Some("StatefulSet") {
        checks.push(Check::StatefulSet);
    }
    if p.eviction_label.as_deref() == Some("graceful-interruptible") {
        checks.push(Check::GracefulInterruptible);
    }
    let mut out: Vec<String> = checks
        .into_iter()
        .map(|c| format!("{}/{}: {}", p.namespace, p.name, c.title()))
        .collect();
    if p.owner_kind.is_none() {
        out.push(format!(
            "{}/{}: a bare pod: nothing recreates it once evicted",
            p.namespace, p.name
        ));
    }
    out
}

/// A SelfSubjectAccessReview as the user.
pub async fn may(
    user: &kube::Client,
    verb: &str,
    resource: &str,
    subresource: &str,
) -> Result<bool, kube::Error> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                subresource: (!subresource.is_empty()).then(|| subresource.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(user.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_name_the_pod_and_the_audits_check() {
        let p = PodImpact {
            namespace: "ml".into(),
            name: "train-0".into(),
            owner_kind: Some("StatefulSet".into()),
            owner_name: Some("train".into()),
            replicas: Some(1),
            grace_s: 600,
            ..Default::default()
        };
        assert_eq!(
            pod_findings(&p, 300),
            vec![
                "ml/train-0: one replica",
                "ml/train-0: no PodDisruptionBudget",
                "ml/train-0: grace period longer than the notice window",
                "ml/train-0: StatefulSet",
            ]
        );
        let bare = PodImpact {
            namespace: "ml".into(),
            name: "debug".into(),
            grace_s: 30,
            pdb: Some("any".into()),
            ..Default::default()
        };
        assert_eq!(
            pod_findings(&bare, 300),
            vec!["ml/debug: a bare pod: nothing recreates it once evicted"]
        );
    }
}
