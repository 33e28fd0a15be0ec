//! The rows as last published, and turning row changes into deltas.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, VecDeque},
    sync::Arc,
    time::{Duration, Instant},
};

use serde::Serialize;
use spotboard_core::model::{
    Change, ClusterRow, Delta, EventRow, NodeRow, PoolRow, RowKind, Scope, Snapshot, patch,
};
use tokio::sync::broadcast;

use super::{
    HubStats,
    cluster::{ClusterData, Dirty},
    derived::{Derived, DerivedRow, replace_all},
    facts::Fact,
};

/// One published delta, serialized once for every subscriber.
#[derive(Debug)]
pub struct Published {
    pub rev: u64,
    pub kind: RowKind,
    pub cluster: String,
    /// For node and event rows: the pool the row belongs to (scopes filter on it).
    pub pool: Option<String>,
    /// The [`Delta`] as JSON: the SSE `data:` line.
    pub data: String,
}

impl Published {
    /// Whether a subscriber of `scope` should receive this delta.
    pub fn wanted_by(&self, scope: &Scope) -> bool {
        match self.kind {
            RowKind::Cluster => true,
            RowKind::Pool => self
                .pool
                .as_deref()
                .is_none_or(|name| scope.wants_pool_row(&self.cluster, name)),
            RowKind::Node | RowKind::Event => scope.wants(&self.cluster, self.pool.as_deref()),
            RowKind::Preemption => scope.wants_preemption(&self.cluster, self.pool.as_deref()),
            RowKind::Wave | RowKind::Rate | RowKind::Alert => scope.wants_fleet_preemptions(),
            RowKind::Audit => scope.wants_audit(&self.cluster),
            RowKind::PoolAudit => scope.wants_preemption(&self.cluster, self.pool.as_deref()),
            RowKind::Cell | RowKind::Source => scope.capacity,
            RowKind::Firing => true,
            RowKind::Waiting => {
                super::derived::waiting_wanted(scope, &self.cluster, self.pool.as_deref())
            }
            RowKind::Fallback | RowKind::Queue => scope.wants_cluster(&self.cluster),
            RowKind::LaunchFailure => scope.wants_launch_failures(&self.cluster),
        }
    }
}

/// How often a pool's row may be re-published because of its nodes (cordoned and preempting
/// counts). A drain cordons a pool's nodes one after another; without this, every node change
/// would send the node's delta and a pool delta, twice the bytes, for counts a person reads at
/// a glance. A change to the pool itself is published at once.
pub const POOL_AGGREGATE_EVERY: Duration = Duration::from_millis(250);

pub struct Views {
    rev: u64,
    /// Pools whose node aggregates changed within [`POOL_AGGREGATE_EVERY`] of their last
    /// publication, per cluster, waiting for [`super::Hub::flush`].
    deferred: BTreeMap<String, BTreeSet<String>>,
    pool_published: HashMap<String, Instant>,
    clusters: BTreeMap<String, ClusterRow>,
    /// Per cluster, the sum of its published pool rows' `nodes_preempting` (the cluster
    /// row's count).
    preempting: HashMap<String, u32>,
    // Behind a pointer: a map keeps a third of its slots empty, and a row is hundreds of
    // bytes. A shared one for pools: the alerts (every second) and the capacity grid (every
    // 2 s) read every pool, and copies of 2,000 rows, conditions and labels and all, were
    // about 4 MB made and dropped each time. A shared one for nodes: the facts the followers
    // read (up to `facts_buffer` of them kept, 81,920 at 20 clusters) and a follower's start
    // hold the row the hub holds, not a copy of it each.
    pools: HashMap<String, Arc<PoolRow>>,
    nodes: HashMap<String, Arc<NodeRow>>,
    events: HashMap<String, EventRow>,
    derived: Derived,
    ring: VecDeque<Arc<Published>>,
    ring_cap: usize,
    /// Per cluster, the keys of the rows restored from its last known state
    /// ([`Views::restore`]) that no watch has refreshed yet.
    restored: HashMap<String, restored::Restored>,
}

