//! Pure functions from Kubernetes objects to trimmed records.

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Event, Node};
use kube::{ResourceExt, api::DynamicObject};
use serde_json::Value;
use spotboard_core::domain::preemption::readiness::PodFacts;
use spotboard_core::domain::quantity;
use spotboard_core::{
    domain::preemption,
    labels,
    nodepool::{NodePoolSpec, NodePoolStatus},
};

use super::names;
use super::records::{
    EventRecord, KarpenterPoolRecord, NodeRecord, PendingRecord, PodRecord, PoolRecord,
};
use super::slim_pod::SlimPod;

fn time(t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> Option<DateTime<Utc>> {
    t.map(|t| DateTime::<Utc>::from_timestamp_nanos(t.0.as_nanosecond() as i64))
}

/// Reads a NodePool from an untyped object.
///
/// The watch is untyped on purpose: a typed watch fails as a whole when one object does not
/// decode, which would hide every pool behind one malformed one. Here a malformed object
/// becomes a record whose `parsed` says what is wrong, with the JSON path.
pub fn pool(obj: &DynamicObject) -> Option<PoolRecord> {
    let uid = obj.uid()?;
    let spec = obj.data.get("spec").cloned().unwrap_or(Value::Null);
    let status = obj.data.get("status").cloned().unwrap_or(Value::Null);
    let parsed = decode::<NodePoolSpec>("spec", spec).and_then(|spec| {
        let status = if status.is_null() {
            NodePoolStatus::default()
        } else {
            decode::<NodePoolStatus>("status", status)?
        };
        Ok((spec, status))
    });
    Some(PoolRecord {
        uid,
        name: obj.name_any(),
        generation: obj.metadata.generation,
        created: time(obj.metadata.creation_timestamp.as_ref()),
        fallback_for: obj
            .annotations()
            .get(spotboard_core::model::FALLBACK_FOR_ANNOTATION)
            .map(|v| fallback_names(v))
            .unwrap_or_default(),
        parsed,
    })
}

/// The NodePool names of a `spotboard.dev/fallback-for` value: comma-separated, at most
/// [`MAX_FALLBACK_NAMES`], each a possible object name (lowercase letters, digits, `-` and
/// `.`, at most 253 characters). An annotation is user text of up to 256 KiB that every
/// viewer's pool row would carry; anything else is dropped.
fn fallback_names(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|n| {
            !n.is_empty()
                && n.len() <= 253
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        })
        .take(MAX_FALLBACK_NAMES)
        .map(String::from)
        .collect()
}

/// The most spot pools one `spotboard.dev/fallback-for` annotation names.
pub const MAX_FALLBACK_NAMES: usize = 16;

#[cfg(test)]
#[test]
fn fallback_names_are_trimmed_and_bounded() {
    assert_eq!(fallback_names(" a, b ,,c"), ["a", "b", "c"]);
    assert_eq!(fallback_names(&"x,".repeat(100)).len(), MAX_FALLBACK_NAMES);
    assert!(fallback_names(" , ").is_empty());
    let long = "a".repeat(254);
    assert_eq!(
        fallback_names(&format!("{long},Spot A,spot_b,ok.pool")),
        ["ok.pool"]
    );
}

fn decode<T: serde::de::DeserializeOwned>(root: &str, v: Value) -> Result<T, String> {
    if v.is_null() {
        return Err(format!("{root} is missing"));
    }
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." {
            root.to_string()
        } else {
            format!("{root}.{path}")
        };
        format!("{path}: {}", e.inner())
    })
}

/// Reads a Karpenter NodePool (`karpenter.sh/v1`) from an untyped object. Fields it cannot
/// read are left empty and named in `malformed`, so one odd object never hides the others.
pub fn karpenter_pool(obj: &DynamicObject) -> Option<KarpenterPoolRecord> {
    let uid = obj.uid()?;
    let mut rec = KarpenterPoolRecord {
        uid,
        name: obj.name_any(),
        created: time(obj.metadata.creation_timestamp.as_ref()),
        ..Default::default()
    };
    let d = &obj.data;
    let strs = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    for r in d
        .pointer("/spec/template/spec/requirements")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let values = strs(r.get("values"));
        match (
            r.get("key").and_then(Value::as_str),
            r.get("operator").and_then(Value::as_str),
        ) {
            (Some(labels::KARPENTER_CAPACITY_TYPE), Some("In")) => rec.capacity_types = values,
            (Some(labels::INSTANCE_TYPE), Some("In")) => rec.instance_types = values,
            (Some(labels::ZONE), Some("In")) => rec.zones = values,
            _ => {}
        }
    }
    if rec.capacity_types.is_empty() {
        rec.capacity_types = vec!["on-demand".into()];
    }
    if let Some(limits) = d.pointer("/spec/limits").and_then(Value::as_object) {
        rec.limits = limits
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), String::from),
                )
            })
            .collect();
    }
    rec.consolidation = d
        .pointer("/spec/disruption/consolidationPolicy")
        .and_then(Value::as_str)
        .map(String::from);
    for b in d
        .pointer("/spec/disruption/budgets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let nodes = b.get("nodes").and_then(Value::as_str).unwrap_or("10%");
        let mut line = format!("nodes {nodes}");
        if let Some(s) = b.get("schedule").and_then(Value::as_str) {
            let dur = b.get("duration").and_then(Value::as_str).unwrap_or("?");
            line.push_str(&format!(" ({s} for {dur})"));
        }
        rec.budgets.push(line);
    }
    if let Some(c) = d.pointer("/status/conditions") {
        match decode::<Vec<spotboard_core::nodepool::Condition>>("status.conditions", c.clone()) {
            Ok(cs) => rec.conditions = cs,
            Err(e) => rec.malformed = Some(e),
        }
    }
    Some(rec)
}

