//! Pod objects: how a planned pod looks on the API (owner references, CKS eviction labels,
//! requests, tolerations, preStop hooks, a Running status as the kubelet reports it), and the
//! replacement an owner makes for a pod that went away.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStatus, ExecAction, Lifecycle,
    LifecycleHandler, Pod, PodCondition, PodIP, PodSpec, PodStatus, ResourceRequirements,
    Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::ObjectMeta;
use rand::Rng;
use spotboard_core::labels;

use super::clock::wall_time;
use super::pods::Policy;
use super::random::{hash, mix};

/// The controller owning a pod.
#[derive(Clone, Debug)]
pub struct Owner {
    /// `ReplicaSet`, `StatefulSet`, `Job` or `DaemonSet`.
    pub kind: &'static str,
    pub name: String,
    pub uid: String,
}

/// Everything a pod of the scenario is made from.
#[derive(Clone, Debug)]
pub struct PodPlan {
    pub namespace: &'static str,
    pub name: String,
    pub owner: Owner,
    /// `app.kubernetes.io/name`.
    pub app: String,
    pub container: &'static str,
    pub image: &'static str,
    pub gpus: u32,
    /// CPU and memory requests as Kubernetes quantities (`"16"`, `"128Gi"`).
    pub cpu: String,
    pub memory: String,
    /// `terminationGracePeriodSeconds`.
    pub grace: i64,
    pub pre_stop: Option<Vec<String>>,
    pub policy: Policy,
    pub labels: Vec<(String, String)>,
    pub node: String,
    /// Pool of the node: the pod selects it with `compute.coreweave.com/node-pool`. Empty for
    /// DaemonSet pods, which are placed by name.
    pub pool: String,
    pub tolerations: Vec<Toleration>,
    pub priority_class: Option<&'static str>,
}

