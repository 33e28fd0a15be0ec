//! Keyed reactive stores for the rows of the live stream.
//!
//! Each row lives in its own signal inside a keyed index. A patch to a row updates only that
//! row's signal, so only the views reading that row re-render; the index signal changes only
//! when rows are added or removed, which is when a keyed `<For>` has work to do.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Serialize, de::DeserializeOwned};

use crate::domain::preemption::rates::RateRow;
use crate::model::{
    CapacityCell, Change, ClusterAudit, ClusterRow, Delta, EventRow, NodeRow, PoolReadiness,
    PoolRow, PreemptionView, RowKind, Snapshot, SourceStatus, UndeliveredAlert, Wave,
};

use crate::model::patch;

/// Rows of one kind, keyed by their key (object uid, or cluster name).
pub struct Keyed<T: Send + Sync + 'static> {
    index: RwSignal<BTreeMap<String, RwSignal<T>>>,
    /// The owner the store was made under (the app's). Row signals are created under it, not
    /// under whatever view happens to seed or patch the store: a page's `<Suspense>` re-runs
    /// and disposes its own children, which must not take the tab's rows with it.
    owner: StoredValue<Option<Owner>>,
}

impl<T: Send + Sync + 'static> Clone for Keyed<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Send + Sync + 'static> Copy for Keyed<T> {}

impl<T> Keyed<T>
where
    T: Clone + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn new() -> Self {
        Self {
            index: RwSignal::new(BTreeMap::new()),
            owner: StoredValue::new(Owner::current()),
        }
    }

    fn row_signal(&self, row: T) -> RwSignal<T> {
        match self.owner.get_value() {
            Some(owner) => owner.with(|| RwSignal::new(row)),
            None => RwSignal::new(row),
        }
    }

    /// The keys, tracked: changes when rows are added or removed.
    pub fn keys(&self) -> Vec<String> {
        self.index.with(|m| m.keys().cloned().collect())
    }

    /// The signal of one row, if present (tracks the index).
    pub fn get(&self, key: &str) -> Option<RwSignal<T>> {
        self.index.with(|m| m.get(key).copied())
    }

    /// The signal of one row, if present, looked up without tracking: for a keyed child
    /// (`<For>`), which takes its row's signal once when it is made (the list itself follows
    /// the keys) and is not a reactive context.
    pub fn row(&self, key: &str) -> Option<RwSignal<T>> {
        self.index.with_untracked(|m| m.get(key).copied())
    }

    /// Every row signal, tracked on the index only.
    pub fn signals(&self) -> Vec<RwSignal<T>> {
        self.index.with(|m| m.values().copied().collect())
    }

    /// Calls `f` with every row in key order, tracked on the index and every row. Nothing is
    /// copied: views that sum or index all rows use this rather than [`Self::values`].
    pub fn for_each(&self, mut f: impl FnMut(&T)) {
        self.index.with(|m| {
            for s in m.values() {
                s.with(|row| f(row));
            }
        })
    }

    /// Every row's current value, tracked on the index and every row.
    pub fn values(&self) -> Vec<T> {
        self.index.with(|m| m.values().map(|s| s.get()).collect())
    }

    /// Number of rows, tracked on the index.
    pub fn len(&self) -> usize {
        self.index.with(|m| m.len())
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces every row, keeping the signals of rows that stay (so their views stay mounted).
    fn replace(&self, rows: Vec<T>, key: impl Fn(&T) -> String) {
        let mut fresh = BTreeMap::new();
        let old = self.index.get_untracked();
        let mut changed_keys = old.len() != rows.len();
        for row in rows {
            let k = key(&row);
            match old.get(&k) {
                Some(sig) => {
                    if sig.with_untracked(|r| r != &row) {
                        sig.set(row);
                    }
                    fresh.insert(k, *sig);
                }
                None => {
                    changed_keys = true;
                    fresh.insert(k, self.row_signal(row));
                }
            }
        }
        if changed_keys {
            self.index.set(fresh);
        }
    }

    fn apply(&self, key: &str, change: &Change) -> Result<(), String> {
        match change {
            Change::Add(v) => {
                let row: T = patch::decode(v).map_err(|e| e.to_string())?;
                match self.index.with_untracked(|m| m.get(key).copied()) {
                    Some(sig) => sig.set(row),
                    None => {
                        let sig = self.row_signal(row);
                        self.index.update(|m| {
                            m.insert(key.to_string(), sig);
                        })
                    }
                }
            }
            Change::Patch(p) => {
                let Some(sig) = self.index.with_untracked(|m| m.get(key).copied()) else {
                    return Err(format!("patch for unknown row {key}"));
                };
                let mut row = sig.get_untracked();
                patch::apply(&mut row, p).map_err(|e| e.to_string())?;
                sig.set(row);
            }
            Change::Remove => {
                if self.index.with_untracked(|m| m.contains_key(key)) {
                    self.index.update(|m| {
                        m.remove(key);
                    });
                }
            }
        }
        Ok(())
    }
}

