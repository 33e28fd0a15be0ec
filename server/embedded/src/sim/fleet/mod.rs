//! GKE- and Karpenter-style zones of the embedded cluster, so all three providers' spot
//! preemptions play live beside CKS.
//!
//! A fleet zone has no NodePool controller: its pools ([`objects::pools`]) exist as nodes
//! labelled the provider's way, with a few workloads on them. Spot nodes are preempted at
//! random (mean [`super::preemption::MEAN_TIME_TO_PREEMPTION`] per node) or at once when
//! annotated `sim.spotboard.dev/preempt=now`, along the provider's own timeline:
//!
//! - **GKE** (GKE: Spot VMs): T=0 the node gets the taint
//!   `cloud.google.com/impending-node-termination`; at T+15 s the kubelet has shut ordinary
//!   pods down (phase Failed, reason `Terminated`, condition `DisruptionTarget`), at T+30 s
//!   the `system-*` priority pods too, and the VM is gone. Failed pods stay, as on GKE.
//!   Nothing is evicted, so no PodDisruptionBudget is asked ("Reclamation of Spot VMs is
//!   involuntary and is not covered by the guarantees of PodDisruptionBudgets"). The
//!   managed instance group recreates the VM 60 s later.
//! - **Karpenter** (AWS: Spot Instance interruption notices; Karpenter: Disruption): T=0 the
//!   interruption warning: Warning `SpotInterrupted` on the Node, cordon and the
//!   `karpenter.sh/disrupted` taint, every pod evicted through the Eviction API with its own
//!   grace period (evictions a PodDisruptionBudget refuses are asked again every 5 s, with a
//!   Warning `FailedDraining` on the Node); a replacement node is launched at once and joins
//!   45 s later. At T+2 min the instance is reclaimed: the Node is deleted and whatever still
//!   ran dies with it (the pod garbage collector deletes those pods after its quarantine).
//!
//! A GKE node annotated `sim.spotboard.dev/kubelet=stopped` loses its kubelet and goes
//! through GKE auto-repair ([`repair`]): `Ready=Unknown`, drained after about ten minutes,
//! re-created under the same name.
//!
//! A Karpenter pool marked `short_in_first_az` ([`objects::PoolPlan`]) meets this zone's own
//! EC2, which has no spot capacity for its types in the first AZ: every launch of it (seeding
//! and each replacement) is refused there first, recorded as Karpenter's Warning
//! `InsufficientCapacityError` on a NodeClaim `<pool>-<suffix>`, and lands in another AZ.
//!
//! Timings are simulated time (see the zone's `--speed`).

pub mod machines;
pub mod objects;
pub mod repair;
mod timeline;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use rand::Rng;
use rand::rngs::SmallRng;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::clock::{Clock, rfc3339};
use super::events::Recorder;
use super::nodes::PREEMPT_ANNOTATION;
use super::random::{hash, rng};
use crate::{Error, Result};

pub use objects::Flavor;

/// A running fleet zone. Dropping it stops its tasks.
pub struct FleetHandle {
    tasks: Arc<Mutex<JoinSet<()>>>,
}

impl Drop for FleetHandle {
    fn drop(&mut self) {
        self.tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .abort_all();
    }
}

struct Fleet {
    flavor: Flavor,
    zone: String,
    client: Client,
    /// Evictions, without kube-rs's retries of 429.
    evictions: Client,
    clock: Clock,
    events: Recorder,
    rng: Mutex<SmallRng>,
    seq: std::sync::atomic::AtomicU64,
    preempting: Mutex<HashSet<String>>,
    tasks: Arc<Mutex<JoinSet<()>>>,
}

impl Fleet {
    fn spawn(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut set = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        while set.try_join_next().is_some() {}
        set.spawn(fut);
    }

    /// A fresh node name in the provider's style.
    fn node_name(&self, pool: &str) -> String {
        let n = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let h = hash(&format!("{}/{pool}/{n}", self.zone));
        match self.flavor {
            Flavor::Gke => format!("gke-spotboard-{pool}-{:08x}-{:04x}", h >> 32, h & 0xffff),
            Flavor::Karpenter => format!(
                "ip-10-0-{}-{}.ec2.internal",
                (h >> 8) % 250 + 1,
                h % 250 + 1
            ),
        }
    }
}

