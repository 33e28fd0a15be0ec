//! What runs on the scenario's nodes: per [`Workload`], the pods of one node, with realistic
//! owners (StatefulSet trainers, Deployment/ReplicaSet inference servers, CronJob batch Jobs,
//! the Cilium DaemonSet), namespaces, eviction labels (CoreWeave: Workload scheduling on CKS)
//! and grace periods (30 / 120 / 600 s; preStop hooks where a real workload would have one).

use k8s_openapi::api::core::v1::Toleration;
use rand::Rng;
use spotboard_core::catalog;
use spotboard_core::nodepool::{ComputeClass, NodePoolSpec};

use super::pods::Policy;
use super::podspec::{Owner, suffix, uid_from};
pub use super::podspec::{PodPlan, replacement};
use super::random::{hash, mix};
use super::scenario::Workload;

/// User namespaces of the scenario (labelled with the org ID; CoreWeave: Workload scheduling on
/// CKS, "CKS namespaces").
pub const USER_NAMESPACES: [&str; 3] = ["ml-training", "inference", "batch"];

/// One node of a pool, as the workload plan needs it.
#[derive(Clone, Copy, Debug)]
pub struct Slot<'a> {
    pub pool: &'a str,
    pub spec: &'a NodePoolSpec,
    pub node: &'a str,
    /// Position of the node in its pool (StatefulSet ordinal).
    pub index: usize,
}

fn owner(seed: u64, kind: &'static str, name: String) -> Owner {
    let h = mix(seed, hash(&name));
    Owner {
        kind,
        name,
        uid: uid_from(u128::from(h) << 64 | u128::from(mix(h, 9))),
    }
}

/// `<deployment>-<pod-template-hash>`: a stable ReplicaSet name per pool and seed.
fn replica_set(seed: u64, deployment: &str) -> Owner {
    let mut rng = super::random::rng(seed, 0, hash(deployment));
    owner(
        seed,
        "ReplicaSet",
        format!("{deployment}-{}", suffix(&mut rng, 10)),
    )
}

/// Tolerations for the pool's taints and CKS's GPU/CPU taints (CoreWeave: Workload scheduling
/// on CKS, "Taints and tolerations").
fn tolerations(spec: &NodePoolSpec, gpu_node: bool) -> Vec<Toleration> {
    let mut out: Vec<Toleration> = spec
        .node_taints
        .iter()
        .map(|t| Toleration {
            key: Some(t.key.clone()),
            operator: Some(if t.value.is_some() { "Equal" } else { "Exists" }.into()),
            value: t.value.clone(),
            effect: Some(t.effect.as_str().into()),
            ..Default::default()
        })
        .collect();
    let (key, value, effect) = if gpu_node {
        ("is_gpu", Some("true"), "PreferNoSchedule")
    } else {
        ("is_cpu_compute", None, "NoSchedule")
    };
    out.push(Toleration {
        key: Some(key.into()),
        operator: Some(if value.is_some() { "Equal" } else { "Exists" }.into()),
        value: value.map(Into::into),
        effect: Some(effect.into()),
        ..Default::default()
    });
    out
}

fn training_name(pool: &str) -> String {
    match pool {
        "example-nodepool" => "bert-large-finetune".into(),
        "h100-spot-train" => "llama3-70b-pretrain".into(),
        "h200-spot-train" => "mixtral-8x22b-sft".into(),
        "h100-reserved" => "llama3-405b-eval".into(),
        "b200-spot-burst" => "flux-video-pretrain".into(),
        "gb200-nvl72" => "nemotron-340b-pretrain".into(),
        p => format!("{p}-trainer"),
    }
}

fn inference_name(pool: &str) -> String {
    match pool {
        "l40s-inference" => "vllm-llama3-8b".into(),
        "l40s-spot-inference" => "vllm-mistral-7b".into(),
        "rtxpro-render" => "sdxl-render".into(),
        "a100-spot-eval" => "vllm-qwen2-72b".into(),
        p => format!("{p}-server"),
    }
}

fn batch_name(pool: &str) -> String {
    match pool {
        // A CronJob's Job: `<cronjob>-<scheduled minute since the epoch>`.
        "cpu-spot-batch" => "nightly-embeddings-29389140".into(),
        "turin-cpu" => "etl-parquet-compaction-29389200".into(),
        "a100-spot-eval" => "eval-harness-mmlu".into(),
        p => format!("{p}-batch"),
    }
}