mod reads;
mod restored;

fn to_value<T: Serialize>(row: &T) -> serde_json::Value {
    // Rows are plain structs of strings, numbers and maps: serializing cannot fail.
    serde_json::to_value(row).unwrap_or(serde_json::Value::Null)
}

impl Views {
    pub fn new(ring_cap: usize) -> Self {
        Self {
            rev: 0,
            deferred: BTreeMap::new(),
            pool_published: HashMap::new(),
            clusters: BTreeMap::new(),
            preempting: HashMap::new(),
            pools: HashMap::new(),
            nodes: HashMap::new(),
            events: HashMap::new(),
            derived: Derived::default(),
            ring: VecDeque::with_capacity(ring_cap),
            ring_cap,
            restored: HashMap::new(),
        }
    }

    pub fn cluster(&self, name: &str) -> Option<&ClusterRow> {
        self.clusters.get(name)
    }

    pub fn set_cluster(&mut self, mut row: ClusterRow, tx: &broadcast::Sender<Arc<Published>>) {
        let name = row.name.clone();
        row.nodes_preempting = self.preempting.get(&name).copied().unwrap_or(0);
        let old = self.clusters.insert(name.clone(), row.clone());
        let change = change_of(old.as_ref(), Some(&row));
        if let Some(change) = change {
            self.publish(RowKind::Cluster, name.clone(), name, None, change, tx);
        }
    }

    /// Takes the pools deferred by [`Views::refresh`], per cluster.
    pub fn take_deferred(&mut self) -> BTreeMap<String, BTreeSet<String>> {
        std::mem::take(&mut self.deferred)
    }