/// Trims a Node.
pub fn node(n: &Node) -> Option<NodeRecord> {
    let uid = n.uid()?;
    let l = n.labels();
    let label = |k: &str| l.get(k).cloned();
    let shared = |k: &str| l.get(k).map(|v| super::names::shared(v));
    let (provider, provider_pool, capacity) = preemption::classify(l);
    let taints: Vec<String> = n
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|ts| ts.iter().map(|t| t.key.clone()).collect())
        .unwrap_or_default();
    let ready_condition = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    let ready = ready_condition.map(|c| c.status == "True");
    let allocatable = |name: &str| {
        n.status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get(name))
            .map(|q| q.0.as_str())
    };
    let ready_since = ready_condition
        .filter(|c| c.status == "True")
        .and_then(|c| time(c.last_transition_time.as_ref()));
    Some(NodeRecord {
        uid: uid.into(),
        name: n.name_any().into(),
        pool: provider_pool.as_deref().map(super::names::shared),
        instance_type: shared(labels::INSTANCE_TYPE),
        zone: shared(labels::ZONE),
        state: shared(labels::NODE_STATE),
        ready,
        ready_since,
        cordoned: n
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false),
        pending_preemption: l
            .get(labels::PENDING_PREEMPTION)
            .is_some_and(|v| v == "true"),
        evicted_at: label(labels::EVICTED_AT),
        created: time(n.metadata.creation_timestamp.as_ref()),
        notice: preemption::notice(provider, l, &taints, capacity),
        provider,
        capacity,
        drill: n.annotations().contains_key(labels::DRILL),
        gpus: n
            .status
            .as_ref()
            .and_then(|s| s.capacity.as_ref())
            .and_then(|c| c.get(labels::GPU_RESOURCE))
            .and_then(|q| q.0.parse::<u32>().ok())
            .filter(|&g| g > 0),
        cpu_allocatable_m: allocatable("cpu").and_then(quantity::millicores),
        memory_allocatable_b: allocatable("memory").and_then(quantity::bytes),
    })
}

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
    spec: &super::slim_pod::SlimSpec,
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

