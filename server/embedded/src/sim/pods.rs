//! Pods as the behaviour model sees them: a compact index fed by a Pod watch, and what happens
//! when pods change: the kubelet's termination at the end of the grace period, replacements
//! by the pods' owners (ReplicaSet, Job, StatefulSet, DaemonSet), and each node's `CWActive`
//! condition (a node whose pods block its removal is active; CoreWeave: Workload scheduling
//! on CKS).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{DeleteParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use spotboard_core::labels;
use tokio::sync::Notify;

use super::Ctx;
use super::clock::secs;
use super::nodes::{active_condition, condition_status, set_condition};
use super::workloads;

/// `(namespace, name)`.
pub type PodKey = (String, String);

/// The kind of a pod's first owner, as far as the model acts on it: who replaces a pod that
/// goes (Kubernetes: Workloads, each controller's page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Makes a new pod at once for a terminating or deleted one.
    ReplicaSet,
    /// As a ReplicaSet, until the Job completes.
    Job,
    /// Brings the same name back once the old pod is gone.
    StatefulSet,
    /// A pod per node: comes back only while its node stays; not drained.
    DaemonSet,
    /// Anything else: nobody replaces it here.
    Other,
}

impl Owner {
    fn of(kind: &str) -> Self {
        match kind {
            "ReplicaSet" => Self::ReplicaSet,
            "Job" => Self::Job,
            "StatefulSet" => Self::StatefulSet,
            "DaemonSet" => Self::DaemonSet,
            _ => Self::Other,
        }
    }
}

/// A pod's eviction strategy (CoreWeave: Workload scheduling on CKS, "Pod interruption and
/// eviction policies").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// No label: CKS treats the node as active and does not scale it down.
    NonInterruptible,
    /// `qos.coreweave.cloud/interruptable: "true"`.
    Interruptible,
    /// `qos.coreweave.com/graceful-interruptible: "true"`: blocks scale-down.
    Graceful,
}

/// One incarnation of a pod: a StatefulSet brings the same name back with a new uid, and a
/// late delete must not hit the newcomer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// Deletes the pod `p` (this incarnation only) with `grace` seconds, or its own grace period
/// when `None`. A pod already gone, or replaced by a namesake, is not an error.
pub async fn delete_pod(client: &kube::Client, p: &PodRef, grace: Option<u32>, who: &str) {
    let api: Api<Pod> = Api::namespaced(client.clone(), &p.namespace);
    let params = DeleteParams {
        grace_period_seconds: grace,
        preconditions: Some(kube::api::Preconditions {
            uid: Some(p.uid.clone()),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(&p.name, &params).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409) => {}
        Err(e) => tracing::warn!(pod = %p.name, "{who}: {e}"),
    }
}

/// What the model needs of one pod. At a million pods each byte here is a megabyte: the
/// node's name, the selector and the placement are shared copies (see [`PodIndex`]), the
/// owner an enum.
#[derive(Clone, Debug, PartialEq)]
pub struct PodInfo {
    pub uid: String,
    pub node: Option<Arc<str>>,
    pub gpus: u32,
    /// CPU request, millicores.
    pub cpu_m: u32,
    pub policy: Policy,
    /// Owned by a DaemonSet: not drained, not counted as workload.
    pub daemon: bool,
    pub deleting: bool,
    /// Succeeded or Failed: holds nothing.
    pub finished: bool,
    pub owner: Option<Owner>,
    /// As pairs, not a map: a B-tree allocates a whole node (over 500 bytes) for the one or
    /// two entries a selector has, for each of 50k pods.
    pub node_selector: Arc<[(String, String)]>,
    /// `spec.schedulingGates` is not empty: the scheduler leaves the pod alone until its
    /// gates are removed (Kubernetes: Pod Scheduling Readiness).
    pub gated: bool,
    /// Its tolerations and required node affinity, while it has any.
    pub placement: Option<Arc<super::placement::Placement>>,
}

impl PodInfo {
    pub fn from_pod(pod: &Pod) -> Self {
        let spec = pod.spec.as_ref();
        let (mut gpus, mut cpu_m) = (0, 0);
        for c in spec.map(|s| s.containers.as_slice()).unwrap_or_default() {
            if let Some(r) = c.resources.as_ref().and_then(|r| r.requests.as_ref()) {
                gpus += r
                    .get("nvidia.com/gpu")
                    .and_then(|q| q.0.parse::<u32>().ok())
                    .unwrap_or(0);
                cpu_m += r.get("cpu").map_or(0, |q| millicores(&q.0));
            }
        }
        let l = pod.labels();
        let policy = if l
            .get(labels::POD_GRACEFUL_INTERRUPTIBLE)
            .is_some_and(|v| v == "true")
        {
            Policy::Graceful
        } else if l
            .get(labels::POD_INTERRUPTABLE)
            .is_some_and(|v| v == "true")
        {
            Policy::Interruptible
        } else {
            Policy::NonInterruptible
        };
        let owner = pod.owner_references().first().map(|o| Owner::of(&o.kind));
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("");
        Self {
            uid: pod.uid().unwrap_or_default(),
            node: spec
                .and_then(|s| s.node_name.as_deref())
                .filter(|n| !n.is_empty())
                .map(Arc::from),
            gpus,
            cpu_m,
            policy,
            daemon: owner == Some(Owner::DaemonSet),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            finished: matches!(phase, "Succeeded" | "Failed"),
            owner,
            node_selector: spec
                .and_then(|s| s.node_selector.as_ref())
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
            gated: spec
                .and_then(|s| s.scheduling_gates.as_ref())
                .is_some_and(|g| !g.is_empty()),
            placement: spec.and_then(super::placement::Placement::from_spec),
        }
    }

    fn workload(&self) -> bool {
        !self.daemon && !self.finished
    }

    fn at(&self, (namespace, name): &PodKey) -> PodRef {
        PodRef {
            namespace: namespace.clone(),
            name: name.clone(),
            uid: self.uid.clone(),
        }
    }
}

/// A CPU quantity in millicores (`"16"`, `"500m"`, `"1.5"`).
pub fn millicores(q: &str) -> u32 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(0),
        None => q.parse::<f64>().map_or(0, |c| (c * 1000.0).round() as u32),
    }
}

