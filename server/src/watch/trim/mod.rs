//! Pure functions from Kubernetes objects to trimmed records: NodePools (CoreWeave's and
//! Karpenter's), Nodes and Events here, Pods in `pods`, Kueue's kinds in `kueue`, Namespaces
//! in `namespaces`.

pub mod kueue;
pub mod namespaces;
mod pods;

pub use namespaces::namespace;
pub use pods::{DEFAULT_GRACE_S, pending, pod, pod_facts};

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Event, Node};
use kube::{ResourceExt, api::DynamicObject};
use serde_json::Value;
use spotboard_core::domain::quantity;
use spotboard_core::{
    domain::preemption,
    labels,
    nodepool::{NodePoolSpec, NodePoolStatus},
};

use super::records::{EventRecord, KarpenterPoolRecord, NodeRecord, PoolRecord};

pub(super) fn time(
    t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> Option<DateTime<Utc>> {
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
            (Some(key), Some("In")) if rec.requirements.len() < 32 => rec
                .requirements
                .push((key.to_string(), values.into_iter().take(32).collect())),
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
    let ready_changed = ready_condition.and_then(|c| time(c.last_transition_time.as_ref()));
    Some(NodeRecord {
        uid: uid.into(),
        name: n.name_any().into(),
        pool: provider_pool.as_deref().map(super::names::shared),
        instance_type: shared(labels::INSTANCE_TYPE),
        zone: shared(labels::ZONE),
        state: shared(labels::NODE_STATE),
        ready,
        ready_changed,
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
        accelerator: match provider {
            spotboard_core::Provider::Gke => shared(labels::GKE_ACCELERATOR),
            spotboard_core::Provider::Karpenter => shared(labels::KARPENTER_GPU_NAME),
            _ => None,
        },
        cpu_allocatable_m: allocatable("cpu").and_then(quantity::millicores),
        memory_allocatable_b: allocatable("memory").and_then(quantity::bytes),
    })
}

/// Trims an Event; `None` for events about anything but NodePools and Nodes, a pod's
/// scheduling events, and Karpenter's launch failures on NodeClaims.
pub fn event(e: &Event) -> Option<EventRecord> {
    let kind = e.involved_object.kind.clone()?;
    let reason = e.reason.clone().unwrap_or_default();
    let scheduling =
        kind == "Pod" && spotboard_core::model::SCHEDULING_EVENT_REASONS.contains(&reason.as_str());
    // Karpenter records it as a Warning; anything else of the name is not its.
    let launch_failure = kind == "NodeClaim"
        && reason == spotboard_core::labels::KARPENTER_INSUFFICIENT_CAPACITY
        && e.type_.as_deref() == Some("Warning");
    if kind != "NodePool" && kind != "Node" && !scheduling && !launch_failure {
        return None;
    }
    // A pod event's message reaches every viewer of the pod's pool, and a launch failure's
    // every viewer of /capacity: bounded like the scheduler's condition message is.
    let message = e.message.as_deref().unwrap_or_default();
    let message = if scheduling {
        spotboard_core::domain::text::clip(
            message,
            spotboard_core::model::SCHEDULING_EVENT_MESSAGE_BYTES,
        )
    } else if launch_failure {
        spotboard_core::domain::text::clip(
            message,
            spotboard_core::domain::capacity::launch_failures::MAX_MESSAGE,
        )
    } else {
        message
    };
    // Control characters (a NUL above all) in a launch failure's message reach the ledger,
    // the page and its tooltip: each reads as a space.
    let message = if launch_failure {
        message
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    } else {
        message.to_string()
    };
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
        namespace: e.involved_object.namespace.clone().unwrap_or_default(),
        object_name: e.involved_object.name.clone().unwrap_or_default(),
        source: e
            .source
            .as_ref()
            .and_then(|s| s.component.clone())
            .or_else(|| e.reporting_component.clone())
            .unwrap_or_default(),
        type_: e.type_.clone().unwrap_or_else(|| "Normal".into()),
        reason,
        message,
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

    #[test]
    fn a_nodeclaims_launch_failure_is_kept_bounded_and_its_other_events_are_not() {
        let about = |reason: &str, message: &str| -> Event {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "e", "namespace": "default", "uid": "e1"},
                "involvedObject": {"kind": "NodeClaim", "apiVersion": "karpenter.sh/v1", "name": "gpu-spot-b2x7k"},
                "type": "Warning",
                "reason": reason,
                "message": message,
                "source": {"component": "karpenter"},
            }))
            .unwrap()
        };
        let ice = labels::KARPENTER_INSUFFICIENT_CAPACITY;
        let r = event(&about(ice, "NodeClaim gpu-spot-b2x7k event: x")).unwrap();
        assert_eq!(
            (r.kind.as_str(), r.object_name.as_str(), r.source.as_str()),
            ("NodeClaim", "gpu-spot-b2x7k", "karpenter")
        );
        // A hostile 1 MB message reaches every viewer of /capacity cut to its budget.
        let huge = "é".repeat(500_000);
        let r = event(&about(ice, &huge)).unwrap();
        assert!(r.message.len() <= spotboard_core::domain::capacity::launch_failures::MAX_MESSAGE);
        assert!(r.message.starts_with('é'));
        // Karpenter's other NodeClaim events are not kept.
        assert!(event(&about("Launched", "m")).is_none());
        // A NUL or a newline in the message reads as a space (PostgreSQL refuses a NUL).
        let r = event(&about(ice, "a\u{0}b\nc")).unwrap();
        assert_eq!(r.message, "a b c");
        // Not a Warning: not Karpenter's.
        let mut normal = about(ice, "m");
        normal.type_ = Some("Normal".into());
        assert!(event(&normal).is_none());
    }
}