/// Seeds fleet zone `zone` through `client` and starts its preemptions.
///
/// Errors: the API server refused a write while seeding.
pub async fn start(
    zone: &str,
    flavor: Flavor,
    clients: super::Clients,
    seed: u64,
    speed: f64,
) -> Result<FleetHandle> {
    let client = clients.main;
    let tasks = Arc::new(Mutex::new(JoinSet::new()));
    let fleet = Arc::new(Fleet {
        flavor,
        zone: zone.to_string(),
        client: client.clone(),
        evictions: clients.evictions,
        clock: Clock::new(speed),
        events: Recorder::new(client, zone),
        rng: Mutex::new(rng(seed, hash(zone) as usize, 9)),
        seq: Default::default(),
        preempting: Mutex::default(),
        tasks: tasks.clone(),
    });
    seed_zone(&fleet).await.map_err(|source| Error::Kube {
        zone: zone.to_string(),
        source,
    })?;
    let f = fleet.clone();
    fleet.spawn(async move { run(f).await });
    Ok(FleetHandle { tasks })
}

async fn create<K>(api: &Api<K>, obj: Value) -> kube::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(obj).map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

async fn seed_zone(f: &Fleet) -> kube::Result<()> {
    let mut by_pool: Vec<(&'static str, Vec<String>)> = Vec::new();
    for pool in objects::pools(f.flavor) {
        if f.flavor == Flavor::Karpenter {
            let zones: Vec<String> = (0..3)
                .map(|n| objects::node_zone(f.flavor, &f.zone, n))
                .collect();
            create_nodepool(f, objects::karpenter_nodepool(pool, &zones)).await?;
        }
        let mut names = Vec::new();
        for i in 0..pool.nodes {
            let t = pool.instance_types[i % pool.instance_types.len()];
            names.push(add_node(f, pool, t, true).await?);
        }
        by_pool.push((pool.name, names));
    }
    let namespaces: HashSet<&str> = objects::workloads(f.flavor)
        .iter()
        .map(|w| w.namespace)
        .collect();
    for ns in namespaces {
        let api: Api<Namespace> = Api::all(f.client.clone());
        create(
            &api,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await?;
    }
    for w in objects::workloads(f.flavor) {
        if let Some(b) = objects::pdb(w) {
            create(
                &Api::<PodDisruptionBudget>::namespaced(f.client.clone(), w.namespace),
                b,
            )
            .await?;
        }
        let nodes = &by_pool.iter().find(|(p, _)| *p == w.pool).expect("pool").1;
        for i in 0..w.replicas {
            let suffix = format!("{:05x}", hash(&format!("{}{i}", w.name)) & 0xfffff);
            run_pod(
                f,
                objects::pod(f.flavor, w, i, &suffix, &nodes[i % nodes.len()]),
            )
            .await?;
        }
    }
    Ok(())
}

/// Creates a Karpenter NodePool with its status (written through `/status`, as Karpenter's
/// controller would).
async fn create_nodepool(f: &Fleet, obj: Value) -> kube::Result<()> {
    let ar = kube::api::ApiResource {
        group: "karpenter.sh".into(),
        version: "v1".into(),
        api_version: "karpenter.sh/v1".into(),
        kind: "NodePool".into(),
        plural: "nodepools".into(),
    };
    let api: Api<kube::api::DynamicObject> = Api::all_with(f.client.clone(), &ar);
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let status = json!({"status": obj["status"].clone()});
    let dynamic: kube::api::DynamicObject =
        serde_json::from_value(obj).map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams::default(), &dynamic).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => return Ok(()),
        Err(e) => return Err(e),
    }
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

/// Registers a node of `pool`: Ready at once (`ready`), or not yet (a replacement whose
/// kubelet is starting; [`timeline`] turns it Ready).
async fn add_node(
    f: &Fleet,
    pool: &objects::PoolPlan,
    instance_type: &str,
    ready: bool,
) -> kube::Result<String> {
    let n = f.seq.load(std::sync::atomic::Ordering::Relaxed) as usize;
    let name = f.node_name(pool.name);
    let zone = if f.flavor == Flavor::Karpenter && pool.short_in_first_az {
        let first = objects::node_zone(f.flavor, &f.zone, 0);
        refuse_launch(f, pool.name, instance_type, &first, n).await;
        objects::node_zone(f.flavor, &f.zone, 1 + n % 2)
    } else {
        objects::node_zone(f.flavor, &f.zone, n)
    };
    let api: Api<Node> = Api::all(f.client.clone());
    create(
        &api,
        objects::node(f.flavor, &zone, pool, &name, instance_type, ready),
    )
    .await?;
    Ok(name)
}

/// Runs `work` on node `n` unless a preemption or disruption of it is under way: one way out
/// at a time per node. `what` names it in the log when it fails.
fn start_once<W, Fut>(f: &Arc<Fleet>, n: Node, what: &'static str, work: W)
where
    W: FnOnce(Arc<Fleet>, Node) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = kube::Result<()>> + Send,
{
    let name = n.name_any();
    if !f
        .preempting
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.clone())
    {
        return;
    }
    let f2 = f.clone();
    f.spawn(async move {
        if let Err(e) = work(f2.clone(), n).await {
            tracing::warn!(node = %name, "{what}: {e}");
        }
        f2.preempting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&name);
    });
}

