//! A Pod as spotboard reads it: only the fields the hub's pod records, the readiness audit
//! and the blast radius are made of.
//!
//! The pod watch holds every pod of every cluster and hears each change of one; the blast
//! radius lists a preempted node's pods and their siblings. A k8s-openapi `Pod` decodes all
//! of it (status conditions, container statuses, env, volumes, `managedFields`): profiled
//! at 10k nodes and 50k pods, those decoded pods were most of what the dashboard's heap
//! jumped by each time the audit listed them. Fields not declared here are skipped by the
//! decoder without being kept, so a field spotboard does not read cannot fail a list or a
//! watch either (a malformed port number no longer costs a pod its place).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use spotboard_core::domain::quantity;

/// The Pod fields [`super::trim::pod`] and [`super::trim::pod_facts`] read; the rest is
/// skipped while decoding.
#[derive(Clone, Debug, Deserialize, kube::Resource)]
#[resource(inherit = Pod)]
pub struct SlimPod {
    /// Name, namespace, uid, labels, owner references, `resourceVersion` (a watch resumes
    /// from it) and `deletionTimestamp` only.
    #[serde(deserialize_with = "slim_meta")]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: Option<SlimSpec>,
    #[serde(default)]
    pub status: Option<SlimStatus>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimSpec {
    pub node_name: Option<String>,
    /// Seconds; Kubernetes' default (30) when absent.
    pub termination_grace_period_seconds: Option<i64>,
    pub priority_class_name: Option<String>,
    #[serde(default)]
    pub containers: Vec<SlimContainer>,
    /// Read only while the pod waits for a node (see `trim::pod`).
    #[serde(default)]
    pub node_selector: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    pub scheduling_gates: Vec<SlimGate>,
    /// Read only while the pod waits for a node.
    #[serde(default)]
    pub tolerations: Vec<SlimToleration>,
    /// Its required node affinity only; read only while the pod waits for a node.
    #[serde(default)]
    pub affinity: Option<SlimAffinity>,
}

/// `spec.affinity`: of it, `nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`
/// (preferred terms and pod (anti-)affinity are skipped while decoding).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimAffinity {
    #[serde(default)]
    pub node_affinity: Option<SlimNodeAffinity>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimNodeAffinity {
    #[serde(default, rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    pub required: Option<SlimNodeSelector>,
}

/// A `NodeSelector`: its terms, ORed.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimNodeSelector {
    #[serde(default)]
    pub node_selector_terms: Vec<SlimNodeSelectorTerm>,
}

/// One term: its `matchExpressions` (`matchFields`, on node names, is skipped).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimNodeSelectorTerm {
    #[serde(default)]
    pub match_expressions: Vec<SlimNodeSelectorRequirement>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlimNodeSelectorRequirement {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

/// A toleration as sent.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlimToleration {
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub operator: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub effect: Option<String>,
}

/// A scheduling gate: its name only.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlimGate {
    #[serde(default)]
    pub name: String,
}

/// A pod condition, of which `PodScheduled` is read.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimPodCondition {
    #[serde(rename = "type", default)]
    pub type_: String,
    #[serde(default)]
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub last_transition_time: Option<Time>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlimContainer {
    pub lifecycle: Option<SlimLifecycle>,
    #[serde(default)]
    pub resources: Option<SlimResources>,
}

/// A container's `resources`: `nvidia.com/gpu`, `cpu` and `memory` are read.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlimResources {
    #[serde(default)]
    pub requests: Option<SlimResourceList>,
    #[serde(default)]
    pub limits: Option<SlimResourceList>,
}

/// The resources read of a resource list, as sent: a quantity is a JSON string, but a
/// hand-written number must not make the whole pod unreadable, so any value is taken and
/// read by [`SlimResourceList::gpus`] and the others.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlimResourceList {
    #[serde(rename = "nvidia.com/gpu", default)]
    pub gpus: Option<serde_json::Value>,
    #[serde(default)]
    pub cpu: Option<serde_json::Value>,
    #[serde(default)]
    pub memory: Option<serde_json::Value>,
}