/// One shared copy of each distinct value that many pods hold alike (a template's node
/// selector or placement), so that a million pods of a few templates hold a few copies.
#[derive(Debug)]
struct Shared<T: ?Sized> {
    copies: HashSet<Arc<T>>,
    /// How many copies the last sweep kept.
    swept: usize,
}

impl<T: ?Sized> Default for Shared<T> {
    fn default() -> Self {
        Self {
            copies: HashSet::new(),
            swept: 0,
        }
    }
}

impl<T: ?Sized + Hash + Eq> Shared<T> {
    /// The shared copy equal to `value` (`value` itself the first time).
    fn share(&mut self, value: Arc<T>) -> Arc<T> {
        if let Some(copy) = self.copies.get(&*value) {
            return copy.clone();
        }
        // Copies no pod holds any more are dropped when the set has doubled since the last
        // sweep: amortised constant time, and no count to keep right on every removal.
        if self.copies.len() >= 2 * self.swept.max(16) {
            self.copies.retain(|c| Arc::strong_count(c) > 1);
            self.swept = self.copies.len();
        }
        self.copies.insert(value.clone());
        value
    }
}

/// All pods of the zone, by key and by node.
///
/// Memory, at a million pods (`--nodes 100000 --pods-per-node 10`): each key is allocated
/// once and shared by the three maps; a node's name is one allocation shared by its pods and
/// its `by_node` entry; selectors and placements are [`Shared`]. Each was a copy a pod: the
/// index was about 1 KB a pod (heaptrack at 100,000 pods), the largest part of the embedded
/// cluster's memory.
#[derive(Debug, Default)]
pub struct PodIndex {
    pods: HashMap<Arc<PodKey>, PodInfo>,
    by_node: HashMap<Arc<str>, HashSet<Arc<PodKey>>>,
    pending: BTreeSet<Arc<PodKey>>,
    selectors: Shared<[(String, String)]>,
    placements: Shared<super::placement::Placement>,
}

impl PodIndex {
    /// Stores `info` under `key`; returns what was there.
    pub fn upsert(&mut self, key: PodKey, mut info: PodInfo) -> Option<PodInfo> {
        info.node_selector = self.selectors.share(info.node_selector);
        info.placement = info.placement.map(|p| self.placements.share(p));
        let prev = self.remove(&key);
        let key = Arc::new(key);
        if let Some(n) = info.node.take() {
            let entry = self.by_node.entry(n);
            info.node = Some(entry.key().clone());
            entry.or_default().insert(key.clone());
        } else if !info.deleting && !info.finished {
            self.pending.insert(key.clone());
        }
        self.pods.insert(key, info);
        prev
    }

