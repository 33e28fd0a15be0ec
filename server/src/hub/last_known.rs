//! Each cluster's last known state: what a restarted spotboard shows, marked stale since it
//! was current, until the cluster's watches have listed it again. Kept as the published pool
//! and node rows (the projection), not as Kubernetes objects: what a browser was shown is
//! what it is shown again, and nothing raw is stored. The ledger keeps them
//! (`crate::ledger::last_known`).
//!
//! A restored row is replaced by the row the watches make for its key; a key the cluster no
//! longer has is removed once every kind of it has been listed. Restored rows are shown, not
//! judged: followers get no fact for one and do not find it in their first look, and the
//! alerts, the capacity grid, the readiness audit and `/metrics` leave them out; when the
//! watches refresh a row the followers get it as new. So the ledger's recorder and the
//! preemption tracker start from what the cluster says (a node under notice when the state
//! was kept, and gone since, is no preemption seen now).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use spotboard_core::model::{LinkState, NodeRow, PoolRow};

use super::{ALL_KINDS, Hub};

/// One cluster's rows as kept: its pools and nodes.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct KnownRows {
    pub pools: Vec<PoolRow>,
    pub nodes: Vec<NodeRow>,
}

/// The cluster row's message while it shows its last known state.
pub const RESTORED_MESSAGE: &str = "showing the last known state until the cluster is listed";

impl Hub {
    /// `cluster`'s pool and node rows as JSON ([`KnownRows`]), when every kind of it has been
    /// listed; `None` for a cluster still connecting or showing its restored state, whose
    /// kept state stays the newer one.
    pub fn known_rows(&self, cluster: &str) -> Option<String> {
        self.read(|s| {
            let data = s.clusters.get(cluster)?;
            (data.synced & ALL_KINDS == ALL_KINDS).then(|| s.views.known_rows_json(cluster))
        })
    }

    /// Whether every cluster has been listed or shows its last known state, and how many
    /// show their last known state still: what `/readyz?last-known=true` answers.
    pub fn serving(&self) -> (bool, usize) {
        self.read(|s| {
            let listed = |d: &super::ClusterData| d.synced & ALL_KINDS == ALL_KINDS;
            let restored = s
                .clusters
                .values()
                .filter(|d| !listed(d) && d.restored.is_some())
                .count();
            let all = s
                .clusters
                .values()
                .all(|d| listed(d) || d.restored.is_some());
            (all, restored)
        })
    }

    /// Shows `rows` as `cluster`'s last known state, current at `as_of`: the rows are
    /// published, and the cluster marked stale since `as_of` until it is listed. Nothing is
    /// restored once any kind of the cluster has been listed, or for a cluster the hub does
    /// not watch. Returns how many rows were restored.
    pub fn restore(&self, cluster: &str, as_of: DateTime<Utc>, rows: KnownRows) -> usize {
        self.write(|s, tx| {
            let Some(data) = s.clusters.get_mut(cluster) else {
                return 0;
            };
            if data.synced != 0 {
                return 0;
            }
            let n = s.views.restore(cluster, rows.pools, rows.nodes, tx);
            if n == 0 {
                return 0;
            }
            // A later outage keeps `since` here (see `set_link`).
            data.last_good = Some(as_of);
            data.restored = Some(as_of);
            if let Some(mut row) = s.views.cluster(cluster).cloned() {
                row.state = LinkState::Stale;
                row.since = Some(as_of);
                row.message = Some(RESTORED_MESSAGE.into());
                s.views.set_cluster(row, tx);
            }
            n
        })
    }
}