/// A quantity's text: a JSON string as sent, a number as written.
fn quantity_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl SlimResourceList {
    /// The whole number of GPUs, if the value is one (GPUs are not divisible: `500m` is no
    /// count).
    pub fn gpu_count(&self) -> Option<u32> {
        match self.gpus.as_ref()? {
            serde_json::Value::String(s) => s.parse().ok(),
            serde_json::Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            _ => None,
        }
    }

    /// CPU in millicores, if the value is a quantity.
    pub fn millicores(&self) -> Option<u64> {
        quantity::millicores(&quantity_text(self.cpu.as_ref()?)?)
    }

    /// Memory in bytes, if the value is a quantity.
    pub fn memory_bytes(&self) -> Option<u64> {
        quantity::bytes(&quantity_text(self.memory.as_ref()?)?)
    }
}

impl SlimContainer {
    /// The container's request of one resource (`read` of its requests), else its limit
    /// (Kubernetes copies a limit into an absent request), else none.
    fn asked<T>(&self, read: impl Fn(&SlimResourceList) -> Option<T>) -> Option<T> {
        let r = self.resources.as_ref()?;
        r.requests
            .as_ref()
            .and_then(&read)
            .or_else(|| r.limits.as_ref().and_then(&read))
    }

    /// GPUs this container asks for.
    pub fn gpus(&self) -> u32 {
        self.asked(SlimResourceList::gpu_count).unwrap_or(0)
    }

    /// CPU this container asks for, millicores.
    pub fn cpu_m(&self) -> u64 {
        self.asked(SlimResourceList::millicores).unwrap_or(0)
    }

