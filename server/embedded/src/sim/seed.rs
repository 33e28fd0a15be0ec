//! Writes a zone's [`Scenario`]: user namespaces, NodePools and the blocking budget through
//! the API; the nodes that exist at start and their pods straight into the zone's store
//! ([`Loader`]: 10k nodes and 50k pods in seconds, not as 60,000 HTTP creates). Objects that
//! exist already are left alone, so seeding twice is harmless.

use std::sync::Arc;

use spotboard_core::nodepool::NodePool;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Resource};
use serde_json::json;

use super::Ctx;
use super::events::{Component, Involved, Severity};
use super::nodes::{NewNode, node_object};
use super::pods::Policy;
use super::podspec::pod_object;
use super::random::{hash, mix, rng};
use super::scenario::{PoolPlan, Scenario, Workload};
use super::workloads::{self, Slot, USER_NAMESPACES};
use crate::api::{ApiError, Loader};

/// The pool, namespace and workload of the scenario's PodDisruptionBudget that blocks a
/// drain: `maxUnavailable: 1` over an inference server with four replicas per node, so a
/// preempted node's drain evicts one and is refused for the others until replacements are
/// Ready, which on a full pool is never within the window. A common shape of budget: users
/// see `CWNodeDrainingPDBViolation`, then the pods killed at removal.
pub const BLOCKING_BUDGET: (&str, &str, &str) =
    ("l40s-spot-inference", "inference", "vllm-mistral-7b");

/// The pool, namespace and Job of the scenario's training job that waits for spot capacity:
/// its pool is queued (no free B200 Spot), so its pod has no node to go to and the scheduler
/// reports it `Unschedulable`, as a user on a bad morning sees it.
pub const WAITING_JOB: (&str, &str, &str) =
    ("b200-spot-burst", "ml-training", "flux-video-pretrain");

/// The pool, namespace and Job of the scenario's evaluation job that no pool takes: it
/// selects the tainted inference pool without tolerating its `dedicated=inference:NoSchedule`
/// taint (the mistake the taint is there to catch), so the scheduler reports it
/// `Unschedulable` with an untolerated taint.
pub const TAINTED_JOB: (&str, &str, &str) = ("l40s-spot-inference", "inference", "llm-eval");

/// Creates `obj` unless an object of that name exists.
async fn create<K>(api: &Api<K>, obj: &K) -> kube::Result<()>
where
    K: Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Seeds `scenario`; `pods_per_node` is for the bulk (scale) pools. Namespaces, NodePools
/// and the budget go through the API; nodes and pods through `loader`.
///
/// Errors: a write the API server refuses (other than "already exists").
pub async fn seed(
    ctx: &Arc<Ctx>,
    loader: &Loader,
    scenario: &Scenario,
    pods_per_node: usize,
) -> kube::Result<()> {
    let started = std::time::Instant::now();
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    for ns in USER_NAMESPACES {
        let obj = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.into()),
                labels: Some(
                    [(
                        "ns.coreweave.cloud/org".to_string(),
                        scenario.org_id.clone(),
                    )]
                    .into_iter()
                    .chain(
                        workloads::NAMESPACE_TEAMS
                            .iter()
                            .filter(|(n, _)| *n == ns)
                            .map(|(_, team)| ("team".to_string(), team.to_string())),
                    )
                    .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        };
        create(&namespaces, &obj).await?;
    }
    // CoreWeave labels its control-plane namespaces `ns.coreweave.cloud/org=control-plane`
    // (CoreWeave: Workload scheduling on CKS, "CKS namespaces").
    let label = json!({"metadata": {"labels": {"ns.coreweave.cloud/org": "control-plane"}}});
    namespaces
        .patch(
            "kube-system",
            &PatchParams::default(),
            &Patch::Merge(&label),
        )
        .await?;

    let pools: Api<NodePool> = Api::all(ctx.client.clone());
    for p in &scenario.pools {
        match pools
            .create(&PostParams::default(), &{
                let mut np = NodePool::new(&p.name, p.spec.clone());
                if !p.annotations.is_empty() {
                    np.metadata.annotations = Some(p.annotations.clone());
                }
                np
            })
            .await
        {
            Ok(created) => {
                // Recorded here, before its nodes register, so the history reads in order.
                if ctx.announce(&created.metadata.uid.clone().unwrap_or_default()) {
                    let msg = super::status::created_message(&p.name, &p.spec);
                    let about = Involved::of(&created);
                    ctx.events
                        .record(
                            &about,
                            Severity::Normal,
                            "CWNodePoolCreated",
                            &msg,
                            Component::NodePoolOperator,
                        )
                        .await;
                }
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }

    if scenario.pools.iter().any(|p| p.name == BLOCKING_BUDGET.0) {
        let (_, namespace, app) = BLOCKING_BUDGET;
        let budget: PodDisruptionBudget = serde_json::from_value(json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": app, "namespace": namespace},
            "spec": {
                "maxUnavailable": 1,
                "selector": {"matchLabels": {"app.kubernetes.io/name": app}},
            },
        }))
        .expect("a PodDisruptionBudget");
        create(&Api::namespaced(ctx.client.clone(), namespace), &budget).await?;
    }

    let jobs = [
        (
            WAITING_JOB,
            "x7k2p",
            "nvcr.io/nvidia/pytorch:24.08-py3",
            ("96", "1600Gi", "8"),
        ),
        (
            TAINTED_JOB,
            "q4m9z",
            "vllm/vllm-openai:v0.6.3",
            ("8", "64Gi", "1"),
        ),
    ];
    for ((pool, namespace, job), suffix, image, (cpu, memory, gpus)) in jobs {
        if !scenario.pools.iter().any(|p| p.name == pool) {
            continue;
        }
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": format!("{job}-0-{suffix}"), "namespace": namespace,
                "labels": {"app.kubernetes.io/name": job, "batch.kubernetes.io/job-name": job},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                    "uid": format!("owner-{namespace}-{job}"), "controller": true}],
            },
            "spec": {
                "nodeSelector": {spotboard_core::labels::NODE_POOL: pool},
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": image,
                    "resources": {"requests": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpus},
                                  "limits": {"nvidia.com/gpu": gpus}}}],
            },
        }))
        .expect("a Pod");
        create(&Api::namespaced(ctx.client.clone(), namespace), &pod).await?;
    }

    tracing::debug!(zone = %ctx.zone, elapsed = ?started.elapsed(), "seeded namespaces and NodePools");
    let registered = load_nodes(ctx, loader, scenario, pods_per_node).await?;
    tracing::debug!(zone = %ctx.zone, elapsed = ?started.elapsed(), "seeded nodes and pods");
    // The history `kubectl describe node` shows for a node that joined its pool.
    futures::stream::iter(registered)
        .map(|(about, pool)| async move {
            let msg = format!("Node {} registered in NodePool {pool}.", about.name);
            ctx.events
                .record(
                    &about,
                    Severity::Normal,
                    "CWNodeRegistered",
                    &msg,
                    Component::NodePoolOperator,
                )
                .await;
        })
        .buffer_unordered(32)
        .collect::<()>()
        .await;
    let nodes: usize = scenario.pools.iter().map(|p| p.nodes.len()).sum();
    tracing::info!(zone = %ctx.zone, nodes, elapsed = ?started.elapsed(), "seeded");
    Ok(())
}