/// Karpenter's launch of a NodeClaim of `pool` refused in `az`: the Warning
/// `InsufficientCapacityError` Karpenter records on the NodeClaim before deleting it
/// (kubernetes-sigs/karpenter, `pkg/controllers/nodeclaim/lifecycle`), with EC2's
/// `InsufficientInstanceCapacity` text inside Karpenter's fleet error (AWS: EC2 API error
/// codes). The NodeClaim itself is never served: Karpenter deletes it at once.
async fn refuse_launch(f: &Fleet, pool: &str, instance_type: &str, az: &str, n: usize) {
    let h = hash(&format!("{}/{pool}/nodeclaim/{n}", f.zone));
    let name = format!("{pool}-{}", objects::nodeclaim_suffix(h));
    let about = super::events::Involved {
        api_version: "karpenter.sh/v1".into(),
        kind: "NodeClaim".into(),
        name: name.clone(),
        uid: uuid::Uuid::new_v4().to_string(),
    };
    let message = format!(
        "NodeClaim {name} event: creating instance, insufficient capacity, with fleet error(s), \
         InsufficientInstanceCapacity: We currently do not have sufficient {instance_type} \
         capacity in the Availability Zone you requested ({az}). Our system will be working on \
         provisioning additional capacity."
    );
    f.events
        .record(
            &about,
            super::events::Severity::Warning,
            spotboard_core::labels::KARPENTER_INSUFFICIENT_CAPACITY,
            &message,
            super::events::Component::Karpenter,
        )
        .await;
}

/// Creates a bound pod and reports it Running, as its kubelet would.
async fn run_pod(f: &Fleet, pod: Value) -> kube::Result<()> {
    let ns = pod["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let api: Api<Pod> = Api::namespaced(f.client.clone(), &ns);
    create(&api, pod).await?;
    let now = rfc3339(Utc::now());
    let status = json!({"status": {
        "phase": "Running", "startTime": now,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
    }});
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

async fn run(f: Arc<Fleet>) {
    let tick = Duration::from_secs(1);
    let nodes: Api<Node> = Api::all(f.client.clone());
    loop {
        tokio::time::sleep(tick).await;
        let Ok(list) = nodes.list(&ListParams::default()).await else {
            continue;
        };
        let chance = super::preemption::chance_in(f.clock.sim(tick));
        for n in list.items {
            if f.flavor == Flavor::Karpenter
                && let Some(reason) = n
                    .annotations()
                    .get(objects::DISRUPT_ANNOTATION)
                    .and_then(|v| objects::Disruption::parse(v))
            {
                start_once(&f, n, "karpenter disruption", move |f, n| async move {
                    timeline::disrupt(&f, &n, reason).await
                });
                continue;
            }
            if f.flavor == Flavor::Gke && repair::wanted(&n) {
                start_once(&f, n, "gke auto-repair", |f, n| async move {
                    repair::kubelet_stops(&f, &n).await
                });
                continue;
            }
            let asked = n
                .annotations()
                .get(PREEMPT_ANNOTATION)
                .is_some_and(|v| v == "now");
            let random = objects::spot(f.flavor, n.labels())
                && f.rng
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .random_bool(chance);
            if !(asked || random) {
                continue;
            }
            start_once(&f, n, "fleet preemption", |f, n| async move {
                match f.flavor {
                    Flavor::Gke => timeline::gke(&f, &n).await,
                    Flavor::Karpenter => timeline::karpenter(&f, &n).await,
                }
            });
        }
    }
}
