//! One cluster's trimmed records and the indexes the projections need.
//!
//! Every mutation returns the rows it may have changed ("dirty" keys); the hub recomputes
//! exactly those and publishes the ones that really differ.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use spotboard_core::Provider;
use spotboard_core::domain::preemption::readiness::PodFacts;
use spotboard_core::model::{RowKind, SCHEDULING_EVENTS_PER_POD, SchedulingEvent};
use spotboard_core::nodepool::ComputeClass;

use super::pod_nodes::PodNodes;
use super::pools_seen::PoolsSeen;
use crate::{
    projection::{self, NodeAggregate},
    watch::records::{
        EventRecord, KarpenterPoolRecord, NodeRecord, Observed, PendingRecord, PodRecord,
        PoolRecord,
    },
};

/// Events kept per cluster. Kubernetes itself keeps events for an hour; a dashboard that
/// keeps them all would grow without bound on a busy cluster.
pub const EVENTS_PER_CLUSTER: usize = 1000;

/// Scheduling events about pods kept per cluster (the oldest go first): a runaway Job's
/// 10,000 pending pods each get one from kube-scheduler, and only the newest matter.
pub const POD_EVENTS_PER_CLUSTER: usize = 2000;

/// Karpenter's launch failure events kept per cluster, apart from the others: a capacity
/// shortage records one per NodeClaim, and a burst of them must not push a node's "Preemption
/// pending" out (the ledger keeps every one it saw).
pub const CLAIM_EVENTS_PER_CLUSTER: usize = 1000;

// The events' part of a cluster's data: kept within bounds, and what they tell of nodes
// (Karpenter's interruptions) and pools (launch failures).
#[path = "cluster_events.rs"]
mod events;

/// A row that may have changed.
pub type Dirty = (RowKind, String);

/// The watched kinds, for readiness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchedKind {
    NodePool = 1,
    Node = 2,
    Pod = 4,
    Event = 8,
    /// Optional: only clusters that serve `karpenter.sh/v1` have it; not part of readiness.
    KarpenterNodePool = 16,
}

/// All kinds synced.
pub const ALL_KINDS: u8 = 1 | 2 | 4 | 8;

#[derive(Default)]
pub struct ClusterData {
    /// The cluster's name, part of the keys of its GKE and Karpenter pools.
    cluster: String,
    pub zone: Option<String>,
    pub synced: u8,
    pub last_good: Option<DateTime<Utc>>,
    /// When the last known state it shows until it is listed was current
    /// (`super::last_known`); `None` when none was restored.
    pub restored: Option<DateTime<Utc>>,
    pools: HashMap<String, PoolRecord>,
    pool_uid_by_name: HashMap<String, String>,
    // Boxed: the map keeps a third of its slots empty, and a record is 200 bytes.
    // Keys and values are the record's own uid and name, shared.
    nodes: HashMap<Arc<str>, Box<NodeRecord>>,
    node_uid_by_name: HashMap<Arc<str>, Arc<str>>,
    nodes_by_pool: HashMap<Arc<str>, BTreeSet<Arc<str>>>,
    pods: PodNodes,
    /// Terminating pods bound to a node: uid -> (node, end of the grace period). Few at a
    /// time (a drain's), so kept apart from `pods`.
    terminating: HashMap<String, (String, DateTime<Utc>)>,
    /// Pods waiting for a node: uid -> their shared facts and why they wait. Only waiting
    /// pods are here (a runaway Job's 10,000 are 10,000 entries of a few hundred bytes).
    waiting: HashMap<String, (Arc<PodFacts>, Arc<PendingRecord>)>,
    events: HashMap<String, EventRecord>,
    /// The scheduling events about pods (`SCHEDULING_EVENT_REASONS`), by uid: read only for
    /// waiting pods, never rows of their own; at most [`POD_EVENTS_PER_CLUSTER`].
    pod_events: HashMap<String, EventRecord>,
    // Node events put before their node's pool was known, by node name: a watch may deliver
    // an event before the node it is about (two watches, no order between them), and the
    // event's row is projected again once the node names its pool.
    events_awaiting_pool: HashMap<String, Vec<String>>,
    // Events about a node arrive after the node is gone (e.g. "Deleted for preemption"), so
    // the node's pool is remembered past its deletion to attribute them.
    node_pool_seen: PoolsSeen,
    // GKE node pools and Karpenter NodePools exist here through their nodes' labels: key ->
    // (provider, name), and name -> key.
    provider_pools: HashMap<String, (Provider, String)>,
    provider_pool_key: HashMap<String, String>,
    // Karpenter NodePool objects by uid, where the cluster serves karpenter.sh/v1.
    karpenter: HashMap<String, KarpenterPoolRecord>,
    // NodeClaim events (uids) put before a Karpenter pool matched their NodeClaim's name: the
    // event watch may list before the NodePool and node watches, and such an event's row is
    // projected again once its pool is known.
    claims_awaiting_pool: HashSet<String>,
    // Nodes Karpenter recorded `SpotInterrupted` on: its disruption taint means a preemption
    // only with this event (the same taint marks consolidation, drift and expiry).
    interrupted: HashSet<String>,
    // Nodes a preemption drill recorded `SpotInterrupted` on: the event counts only while the
    // node still carries the drill's annotation, so a later consolidation taint on an aborted
    // drill's node is not read as a preemption.
    drill_interrupted: HashSet<String>,
    /// Kueue's objects, where the cluster serves `kueue.x-k8s.io/v1beta1`.
    pub kueue: super::kueue::KueueStore,
    /// Namespaces' labels (showback's team label may be on the namespace).
    pub namespaces: super::namespaces::NamespaceStore,
}