/// Writes every pool's starting nodes and their pods straight into the store (see
/// [`Loader`]), on a thread per core off the async runtime: generating and packing 60,000
/// objects is a few seconds of CPU. Returns the nodes of showcase pools that were new,
/// with their pool, for their `CWNodeRegistered` events.
async fn load_nodes(
    ctx: &Arc<Ctx>,
    loader: &Loader,
    scenario: &Scenario,
    pods_per_node: usize,
) -> kube::Result<Vec<(Involved, String)>> {
    let ctx = ctx.clone();
    let loader = loader.clone();
    let pools = scenario.pools.clone();
    let org_id = scenario.org_id.clone();
    let loaded = tokio::task::spawn_blocking(move || {
        let slots: Vec<(&PoolPlan, usize, &String)> = pools
            .iter()
            .flat_map(|p| p.nodes.iter().enumerate().map(move |(i, n)| (p, i, n)))
            .collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let chunk = slots.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let workers: Vec<_> = slots
                .chunks(chunk)
                .map(|part| {
                    let (ctx, loader, org_id) = (&ctx, &loader, &org_id);
                    scope.spawn(move || load_part(ctx, loader, org_id, part, pods_per_node))
                })
                .collect();
            let mut all = Vec::new();
            for w in workers {
                all.extend(w.join().expect("a seeding thread panicked")?);
            }
            Ok::<_, ApiError>(all)
        })
    })
    .await
    .expect("the seeding task panicked")?;
    Ok(loaded)
}

/// One thread's share of [`load_nodes`].
fn load_part(
    ctx: &Ctx,
    loader: &Loader,
    org_id: &str,
    part: &[(&PoolPlan, usize, &String)],
    pods_per_node: usize,
) -> Result<Vec<(Involved, String)>, ApiError> {
    let mut registered = Vec::new();
    for &(plan, index, name) in part {
        let slot = Slot {
            pool: &plan.name,
            spec: &plan.spec,
            node: name,
            index,
        };
        let new = load_node(ctx, loader, org_id, plan.workload, slot, pods_per_node)?;
        if let Some(about) = new.filter(|_| plan.workload != Workload::Bulk) {
            registered.push((about, plan.name.clone()));
        }
    }
    Ok(registered)
}

/// Writes one node and its pods; the node's reference if it was new, `None` if a node of
/// that name existed (its pods are still written where missing, as a second seeding does).
fn load_node(
    ctx: &Ctx,
    loader: &Loader,
    org_id: &str,
    workload: Workload,
    slot: Slot<'_>,
    pods_per_node: usize,
) -> Result<Option<Involved>, ApiError> {
    // Seeded per node, so names do not depend on the order the writes run in.
    let mut rng = rng(ctx.seed, ctx.zone_index, mix(4, hash(slot.node)));
    let name = slot.node;
    let pool = slot.pool;
    let spec = slot.spec;
    let pods = workloads::node_pods(ctx.seed, workload, slot, pods_per_node, &mut rng);
    let active = pods
        .iter()
        .any(|p| p.owner.kind != "DaemonSet" && p.policy != Policy::Interruptible);
    let node = node_object(&NewNode {
        name,
        pool,
        spec,
        zone: &ctx.zone,
        zone_index: ctx.zone_index,
        org_id,
        active,
    });
    let (host_ip, cidr) = super::nodes::host_ip_and_cidr(&node);
    let prefix = cidr.trim_end_matches("0/24");
    let about = loader.create(&node)?.map(|uid| Involved {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: name.into(),
        uid,
    });
    for (i, p) in pods.iter().enumerate() {
        loader.create(&pod_object(p, &host_ip, &format!("{prefix}{}", i + 2)))?;
    }
    Ok(about)
}