    /// Memory this container asks for, bytes.
    pub fn memory_b(&self) -> u64 {
        self.asked(SlimResourceList::memory_bytes).unwrap_or(0)
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimLifecycle {
    /// Only whether there is one.
    pub pre_stop: Option<IgnoredAny>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimStatus {
    pub phase: Option<String>,
    /// When the kubelet accepted the pod.
    pub start_time: Option<Time>,
    #[serde(default)]
    pub container_statuses: Vec<SlimContainerStatus>,
    #[serde(default)]
    pub conditions: Vec<SlimPodCondition>,
}

/// A container's status, of which only a running container's `startedAt` is read.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlimContainerStatus {
    #[serde(default)]
    pub state: Option<SlimContainerState>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct SlimContainerState {
    #[serde(default)]
    pub running: Option<SlimRunning>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimRunning {
    pub started_at: Option<Time>,
}

impl SlimPod {
    /// The pod's last start, while it is Running: its newest running container's
    /// `startedAt` (a restart starts the work again), else `status.startTime`. `None` for a
    /// pod not running.
    pub fn last_start(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        let status = self.status.as_ref()?;
        if status.phase.as_deref() != Some("Running") {
            return None;
        }
        let seconds =
            |t: &Time| chrono::DateTime::<chrono::Utc>::from_timestamp(t.0.as_second(), 0);
        status
            .container_statuses
            .iter()
            .filter_map(|c| c.state.as_ref()?.running.as_ref()?.started_at.as_ref())
            .filter_map(seconds)
            .max()
            .or_else(|| status.start_time.as_ref().and_then(seconds))
    }
}

/// `metadata` with only what the facts need: `managedFields` alone is often larger than the
/// rest of a pod.
fn slim_meta<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Wanted {
        name: Option<String>,
        namespace: Option<String>,
        uid: Option<String>,
        labels: Option<std::collections::BTreeMap<String, String>>,
        owner_references: Option<Vec<OwnerReference>>,
        resource_version: Option<String>,
        deletion_timestamp: Option<Time>,
    }
    let w = Wanted::deserialize(d)?;
    Ok(ObjectMeta {
        name: w.name,
        namespace: w.namespace,
        uid: w.uid,
        labels: w.labels,
        owner_references: w.owner_references,
        resource_version: w.resource_version,
        deletion_timestamp: w.deletion_timestamp,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A pod as a real API server returns it, with the parts the audit does not read.
    fn full_pod() -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "api-7d9c-x2x4z", "namespace": "web", "uid": "1d0c6c9e-53e3-4d0e-9f55-0f2b8c1f3a11",
                "labels": {"app": "api", "pod-template-hash": "7d9c"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u0"},
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "api-7d9c", "uid": "u1", "controller": true},
                ],
                "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}],
            },
            "spec": {
                "nodeName": "g1a2b3",
                "terminationGracePeriodSeconds": 120,
                "priorityClassName": "system-node-critical",
                "containers": [
                    {"name": "side", "image": "busybox", "env": [{"name": "A", "value": "1"}],
                     "resources": {"requests": {"cpu": "100m"}}},
                    {"name": "main", "image": "api:1",
                     "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}},
                     "resources": {"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"},
                                   "limits": {"nvidia.com/gpu": "2"}}},
                ],
                "volumes": [{"name": "data", "emptyDir": {}}],
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0, "image": "api:1", "imageID": ""}],
            },
        })
    }

    /// The work since the last start: a restarted container's `startedAt` (the newest of
    /// the running ones) wins over the pod's `startTime`; a pod not Running has none.
    #[test]
    fn the_last_start_is_the_newest_running_container_else_the_pods_start() {
        let mut v = full_pod();
        v["status"]["startTime"] = json!("2026-11-20T06:00:00Z");
        let p: SlimPod = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            p.last_start().map(|t| t.to_rfc3339()),
            Some("2026-11-20T06:00:00+00:00".into()),
            "no container start: the pod's"
        );
        v["status"]["containerStatuses"] = json!([
            {"name": "side", "state": {"running": {"startedAt": "2026-11-20T06:00:05Z"}}},
            {"name": "main", "restartCount": 1,
             "state": {"running": {"startedAt": "2026-11-20T07:30:00Z"}},
             "lastState": {"terminated": {"exitCode": 137, "startedAt": "2026-11-20T06:00:05Z"}}},
            {"name": "init-like", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
        ]);
        let p: SlimPod = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(
            p.last_start().map(|t| t.to_rfc3339()),
            Some("2026-11-20T07:30:00+00:00".into())
        );
        v["status"]["phase"] = json!("Succeeded");
        let p: SlimPod = serde_json::from_value(v).unwrap();
        assert_eq!(p.last_start(), None);
    }

    #[test]
    fn the_facts_of_a_full_pod_come_through() {
        let p: SlimPod = serde_json::from_value(full_pod()).unwrap();
        assert!(
            p.metadata.managed_fields.is_none(),
            "managedFields are skipped"
        );
        let f = super::super::trim::pod_facts(&p);
        assert_eq!(
            (f.namespace.as_str(), f.name.as_str()),
            ("web", "api-7d9c-x2x4z")
        );
        assert_eq!(f.uid, "1d0c6c9e-53e3-4d0e-9f55-0f2b8c1f3a11");
        assert_eq!(
            f.workload(),
            "ReplicaSet/api-7d9c",
            "the controller, not the first owner"
        );
        assert_eq!(f.labels.get("app").map(String::as_str), Some("api"));
        assert_eq!(f.node.as_deref(), Some("g1a2b3"));
        assert_eq!(f.grace_s, 120);
        assert!(f.pre_stop, "any container's preStop counts");
        assert!(f.active && f.system);
        assert_eq!(f.gpus, 2, "the request, not request and limit");
        assert_eq!(f.cpu_m, 8_100, "100m + 8 cores");
        assert_eq!(f.memory_b, 64 << 30, "64Gi, the side container asks none");
    }

    /// CPU and memory as GPUs: the request, else the limit; a quantity written as a number
    /// reads; a malformed one is none and loses nothing else of the pod.
    #[test]
    fn cpu_and_memory_come_from_requests_else_limits() {
        let facts = |resources: serde_json::Value| {
            let p: SlimPod = serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "ml"},
                "spec": {"containers": [
                    {"name": "a", "resources": resources},
                    {"name": "b", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}},
                ]},
            }))
            .unwrap();
            let f = super::super::trim::pod_facts(&p);
            (f.cpu_m, f.memory_b)
        };
        let gi = 1u64 << 30;
        assert_eq!(
            facts(json!({"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "8"}})),
            (2_500, 5 * gi)
        );
        assert_eq!(
            facts(json!({"requests": {"cpu": 1.5, "memory": 1024}})),
            (2_000, gi + 1024)
        );
        assert_eq!(
            facts(json!({"requests": {"cpu": "lots", "memory": ["x"]}})),
            (500, gi)
        );
        assert_eq!(facts(json!({})), (500, gi));
    }

    /// A GPU limit alone is the request (Kubernetes copies it); a number where a quantity
    /// string belongs still reads; a fraction or a word is no GPU and loses nothing else.
    #[test]
    fn gpus_come_from_requests_else_limits() {
        let gpus = |resources: serde_json::Value| {
            let p: SlimPod = serde_json::from_value(json!({
                "metadata": {"name": "p", "namespace": "ml"},
                "spec": {"containers": [
                    {"name": "a", "resources": resources},
                    {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
                ]},
            }))
            .unwrap();
            super::super::trim::pod_facts(&p).gpus
        };
        assert_eq!(gpus(json!({"limits": {"nvidia.com/gpu": "4"}})), 5);
        assert_eq!(gpus(json!({"requests": {"nvidia.com/gpu": 2}})), 3);
        assert_eq!(gpus(json!({"requests": {"nvidia.com/gpu": "500m"}})), 1);
        assert_eq!(gpus(json!({"requests": {"nvidia.com/gpu": ["x"]}})), 1);
        assert_eq!(gpus(json!({})), 1);
    }

    #[test]
    fn a_bare_finished_pod_gets_the_defaults() {
        let p: SlimPod = serde_json::from_value(json!({
            "metadata": {"name": "once", "namespace": "batch"},
            "spec": {"containers": [{"name": "c", "lifecycle": {"preStop": null}}]},
            "status": {"phase": "Succeeded"},
        }))
        .unwrap();
        let f = super::super::trim::pod_facts(&p);
        assert_eq!(f.workload(), "Pod/once");
        assert_eq!(f.grace_s, super::super::trim::DEFAULT_GRACE_S);
        assert!(!f.pre_stop, "a null preStop is none");
        assert!(!f.active && !f.system && f.node.is_none());
        let no_spec: SlimPod = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
        assert!(super::super::trim::pod_facts(&no_spec).active);
    }

    #[test]
    fn a_malformed_field_the_audit_does_not_read_does_not_fail_the_list() {
        let mut pod = full_pod();
        pod["spec"]["containers"][0]["ports"] = json!([{"containerPort": "eighty"}]);
        pod["status"]["containerStatuses"][0]["restartCount"] = json!("many");
        let list = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": [pod]});
        assert!(
            serde_json::from_value::<kube::core::ObjectList<Pod>>(list.clone()).is_err(),
            "a whole Pod does not decode"
        );
        let slim: kube::core::ObjectList<SlimPod> = serde_json::from_value(list).unwrap();
        assert_eq!(slim.items.len(), 1);
        // A field it does read, malformed, still fails (and the audit names the cluster).
        let mut bad = full_pod();
        bad["spec"]["terminationGracePeriodSeconds"] = json!("long");
        assert!(serde_json::from_value::<SlimPod>(bad).is_err());
    }

    /// The pod watch resumes from an object's `resourceVersion`, and a terminating pod's
    /// `deletionTimestamp` is when its grace period ends: both survive the slim decode, and
    /// the record's facts are the workload's shared template.
    #[test]
    fn the_watch_keeps_what_it_resumes_from_and_the_end_of_the_grace_period() {
        let mut pod = full_pod();
        pod["metadata"]["resourceVersion"] = json!("4711");
        pod["metadata"]["deletionTimestamp"] = json!("2026-11-26T10:00:30Z");
        let p: SlimPod = serde_json::from_value(pod).unwrap();
        assert_eq!(p.metadata.resource_version.as_deref(), Some("4711"));
        let rec = super::super::trim::pod(&p).unwrap();
        assert_eq!(rec.uid, "1d0c6c9e-53e3-4d0e-9f55-0f2b8c1f3a11");
        assert_eq!(rec.node.as_deref(), Some("g1a2b3"));
        assert_eq!(
            rec.grace_ends.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-11-26T10:00:30+00:00")
        );
        assert_eq!(rec.facts.workload(), "ReplicaSet/api-7d9c");
        assert!(rec.facts.node.is_none() && rec.facts.uid.is_empty());
        assert_eq!(rec.facts.grace_s, 120);
    }
}
