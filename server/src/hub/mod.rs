//! The hub: the current view of every watched cluster, its revision, and the delta stream.
//!
//! Watch tasks hand trimmed records to the hub; the hub recomputes the rows they touch (pure
//! projections), and for each row that really changed publishes one [`Delta`] with the next
//! revision: the whole row when new, a merge patch of the changed fields otherwise, or a
//! removal. Browsers get one snapshot and then these deltas. Each subscriber reads from a
//! bounded broadcast buffer; one that falls behind gets a fresh snapshot instead of an
//! ever-growing queue. A ring of recent deltas lets a reconnecting browser resume.
//!
//! Derived rows (preemption timelines and waves, rates, the capacity grid, the readiness
//! audit, alerts) come from producers that follow the facts and publish through one
//! interface, [`Hub::publish`]; none of them writes to the records.
//!
//! # Layout
//! - `cluster`: one cluster's records and indexes; `pod_nodes`: its pods (uid → node and
//!   shared workload facts); `pod_reads`: what those answer (the audit's pods, pods past grace).
//!   Rows are made from them by the pure projector (`crate::projection`), the one place a
//!   node's notice and capacity type are decided.
//! - `views`: the publisher: the published rows, diffing, the resume ring and scopes.
//! - `derived`: the kinds producers publish ([`DerivedRow`]) and where each is kept.
//! - `facts`: the same changes, typed, for the producers and the ledger.
//! - `kueue`: each cluster's Kueue objects, for the queue rows' producer.
//! - `last_known`: a cluster's rows as last known, kept and restored across a restart.

mod cluster;
mod derived;
mod facts;
pub mod kueue;
mod last_known;
mod namespaces;
mod pod_nodes;
mod pod_reads;
mod pools_seen;
mod views;

use std::sync::{Arc, RwLock};

use chrono::Utc;
use spotboard_core::domain::preemption::rates::RateRow;
use spotboard_core::model::{
    ClusterRow, Delta, EventRow, LinkState, NodeRow, PoolRow, Scope, Snapshot, WaitingPool,
};
use tokio::sync::broadcast;

use crate::watch::records::{
    EventRecord, KarpenterPoolRecord, NodeRecord, Observed, PodRecord, PoolRecord,
};

pub use cluster::{EVENTS_PER_CLUSTER, WatchedKind};
pub use derived::DerivedRow;
pub use facts::{FACTS_BUFFER, Fact, Following, LedgerInputs, facts_buffer, fell_behind};
pub use last_known::{KnownRows, RESTORED_MESSAGE, decode_known, encode_known};
pub use pod_nodes::PodUid;
pub use pod_reads::{PodStay, PodStays};
pub use views::{POOL_AGGREGATE_EVERY, Published};

use cluster::{ClusterData, Dirty};
use views::Views;

/// Deltas kept for resuming a stream after a reconnect.
pub const RESUME_RING: usize = 8192;
/// Deltas a subscriber may fall behind by before it is sent a fresh snapshot instead. As
/// many as the resume ring: the channel holds the same shared deltas, so the room costs a
/// slot each (about 300 KB in all), not a copy per tab. At 1,024 a tab whose main thread
/// was busy for a second in a preemption wave (the fleet's deltas: nodes, events, pools)
/// got a 4.5 MB `/preemptions` snapshot, which kept it busy longer still.
pub const SUBSCRIBER_BUFFER: usize = RESUME_RING;

/// A cheap handle to the hub; clone freely.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

struct Inner {
    state: RwLock<State>,
    tx: broadcast::Sender<Arc<Published>>,
    /// Typed changes for the server's followers ([`Hub::follow`]).
    facts: broadcast::Sender<Arc<Fact>>,
    /// This process's epoch (see `Snapshot::epoch`).
    epoch: u64,
    /// Subscriptions whose scope has preemption rows (see [`Hub::preemption_viewers`]).
    viewers: Arc<std::sync::atomic::AtomicUsize>,
}

struct State {
    clusters: std::collections::BTreeMap<String, ClusterData>,
    views: Views,
}

/// How a new subscriber starts.
pub enum Start {
    /// Everything in scope, current at its `rev`.
    Snapshot(Box<Snapshot>),
    /// The deltas in scope after the revision the subscriber already has.
    Replay(Vec<Arc<Published>>),
}