/// The state of this tab's connection to the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// Showing server-rendered data; the stream has not opened yet.
    Connecting,
    /// The stream is open.
    Live,
    /// The stream dropped; the browser is retrying. Data is as of the last message.
    Reconnecting,
}

impl ConnState {
    /// The CSS/visual variant name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connecting => "connecting",
            Self::Live => "live",
            Self::Reconnecting => "reconnecting",
        }
    }
}

/// Everything this tab shows, keyed, plus the connection state. Provided as context by
/// [`crate::App`].
#[derive(Clone, Copy)]
pub struct LiveStore {
    /// The last revision applied.
    pub rev: RwSignal<u64>,
    /// The epoch of the process the rows came from (see [`Snapshot::epoch`]).
    pub epoch: RwSignal<u64>,
    /// The scope the store holds nodes and events for.
    pub scope: RwSignal<Option<crate::model::Scope>>,
    pub conn: RwSignal<ConnState>,
    /// When the last snapshot or delta arrived (for "stale since").
    pub last_message: RwSignal<Option<DateTime<Utc>>>,
    pub clusters: Keyed<ClusterRow>,
    pub pools: Keyed<PoolRow>,
    pub nodes: Keyed<NodeRow>,
    pub events: Keyed<EventRow>,
    pub preemptions: Keyed<PreemptionView>,
    pub waves: Keyed<Wave>,
    pub rates: Keyed<RateRow>,
    pub alerts: Keyed<UndeliveredAlert>,
    /// Alerts firing now (the header's count).
    pub firing: Keyed<crate::model::Alert>,
    pub audits: Keyed<ClusterAudit>,
    pub pool_audits: Keyed<PoolReadiness>,
    pub cells: Keyed<CapacityCell>,
    pub sources: Keyed<SourceStatus>,
    /// The waiting work of clusters and pools.
    pub waiting: Keyed<crate::model::WaitingPool>,
    /// The fallback pairs over the last 24 h.
    pub fallback: Keyed<crate::model::FallbackRow>,
    /// The Kueue ClusterQueues (none on clusters without Kueue).
    pub queues: Keyed<crate::model::QueueRow>,
    /// Karpenter's refused launches over 7 d (none on clusters without Karpenter).
    pub launch_failures: Keyed<crate::model::LaunchFailureRow>,
}

impl Default for LiveStore {
    fn default() -> Self {
        Self::new()
    }
}