/// Kubernetes' alphabet for generated name suffixes (no vowels, no look-alikes).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A random suffix of `n` characters, as `generateName` and pod-template hashes use.
pub fn suffix(rng: &mut impl Rng, n: usize) -> String {
    (0..n)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A UUID-shaped identifier from a 128-bit value.
pub fn uid_from(v: u128) -> String {
    let h = format!("{v:032x}");
    format!(
        "{}-{}-4{}-8{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn q(s: &str) -> Quantity {
    Quantity(s.to_string())
}

/// The pod of `p`, bound to `p.node` and Running there.
pub fn pod_object(p: &PodPlan, host_ip: &str, pod_ip: &str) -> Pod {
    let mut l: BTreeMap<String, String> = p.labels.iter().cloned().collect();
    l.insert("app.kubernetes.io/name".into(), p.app.clone());
    match p.policy {
        Policy::Interruptible => {
            l.insert(labels::POD_INTERRUPTABLE.into(), "true".into());
        }
        Policy::Graceful => {
            l.insert(labels::POD_GRACEFUL_INTERRUPTIBLE.into(), "true".into());
        }
        Policy::NonInterruptible => {}
    }
    let mut requests = BTreeMap::from([
        ("cpu".to_string(), q(&p.cpu)),
        ("memory".to_string(), q(&p.memory)),
    ]);
    let mut limits = BTreeMap::new();
    if p.gpus > 0 {
        // Extended resources need limits equal to requests.
        requests.insert("nvidia.com/gpu".into(), q(&p.gpus.to_string()));
        limits.insert("nvidia.com/gpu".into(), q(&p.gpus.to_string()));
    }
    let container = Container {
        name: p.container.into(),
        image: Some(p.image.into()),
        image_pull_policy: Some("IfNotPresent".into()),
        resources: Some(ResourceRequirements {
            requests: Some(requests),
            limits: (!limits.is_empty()).then_some(limits),
            ..Default::default()
        }),
        lifecycle: p.pre_stop.as_ref().map(|cmd| Lifecycle {
            pre_stop: Some(LifecycleHandler {
                exec: Some(ExecAction {
                    command: Some(cmd.clone()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        termination_message_path: Some("/dev/termination-log".into()),
        termination_message_policy: Some("File".into()),
        ..Default::default()
    };
    let restart = if p.owner.kind == "Job" {
        "OnFailure"
    } else {
        "Always"
    };
    let node_selector = (!p.pool.is_empty())
        .then(|| BTreeMap::from([(labels::NODE_POOL.to_string(), p.pool.clone())]));
    Pod {
        metadata: ObjectMeta {
            name: Some(p.name.clone()),
            namespace: Some(p.namespace.into()),
            labels: Some(l),
            owner_references: Some(vec![OwnerReference {
                api_version: if p.owner.kind == "Job" {
                    "batch/v1"
                } else {
                    "apps/v1"
                }
                .into(),
                kind: p.owner.kind.into(),
                name: p.owner.name.clone(),
                uid: p.owner.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            node_name: Some(p.node.clone()),
            node_selector,
            tolerations: (!p.tolerations.is_empty()).then(|| p.tolerations.clone()),
            termination_grace_period_seconds: Some(p.grace),
            restart_policy: Some(restart.into()),
            scheduler_name: Some("default-scheduler".into()),
            service_account_name: Some("default".into()),
            dns_policy: Some("ClusterFirst".into()),
            priority_class_name: p.priority_class.map(Into::into),
            ..Default::default()
        }),
        status: Some(running_status(&[p.container], p.image, host_ip, pod_ip)),
    }
}

/// 64 hex digits (a sha256 or container ID) spread from one 64-bit value.
fn hex64(v: u64) -> String {
    (0..4).map(|i| format!("{:016x}", mix(v, i))).collect()
}

fn pod_condition(type_: &str) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: "True".into(),
        last_transition_time: Some(wall_time()),
        ..Default::default()
    }
}

/// The status the kubelet reports once the containers run.
pub fn running_status(containers: &[&str], image: &str, host_ip: &str, pod_ip: &str) -> PodStatus {
    let now = wall_time();
    PodStatus {
        phase: Some("Running".into()),
        conditions: Some(
            [
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            ]
            .into_iter()
            .map(pod_condition)
            .collect(),
        ),
        host_ip: Some(host_ip.into()),
        pod_ip: Some(pod_ip.into()),
        pod_ips: Some(vec![PodIP { ip: pod_ip.into() }]),
        start_time: Some(now.clone()),
        qos_class: Some("Burstable".into()),
        container_statuses: Some(
            containers
                .iter()
                .map(|c| ContainerStatus {
                    name: (*c).into(),
                    image: image.into(),
                    image_id: format!("{image}@sha256:{}", hex64(hash(image))),
                    container_id: Some(format!("containerd://{}", hex64(rand::random()))),
                    ready: true,
                    started: Some(true),
                    restart_count: 0,
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning {
                            started_at: Some(now.clone()),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }
}

/// The pod an owner makes for `old`: same template, a new name (`same_name` for a
/// StatefulSet), not bound unless it is a DaemonSet pod, Pending until scheduled.
pub fn replacement(old: &Pod, same_name: Option<String>) -> Pod {
    let owner = old.owner_references().first().cloned();
    let daemon = owner.as_ref().is_some_and(|o| o.kind == "DaemonSet");
    let base = owner
        .as_ref()
        .map_or_else(|| old.name_any(), |o| o.name.clone());
    let name = same_name.unwrap_or_else(|| format!("{base}-{}", suffix(&mut rand::rng(), 5)));
    let mut spec = old.spec.clone().unwrap_or_default();
    if !daemon {
        spec.node_name = None;
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: old.namespace(),
            labels: old.metadata.labels.clone(),
            annotations: old.metadata.annotations.clone(),
            owner_references: old.metadata.owner_references.clone(),
            ..Default::default()
        },
        spec: Some(spec),
        status: Some(PodStatus {
            phase: Some("Pending".into()),
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn suffixes_and_uids_have_kubernetes_shapes() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let s = suffix(&mut rng, 5);
        assert_eq!(s.len(), 5);
        assert!(s.bytes().all(|b| ALPHABET.contains(&b)));
        let uid = uid_from(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        assert_eq!(uid.len(), 36);
        assert_eq!(uid.matches('-').count(), 4);
    }

    #[test]
    fn replacement_keeps_template_and_owner_but_not_binding() {
        let p = PodPlan {
            namespace: "inference",
            name: "vllm-llama3-8b-7c9d8f6b4d-x2x9k".into(),
            owner: Owner {
                kind: "ReplicaSet",
                name: "vllm-llama3-8b-7c9d8f6b4d".into(),
                uid: uid_from(7),
            },
            app: "vllm-llama3-8b".into(),
            container: "vllm",
            image: "vllm/vllm-openai:v0.8.5",
            gpus: 2,
            cpu: "8".into(),
            memory: "64Gi".into(),
            grace: 120,
            pre_stop: Some(vec!["sleep".into(), "15".into()]),
            policy: Policy::Interruptible,
            labels: vec![],
            node: "g1a2b3c".into(),
            pool: "l40s-inference".into(),
            tolerations: vec![],
            priority_class: None,
        };
        let pod = pod_object(&p, "10.64.1.2", "10.128.1.7");
        assert_eq!(pod.labels()[labels::POD_INTERRUPTABLE], "true");
        assert_eq!(
            pod.status.as_ref().unwrap().phase.as_deref(),
            Some("Running")
        );
        let new = replacement(&pod, None);
        let name = new.name_any();
        assert!(name.starts_with("vllm-llama3-8b-7c9d8f6b4d-") && name != pod.name_any());
        let spec = new.spec.as_ref().unwrap();
        assert_eq!(spec.node_name, None);
        assert_eq!(spec.termination_grace_period_seconds, Some(120));
        assert_eq!(new.owner_references()[0].name, "vllm-llama3-8b-7c9d8f6b4d");
        assert_eq!(new.status.unwrap().phase.as_deref(), Some("Pending"));
        assert_eq!(replacement(&pod, Some("x-0".into())).name_any(), "x-0");
    }
}
