//! Pure functions from Kubernetes objects to trimmed records.

use app::{
    domain::preemption,
    labels,
    nodepool::{NodePoolSpec, NodePoolStatus},
};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::{ResourceExt, api::DynamicObject};
use serde_json::Value;

use super::records::{EventRecord, NodeRecord, PodRecord, PoolRecord};

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
        parsed,
    })
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

/// Trims a Node.
pub fn node(n: &Node) -> Option<NodeRecord> {
    let uid = n.uid()?;
    let l = n.labels();
    let label = |k: &str| l.get(k).cloned();
    let (provider, provider_pool, capacity) = preemption::classify(l);
    let taints: Vec<String> = n
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|ts| ts.iter().map(|t| t.key.clone()).collect())
        .unwrap_or_default();
    let ready = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.status == "True");
    Some(NodeRecord {
        uid,
        name: n.name_any(),
        pool: provider_pool,
        instance_type: label(labels::INSTANCE_TYPE),
        zone: label(labels::ZONE),
        state: label(labels::NODE_STATE),
        ready,
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
    })
}

/// Trims a Pod to its binding. Pods being deleted still count on their node until gone,
/// as `kubectl describe node` counts them.
pub fn pod(p: &Pod) -> Option<PodRecord> {
    Some(PodRecord {
        uid: p.uid()?,
        node: p.spec.as_ref().and_then(|s| s.node_name.clone()),
    })
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
    }

    #[test]
    fn events_about_pods_are_dropped() {
        let e: Event = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "e", "namespace": "default", "uid": "e1"},
            "involvedObject": {"kind": "Pod", "name": "x"}
        }))
        .unwrap();
        assert!(event(&e).is_none());
    }
}