impl LiveStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            rev: RwSignal::new(0),
            epoch: RwSignal::new(0),
            scope: RwSignal::new(None),
            conn: RwSignal::new(ConnState::Connecting),
            last_message: RwSignal::new(None),
            clusters: Keyed::new(),
            pools: Keyed::new(),
            nodes: Keyed::new(),
            events: Keyed::new(),
            preemptions: Keyed::new(),
            waves: Keyed::new(),
            rates: Keyed::new(),
            alerts: Keyed::new(),
            firing: Keyed::new(),
            audits: Keyed::new(),
            pool_audits: Keyed::new(),
            cells: Keyed::new(),
            sources: Keyed::new(),
            waiting: Keyed::new(),
            fallback: Keyed::new(),
            queues: Keyed::new(),
            launch_failures: Keyed::new(),
        }
    }

    /// Takes a snapshot loaded for a page unless the store already holds newer data of the
    /// same scope from the same process (the stream may have moved on since the page's
    /// snapshot was taken). Revisions of another process compare as nothing: its snapshot
    /// always wins.
    pub fn adopt(&self, scope: &crate::model::Scope, snap: &Snapshot) {
        let same_scope = self.scope.with_untracked(|s| s.as_ref() == Some(scope));
        let same_epoch = snap.epoch == self.epoch.get_untracked();
        if !same_scope || !same_epoch || snap.rev >= self.rev.get_untracked() {
            self.scope.set(Some(scope.clone()));
            self.seed(snap.clone());
        }
    }

    /// Replaces the store's contents with a snapshot.
    pub fn seed(&self, snap: Snapshot) {
        self.clusters.replace(snap.clusters, |r| r.name.clone());
        self.pools.replace(snap.pools, |r| r.key.clone());
        self.nodes.replace(snap.nodes, |r| r.key.clone());
        self.events.replace(snap.events, |r| r.key.clone());
        self.preemptions
            .replace(snap.preemptions, |r| r.uid.clone());
        self.waves.replace(snap.waves, Wave::key);
        self.rates.replace(snap.rates, RateRow::row_key);
        self.alerts.replace(snap.alerts, UndeliveredAlert::key);
        self.firing.replace(snap.firing, |a| a.key.clone());
        self.audits.replace(snap.audits, |a| a.cluster.clone());
        self.pool_audits
            .replace(snap.pool_audits, PoolReadiness::key);
        self.cells.replace(snap.cells, CapacityCell::key);
        self.sources.replace(snap.sources, |s| s.name.clone());
        self.waiting
            .replace(snap.waiting, crate::model::WaitingPool::key);
        self.fallback
            .replace(snap.fallback, crate::model::FallbackRow::key);
        self.queues
            .replace(snap.queues, crate::model::QueueRow::key);
        self.launch_failures
            .replace(snap.launch_failures, crate::model::LaunchFailureRow::key);
        self.rev.set(snap.rev);
        self.epoch.set(snap.epoch);
    }

    /// Applies one delta. Deltas at or below the current revision are ignored (they can
    /// arrive twice around a reconnect).
    ///
    /// Errors: the text of a row that could not be decoded or patched; the caller should ask
    /// for a fresh snapshot.
    pub fn apply(&self, delta: &Delta) -> Result<(), String> {
        if delta.rev <= self.rev.get_untracked() {
            return Ok(());
        }
        let r = match delta.kind {
            RowKind::Cluster => self.clusters.apply(&delta.key, &delta.change),
            RowKind::Pool => self.pools.apply(&delta.key, &delta.change),
            RowKind::Node => self.nodes.apply(&delta.key, &delta.change),
            RowKind::Event => self.events.apply(&delta.key, &delta.change),
            RowKind::Preemption => self.preemptions.apply(&delta.key, &delta.change),
            RowKind::Wave => self.waves.apply(&delta.key, &delta.change),
            RowKind::Rate => self.rates.apply(&delta.key, &delta.change),
            RowKind::Alert => self.alerts.apply(&delta.key, &delta.change),
            RowKind::Firing => self.firing.apply(&delta.key, &delta.change),
            RowKind::Audit => self.audits.apply(&delta.key, &delta.change),
            RowKind::PoolAudit => self.pool_audits.apply(&delta.key, &delta.change),
            RowKind::Cell => self.cells.apply(&delta.key, &delta.change),
            RowKind::Source => self.sources.apply(&delta.key, &delta.change),
            RowKind::Waiting => self.waiting.apply(&delta.key, &delta.change),
            RowKind::Fallback => self.fallback.apply(&delta.key, &delta.change),
            RowKind::Queue => self.queues.apply(&delta.key, &delta.change),
            RowKind::LaunchFailure => self.launch_failures.apply(&delta.key, &delta.change),
        };
        self.rev.set(delta.rev);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scope;

    fn pool(key: &str, current: i32) -> PoolRow {
        PoolRow {
            key: key.into(),
            name: key.into(),
            current_nodes: Some(current),
            ..Default::default()
        }
    }

    #[test]
    fn a_patch_touches_one_row_signal_and_not_the_index() {
        let owner = Owner::new();
        owner.with(|| {
            let store = LiveStore::new();
            store.seed(Snapshot {
                rev: 5,
                pools: vec![pool("a", 1), pool("b", 2)],
                ..Default::default()
            });
            let a = store.pools.get("a").unwrap();
            let b = store.pools.get("b").unwrap();
            store
                .apply(&Delta {
                    rev: 6,
                    kind: RowKind::Pool,
                    key: "b".into(),
                    change: Change::Patch(serde_json::json!({"current_nodes": 3})),
                })
                .unwrap();
            assert_eq!(b.get_untracked().current_nodes, Some(3));
            assert_eq!(a.get_untracked().current_nodes, Some(1));
            // The same signal object is still in the index: views keyed on it stay mounted.
            assert_eq!(store.pools.get("b").unwrap(), b);
            assert_eq!(store.rev.get_untracked(), 6);
        });
    }

    #[test]
    fn add_remove_and_stale_deltas() {
        let owner = Owner::new();
        owner.with(|| {
            let store = LiveStore::new();
            store.seed(Snapshot {
                rev: 10,
                pools: vec![pool("a", 1)],
                ..Default::default()
            });
            let add = Delta {
                rev: 11,
                kind: RowKind::Pool,
                key: "c".into(),
                change: Change::Add(serde_json::to_value(pool("c", 0)).unwrap()),
            };
            store.apply(&add).unwrap();
            assert_eq!(store.pools.keys(), ["a", "c"]);
            let old = Delta {
                rev: 9,
                kind: RowKind::Pool,
                key: "a".into(),
                change: Change::Remove,
            };
            store.apply(&old).unwrap();
            assert_eq!(
                store.pools.len(),
                2,
                "a delta older than the store is ignored"
            );
            store
                .apply(&Delta {
                    rev: 12,
                    kind: RowKind::Pool,
                    key: "a".into(),
                    change: Change::Remove,
                })
                .unwrap();
            assert_eq!(store.pools.keys(), ["c"]);
            let bad = Delta {
                rev: 13,
                kind: RowKind::Pool,
                key: "zzz".into(),
                change: Change::Patch(serde_json::json!({})),
            };
            assert!(store.apply(&bad).is_err());
            let _ = Scope::pools();
        });
    }

    #[test]
    fn rows_outlive_the_view_that_seeded_them() {
        let app = Owner::new();
        app.with(|| {
            let store = LiveStore::new();
            // A page's <Suspense> seeds the store under its own owner, then re-runs.
            let view = Owner::new();
            view.with(|| {
                store.seed(Snapshot {
                    rev: 1,
                    pools: vec![pool("a", 1)],
                    ..Default::default()
                })
            });
            drop(view);
            let a = store.pools.get("a").unwrap();
            assert_eq!(
                a.try_get_untracked().map(|p| p.current_nodes),
                Some(Some(1))
            );
        });
    }

    #[test]
    fn another_process_snapshot_wins_whatever_its_revision() {
        let owner = Owner::new();
        owner.with(|| {
            let store = LiveStore::new();
            let scope = crate::model::Scope::pools();
            store.adopt(
                &scope,
                &Snapshot {
                    epoch: 1,
                    rev: 900,
                    pools: vec![pool("old", 1)],
                    ..Default::default()
                },
            );
            // The same process, older: kept out.
            store.adopt(
                &scope,
                &Snapshot {
                    epoch: 1,
                    rev: 800,
                    pools: vec![pool("older", 1)],
                    ..Default::default()
                },
            );
            assert!(store.pools.get("old").is_some() && store.pools.get("older").is_none());
            // A restarted server counts from 1 again: its rows replace the old ones.
            store.adopt(
                &scope,
                &Snapshot {
                    epoch: 2,
                    rev: 3,
                    pools: vec![pool("new", 1)],
                    ..Default::default()
                },
            );
            assert!(store.pools.get("old").is_none(), "no phantom row");
            assert!(store.pools.get("new").is_some(), "no lost row");
            assert_eq!(
                (store.epoch.get_untracked(), store.rev.get_untracked()),
                (2, 3)
            );
        });
    }
}