/// A subscriber: where to start, then the live deltas (filter them with [`Published::wanted_by`]).
pub struct Subscription {
    pub start: Start,
    pub rx: broadcast::Receiver<Arc<Published>>,
    /// Keep it as long as the stream is served: it counts the stream as a viewer of
    /// preemption rows.
    pub viewer: Option<Viewer>,
}

/// Counts a subscription in [`Hub::preemption_viewers`] while it lives.
pub struct Viewer(Arc<std::sync::atomic::AtomicUsize>);

impl Viewer {
    fn new(count: &Arc<std::sync::atomic::AtomicUsize>) -> Self {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self(count.clone())
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What the capacity grid is built from, as the hub holds it now.
pub struct CapacityInputs {
    /// `(cluster, zone)` of clusters whose zone is known.
    pub clusters: Vec<(String, String)>,
    pub pools: Vec<Arc<PoolRow>>,
    /// The ledger's preemption rates as last published.
    pub rates: Vec<RateRow>,
    /// Karpenter's `InsufficientCapacityError` events the clusters hold now.
    pub launch_failures: Vec<EventRow>,
}

/// Counts for `/metrics`, health and benchmarks.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct HubStats {
    pub rev: u64,
    pub subscribers: usize,
    pub pools: usize,
    pub nodes: usize,
    pub events: usize,
}

/// A pod waiting for a node, as [`Hub::waiting`] hands it over.
pub struct WaitingRecord {
    pub cluster: String,
    /// The facts its workload's replicas share.
    pub facts: Arc<spotboard_core::domain::preemption::readiness::PodFacts>,
    /// Why it waits.
    pub pending: Arc<crate::watch::records::PendingRecord>,
    /// Its scheduling events, newest first.
    pub events: Vec<spotboard_core::model::SchedulingEvent>,
}

impl Hub {
    /// A hub for the given clusters: `(name, zone)`.
    pub fn new(clusters: &[(String, Option<String>)]) -> Self {
        let (tx, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        let mut state = State {
            clusters: Default::default(),
            views: Views::new(RESUME_RING),
        };
        for (name, zone) in clusters {
            state
                .clusters
                .insert(name.clone(), ClusterData::new(name, zone.clone()));
            let row = ClusterRow {
                name: name.clone(),
                zone: zone.clone(),
                state: LinkState::Connecting,
                since: Some(Utc::now()),
                message: None,
                note: None,
                nodes_preempting: 0,
            };
            state.views.set_cluster(row, &tx);
        }
        Self {
            inner: Arc::new(Inner {
                state: RwLock::new(state),
                tx,
                facts: broadcast::channel(facts_buffer(clusters.len())).0,
                // Below 2^53 so that JavaScript reads it exactly; never 0, which a store
                // that has seen nothing yet holds.
                epoch: (rand::random::<u64>() >> 11).max(1),
                viewers: Arc::default(),
            }),
        }
    }

    fn write<R>(&self, f: impl FnOnce(&mut State, &broadcast::Sender<Arc<Published>>) -> R) -> R {
        // A panic while holding the lock would poison it; the state is still consistent row by
        // row, so keep serving rather than take the dashboard down.
        let mut guard = self.inner.state.write().unwrap_or_else(|e| e.into_inner());
        f(&mut guard, &self.inner.tx)
    }

    fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        let guard = self.inner.state.read().unwrap_or_else(|e| e.into_inner());
        f(&guard)
    }

    fn update(
        &self,
        cluster: &str,
        kind: WatchedKind,
        f: impl FnOnce(&mut ClusterData) -> Vec<Dirty>,
        resync: bool,
    ) {
        // Node and pod changes touch pools only through their node counts; those may wait.
        let aggregate_only = matches!(kind, WatchedKind::Node | WatchedKind::Pod);
        let facts = &self.inner.facts;
        self.write(|state, tx| {
            let Some(data) = state.clusters.get_mut(cluster) else {
                tracing::warn!(cluster, "update for an unknown cluster ignored");
                return;
            };
            let dirty = f(data);
            data.last_good = Some(Utc::now());
            let was_synced = data.listed();
            if resync {
                data.synced |= kind as u8;
            }
            let data = &state.clusters[cluster];
            // Facts are sent under the lock: a follower that starts meanwhile (`follow`
            // subscribes under it) sees each change once.
            state
                .views
                .refresh(cluster, data, dirty, aggregate_only, tx, facts);
            if !was_synced && data.listed() {
                // Restored rows the cluster no longer has go before anyone reads it as
                // listed.
                let leftovers = state.views.take_restored(cluster);
                state
                    .views
                    .refresh(cluster, data, leftovers, false, tx, facts);
                let _ = facts.send(Arc::new(Fact::Synced {
                    cluster: cluster.to_string(),
                }));
            }
        });
    }