    /// Recomputes the dirty rows of one cluster and publishes those that changed. With
    /// `aggregate_only`, the dirty pools changed only through their nodes and may be deferred.
    /// Sends the changes to nodes, pools and "Preemption pending" events on `facts` too,
    /// when someone follows.
    pub fn refresh(
        &mut self,
        cluster: &str,
        data: &ClusterData,
        mut dirty: Vec<Dirty>,
        aggregate_only: bool,
        tx: &broadcast::Sender<Arc<Published>>,
        facts: &broadcast::Sender<Arc<Fact>>,
    ) {
        dirty.sort();
        dirty.dedup();
        // Rows are copied into facts only for a follower.
        let following = facts.receiver_count() > 0;
        let send = |fact: Fact| drop(facts.send(Arc::new(fact)));
        let preempting_before = self.preempting.get(cluster).copied().unwrap_or(0);
        let mut preempting = i64::from(preempting_before);
        // A restored row a watch now refreshes always changes (`replaced`): its fact goes out
        // even when the row is the same, since the followers never saw the restored one.
        let mut restored = self.restored.remove(cluster);
        let mut was_restored = |kind: RowKind, key: &str| {
            restored.as_mut().is_some_and(|r| match kind {
                RowKind::Pool => r.pools.remove(key),
                RowKind::Node => r.nodes.remove(key),
                _ => false,
            })
        };
        for (kind, key) in dirty {
            match kind {
                RowKind::Pool => {
                    let recent = self
                        .pool_published
                        .get(&key)
                        .is_some_and(|t| t.elapsed() < POOL_AGGREGATE_EVERY);
                    if aggregate_only && recent {
                        self.deferred
                            .entry(cluster.to_string())
                            .or_default()
                            .insert(key);
                        continue;
                    }
                    if let Some(set) = self.deferred.get_mut(cluster) {
                        set.remove(&key);
                    }
                    let new = data.pool_row(cluster, &key).map(Arc::new);
                    let old = sync(&mut self.pools, &key, new.clone());
                    if new.is_none() {
                        self.pool_published.remove(&key);
                    }
                    let count = |r: &Option<Arc<PoolRow>>| {
                        i64::from(r.as_ref().map_or(0, |r| r.nodes_preempting))
                    };
                    preempting += count(&new) - count(&old);
                    let first = was_restored(kind, &key);
                    if let Some(c) = change_after(first, old.as_deref(), new.as_deref()) {
                        let name = new.as_ref().or(old.as_ref()).map(|r| r.name.clone());
                        self.pool_published.insert(key.clone(), Instant::now());
                        if following {
                            send(Fact::Pool {
                                key: key.clone(),
                                row: new,
                            });
                        }
                        self.publish(kind, key, cluster.to_string(), name, c, tx);
                    }
                }
                RowKind::Node => {
                    let new = data.node_row(cluster, &key).map(Arc::new);
                    let old = sync(&mut self.nodes, &key, new.clone());
                    let first = was_restored(kind, &key);
                    if let Some(c) = change_after(first, old.as_deref(), new.as_deref()) {
                        let moved = Moved::of(old.as_deref(), new.as_deref(), |r| r.pool.clone());
                        if following {
                            send(Fact::Node {
                                key: key.clone(),
                                row: new,
                            });
                        }
                        self.publish_placed(kind, key, cluster.to_string(), moved, c, tx);
                    }
                }
                RowKind::Event => {
                    let new = data.event_row(cluster, &key);
                    let old = sync(&mut self.events, &key, new.clone());
                    if let Some(c) = change_of(old.as_ref(), new.as_ref()) {
                        let moved = Moved::of(old.as_ref(), new.as_ref(), |r| r.pool.clone());
                        let signal = |r: &Option<EventRow>| {
                            r.as_ref().is_some_and(|e| {
                                e.reason == spotboard_core::labels::REASON_PREEMPTION_PENDING
                            })
                        };
                        if following && (signal(&new) || signal(&old)) {
                            send(Fact::PreemptionSignal {
                                key: key.clone(),
                                row: new.clone().map(Box::new),
                            });
                        }
                        if following && (eviction_signal(&new) || eviction_signal(&old)) {
                            send(Fact::EvictionSignal {
                                key: key.clone(),
                                row: new.clone().map(Box::new),
                            });
                        }
                        if following && (launch_failure(&new) || launch_failure(&old)) {
                            send(Fact::LaunchFailureSignal {
                                key: key.clone(),
                                row: new.clone().map(Box::new),
                            });
                        }
                        let departure = |r: &Option<EventRow>| r.as_ref().is_some_and(is_departure);
                        if following && (departure(&new) || departure(&old)) {
                            send(Fact::DepartureSignal {
                                key: key.clone(),
                                row: new.map(Box::new),
                            });
                        }
                        self.publish_placed(kind, key, cluster.to_string(), moved, c, tx);
                    }
                }
                RowKind::Cluster
                | RowKind::Preemption
                | RowKind::Wave
                | RowKind::Rate
                | RowKind::Alert
                | RowKind::Firing
                | RowKind::Audit
                | RowKind::PoolAudit
                | RowKind::Cell
                | RowKind::Source
                | RowKind::Waiting
                | RowKind::Fallback
                | RowKind::Queue
                | RowKind::LaunchFailure => {}
            }
        }
        if let Some(r) = restored.filter(|r| !r.pools.is_empty() || !r.nodes.is_empty()) {
            self.restored.insert(cluster.to_string(), r);
        }
        let preempting = u32::try_from(preempting.max(0)).unwrap_or(u32::MAX);
        if preempting != preempting_before {
            self.preempting.insert(cluster.to_string(), preempting);
            if let Some(row) = self.clusters.get(cluster).cloned() {
                self.set_cluster(row, tx);
            }
        }
    }

    /// Makes the derived rows of one kind exactly `rows` (`select` picks the kind's map) and
    /// publishes what changed.
    pub fn set_derived<T: DerivedRow>(
        &mut self,
        select: fn(&mut Derived) -> &mut HashMap<String, T>,
        rows: Vec<T>,
        tx: &broadcast::Sender<Arc<Published>>,
    ) {
        let changes = replace_all(select(&mut self.derived), rows, |o, n| {
            change_of(o, n).map(|c| (c, Moved::of(o, n, |r| r.place().1)))
        });
        for (key, cluster, moved, change) in changes {
            self.publish_placed(T::KIND, key, cluster, moved, change, tx);
        }
    }