impl ClusterData {
    /// Whether every watch of the cluster has listed once (all of [`ALL_KINDS`] in
    /// `synced`): what it holds is then the whole cluster.
    pub fn listed(&self) -> bool {
        self.synced & ALL_KINDS == ALL_KINDS
    }

    pub fn new(cluster: &str, zone: Option<String>) -> Self {
        Self {
            cluster: cluster.to_string(),
            zone,
            ..Default::default()
        }
    }

    fn dirty_pool_named(&self, name: &str, out: &mut Vec<Dirty>) {
        if let Some(uid) = self.pool_uid_by_name.get(name) {
            out.push((RowKind::Pool, uid.clone()));
        }
        if let Some(key) = self.provider_pool_key.get(name) {
            out.push((RowKind::Pool, key.clone()));
        }
    }

    /// Registers the GKE or Karpenter pool a node names, the first time it is seen.
    fn note_provider_pool(&mut self, rec: &NodeRecord, dirty: &mut Vec<Dirty>) {
        let (Some(pool), Provider::Gke | Provider::Karpenter) = (&rec.pool, rec.provider) else {
            return;
        };
        let new = !self.provider_pool_key.contains_key(&**pool);
        self.provider_key(rec.provider, pool);
        if new && rec.provider == Provider::Karpenter {
            self.place_claims(dirty);
        }
    }

    /// Projects again the NodeClaim events whose pool is now known.
    fn place_claims(&mut self, dirty: &mut Vec<Dirty>) {
        let waiting = std::mem::take(&mut self.claims_awaiting_pool);
        for uid in waiting {
            let Some(name) = self.events.get(&uid).map(|e| e.object_name.clone()) else {
                continue;
            };
            if self.nodeclaim_pool(&name).is_some() {
                dirty.push((RowKind::Event, uid));
            } else {
                self.claims_awaiting_pool.insert(uid);
            }
        }
    }

    /// The row key of GKE or Karpenter pool `pool`, registered on first use. Keys of CKS
    /// pools are uids; these are unique across clusters as well.
    fn provider_key(&mut self, provider: Provider, pool: &str) -> String {
        if let Some(k) = self.provider_pool_key.get(pool) {
            return k.clone();
        }
        let key = format!("{}:{}:{pool}", provider.as_str(), self.cluster);
        self.provider_pools
            .insert(key.clone(), (provider, pool.to_string()));
        self.provider_pool_key.insert(pool.to_string(), key.clone());
        key
    }

    pub fn karpenter_pools(&mut self, change: Observed<KarpenterPoolRecord>) -> Vec<Dirty> {
        self.observe(
            change,
            |s| s.karpenter.keys().cloned().collect(),
            |r| &r.uid,
            Self::put_karpenter,
            Self::drop_karpenter,
        )
    }

    fn put_karpenter(&mut self, rec: KarpenterPoolRecord, dirty: &mut Vec<Dirty>) {
        let key = self.provider_key(Provider::Karpenter, &rec.name);
        dirty.push((RowKind::Pool, key));
        self.karpenter.insert(rec.uid.clone(), rec);
        self.place_claims(dirty);
    }

