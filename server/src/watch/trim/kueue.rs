//! Kueue's objects (`kueue.x-k8s.io/v1beta1`) trimmed to what the queue rows read
//! (`spotboard_core::domain::kueue`). Read untyped, field by field: a field of the wrong
//! shape reads as absent, so one odd object never hides the others. User text is bounded
//! here, before it reaches every viewer: at most [`MAX_ENTRIES`] labels, flavors or pod sets
//! per object, messages cut to [`MAX_MESSAGE`] bytes.

use std::collections::BTreeMap;

use kube::{ResourceExt, api::DynamicObject};
use rust_decimal::prelude::ToPrimitive;
use serde_json::Value;
use spotboard_core::domain::kueue::{
    ClusterQueue, LocalQueue, ResourceFlavor, Workload, WorkloadState,
};
use spotboard_core::domain::quantity;
use spotboard_core::labels;

use super::time;

/// The most labels, flavors, pod sets or containers read from one object (Kueue itself
/// allows 16 flavors per resource group and 8 pod sets per workload).
pub const MAX_ENTRIES: usize = 64;
/// The longest condition message kept, in bytes (Kueue's are one sentence).
pub const MAX_MESSAGE: usize = 1024;

fn str_at<'a>(v: &'a Value, path: &str) -> Option<&'a str> {
    v.pointer(path).and_then(Value::as_str)
}

fn array_at<'a>(v: &'a Value, path: &str) -> impl Iterator<Item = &'a Value> {
    v.pointer(path)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_ENTRIES)
}

/// `s` cut to at most [`MAX_MESSAGE`] bytes, on a character boundary.
fn bounded(s: &str) -> String {
    spotboard_core::domain::text::clip(s, MAX_MESSAGE).to_string()
}

/// A whole number of GPUs from a quantity (`8`, `"8"`); anything else, or more than a
/// million, is none.
fn gpus(v: Option<&Value>) -> Option<u32> {
    let text = match v? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let q = quantity::parse(&text)?;
    if !q.fract().is_zero() {
        return None;
    }
    q.to_u32().filter(|n| *n <= 1_000_000)
}

/// The condition of `type_` in `status.conditions`: `(status is "True", reason, message,
/// lastTransitionTime)`.
fn condition<'a>(
    obj: &'a DynamicObject,
    type_: &str,
) -> Option<(bool, &'a str, &'a str, Option<&'a str>)> {
    array_at(&obj.data, "/status/conditions")
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .map(|c| {
            (
                c.get("status").and_then(Value::as_str) == Some("True"),
                c.get("reason").and_then(Value::as_str).unwrap_or_default(),
                c.get("message").and_then(Value::as_str).unwrap_or_default(),
                c.get("lastTransitionTime").and_then(Value::as_str),
            )
        })
}