/// The pods of one node of a pool running `workload`. `pods_per_node` applies to
/// [`Workload::Bulk`] only; `rng` draws name suffixes.
pub fn node_pods(
    seed: u64,
    workload: Workload,
    slot: Slot<'_>,
    pods_per_node: usize,
    rng: &mut impl Rng,
) -> Vec<PodPlan> {
    let t = catalog::instance_type(&slot.spec.instance_type);
    let gpus = t.map_or(0, |t| t.gpus);
    let ram = t.map_or(64, |t| t.ram_gb);
    let spot = slot.spec.compute_class == ComputeClass::Spot;
    let base = |namespace, name: String, owner: Owner, app: String| PodPlan {
        namespace,
        name,
        owner,
        app,
        container: "main",
        image: "python:3.12-slim",
        gpus: 0,
        cpu: "4".into(),
        memory: "16Gi".into(),
        grace: 30,
        pre_stop: None,
        policy: Policy::Interruptible,
        labels: Vec::new(),
        node: slot.node.to_string(),
        pool: slot.pool.to_string(),
        tolerations: tolerations(slot.spec, gpus > 0),
        priority_class: None,
    };
    let inference = |rng: &mut dyn FnMut() -> String, n: u32| -> Vec<PodPlan> {
        let app = inference_name(slot.pool);
        let rs = replica_set(seed, &app);
        let hash = rs.name.rsplit('-').next().unwrap_or_default().to_string();
        (0..n)
            .map(|_| PodPlan {
                container: "vllm",
                image: "vllm/vllm-openai:v0.8.5",
                gpus: 2.min(gpus),
                cpu: "8".into(),
                memory: "64Gi".into(),
                grace: 120,
                pre_stop: Some(vec!["sleep".into(), "15".into()]),
                labels: vec![("pod-template-hash".into(), hash.clone())],
                ..base(
                    "inference",
                    format!("{}-{}", rs.name, rng()),
                    rs.clone(),
                    app.clone(),
                )
            })
            .collect()
    };
    let batch = |rng: &mut dyn FnMut() -> String, n: u32, gpus_each: u32| -> Vec<PodPlan> {
        let job = batch_name(slot.pool);
        let owner = owner(seed, "Job", job.clone());
        (0..n)
            .map(|_| PodPlan {
                gpus: gpus_each,
                cpu: if gpus_each > 0 { "16" } else { "32" }.into(),
                memory: "128Gi".into(),
                labels: vec![
                    ("batch.kubernetes.io/job-name".into(), job.clone()),
                    (
                        "batch.kubernetes.io/controller-uid".into(),
                        owner.uid.clone(),
                    ),
                ],
                ..base(
                    "batch",
                    format!("{job}-{}", rng()),
                    owner.clone(),
                    job.clone(),
                )
            })
            .collect()
    };
    let mut next = || suffix(rng, 5);
    let mut pods = match workload {
        Workload::ControlPlane => {
            let mut v = vec![PodPlan {
                container: "coredns",
                image: "registry.k8s.io/coredns/coredns:v1.12.0",
                cpu: "100m".into(),
                memory: "70Mi".into(),
                policy: Policy::NonInterruptible,
                priority_class: Some("system-cluster-critical"),
                ..{
                    let rs = replica_set(seed, "coredns");
                    base(
                        "kube-system",
                        format!("{}-{}", rs.name, next()),
                        rs,
                        "coredns".into(),
                    )
                }
            }];
            if slot.index == 0 {
                let rs = replica_set(seed, "metrics-server");
                v.push(PodPlan {
                    container: "metrics-server",
                    image: "registry.k8s.io/metrics-server/metrics-server:v0.7.2",
                    cpu: "100m".into(),
                    memory: "200Mi".into(),
                    policy: Policy::NonInterruptible,
                    priority_class: Some("system-cluster-critical"),
                    ..base(
                        "kube-system",
                        format!("{}-{}", rs.name, next()),
                        rs,
                        "metrics-server".into(),
                    )
                });
            }
            v
        }
        Workload::Training => {
            let sts = training_name(slot.pool);
            let owner = owner(seed, "StatefulSet", sts.clone());
            let name = format!("{sts}-{}", slot.index);
            vec![PodPlan {
                container: "trainer",
                image: "nvcr.io/nvidia/pytorch:25.01-py3",
                gpus,
                cpu: "96".into(),
                memory: format!("{}Gi", ram / 2),
                grace: 600,
                pre_stop: Some(vec![
                    "/bin/sh".into(),
                    "-c".into(),
                    "python -m trainer.checkpoint --save-now".into(),
                ]),
                // On Spot the trainer checkpoints on SIGTERM and may be stopped gracefully; on
                // reserved capacity it must not be interrupted (CoreWeave: Workload
                // scheduling on CKS, eviction policies).
                policy: if spot {
                    Policy::Graceful
                } else {
                    Policy::NonInterruptible
                },
                labels: vec![
                    ("statefulset.kubernetes.io/pod-name".into(), name.clone()),
                    (
                        "apps.kubernetes.io/pod-index".into(),
                        slot.index.to_string(),
                    ),
                ],
                ..base("ml-training", name, owner, sts)
            }]
        }
        Workload::Inference => inference(&mut next, (gpus / 2).max(1)),
        Workload::Batch => batch(&mut next, 4, 0),
        Workload::Mixed => {
            let mut v = inference(&mut next, 2);
            v.extend(batch(&mut next, 1, 4.min(gpus)));
            v
        }
        Workload::Bulk => {
            let n = pods_per_node as u32;
            let rs = replica_set(seed, &format!("{}-worker", slot.pool));
            (0..n)
                .map(|_| PodPlan {
                    gpus: gpus.checked_div(n).unwrap_or(0),
                    cpu: "2".into(),
                    memory: "8Gi".into(),
                    ..base(
                        "batch",
                        format!("{}-{}", rs.name, next()),
                        rs.clone(),
                        format!("{}-worker", slot.pool),
                    )
                })
                .collect()
        }
    };
    for p in &mut pods {
        if let Some(team) = team_of(p.namespace, gpus > 0) {
            p.labels.push(("team".into(), team.into()));
        }
    }
    if workload != Workload::Bulk {
        pods.push(cilium(seed, slot.node, &mut next));
    }
    pods
}