    /// Applies a NodePool change seen in `cluster`.
    pub fn pools(&self, cluster: &str, change: Observed<PoolRecord>) {
        let resync = matches!(change, Observed::Resync(_));
        self.update(cluster, WatchedKind::NodePool, |d| d.pools(change), resync);
    }

    /// Applies a Node change seen in `cluster`.
    pub fn nodes(&self, cluster: &str, change: Observed<NodeRecord>) {
        let resync = matches!(change, Observed::Resync(_));
        self.update(cluster, WatchedKind::Node, |d| d.nodes(change), resync);
    }

    /// Applies a Pod change seen in `cluster`.
    pub fn pods(&self, cluster: &str, change: Observed<PodRecord>) {
        let resync = matches!(change, Observed::Resync(_));
        self.update(cluster, WatchedKind::Pod, |d| d.pods(change), resync);
    }

    /// Applies a Karpenter NodePool change seen in `cluster`.
    pub fn karpenter_pools(&self, cluster: &str, change: Observed<KarpenterPoolRecord>) {
        let resync = matches!(change, Observed::Resync(_));
        self.update(
            cluster,
            WatchedKind::KarpenterNodePool,
            |d| d.karpenter_pools(change),
            resync,
        );
    }

    /// Applies an Event change seen in `cluster`.
    pub fn events(&self, cluster: &str, change: Observed<EventRecord>) {
        let resync = matches!(change, Observed::Resync(_));
        self.update(cluster, WatchedKind::Event, |d| d.events(change), resync);
    }

    /// Records the health of a cluster's watches. `Stale` keeps `since` at the time of the
    /// last good data; other states start `since` now. Publishes only on a change.
    pub fn set_link(&self, cluster: &str, state: LinkState, message: Option<String>) {
        self.write(|s, tx| {
            let Some(data) = s.clusters.get(cluster) else {
                return;
            };
            let Some(mut row) = s.views.cluster(cluster).cloned() else {
                return;
            };
            if row.state == state && row.message == message {
                return;
            }
            if row.state != state {
                row.since = match state {
                    LinkState::Stale => data.last_good.or(row.since),
                    _ => Some(Utc::now()),
                };
            }
            row.state = state;
            row.message = message;
            s.views.set_cluster(row, tx);
        });
    }

    /// Sets or clears a cluster's lasting note (shown beside its link state).
    pub fn set_note(&self, cluster: &str, note: Option<String>) {
        self.write(|s, tx| {
            let Some(mut row) = s.views.cluster(cluster).cloned() else {
                return;
            };
            if row.note != note {
                row.note = note;
                s.views.set_cluster(row, tx);
            }
        });
    }

    /// Publishes a producer's rows of one kind: `rows` become the kind's whole set (a row
    /// left out is removed), and only what changed goes out, each change as one delta. The
    /// one way a derived row (a preemption timeline or wave, a rate, a capacity cell or
    /// source, a readiness audit, an alert) reaches the stream; it never touches the watched
    /// clusters' records.
    pub fn publish<T: DerivedRow>(&self, rows: Vec<T>) {
        let rows = rows.into_iter().map(T::for_stream).collect();
        self.write(|s, tx| s.views.set_derived(T::slot, rows, tx));
    }

    /// How many streams now hold a scope with preemption rows (a `/preemptions` or pool
    /// page): the readiness audit lists pods only while someone looks.
    pub fn preemption_viewers(&self) -> usize {
        self.inner
            .viewers
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Publishes the pool rows whose node aggregates were held back (see
    /// [`POOL_AGGREGATE_EVERY`]). Run every [`POOL_AGGREGATE_EVERY`] by [`Hub::spawn_flusher`].
    pub fn flush(&self) {
        self.write(|s, tx| {
            for (cluster, uids) in s.views.take_deferred() {
                let Some(data) = s.clusters.get(&cluster) else {
                    continue;
                };
                let dirty = uids
                    .into_iter()
                    .map(|u| (spotboard_core::model::RowKind::Pool, u))
                    .collect();
                s.views
                    .refresh(&cluster, data, dirty, false, tx, &self.inner.facts);
            }
        });
    }

    /// Starts the task that calls [`Hub::flush`] every [`POOL_AGGREGATE_EVERY`].
    pub fn spawn_flusher(&self) -> tokio::task::JoinHandle<()> {
        let hub = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(POOL_AGGREGATE_EVERY);
            loop {
                tick.tick().await;
                hub.flush();
            }
        })
    }