/// A ResourceFlavor: its `spec.nodeLabels`.
pub fn flavor(obj: &DynamicObject) -> Option<ResourceFlavor> {
    let node_labels: BTreeMap<String, String> = obj
        .data
        .pointer("/spec/nodeLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .take(MAX_ENTRIES)
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    Some(ResourceFlavor {
        uid: obj.uid()?,
        name: obj.name_any(),
        node_labels,
    })
}

/// A ClusterQueue: its cohort, its flavors over every resource group with their GPU
/// `nominalQuota`, and its `Active` condition.
pub fn cluster_queue(obj: &DynamicObject) -> Option<ClusterQueue> {
    let mut flavors: Vec<(String, Option<u32>)> = Vec::new();
    for group in array_at(&obj.data, "/spec/resourceGroups") {
        for f in array_at(group, "/flavors") {
            let Some(name) = str_at(f, "/name") else {
                continue;
            };
            let quota = array_at(f, "/resources")
                .find(|r| str_at(r, "/name") == Some(labels::GPU_RESOURCE))
                .and_then(|r| gpus(r.get("nominalQuota")));
            if flavors.len() < MAX_ENTRIES {
                flavors.push((name.to_string(), quota));
            }
        }
    }
    Some(ClusterQueue {
        uid: obj.uid()?,
        name: obj.name_any(),
        cohort: str_at(&obj.data, "/spec/cohort").map(String::from),
        flavors,
        active: condition(obj, "Active")
            .map(|(ok, reason, message, _)| (ok, bounded(&format!("{reason}: {message}")))),
    })
}

/// A LocalQueue: the ClusterQueue it points at.
pub fn local_queue(obj: &DynamicObject) -> Option<LocalQueue> {
    Some(LocalQueue {
        uid: obj.uid()?,
        namespace: obj.namespace()?,
        name: obj.name_any(),
        cluster_queue: str_at(&obj.data, "/spec/clusterQueue")?.to_string(),
    })
}

/// The GPUs one pod of a pod set's template asks for: each container's `nvidia.com/gpu`
/// request, else its limit (an extended resource's request defaults to its limit).
fn pod_gpus(template: &Value) -> u32 {
    array_at(template, "/spec/containers")
        .map(|c| {
            let res = |which: &str| {
                c.pointer(&format!("/resources/{which}"))
                    .and_then(|r| r.get(labels::GPU_RESOURCE))
            };
            gpus(res("requests").or_else(|| res("limits"))).unwrap_or(0)
        })
        .fold(0u32, u32::saturating_add)
}

/// A Workload: its LocalQueue, state, GPUs, how long it has waited and Kueue's message, and
/// once admitted its ClusterQueue and GPU flavor.
pub fn workload(obj: &DynamicObject) -> Option<Workload> {
    let d = &obj.data;
    let finished = condition(obj, "Finished").is_some_and(|c| c.0);
    let admitted = condition(obj, "Admitted").is_some_and(|c| c.0);
    let reserved = condition(obj, "QuotaReserved");
    let inactive = d.pointer("/spec/active").and_then(Value::as_bool) == Some(false);
    let state = match () {
        _ if finished || inactive => WorkloadState::Done,
        _ if admitted => WorkloadState::Admitted,
        _ if reserved.is_some_and(|c| c.0) => WorkloadState::Reserving,
        _ => WorkloadState::Pending,
    };
    let gpus = array_at(d, "/spec/podSets")
        .map(|ps| {
            let count = ps.get("count").and_then(Value::as_u64).unwrap_or(1);
            let count = u32::try_from(count).unwrap_or(u32::MAX);
            count.saturating_mul(ps.get("template").map_or(0, pod_gpus))
        })
        .fold(0u32, u32::saturating_add);
    let waiting_since = reserved
        .filter(|c| !c.0)
        .and_then(|c| c.3)
        .and_then(|t| t.parse().ok());
    let assignments: Vec<&Value> = array_at(d, "/status/admission/podSetAssignments").collect();
    let flavor = assignments
        .iter()
        .find_map(|a| {
            str_at(
                a,
                &format!("/flavors/{}", labels::GPU_RESOURCE.replace('/', "~1")),
            )
        })
        .or_else(|| {
            assignments.first().and_then(|a| {
                a.get("flavors")
                    .and_then(Value::as_object)
                    .and_then(|m| m.values().next())
                    .and_then(Value::as_str)
            })
        })
        .map(String::from);
    Some(Workload {
        uid: obj.uid()?,
        namespace: obj.namespace()?,
        name: obj.name_any(),
        queue: str_at(d, "/spec/queueName").unwrap_or_default().to_string(),
        state,
        gpus,
        since: waiting_since.or_else(|| time(obj.metadata.creation_timestamp.as_ref())),
        message: reserved.map(|c| bounded(c.2)).unwrap_or_default(),
        cluster_queue: str_at(d, "/status/admission/clusterQueue").map(String::from),
        flavor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_pending_workload_waits_from_its_quota_reserved_transition() {
        let w = workload(&obj(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "job-pretrain-3f2a1", "namespace": "ml-training", "uid": "u1",
                         "creationTimestamp": "2026-11-28T08:00:00Z"},
            "spec": {"queueName": "team-a", "podSets": [
                {"name": "main", "count": 4, "template": {"spec": {"containers": [
                    {"name": "t", "resources": {"requests": {"nvidia.com/gpu": "8", "cpu": "32"}}},
                    {"name": "sidecar", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}},
                {"name": "launcher", "count": 1, "template": {"spec": {"containers": [
                    {"name": "l", "resources": {"requests": {"cpu": "1"}}}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
                "message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100-spot, 8 more needed",
                "lastTransitionTime": "2026-11-28T09:12:00Z"}]}
        })))
        .unwrap();
        assert_eq!(w.state, WorkloadState::Pending);
        assert_eq!(w.gpus, 36);
        assert_eq!(w.queue, "team-a");
        assert_eq!(w.since.unwrap().to_rfc3339(), "2026-11-28T09:12:00+00:00");
        assert!(w.message.ends_with("8 more needed"));
        assert_eq!((w.cluster_queue, w.flavor), (None, None));
    }

    #[test]
    fn an_admitted_workload_names_its_gpu_flavor() {
        let w = workload(&obj(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ml", "uid": "u2"},
            "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 2,
                "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}]},
            "status": {
                "admission": {"clusterQueue": "training", "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "default", "nvidia.com/gpu": "h100-spot"}}]},
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue training"},
                    {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted"}]}
        })))
        .unwrap();
        assert_eq!(w.state, WorkloadState::Admitted);
        assert_eq!(w.gpus, 16);
        assert_eq!(w.cluster_queue.as_deref(), Some("training"));
        assert_eq!(w.flavor.as_deref(), Some("h100-spot"));
    }

    #[test]
    fn finished_and_deactivated_workloads_are_done_and_odd_fields_read_as_absent() {
        let finished = workload(&obj(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ml", "uid": "u3"},
            "spec": {"queueName": 7, "podSets": "not a list"},
            "status": {"conditions": [{"type": "Finished", "status": "True"}]}
        })))
        .unwrap();
        assert_eq!(
            (finished.state, finished.gpus, finished.queue.as_str()),
            (WorkloadState::Done, 0, "")
        );
        let inactive = workload(&obj(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ml", "uid": "u4"},
            "spec": {"queueName": "q", "active": false}
        })))
        .unwrap();
        assert_eq!(inactive.state, WorkloadState::Done);
    }

    #[test]
    fn a_cluster_queue_reads_its_flavors_quota_and_active_condition() {
        let cq = cluster_queue(&obj(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
            "metadata": {"name": "training", "uid": "u5"},
            "spec": {"cohort": "ml", "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "100"}]}]},
                {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                    {"name": "h100-spot", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 64}]},
                    {"name": "h100-od", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"}]},
                    {"name": "huge", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "1e9"}]}]}]},
            "status": {"conditions": [{"type": "Active", "status": "False", "reason": "FlavorNotFound",
                "message": "Can't admit new workloads; some flavors are not found"}]}
        })))
        .unwrap();
        assert_eq!(cq.cohort.as_deref(), Some("ml"));
        assert_eq!(
            cq.flavors,
            [
                ("default".to_string(), None),
                ("h100-spot".to_string(), Some(64)),
                ("h100-od".to_string(), Some(16)),
                ("huge".to_string(), None),
            ]
        );
        assert_eq!(
            cq.active,
            Some((
                false,
                "FlavorNotFound: Can't admit new workloads; some flavors are not found".into()
            ))
        );
    }

    #[test]
    fn messages_and_label_counts_are_bounded() {
        let long = "é".repeat(2000);
        let labels: serde_json::Map<String, Value> =
            (0..500).map(|i| (format!("k{i}"), json!("v"))).collect();
        let f = flavor(&obj(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
            "metadata": {"name": "f", "uid": "u6"}, "spec": {"nodeLabels": labels}
        })))
        .unwrap();
        assert_eq!(f.node_labels.len(), MAX_ENTRIES);
        let w = workload(&obj(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "w", "namespace": "ml", "uid": "u7"},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "message": long}]}
        })))
        .unwrap();
        assert!(w.message.len() <= MAX_MESSAGE && w.message.len() > MAX_MESSAGE - 4);
    }
}
