//! Pods, trimmed: a running pod to its binding and its workload's facts, a waiting pod to
//! what the waiting views read (its requests, selectors, affinity, tolerations and the
//! scheduler's message).

use kube::ResourceExt;
use spotboard_core::domain::preemption::readiness::PodFacts;

use super::super::names;
use super::super::records::{PendingRecord, PodRecord};
use super::super::slim_pod::SlimPod;
use super::time;

/// Trims a Pod to its binding and its facts. Pods being deleted still count on their node
/// until gone, as `kubectl describe node` counts them. The facts are the shared template of
/// the pod's workload ([`names::pod_template`]): the readiness audit reads them from here
/// instead of listing every pod.
pub fn pod(p: &SlimPod) -> Option<PodRecord> {
    Some(PodRecord {
        uid: p.uid()?,
        node: p.spec.as_ref().and_then(|s| s.node_name.clone()),
        grace_ends: time(p.metadata.deletion_timestamp.as_ref()),
        facts: names::pod_template(pod_facts(p)),
        pending: pending(p).map(Box::new),
    })
}

/// Why `p` waits for a node, if it does: on no node, not finished, and either gated
/// (`spec.schedulingGates`) or reported `PodScheduled=False` with reason `Unschedulable`
/// by the scheduler. A pod the scheduler has not looked at yet is not waiting.
pub fn pending(p: &SlimPod) -> Option<PendingRecord> {
    use spotboard_core::domain::text::clip;
    use spotboard_core::domain::waiting::scheduler_message::MAX_MESSAGE;
    use spotboard_core::model::WaitKind;
    let spec = p.spec.as_ref();
    if spec.is_some_and(|s| s.node_name.is_some()) {
        return None;
    }
    let status = p.status.as_ref();
    if matches!(
        status.and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed" | "Running")
    ) {
        return None;
    }
    let gates: Vec<String> = spec
        .map(|s| s.scheduling_gates.iter().map(|g| g.name.clone()).collect())
        .unwrap_or_default();
    let scheduled = status
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "PodScheduled"))
        .filter(|c| c.status == "False");
    let kind = if !gates.is_empty() {
        WaitKind::SchedulingGated
    } else if scheduled.is_some_and(|c| c.reason.as_deref() == Some("Unschedulable")) {
        WaitKind::Unschedulable
    } else {
        return None;
    };
    let message = scheduled
        .and_then(|c| c.message.as_deref())
        .map(|m| clip(m, MAX_MESSAGE).to_string())
        .unwrap_or_default();
    Some(PendingRecord {
        namespace: p.namespace().unwrap_or_default(),
        name: p.name_any(),
        kind,
        since: scheduled.and_then(|c| time(c.last_transition_time.as_ref())),
        message,
        node_selector: spec
            .and_then(|s| s.node_selector.clone())
            .unwrap_or_default(),
        node_affinity: spec.map(node_affinity).unwrap_or_default(),
        gates,
        tolerations: spec
            .map(|s| {
                s.tolerations
                    .iter()
                    .map(|t| spotboard_core::model::Toleration {
                        key: t.key.clone().unwrap_or_default(),
                        exists: t.operator.as_deref() == Some("Exists"),
                        value: t.value.clone().unwrap_or_default(),
                        effect: t.effect.clone().unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// A pod's required node affinity, term by term. A term of `matchFields` alone is not kept
/// (it names nodes, which no pool gives), nor is an expression with an unknown operator: the
/// API server refuses both in a valid pod, so what is left is still what the scheduler holds
/// the pod to, less what spotboard cannot judge.
fn node_affinity(
    spec: &super::super::slim_pod::SlimSpec,
) -> Vec<spotboard_core::domain::selector::Selector> {
    use spotboard_core::domain::selector::{Requirement, Selector};
    let Some(required) = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| n.required.as_ref())
    else {
        return Vec::new();
    };
    let terms: Vec<Selector> = required
        .node_selector_terms
        .iter()
        .map(|t| {
            Selector(
                t.match_expressions
                    .iter()
                    .filter_map(|e| {
                        Requirement::from_node_selector(&e.key, &e.operator, e.values.clone())
                    })
                    .collect(),
            )
        })
        .collect();
    // An empty term (matchFields only) would hold everywhere: with it, the pod is bound only
    // by what spotboard does not judge.
    if terms.iter().any(|t| t.0.is_empty()) {
        return Vec::new();
    }
    terms
}

/// Kubernetes' default `terminationGracePeriodSeconds`.
pub const DEFAULT_GRACE_S: i64 = 30;

/// A pod's facts as the readiness audit and the blast radius read them: owner (the
/// controller reference, else the first), grace period, preStop.
pub fn pod_facts(p: &SlimPod) -> PodFacts {
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
        gpus: spec.map_or(0, |s| {
            s.containers
                .iter()
                .fold(0u32, |sum, c| sum.saturating_add(c.gpus()))
        }),
        cpu_m: spec.map_or(0, |s| {
            s.containers
                .iter()
                .fold(0u64, |sum, c| sum.saturating_add(c.cpu_m()))
        }),
        memory_b: spec.map_or(0, |s| {
            s.containers
                .iter()
                .fold(0u64, |sum, c| sum.saturating_add(c.memory_b()))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waiting is read from the pod alone: bound, running or finished pods do not wait; a
    /// pod the scheduler has not reported on yet does not either; gates win over the
    /// condition; an overlong message is cut at its budget on a character boundary.
    #[test]
    fn a_pod_waits_when_gated_or_reported_unschedulable() {
        use spotboard_core::domain::waiting::scheduler_message::MAX_MESSAGE;
        use spotboard_core::model::WaitKind;
        let pod = |v: serde_json::Value| -> SlimPod { serde_json::from_value(v).unwrap() };
        let unschedulable = |message: &str| {
            serde_json::json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": message, "lastTransitionTime": "2026-11-28T09:12:00Z"})
        };
        let p = pod(serde_json::json!({
            "metadata": {"name": "train-0", "namespace": "ml", "uid": "u1"},
            "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "gd-8xh100ib-i128"},
                     "containers": []},
            "status": {"phase": "Pending", "conditions": [unschedulable("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")]},
        }));
        let w = pending(&p).expect("waiting");
        assert_eq!(w.kind, WaitKind::Unschedulable);
        assert_eq!((w.namespace.as_str(), w.name.as_str()), ("ml", "train-0"));
        assert_eq!(
            w.since.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-11-28T09:12:00+00:00")
        );
        assert_eq!(w.node_selector.len(), 1);
        let gated = pod(serde_json::json!({
            "metadata": {"name": "g", "namespace": "ml"},
            "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], "containers": []},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]},
        }));
        let g = pending(&gated).unwrap();
        assert_eq!(
            (g.kind, g.gates.as_slice()),
            (
                WaitKind::SchedulingGated,
                &["kueue.x-k8s.io/admission".to_string()][..]
            )
        );
        for not_waiting in [
            serde_json::json!({"metadata": {"name": "b"}, "spec": {"nodeName": "n1", "containers": []},
                "status": {"phase": "Pending", "conditions": [unschedulable("x")]}}),
            serde_json::json!({"metadata": {"name": "new"}, "spec": {"containers": []}, "status": {"phase": "Pending"}}),
            serde_json::json!({"metadata": {"name": "done"}, "spec": {"containers": []},
                "status": {"phase": "Succeeded", "conditions": [unschedulable("x")]}}),
        ] {
            assert!(
                pending(&pod(not_waiting.clone())).is_none(),
                "{not_waiting}"
            );
        }
        let long = pod(serde_json::json!({
            "metadata": {"name": "l"}, "spec": {"containers": []},
            "status": {"conditions": [unschedulable(&"é".repeat(MAX_MESSAGE))]},
        }));
        let cut = pending(&long).unwrap().message;
        assert!(cut.len() <= MAX_MESSAGE && cut.chars().all(|c| c == 'é'));
    }

    /// The required node affinity as a pod spells it: terms ORed, expressions ANDed; an
    /// unknown operator is dropped, a `matchFields`-only term leaves the pod unjudged by
    /// affinity, preferred terms are not read.
    #[test]
    fn a_waiting_pods_required_node_affinity_is_read() {
        let waiting = |affinity: serde_json::Value| {
            let p: SlimPod = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "a", "namespace": "ml"},
                "spec": {"containers": [], "affinity": affinity},
                "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
                    "status": "False", "reason": "Unschedulable", "message": "m"}]},
            }))
            .unwrap();
            pending(&p).unwrap().node_affinity
        };
        let terms = waiting(serde_json::json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["a", "b"]},
                    {"key": "gpu.generation", "operator": "Gt", "values": ["8"]},
                    {"key": "x", "operator": "Near", "values": ["1"]}]},
                {"matchExpressions": [{"key": "cloud.google.com/gke-spot", "operator": "Exists"}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference":
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z"]}]}}]}}));
        let text: Vec<Vec<String>> = terms
            .iter()
            .map(|t| t.0.iter().map(ToString::to_string).collect())
            .collect();
        assert_eq!(
            text,
            [
                vec![
                    "node.kubernetes.io/instance-type in (a,b)",
                    "gpu.generation>8"
                ],
                vec!["cloud.google.com/gke-spot"]
            ]
        );
        let fields_only = waiting(serde_json::json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}));
        assert!(fields_only.is_empty());
        assert!(waiting(serde_json::json!({"podAntiAffinity": {}})).is_empty());
    }
}