    pub fn remove(&mut self, key: &PodKey) -> Option<PodInfo> {
        let prev = self.pods.remove(key)?;
        if let Some(n) = prev.node.as_deref()
            && let Some(set) = self.by_node.get_mut(n)
        {
            set.remove(key);
            if set.is_empty() {
                self.by_node.remove(n);
            }
        }
        self.pending.remove(key);
        Some(prev)
    }

    /// Records a binding made by the scheduler before the watch reports it.
    pub fn bind(&mut self, key: &PodKey, node: &str) {
        if let Some(mut info) = self.pods.get(key).cloned() {
            info.node = Some(Arc::from(node));
            self.upsert(key.clone(), info);
        }
    }

    /// Undoes [`bind`](Self::bind) after the binding failed, unless the pod changed since.
    pub fn unbind(&mut self, key: &PodKey, uid: &str, node: &str) {
        if let Some(mut info) = self.pods.get(key).cloned()
            && info.uid == uid
            && info.node.as_deref() == Some(node)
        {
            info.node = None;
            self.upsert(key.clone(), info);
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    fn on(&self, node: &str) -> impl Iterator<Item = (&PodKey, &PodInfo)> {
        self.by_node
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(|k| self.pods.get_key_value(k))
            .map(|(k, p)| (&**k, p))
    }

    /// Every pod bound to `node`, DaemonSet pods included.
    pub fn bound_to(&self, node: &str) -> Vec<PodRef> {
        self.on(node).map(|(k, p)| p.at(k)).collect()
    }

    /// Pods a drain deletes: not DaemonSet, not finished, not already terminating; with
    /// whether each is interruptible.
    pub fn evictable(&self, node: &str) -> Vec<(PodRef, bool)> {
        self.on(node)
            .filter(|(_, p)| p.workload() && !p.deleting)
            .map(|(k, p)| (p.at(k), p.policy == Policy::Interruptible))
            .collect()
    }

    /// Every workload pod still on `node`, terminating or not: what dies if the node goes now.
    pub fn evictable_or_terminating(&self, node: &str) -> Vec<PodRef> {
        self.on(node)
            .filter(|(_, p)| p.workload())
            .map(|(k, p)| p.at(k))
            .collect()
    }

    /// No workload pod is left on `node` (terminating ones count until they are gone).
    pub fn drained(&self, node: &str) -> bool {
        !self.on(node).any(|(_, p)| p.workload())
    }

    /// A scale-down may take `node`: no non-interruptible or gracefully interruptible pod
    /// runs there (CoreWeave: Workload scheduling on CKS). `CWActive` is the opposite: a node
    /// that is not idle is active.
    pub fn idle(&self, node: &str) -> bool {
        !self
            .on(node)
            .any(|(_, p)| p.workload() && !p.deleting && p.policy != Policy::Interruptible)
    }

    /// A gracefully interruptible pod runs on `node` (CKS never scales it down; CoreWeave:
    /// Workload scheduling on CKS).
    pub fn hosts_graceful(&self, node: &str) -> bool {
        self.on(node)
            .any(|(_, p)| p.workload() && !p.deleting && p.policy == Policy::Graceful)
    }

    /// GPUs and CPU millicores held on `node` by pods that are not finished.
    pub fn used(&self, node: &str) -> (u32, u32) {
        self.on(node)
            .filter(|(_, p)| !p.finished)
            .fold((0, 0), |(g, c), (_, p)| (g + p.gpus, c + p.cpu_m))
    }

    /// Unbound pods waiting for a node, oldest key first; gated pods are not the
    /// scheduler's yet.
    pub fn pending(&self) -> Vec<(PodKey, PodInfo)> {
        self.pending
            .iter()
            .filter_map(|k| self.pods.get(k).map(|p| (PodKey::clone(k), p.clone())))
            .filter(|(_, p)| !p.gated)
            .collect()
    }
}

fn key(pod: &Pod) -> PodKey {
    (pod.namespace().unwrap_or_default(), pod.name_any())
}

/// Watches all pods into the index; pulses `ready` once the first list is in.
pub async fn watch(ctx: Arc<Ctx>, ready: Arc<Notify>) {
    let api: Api<Pod> = Api::all(ctx.client.clone());
    let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
    let mut relist: Option<PodIndex> = None;
    let mut synced = false;
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Init) => relist = Some(PodIndex::default()),
            Ok(watcher::Event::InitApply(pod)) => {
                if let Some(index) = relist.as_mut() {
                    index.upsert(key(&pod), PodInfo::from_pod(&pod));
                }
            }
            Ok(watcher::Event::InitDone) => {
                if let Some(index) = relist.take() {
                    *ctx.pods() = index;
                }
                if !synced {
                    synced = true;
                    ready.notify_one();
                }
                ctx.wake_scheduler.notify_one();
            }
            Ok(watcher::Event::Apply(pod)) => applied(&ctx, &pod),
            Ok(watcher::Event::Delete(pod)) => deleted(&ctx, &pod),
            Err(e) => tracing::warn!(zone = %ctx.zone, "pod watch: {e}"),
        }
        ctx.pods_changed.notify_waiters();
    }
}