    fn drop_karpenter(&mut self, uid: &str, dirty: &mut Vec<Dirty>) {
        if let Some(rec) = self.karpenter.remove(uid) {
            self.dirty_pool_named(&rec.name, dirty);
        }
    }

    fn dirty_node_named(&self, name: &str, out: &mut Vec<Dirty>) {
        if let Some(uid) = self.node_uid_by_name.get(name) {
            out.push((RowKind::Node, uid.to_string()));
        }
    }

    /// Applies one watch change through the kind's `put` and `drop`: a re-list drops what
    /// is gone, then puts everything listed.
    fn observe<R>(
        &mut self,
        change: Observed<R>,
        known: fn(&Self) -> Vec<String>,
        uid: fn(&R) -> &str,
        put: fn(&mut Self, R, &mut Vec<Dirty>),
        drop: fn(&mut Self, &str, &mut Vec<Dirty>),
    ) -> Vec<Dirty> {
        let mut dirty = Vec::new();
        match change {
            Observed::Apply(rec) => put(self, rec, &mut dirty),
            Observed::Delete(uid) => drop(self, &uid, &mut dirty),
            Observed::Resync(all) => {
                let keep: BTreeSet<String> = all.iter().map(|r| uid(r).to_string()).collect();
                for gone in known(self).into_iter().filter(|k| !keep.contains(k)) {
                    drop(self, &gone, &mut dirty);
                }
                for rec in all {
                    put(self, rec, &mut dirty);
                }
            }
        }
        dirty
    }

    pub fn pools(&mut self, change: Observed<PoolRecord>) -> Vec<Dirty> {
        self.observe(
            change,
            |s| s.pools.keys().cloned().collect(),
            |r| &r.uid,
            Self::put_pool,
            Self::drop_pool,
        )
    }

    fn put_pool(&mut self, rec: PoolRecord, dirty: &mut Vec<Dirty>) {
        self.pool_uid_by_name
            .insert(rec.name.clone(), rec.uid.clone());
        dirty.push((RowKind::Pool, rec.uid.clone()));
        let class = |r: &PoolRecord| r.parsed.as_ref().ok().map(|(s, _)| s.compute_class.clone());
        let old = self.pools.get(&rec.uid).map(class);
        if old != Some(class(&rec)) {
            // Its nodes take their capacity type from the pool's computeClass.
            let nodes: Vec<String> = self
                .nodes_of(&rec.name)
                .map(|n| n.uid.to_string())
                .collect();
            dirty.extend(nodes.into_iter().map(|u| (RowKind::Node, u)));
        }
        self.pools.insert(rec.uid.clone(), rec);
    }

    fn drop_pool(&mut self, uid: &str, dirty: &mut Vec<Dirty>) {
        if let Some(rec) = self.pools.remove(uid)
            && self
                .pool_uid_by_name
                .get(&rec.name)
                .is_some_and(|u| u == uid)
        {
            self.pool_uid_by_name.remove(&rec.name);
        }
        dirty.push((RowKind::Pool, uid.to_string()));
    }

    pub fn nodes(&mut self, change: Observed<NodeRecord>) -> Vec<Dirty> {
        self.observe(
            change,
            |s| s.nodes.keys().map(|k| k.to_string()).collect(),
            |r| &r.uid,
            Self::put_node,
            Self::drop_node,
        )
    }

    fn put_node(&mut self, rec: NodeRecord, dirty: &mut Vec<Dirty>) {
        dirty.push((RowKind::Node, rec.uid.to_string()));
        self.note_provider_pool(&rec, dirty);
        let old = self.nodes.get(&rec.uid);
        let aggregate_changed = old.is_none_or(|o| {
            o.pool != rec.pool
                || o.cordoned != rec.cordoned
                || o.pending_preemption != rec.pending_preemption
                || o.notice != rec.notice
                // A drain under way counts as the notice window (the row's `notice`).
                || o.evicted_at != rec.evicted_at
                || o.ready != rec.ready
                || o.zone != rec.zone
        });

        if let Some(old_pool) = old
            .and_then(|o| o.pool.clone())
            .filter(|p| Some(p) != rec.pool.as_ref())
        {
            if let Some(set) = self.nodes_by_pool.get_mut(&old_pool) {
                set.remove(&rec.uid);
            }
            self.dirty_pool_named(&old_pool, dirty);
        }
        if let Some(pool) = &rec.pool {
            self.nodes_by_pool
                .entry(pool.clone())
                .or_default()
                .insert(rec.uid.clone());
            self.node_pool_seen.present(rec.name.clone(), pool.clone());
            if let Some(uids) = self.events_awaiting_pool.remove(&*rec.name) {
                dirty.extend(
                    uids.into_iter()
                        .filter(|u| self.events.contains_key(u))
                        .map(|u| (RowKind::Event, u)),
                );
            }
            if aggregate_changed {
                self.dirty_pool_named(pool, dirty);
            }
        }
        self.node_uid_by_name
            .insert(rec.name.clone(), rec.uid.clone());
        self.nodes.insert(rec.uid.clone(), Box::new(rec));
    }