    /// Marks that a cluster answered (a successful probe or watch event).
    pub fn touch(&self, cluster: &str) {
        self.write(|s, _| {
            if let Some(d) = s.clusters.get_mut(cluster) {
                d.last_good = Some(Utc::now());
            }
        });
    }

    /// Whether every kind of every cluster has been listed at least once.
    pub fn ready(&self) -> bool {
        self.read(|s| s.clusters.values().all(|c| c.listed()))
    }

    /// Whether every kind of `cluster` has been listed at least once.
    pub fn synced(&self, cluster: &str) -> bool {
        self.read(|s| s.clusters.get(cluster).is_some_and(|c| c.listed()))
    }

    /// This process's epoch: revisions are comparable only within it.
    pub fn epoch(&self) -> u64 {
        self.inner.epoch
    }

    /// Everything in `scope` now.
    pub fn snapshot(&self, scope: &Scope) -> Snapshot {
        self.read(|s| self.stamped(s.views.snapshot(scope)))
    }

    fn stamped(&self, snapshot: Snapshot) -> Snapshot {
        Snapshot {
            epoch: self.inner.epoch,
            ..snapshot
        }
    }

    /// Subscribes to the deltas of `scope`, starting after revision `since` (of this
    /// process's epoch: the caller checks) when the resume ring still holds what came after
    /// it, else from a fresh snapshot.
    pub fn subscribe(&self, scope: &Scope, since: Option<u64>) -> Subscription {
        self.read(|s| {
            // Subscribing under the read lock means no delta can slip between the start and
            // the live feed.
            let rx = self.inner.tx.subscribe();
            let start = match since.and_then(|since| s.views.replay(scope, since)) {
                Some(replay) => Start::Replay(replay),
                None => Start::Snapshot(Box::new(self.stamped(s.views.snapshot(scope)))),
            };
            let viewer = scope.preemptions.then(|| Viewer::new(&self.inner.viewers));
            Subscription { start, rx, viewer }
        })
    }

    /// Every pool row shown, restored ones too (a cluster's last known state after a
    /// restart), copied, sorted by cluster then name: for `/api/v1/pools`.
    pub fn shown_pool_rows(&self) -> Vec<PoolRow> {
        self.read(|s| s.views.shown_pool_rows())
            .iter()
            .map(|r| PoolRow::clone(r))
            .collect()
    }

    /// Every pool row the watches made, copied, sorted by cluster then name.
    pub fn pool_rows(&self) -> Vec<PoolRow> {
        self.shared_pool_rows()
            .iter()
            .map(|r| PoolRow::clone(r))
            .collect()
    }

    /// Every pool row as the hub holds it, shared, sorted by cluster then name: for a reader
    /// that runs every second or two over all of them (the alerts, the capacity grid), where
    /// [`Hub::pool_rows`] would copy each row.
    pub fn shared_pool_rows(&self) -> Vec<Arc<PoolRow>> {
        self.read(|s| s.views.pool_rows())
    }

    /// Each cluster's waiting-work row (`pool: None`) as last published by
    /// `crate::waiting::spawn_publisher`, for the alerts and `/metrics`: one row per cluster
    /// with waiting pods, whatever their number.
    pub fn waiting_clusters(&self) -> Vec<WaitingPool> {
        self.read(|s| s.views.waiting_clusters())
    }

    /// Each Kueue ClusterQueue's row as last published by `crate::kueue::spawn_publisher`,
    /// for `/metrics`.
    pub fn queue_rows(&self) -> Vec<spotboard_core::model::QueueRow> {
        self.read(|s| s.views.queue_rows())
    }