/// The `team` label of a user pod: the research group trains and evaluates on GPUs, the data
/// group runs CPU batch. Not a namespace per team, so showback by team and by namespace
/// differ (as they do in a shared cluster). Inference pods carry none: their namespace does
/// ([`NAMESPACE_TEAMS`]).
fn team_of(namespace: &str, gpu_node: bool) -> Option<&'static str> {
    match (namespace, gpu_node) {
        ("ml-training", _) | ("batch", true) => Some("research"),
        ("batch", false) => Some("data"),
        _ => None,
    }
}

/// The `team` label on a user namespace, for the pods that carry none of their own: the
/// serving group owns `inference`.
pub const NAMESPACE_TEAMS: [(&str, &str); 1] = [("inference", "serving")];

/// The DaemonSet pods every node of a scenario pool runs (Cilium, CKS's CNI), for a node that
/// just joined.
pub fn daemon_pods(seed: u64, node: &str, rng: &mut impl Rng) -> Vec<PodPlan> {
    vec![cilium(seed, node, &mut || suffix(rng, 5))]
}

fn cilium(seed: u64, node: &str, next: &mut impl FnMut() -> String) -> PodPlan {
    PodPlan {
        namespace: "kube-system",
        name: format!("cilium-{}", next()),
        owner: owner(seed, "DaemonSet", "cilium".into()),
        app: "cilium-agent".into(),
        container: "cilium-agent",
        image: "quay.io/cilium/cilium:v1.17.4",
        gpus: 0,
        cpu: "100m".into(),
        memory: "512Mi".into(),
        grace: 1,
        pre_stop: None,
        policy: Policy::NonInterruptible,
        labels: vec![("k8s-app".into(), "cilium".into())],
        node: node.to_string(),
        pool: String::new(),
        tolerations: vec![Toleration {
            operator: Some("Exists".into()),
            ..Default::default()
        }],
        priority_class: Some("system-node-critical"),
    }
}

#[cfg(test)]
#[path = "workloads_tests.rs"]
mod tests;