    fn drop_node(&mut self, uid: &str, dirty: &mut Vec<Dirty>) {
        dirty.push((RowKind::Node, uid.to_string()));
        let Some(rec) = self.nodes.remove(uid) else {
            return;
        };
        if self
            .node_uid_by_name
            .get(&rec.name)
            .is_some_and(|u| **u == *uid)
        {
            self.node_uid_by_name.remove(&rec.name);
            self.interrupted.remove(&*rec.name);
            self.drill_interrupted.remove(&*rec.name);
            self.node_pool_seen.gone(&rec.name, Utc::now());
        }
        if let Some(pool) = &rec.pool {
            if let Some(set) = self.nodes_by_pool.get_mut(pool) {
                set.remove(uid);
            }
            self.dirty_pool_named(pool, dirty);
        }
    }

    pub fn pods(&mut self, change: Observed<PodRecord>) -> Vec<Dirty> {
        self.observe(
            change,
            |s| s.pods.uids(),
            |r| &r.uid,
            Self::put_pod,
            Self::drop_pod,
        )
    }

    fn put_pod(&mut self, mut rec: PodRecord, dirty: &mut Vec<Dirty>) {
        match rec.pending.take() {
            Some(p) => {
                self.waiting
                    .insert(rec.uid.clone(), (rec.facts.clone(), Arc::from(p)));
            }
            None => {
                self.waiting.remove(&rec.uid);
            }
        }
        match (&rec.node, rec.grace_ends) {
            (Some(node), Some(end)) => {
                self.terminating
                    .insert(rec.uid.clone(), (node.clone(), end));
            }
            _ => {
                self.terminating.remove(&rec.uid);
            }
        }
        if let Some(r) = self.pods.bind(&rec.uid, rec.node.as_deref(), rec.facts) {
            for node in r.was.iter().chain(r.is.iter()) {
                self.dirty_node_named(node, dirty);
                if r.gpus_changed {
                    self.dirty_pool_of_node(node, dirty);
                }
            }
        }
    }

    /// Marks the pool of the node named `name` (its GPU allocation changed with a pod).
    fn dirty_pool_of_node(&self, name: &str, out: &mut Vec<Dirty>) {
        let pool = self
            .node_uid_by_name
            .get(name)
            .and_then(|uid| self.nodes.get(uid.as_ref()))
            .and_then(|n| n.pool.clone());
        if let Some(pool) = pool {
            self.dirty_pool_named(&pool, out);
        }
    }

    /// Each pod's shared facts and the node it is bound to (see [`PodNodes::bindings`]).
    pub fn pod_bindings(&self) -> Vec<super::pod_nodes::PodBinding> {
        self.pods.bindings()
    }

    /// Pods still there after their grace period ended, at `now`: `(node, uid)`.
    pub fn past_grace(&self, now: DateTime<Utc>) -> Vec<(String, String)> {
        self.terminating
            .iter()
            .filter(|(_, (_, end))| *end < now)
            .map(|(uid, (node, _))| (node.clone(), uid.clone()))
            .collect()
    }

    fn drop_pod(&mut self, uid: &str, dirty: &mut Vec<Dirty>) {
        self.terminating.remove(uid);
        self.waiting.remove(uid);
        if let Some((node, held_gpus)) = self.pods.unbind(uid) {
            self.dirty_node_named(&node, dirty);
            if held_gpus {
                self.dirty_pool_of_node(&node, dirty);
            }
        }
    }

    /// Whether the node is under its provider's preemption notice ([`projection::notice`],
    /// with this cluster's `SpotInterrupted` events).
    fn notice_of(&self, n: &NodeRecord) -> bool {
        projection::notice(n, self.interrupted_now(n))
    }