    /// Publishes a row's change where the row is now, or, when the row changed pool (an
    /// event seen before its node, whose pool was unknown until then; a node whose pool label
    /// changed; a node that left and whose pool was forgotten), as a removal where it was
    /// and an addition where it is. A patch alone would reach the new pool's pages, which
    /// never had the row (the browser's store refuses a patch for an unknown row and reloads
    /// its snapshot), and leave the old pool's pages a row that is no longer theirs.
    fn publish_placed(
        &mut self,
        kind: RowKind,
        key: String,
        cluster: String,
        moved: Moved,
        change: Change,
        tx: &broadcast::Sender<Arc<Published>>,
    ) {
        match moved {
            Moved::Stayed(pool) => self.publish(kind, key, cluster, pool, change, tx),
            Moved::Moved { from, to, row } => {
                self.publish(kind, key.clone(), cluster.clone(), from, Change::Remove, tx);
                self.publish(kind, key, cluster, to, Change::Add(row), tx);
            }
        }
    }

    fn publish(
        &mut self,
        kind: RowKind,
        key: String,
        cluster: String,
        pool: Option<String>,
        change: Change,
        tx: &broadcast::Sender<Arc<Published>>,
    ) {
        self.rev += 1;
        let delta = Delta {
            rev: self.rev,
            kind,
            key,
            change,
        };
        let data = serde_json::to_string(&delta).unwrap_or_default();
        let p = Arc::new(Published {
            rev: self.rev,
            kind,
            cluster,
            pool,
            data,
        });
        if self.ring.len() == self.ring_cap {
            self.ring.pop_front();
        }
        self.ring.push_back(p.clone());
        // No subscribers is not an error: nobody has a tab open.
        let _ = tx.send(p);
    }

    pub fn snapshot(&self, scope: &Scope) -> Snapshot {
        let mut pools: Vec<PoolRow> = self
            .pools
            .values()
            .filter(|p| scope.wants_pool_row(&p.cluster, &p.name))
            .map(|r| PoolRow::clone(r))
            .collect();
        pools.sort_by(|a, b| (&a.cluster, &a.name).cmp(&(&b.cluster, &b.name)));
        let mut nodes: Vec<NodeRow> = self
            .nodes
            .values()
            .filter(|n| scope.wants(&n.cluster, n.pool.as_deref()))
            .map(|r| NodeRow::clone(r))
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let mut events: Vec<EventRow> = self
            .events
            .values()
            .filter(|e| scope.wants(&e.cluster, e.pool.as_deref()))
            .cloned()
            .collect();
        events.sort_by(|a, b| {
            a.last_seen
                .cmp(&b.last_seen)
                .then_with(|| a.key.cmp(&b.key))
        });
        let derived = self.derived.snapshot(scope);
        Snapshot {
            // The hub stamps its epoch; the views know only revisions.
            epoch: 0,
            rev: self.rev,
            clusters: self.clusters.values().cloned().collect(),
            pools,
            nodes,
            events,
            preemptions: derived.preemptions,
            waves: derived.waves,
            rates: derived.rates,
            alerts: derived.alerts,
            audits: derived.audits,
            pool_audits: derived.pool_audits,
            cells: derived.cells,
            sources: derived.sources,
            firing: derived.firing,
            waiting: derived.waiting,
            fallback: derived.fallback,
            queues: derived.queues,
            launch_failures: derived.launch_failures,
        }
    }

    /// The deltas in `scope` after `since`, or `None` when the ring no longer reaches back
    /// that far (or `since` is from another server's lifetime).
    pub fn replay(&self, scope: &Scope, since: u64) -> Option<Vec<Arc<Published>>> {
        if since > self.rev {
            return None;
        }
        let oldest = self.ring.front().map(|p| p.rev).unwrap_or(self.rev + 1);
        if since + 1 < oldest && since != self.rev {
            return None;
        }
        Some(
            self.ring
                .iter()
                .filter(|p| p.rev > since && p.wanted_by(scope))
                .cloned()
                .collect(),
        )
    }