fn applied(ctx: &Arc<Ctx>, pod: &Pod) {
    let info = PodInfo::from_pod(pod);
    let prev = ctx.pods().upsert(key(pod), info.clone());
    let newly_deleting = info.deleting && !prev.is_some_and(|p| p.deleting);
    if newly_deleting {
        if info.node.is_some() {
            let grace = pod
                .metadata
                .deletion_grace_period_seconds
                .unwrap_or(30)
                .max(0) as u64;
            ctx.spawn(kubelet_terminate(ctx.clone(), info.at(&key(pod)), grace));
        }
        // A ReplicaSet or Job counts terminating pods as gone and makes a new one at once.
        if matches!(info.owner, Some(Owner::ReplicaSet | Owner::Job)) {
            ctx.spawn(replace(ctx.clone(), workloads::replacement(pod, None)));
        }
    }
    if info.node.is_none() && !info.deleting {
        ctx.wake_scheduler.notify_one();
    }
}

fn deleted(ctx: &Arc<Ctx>, pod: &Pod) {
    let prev = ctx.pods().remove(&key(pod));
    let was_terminating = prev.is_some_and(|p| p.deleting);
    let info = PodInfo::from_pod(pod);
    let replacement = match info.owner {
        Some(Owner::ReplicaSet | Owner::Job) if !was_terminating => {
            Some(workloads::replacement(pod, None))
        }
        // A StatefulSet brings the same name back once the old pod is gone.
        Some(Owner::StatefulSet) => Some(workloads::replacement(pod, Some(pod.name_any()))),
        // A DaemonSet pod comes back only while its node stays.
        Some(Owner::DaemonSet) => info
            .node
            .as_deref()
            .filter(|n| ctx.node(n).is_some() && ctx.removal(n).is_none())
            .map(|_| workloads::replacement(pod, None)),
        _ => None,
    };
    if let Some(p) = replacement {
        ctx.spawn(replace(ctx.clone(), p));
    }
    ctx.wake_scheduler.notify_one();
}

/// The kubelet: PreStop and SIGTERM are the pod's business; at the end of the grace period
/// SIGKILL ends it and the kubelet removes the pod for good.
async fn kubelet_terminate(ctx: Arc<Ctx>, pod: PodRef, grace_secs: u64) {
    ctx.clock.sleep(secs(grace_secs)).await;
    delete_pod(&ctx.client, &pod, Some(0), "kubelet").await;
}

async fn replace(ctx: Arc<Ctx>, pod: Pod) {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
    match api.create(&PostParams::default(), &pod).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => tracing::warn!(pod = %pod.name_any(), "replacement: {e}"),
    }
}

/// Keeps every node's `CWActive` condition in line with its pods, checking about once a
/// real second.
pub async fn node_activity(ctx: Arc<Ctx>) {
    let api: Api<Node> = Api::all(ctx.client.clone());
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let changes: Vec<(String, bool)> = {
            let index = ctx.pods();
            ctx.nodes
                .state()
                .iter()
                .filter_map(|node| {
                    let name = node.name_any();
                    let want = !index.idle(&name);
                    let have = condition_status(node, "CWActive")? == "True";
                    (have != want).then_some((name, want))
                })
                .collect()
        };
        futures::stream::iter(changes)
            .for_each_concurrent(16, |(name, active)| {
                let api = api.clone();
                async move {
                    if let Err(e) = set_condition(&api, &name, active_condition(active)).await {
                        tracing::debug!(node = %name, "CWActive: {e}");
                    }
                }
            })
            .await;
    }
}

#[cfg(test)]
#[path = "pods_tests.rs"]
mod tests;