    /// Karpenter's launch failure rows as last published by `crate::capacity`, for
    /// `/metrics`.
    pub fn launch_failure_rows(&self) -> Vec<spotboard_core::model::LaunchFailureRow> {
        self.read(|s| s.views.launch_failure_rows())
    }

    /// Clusters with a known zone, every pool, and the ledger's preemption rates: the
    /// cluster side of the capacity grid.
    pub fn capacity_inputs(&self) -> CapacityInputs {
        self.read(|s| s.views.capacity_inputs())
    }

    /// The node named `name` in `cluster`, as its row is now.
    pub fn node_named(&self, cluster: &str, name: &str) -> Option<NodeRow> {
        self.read(|s| s.views.node_named(cluster, name))
    }

    /// Whether the hub holds node uid `key`.
    pub fn has_node(&self, key: &str) -> bool {
        self.read(|s| s.views.has_node(key))
    }

    /// One pool with its nodes and events (newest first), if it exists.
    pub fn pool(
        &self,
        cluster: &str,
        name: &str,
    ) -> Option<(PoolRow, Vec<NodeRow>, Vec<EventRow>)> {
        let snap = self.snapshot(&Scope::pool(cluster, name));
        let pool = snap
            .pools
            .into_iter()
            .find(|p| p.cluster == cluster && p.name == name)?;
        let mut events = snap.events;
        events.sort_by_key(|e| std::cmp::Reverse(e.last_seen));
        Some((pool, snap.nodes, events))
    }

    /// The allocation of every node of `cluster` (all with `None`) in `pool` (all with
    /// `None`), unpriced ([`ClusterData::allocations`]), sorted by cluster, pool and node.
    pub fn allocations(
        &self,
        cluster: Option<&str>,
        pool: Option<&str>,
    ) -> Vec<spotboard_core::model::NodeAllocation> {
        let mut out: Vec<_> = self.read(|s| {
            s.clusters
                .iter()
                .filter(|(name, _)| cluster.is_none_or(|c| c == name.as_str()))
                .flat_map(|(name, data)| data.allocations(name, pool))
                .collect()
        });
        out.sort_by(|a, b| (&a.cluster, &a.pool, &a.node).cmp(&(&b.cluster, &b.pool, &b.node)));
        out
    }

    /// The names of the nodes of `pool` in `cluster`, unordered; none for an unknown
    /// cluster. A name list, without the rows [`Hub::allocations`] projects.
    pub fn node_names(&self, cluster: &str, pool: &str) -> Vec<String> {
        self.read(|s| {
            s.clusters
                .get(cluster)
                .map(|d| d.node_names(pool))
                .unwrap_or_default()
        })
    }

    /// The pods waiting for a node in `cluster` (all with `None`): each one's cluster, shared
    /// facts and why it waits, copied as reference counts under the lock and nothing more
    /// (reading the scheduler's messages happens after, in [`crate::waiting`]).
    pub fn waiting(&self, cluster: Option<&str>) -> Vec<WaitingRecord> {
        self.read(|s| {
            s.clusters
                .iter()
                .filter(|(name, _)| cluster.is_none_or(|c| c == name.as_str()))
                .flat_map(|(name, data)| {
                    data.waiting()
                        .map(|(facts, pending, events)| WaitingRecord {
                            cluster: name.clone(),
                            facts,
                            pending,
                            events,
                        })
                })
                .collect()
        })
    }

    /// The names of the clusters the hub follows, sorted.
    pub fn cluster_names(&self) -> Vec<String> {
        self.read(|s| s.clusters.keys().cloned().collect())
    }

    /// Counts for metrics and benchmarks.
    pub fn stats(&self) -> HubStats {
        self.read(|s| {
            let mut st = s.views.stats();
            st.subscribers = self.inner.tx.receiver_count();
            st
        })
    }

    /// The delta stream's JSON for tests and tools that read deltas directly.
    pub fn decode(p: &Published) -> Option<Delta> {
        serde_json::from_str(&p.data).ok()
    }
}

impl app::live::SnapshotSource for Hub {
    fn snapshot(&self, scope: &Scope) -> Snapshot {
        Hub::snapshot(self, scope)
    }
}

#[cfg(test)]
mod derived_tests;
#[cfg(test)]
mod last_known_tests;
#[cfg(test)]
mod launch_failure_tests;
#[cfg(test)]
mod scope_tests;
#[cfg(test)]
mod tests;