    pub fn stats(&self) -> HubStats {
        HubStats {
            rev: self.rev,
            subscribers: 0,
            pools: self.pools.len(),
            nodes: self.nodes.len(),
            events: self.events.len(),
        }
    }
}

fn sync<T>(map: &mut HashMap<String, T>, key: &str, new: Option<T>) -> Option<T> {
    match new {
        Some(row) => map.insert(key.to_string(), row),
        None => map.remove(key),
    }
}

/// Where a changed row is published: the pool scopes filter on.
#[derive(Debug, PartialEq)]
pub enum Moved {
    /// The row's pool is the same before and after (for an addition, the new row's; for a
    /// removal, the old row's).
    Stayed(Option<String>),
    /// The row is in both and its pool changed; `row` is the new row as JSON.
    Moved {
        from: Option<String>,
        to: Option<String>,
        row: serde_json::Value,
    },
}

impl Moved {
    /// Compares the pool (`pool_of`) of a row before and after a change.
    pub fn of<T: Serialize>(
        old: Option<&T>,
        new: Option<&T>,
        pool_of: impl Fn(&T) -> Option<String>,
    ) -> Moved {
        match (old, new) {
            (Some(o), Some(n)) if pool_of(o) != pool_of(n) => Moved::Moved {
                from: pool_of(o),
                to: pool_of(n),
                row: to_value(n),
            },
            _ => Moved::Stayed(new.or(old).and_then(pool_of)),
        }
    }
}

/// A restored row's change once a watch refreshes it: the new row whole (a tab's store
/// replaces the row it holds), or its removal. Not a diff: at 100,000 nodes comparing and
/// diffing each restored row with its refreshed one made the first list after a restart
/// three times as long as a cold one.
fn replaced<T: Serialize>(old: Option<&T>, new: Option<&T>) -> Option<Change> {
    match (old, new) {
        (_, Some(n)) => Some(Change::Add(to_value(n))),
        (Some(_), None) => Some(Change::Remove),
        (None, None) => None,
    }
}

/// A refreshed row's change: [`replaced`] for a restored row, [`change_of`] otherwise.
fn change_after<T: Serialize + PartialEq>(
    restored: bool,
    old: Option<&T>,
    new: Option<&T>,
) -> Option<Change> {
    if restored {
        replaced(old, new)
    } else {
        change_of(old, new)
    }
}

fn change_of<T: Serialize + PartialEq>(old: Option<&T>, new: Option<&T>) -> Option<Change> {
    match (old, new) {
        (None, None) => None,
        (Some(_), None) => Some(Change::Remove),
        (None, Some(n)) => Some(Change::Add(to_value(n))),
        (Some(o), Some(n)) if o == n => None,
        (Some(o), Some(n)) => patch::diff(&to_value(o), &to_value(n)).map(Change::Patch),
    }
}

/// An event about a Node that reports a refused eviction: what the preemption tracker follows.
pub fn is_eviction_signal(e: &EventRow) -> bool {
    e.object.starts_with("Node/")
        && spotboard_core::domain::preemption::evictions::is_refusal(&e.reason, &e.message)
}

fn eviction_signal(r: &Option<EventRow>) -> bool {
    r.as_ref().is_some_and(is_eviction_signal)
}

/// Whether `e` is a Karpenter launch failure: `InsufficientCapacityError` about a NodeClaim.
pub fn is_launch_failure(e: &EventRow) -> bool {
    e.object.starts_with("NodeClaim/")
        && e.reason == spotboard_core::labels::KARPENTER_INSUFFICIENT_CAPACITY
}

fn launch_failure(r: &Option<EventRow>) -> bool {
    r.as_ref().is_some_and(is_launch_failure)
}

/// Whether `e` is Karpenter's `DisruptionTerminating` about a Node: it names why the node
/// goes (`spotboard_core::domain::departures::karpenter_disruption`).
pub fn is_departure(e: &EventRow) -> bool {
    e.object.starts_with("Node/")
        && e.reason == spotboard_core::domain::departures::KARPENTER_DISRUPTION_TERMINATING
}