/// Trims an Event; `None` for events about anything but NodePools and Nodes.
pub fn event(e: &Event) -> Option<EventRecord> {
    let kind = e.involved_object.kind.clone()?;
    if kind != "NodePool" && kind != "Node" {
        return None;
    }
    let last_seen = time(e.last_timestamp.as_ref())
        .or_else(|| {
            e.event_time
                .as_ref()
                .map(|t| DateTime::<Utc>::from_timestamp_nanos(t.0.as_nanosecond() as i64))
        })
        .or_else(|| time(e.first_timestamp.as_ref()))
        .or_else(|| time(e.metadata.creation_timestamp.as_ref()));
    Some(EventRecord {
        uid: e.uid()?,
        kind,
        object_name: e.involved_object.name.clone().unwrap_or_default(),
        type_: e.type_.clone().unwrap_or_else(|| "Normal".into()),
        reason: e.reason.clone().unwrap_or_default(),
        message: e.message.clone().unwrap_or_default(),
        count: e.count.unwrap_or(1),
        last_seen,
        drill: e.annotations().contains_key(labels::DRILL),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dyn_pool(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn malformed_pool_names_the_path() {
        let obj = dyn_pool(serde_json::json!({
            "apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
            "metadata": {"name": "bad", "uid": "u1"},
            "spec": {"instanceType": "gd-8xa100-i128", "targetNodes": "three"}
        }));
        let rec = pool(&obj).unwrap();
        let err = rec.parsed.unwrap_err();
        assert!(err.starts_with("spec.targetNodes:"), "{err}");
        assert!(rec.fallback_for.is_empty());
    }

    #[test]
    fn the_fallback_annotation_names_spot_pools() {
        let obj = dyn_pool(serde_json::json!({
            "apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
            "metadata": {"name": "od", "uid": "u1",
                "annotations": {"spotboard.dev/fallback-for": "spot-a, spot-b"}},
            "spec": {"instanceType": "gd-8xa100-i128", "targetNodes": 1}
        }));
        assert_eq!(pool(&obj).unwrap().fallback_for, ["spot-a", "spot-b"]);
    }

    #[test]
    fn missing_status_is_an_empty_status_and_missing_spec_is_an_error() {
        let ok = pool(&dyn_pool(serde_json::json!({
            "apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
            "metadata": {"name": "p", "uid": "u2"},
            "spec": {"instanceType": "gd-8xa100-i128", "targetNodes": 1}
        })))
        .unwrap();
        let (_, status) = ok.parsed.unwrap();
        assert_eq!(status, NodePoolStatus::default());
        let no_spec = pool(&dyn_pool(serde_json::json!({
            "apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
            "metadata": {"name": "p", "uid": "u3"}
        })))
        .unwrap();
        assert_eq!(no_spec.parsed.unwrap_err(), "spec is missing");
    }

    #[test]
    fn a_karpenter_nodepool_is_read_as_karpenter_writes_it() {
        let obj = dyn_pool(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "spot-general", "uid": "k1"},
            "spec": {
                "template": {"spec": {"requirements": [
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge", "m6i.xlarge"]},
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a", "us-east-1b"]}
                ]}},
                "limits": {"cpu": "1000", "memory": "1000Gi"},
                "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "budgets": [
                    {"nodes": "20%", "schedule": "0 9 * * 1-5", "duration": "8h"}, {"nodes": "0"}
                ]}
            },
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}]}
        }));
        let r = karpenter_pool(&obj).unwrap();
        assert_eq!(r.capacity_types, ["spot"]);
        assert_eq!(r.instance_types, ["m5.xlarge", "m6i.xlarge"]);
        assert_eq!(r.zones, ["us-east-1a", "us-east-1b"]);
        assert_eq!(
            r.limits,
            [
                ("cpu".to_string(), "1000".to_string()),
                ("memory".to_string(), "1000Gi".to_string())
            ]
        );
        assert_eq!(r.consolidation.as_deref(), Some("WhenEmptyOrUnderutilized"));
        assert_eq!(r.budgets, ["nodes 20% (0 9 * * 1-5 for 8h)", "nodes 0"]);
        assert_eq!(r.conditions.len(), 1);
        assert!(r.malformed.is_none());
        // No capacity-type requirement: Karpenter launches on-demand. Bad conditions: named.
        let bare = karpenter_pool(&dyn_pool(serde_json::json!({
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "odd", "uid": "k2"},
            "status": {"conditions": "not a list"}
        })))
        .unwrap();
        assert_eq!(bare.capacity_types, ["on-demand"]);
        assert!(bare.malformed.unwrap().starts_with("status.conditions"));
    }

    #[test]
    fn node_labels_are_read() {
        let n: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "g1", "uid": "n1", "labels": {
                "compute.coreweave.com/node-pool": "p",
                "qos.coreweave.cloud/pending-preemption": "true",
                "node.coreweave.cloud/state": "production"
            }},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        }))
        .unwrap();
        let r = node(&n).unwrap();
        assert_eq!(r.pool.as_deref(), Some("p"));
        assert!(r.pending_preemption && r.cordoned);
        assert_eq!(r.ready, Some(true));
        assert_eq!(r.state.as_deref(), Some("production"));
        assert_eq!(r.gpus, None, "no capacity, no GPU count");
    }

    /// The device plugin's `nvidia.com/gpu` is read from the capacity; a 0 (the plugin still
    /// starting) or a fraction is no count.
    #[test]
    fn a_nodes_gpus_come_from_its_capacity() {
        let with = |gpus: &str| {
            let n: Node = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "g1", "uid": "n1"},
                "status": {"capacity": {"cpu": "24", "nvidia.com/gpu": gpus}}
            }))
            .unwrap();
            node(&n).unwrap().gpus
        };
        assert_eq!(with("2"), Some(2));
        assert_eq!(with("0"), None);
        assert_eq!(with("500m"), None);
    }

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

    #[test]
    fn only_events_about_nodepools_and_nodes_are_kept() {
        let about = |kind: &str| -> Event {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "e", "namespace": "default", "uid": "e1"},
                "involvedObject": {"kind": kind, "name": "x"},
                "type": "Warning",
                "reason": "Preemption pending",
                "message": "m",
                "count": 3,
                "lastTimestamp": "2026-11-23T10:00:00Z"
            }))
            .unwrap()
        };
        assert!(event(&about("Pod")).is_none());
        for kind in ["NodePool", "Node"] {
            let r = event(&about(kind)).unwrap_or_else(|| panic!("{kind} events are kept"));
            assert_eq!(
                (r.kind.as_str(), r.object_name.as_str(), r.type_.as_str()),
                (kind, "x", "Warning")
            );
            assert_eq!((r.reason.as_str(), r.count), ("Preemption pending", 3));
            assert_eq!(
                r.last_seen.map(|t| t.to_rfc3339()).as_deref(),
                Some("2026-11-23T10:00:00+00:00")
            );
        }
    }
}
