//! Writes a zone's [`Scenario`] through the API: user namespaces, NodePools, the nodes that
//! exist at start and their pods. Objects that exist already are left alone, so seeding
//! twice is harmless. Nodes are written concurrently (32 at a time, each with its pods at
//! once) so that 10k nodes and 50k pods seed in seconds.

use std::collections::BTreeMap;

use app::nodepool::NodePool;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
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

/// The pool, namespace and workload of the scenario's PodDisruptionBudget that blocks a
/// drain: `maxUnavailable: 1` over an inference server with four replicas per node, so a
/// preempted node's drain evicts one and is refused for the others until replacements are
/// Ready, which on a full pool is never within the window. A common shape of budget: users
/// see `CWNodeDrainingPDBViolation`, then the pods killed at removal.
pub const BLOCKING_BUDGET: (&str, &str, &str) =
    ("l40s-spot-inference", "inference", "vllm-mistral-7b");

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

/// Seeds `scenario`; `pods_per_node` is for the bulk (scale) pools.
pub async fn seed(ctx: &Ctx, scenario: &Scenario, pods_per_node: usize) -> kube::Result<()> {
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    for ns in USER_NAMESPACES {
        let obj = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.into()),
                labels: Some(BTreeMap::from([(
                    "ns.coreweave.cloud/org".to_string(),
                    scenario.org_id.clone(),
                )])),
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
            .create(
                &PostParams::default(),
                &NodePool::new(&p.name, p.spec.clone()),
            )
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

    let slots: Vec<(&PoolPlan, usize, &String)> = scenario
        .pools
        .iter()
        .flat_map(|p| p.nodes.iter().enumerate().map(move |(i, n)| (p, i, n)))
        .collect();
    futures::stream::iter(slots)
        .map(|(plan, index, node)| seed_node(ctx, scenario, plan, index, node, pods_per_node))
        .buffer_unordered(32)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}

async fn seed_node(
    ctx: &Ctx,
    scenario: &Scenario,
    plan: &PoolPlan,
    index: usize,
    name: &str,
    pods_per_node: usize,
) -> kube::Result<()> {
    // Seeded per node, so names do not depend on the order the concurrent writes run in.
    let mut rng = rng(ctx.seed, ctx.zone_index, mix(4, hash(name)));
    let slot = Slot {
        pool: &plan.name,
        spec: &plan.spec,
        node: name,
        index,
    };
    let pods = workloads::node_pods(ctx.seed, plan.workload, slot, pods_per_node, &mut rng);
    let active = pods
        .iter()
        .any(|p| p.owner.kind != "DaemonSet" && p.policy != Policy::Interruptible);
    let node = node_object(&NewNode {
        name,
        pool: &plan.name,
        spec: &plan.spec,
        zone: &ctx.zone,
        zone_index: ctx.zone_index,
        org_id: &scenario.org_id,
        active,
    });
    let (host_ip, cidr) = super::nodes::host_ip_and_cidr(&node);
    let prefix = cidr.trim_end_matches("0/24").to_string();
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    create(&nodes, &node).await?;
    if plan.workload != Workload::Bulk {
        // The history `kubectl describe node` shows for a node that joined its pool.
        let about = Involved {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: name.into(),
            uid: nodes.get(name).await?.metadata.uid.unwrap_or_default(),
        };
        ctx.events
            .record(
                &about,
                Severity::Normal,
                "CWNodeRegistered",
                &format!("Node {name} registered in NodePool {}.", plan.name),
                Component::NodePoolOperator,
            )
            .await;
    }
    futures::stream::iter(pods.iter().enumerate())
        .map(|(i, p)| {
            let api: Api<Pod> = Api::namespaced(ctx.client.clone(), p.namespace);
            let pod = pod_object(p, &host_ip, &format!("{prefix}{}", i + 2));
            async move { create(&api, &pod).await }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}