    /// Whether a `SpotInterrupted` event stands for the node now: Karpenter's own, or a
    /// drill's while the node carries the drill's annotation.
    fn interrupted_now(&self, n: &NodeRecord) -> bool {
        self.interrupted.contains(&*n.name)
            || (n.drill && self.drill_interrupted.contains(&*n.name))
    }

    /// Under a real preemption notice: a drill's notice is no preemption for the pools'
    /// counts, the header and `spotboard_nodes_under_notice`.
    fn preempting(&self, n: &NodeRecord) -> bool {
        !n.drill && self.notice_of(n)
    }

    /// `spec.computeClass` of the node's CKS NodePool, if it has one that could be read.
    fn pool_class_of(&self, n: &NodeRecord) -> Option<&ComputeClass> {
        n.pool
            .as_deref()
            .and_then(|p| self.pools.get(self.pool_uid_by_name.get(p)?))
            .and_then(|r| r.parsed.as_ref().ok())
            .map(|(spec, _)| &spec.compute_class)
    }

    /// The nodes labelled with pool `name`.
    fn nodes_of(&self, name: &str) -> impl Iterator<Item = &NodeRecord> {
        self.nodes_by_pool
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|u| self.nodes.get(u).map(|r| &**r))
    }

    /// The current pool row of `uid` (a NodePool's uid or a GKE/Karpenter pool's key), if the
    /// pool exists. A GKE or Karpenter pool exists while one of its nodes does.
    pub fn pool_row(&self, cluster: &str, uid: &str) -> Option<spotboard_core::model::PoolRow> {
        let Some(rec) = self.pools.get(uid) else {
            let (provider, name) = self.provider_pools.get(uid)?;
            let nodes: Vec<&NodeRecord> = self
                .nodes_of(name)
                .filter(|n| n.provider == *provider)
                .collect();
            let spec = self.karpenter.values().find(|k| &k.name == name);
            let mut row =
                projection::provider_pool_row(cluster, uid, name, *provider, &nodes, spec)?;
            row.nodes_preempting = nodes.iter().filter(|n| self.preempting(n)).count() as u32;
            (row.gpus_allocatable, row.gpus_requested) = self.gpu_allocation(nodes.iter().copied());
            return Some(row);
        };
        let mut agg = NodeAggregate::default();
        let mut zones: HashMap<&str, u32> = HashMap::new();
        for n in self.nodes_of(&rec.name) {
            let (on, asked) = self.node_gpus(n);
            agg.gpus_allocatable = agg.gpus_allocatable.saturating_add(on);
            agg.gpus_requested = agg.gpus_requested.saturating_add(asked);
            agg.cordoned += u32::from(n.cordoned);
            agg.preempting += u32::from(self.preempting(n));
            if let Some(z) = &n.zone {
                *zones.entry(z).or_default() += 1;
            }
        }
        agg.zone = zones
            .into_iter()
            .max_by_key(|(z, n)| (*n, std::cmp::Reverse(*z)))
            .map(|(z, _)| z.to_string());
        Some(projection::pool_row(
            cluster,
            self.zone.as_deref(),
            rec,
            &agg,
        ))
    }

    /// GPUs on node `n` (its count, [`projection::gpus`]) and GPUs its running pods request.
    fn node_gpus(&self, n: &NodeRecord) -> (u32, u32) {
        (
            projection::gpus(n).0.unwrap_or(0),
            self.pods.gpus_on_node(&n.name),
        )
    }

    /// [`Self::node_gpus`] summed over `nodes`.
    fn gpu_allocation<'n>(&self, nodes: impl Iterator<Item = &'n NodeRecord>) -> (u32, u32) {
        nodes
            .map(|n| self.node_gpus(n))
            .fold((0u32, 0u32), |(on, asked), (o, a)| {
                (on.saturating_add(o), asked.saturating_add(a))
            })
    }

    /// The current node row of `uid`, if the node exists.
    pub fn node_row(&self, cluster: &str, uid: &str) -> Option<spotboard_core::model::NodeRow> {
        Some(self.project_node(cluster, self.nodes.get(uid)?))
    }

    /// Node `rec`'s row as it is now.
    fn project_node(&self, cluster: &str, rec: &NodeRecord) -> spotboard_core::model::NodeRow {
        projection::node_row(
            cluster,
            rec,
            projection::NodeContext {
                pods: self.pods.on_node(&rec.name),
                gpus_requested: self.pods.gpus_on_node(&rec.name),
                pool_class: self.pool_class_of(rec),
                interrupted: self.interrupted_now(rec),
            },
        )
    }

    /// Each node's allocation in `pool` (every pool with `None`): its row's pool, type and
    /// GPUs, its allocatable CPU and memory, and what its running pods request. Idle figures
    /// and prices are left to [`spotboard_core::domain::allocation::settle`].
    pub fn allocations(
        &self,
        cluster: &str,
        pool: Option<&str>,
    ) -> Vec<spotboard_core::model::NodeAllocation> {
        use spotboard_core::domain::allocation::cores;
        self.nodes
            .values()
            .filter(|rec| pool.is_none() || rec.pool.as_deref() == pool)
            .map(|rec| {
                let row = self.project_node(cluster, rec);
                let asked = self.pods.requested_on_node(&rec.name);
                spotboard_core::model::NodeAllocation {
                    cluster: cluster.to_string(),
                    node: row.name,
                    pool: row.pool,
                    instance_type: row.instance_type,
                    zone: row.zone,
                    capacity_type: row.capacity_type,
                    gpus_allocatable: row.gpus.unwrap_or(0),
                    gpus_requested: asked.gpus,
                    cpu_allocatable: rec.cpu_allocatable_m.map(cores),
                    cpu_requested: cores(asked.cpu_m),
                    memory_allocatable: rec.memory_allocatable_b,
                    memory_requested: asked.memory_b,
                    ..Default::default()
                }
            })
            .collect()
    }

    /// The names of the nodes in `pool`, unordered.
    pub fn node_names(&self, pool: &str) -> Vec<String> {
        self.nodes
            .values()
            .filter(|rec| rec.pool.as_deref() == Some(pool))
            .map(|rec| rec.name.to_string())
            .collect()
    }

    /// Calls `f` with each active pod bound to a node this cluster holds, with the node as
    /// showback reads it (a pod bound to a node not seen yet is left for the next look).
    pub fn each_pod_stay(&self, mut f: impl FnMut(&super::pod_reads::PodStay<'_>)) {
        self.pods.each_bound_active(|uid, facts, node| {
            let Some(rec) = self
                .node_uid_by_name
                .get(node)
                .and_then(|u| self.nodes.get(u))
            else {
                return;
            };
            f(&super::pod_reads::PodStay {
                pod_uid: uid,
                namespace_labels: self.namespaces.labels_of(&facts.namespace),
                facts,
                node_uid: &rec.uid,
                node_gpus: projection::gpus(rec).0.unwrap_or(0),
                node_cpu_m: rec.cpu_allocatable_m,
                node_memory_b: rec.memory_allocatable_b,
            });
        });
    }

    /// The pods of this cluster waiting for a node: their shared facts and why they wait, as
    /// reference counts (the caller reads them after the hub's lock is released).
    pub fn waiting(
        &self,
    ) -> impl Iterator<Item = (Arc<PodFacts>, Arc<PendingRecord>, Vec<SchedulingEvent>)> + '_ {
        // The pods' scheduling events by pod, read once: a scan of at most
        // POD_EVENTS_PER_CLUSTER, not one per waiting pod.
        let mut by_pod: HashMap<(&str, &str), Vec<&EventRecord>> = HashMap::new();
        if !self.waiting.is_empty() {
            for e in self.pod_events.values() {
                by_pod
                    .entry((e.namespace.as_str(), e.object_name.as_str()))
                    .or_default()
                    .push(e);
            }
        }
        self.waiting.values().map(move |(f, p)| {
            let mut events: Vec<&EventRecord> = by_pod
                .get(&(p.namespace.as_str(), p.name.as_str()))
                .cloned()
                .unwrap_or_default();
            events.sort_by(|a, b| b.last_seen.cmp(&a.last_seen).then(a.uid.cmp(&b.uid)));
            let events = events
                .into_iter()
                .take(SCHEDULING_EVENTS_PER_POD)
                .map(|e| SchedulingEvent {
                    source: e.source.clone(),
                    reason: e.reason.clone(),
                    message: e.message.clone(),
                    count: e.count,
                    last_seen: e.last_seen,
                })
                .collect();
            (f.clone(), p.clone(), events)
        })
    }
}
