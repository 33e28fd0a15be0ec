//! The rows of a cluster restored from its last known state (`super::super::last_known`),
//! kept in the views beside the watches' rows until a watch refreshes each key.

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;
use spotboard_core::model::{Change, NodeRow, PoolRow, RowKind};
use tokio::sync::broadcast;

use super::{Dirty, Published, Views, to_value};

/// The keys of one cluster's restored rows not yet refreshed by its watches.
#[derive(Default)]
pub(super) struct Restored {
    pub(super) pools: HashSet<String>,
    pub(super) nodes: HashSet<String>,
}

impl Views {
    /// Shows `pools` and `nodes` of `cluster` as its last known state, kept until a watch
    /// refreshes the key; no fact is sent (nothing was seen). A key that already has a row is
    /// left alone. Each row is published as new only when someone subscribes: a restart
    /// restores before it serves, and a subscriber's snapshot has the rows (at 100,000 nodes
    /// the deltas nobody would read were most of the restore's time). Returns how many rows
    /// were restored.
    pub fn restore(
        &mut self,
        cluster: &str,
        pools: Vec<PoolRow>,
        nodes: Vec<NodeRow>,
        tx: &broadcast::Sender<Arc<Published>>,
    ) -> usize {
        let mut restored = self.restored.remove(cluster).unwrap_or_default();
        let mut preempting = 0;
        let watched = tx.receiver_count() > 0;
        for row in pools.into_iter().filter(|r| r.cluster == cluster) {
            if self.pools.contains_key(&row.key) {
                continue;
            }
            preempting += row.nodes_preempting;
            let (key, name) = (row.key.clone(), row.name.clone());
            let change = watched.then(|| Change::Add(to_value(&row)));
            self.pools.insert(key.clone(), Arc::new(row));
            restored.pools.insert(key.clone());
            match change {
                Some(c) => self.publish(RowKind::Pool, key, cluster.to_string(), Some(name), c, tx),
                None => self.rev += 1,
            }
        }
        for row in nodes.into_iter().filter(|r| r.cluster == cluster) {
            if self.nodes.contains_key(&row.key) {
                continue;
            }
            let (key, pool) = (row.key.clone(), row.pool.clone());
            let change = watched.then(|| Change::Add(to_value(&row)));
            self.nodes.insert(key.clone(), Arc::new(row));
            restored.nodes.insert(key.clone());
            match change {
                Some(c) => self.publish(RowKind::Node, key, cluster.to_string(), pool, c, tx),
                None => self.rev += 1,
            }
        }
        let count = restored.pools.len() + restored.nodes.len();
        if preempting > 0 {
            *self.preempting.entry(cluster.to_string()).or_default() += preempting;
        }
        if count > 0 {
            self.restored.insert(cluster.to_string(), restored);
        }
        count
    }

    /// `cluster`'s pool and node rows as JSON (`super::KnownRows`), serialized from the rows
    /// in place.
    pub fn write_known_rows(&self, cluster: &str, out: impl std::io::Write) -> std::io::Result<()> {
        #[derive(Serialize)]
        struct Rows<'a> {
            pools: Vec<&'a PoolRow>,
            nodes: Vec<&'a NodeRow>,
        }
        let rows = Rows {
            pools: self
                .pools
                .values()
                .filter(|p| p.cluster == cluster)
                .map(|p| &**p)
                .collect(),
            nodes: self
                .nodes
                .values()
                .filter(|n| n.cluster == cluster)
                .map(|n| &**n)
                .collect(),
        };
        // Rows are plain structs of strings, numbers and maps: only `out` can fail.
        serde_json::to_writer(out, &rows).map_err(std::io::Error::other)
    }

    /// The keys of `cluster`'s restored rows no watch has refreshed, taken: refreshed once
    /// its watches have all listed, each is removed (a row its cluster no longer has).
    pub fn take_restored(&mut self, cluster: &str) -> Vec<Dirty> {
        let Some(r) = self.restored.remove(cluster) else {
            return Vec::new();
        };
        r.pools
            .into_iter()
            .map(|k| (RowKind::Pool, k))
            .chain(r.nodes.into_iter().map(|k| (RowKind::Node, k)))
            .collect()
    }

    /// Whether the row `key` of `kind` in `cluster` is a restored one no watch has refreshed
    /// (see [`Views::restore`]).
    pub(super) fn restored_row(&self, cluster: &str, kind: RowKind, key: &str) -> bool {
        self.restored.get(cluster).is_some_and(|r| match kind {
            RowKind::Pool => r.pools.contains(key),
            RowKind::Node => r.nodes.contains(key),
            _ => false,
        })
    }
}
