//! What the hub's readers take from the published rows: the capacity grid's inputs, the
//! rows the periodic derivers go over (pools, queues, the waiting work), the ledger's and the
//! readiness audit's first look, and the events the followers watch for. Restored rows (a
//! last known state) are shown, not judged: the readers that judge leave them out.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use spotboard_core::{
    CapacityType,
    domain::preemption::readiness::NodeFacts,
    model::{EventRow, NodeRow, PoolRow, RowKind},
};

use super::{Views, is_eviction_signal, is_launch_failure};

impl Views {
    /// What the capacity grid is built from: `(cluster, zone)` of clusters with a known zone,
    /// every pool, and the ledger's preemption rates as last published.
    pub fn capacity_inputs(&self) -> crate::hub::CapacityInputs {
        crate::hub::CapacityInputs {
            clusters: self
                .clusters
                .values()
                .filter_map(|c| Some((c.name.clone(), c.zone.clone()?)))
                .collect(),
            pools: self.pool_rows(),
            rates: self.derived.rates.values().cloned().collect(),
            launch_failures: self.launch_failure_signals(),
        }
    }

    /// Each launch failure row as last published, sorted by key, for `/metrics`.
    pub fn launch_failure_rows(&self) -> Vec<spotboard_core::model::LaunchFailureRow> {
        let mut rows: Vec<spotboard_core::model::LaunchFailureRow> =
            self.derived.launch_failures.values().cloned().collect();
        rows.sort_by_key(spotboard_core::model::LaunchFailureRow::key);
        rows
    }

    /// Each Kueue ClusterQueue's row as last published, sorted by key, for `/metrics`.
    pub fn queue_rows(&self) -> Vec<spotboard_core::model::QueueRow> {
        let mut rows: Vec<spotboard_core::model::QueueRow> =
            self.derived.queues.values().cloned().collect();
        rows.sort_by_key(spotboard_core::model::QueueRow::key);
        rows
    }

    /// Each cluster's waiting row as last published, sorted by cluster (alerts that start
    /// together are announced in that order).
    pub fn waiting_clusters(&self) -> Vec<spotboard_core::model::WaitingPool> {
        let mut rows: Vec<spotboard_core::model::WaitingPool> = self
            .derived
            .waiting
            .values()
            .filter(|w| w.pool.is_none())
            .cloned()
            .collect();
        rows.sort_by(|a, b| a.cluster.cmp(&b.cluster));
        rows
    }

    /// Every pool row the watches made, shared (not copied), sorted by cluster then name
    /// (alerts that start together are announced in that order). Restored rows are left out:
    /// the alerts, the capacity grid and `/metrics` judge what was seen, not what was last
    /// known.
    pub fn pool_rows(&self) -> Vec<Arc<PoolRow>> {
        let mut rows: Vec<Arc<PoolRow>> = self
            .pools
            .values()
            .filter(|p| !self.restored_row(&p.cluster, RowKind::Pool, &p.key))
            .cloned()
            .collect();
        rows.sort_by(|a, b| (&a.cluster, &a.name).cmp(&(&b.cluster, &b.name)));
        rows
    }

    /// Every pool row shown, the restored ones too, sorted by cluster then name: what a page
    /// and `/api/v1/pools` show.
    pub fn shown_pool_rows(&self) -> Vec<Arc<PoolRow>> {
        let mut rows: Vec<Arc<PoolRow>> = self.pools.values().cloned().collect();
        rows.sort_by(|a, b| (&a.cluster, &a.name).cmp(&(&b.cluster, &b.name)));
        rows
    }

    pub fn has_node(&self, key: &str) -> bool {
        self.nodes.contains_key(key)
    }

    /// The node named `name` in `cluster` (a scan: for a person's request, not a loop).
    pub fn node_named(&self, cluster: &str, name: &str) -> Option<NodeRow> {
        self.nodes
            .values()
            .find(|n| n.cluster == cluster && n.name == name)
            .map(|n| NodeRow::clone(n))
    }

    /// Every node and pool the watches made (restored rows left out: a follower starts from
    /// what was seen), and the events whose reason is `reason`: the ledger's view.
    pub fn ledger_inputs(&self, reason: &str) -> (Vec<Arc<NodeRow>>, Vec<PoolRow>, Vec<EventRow>) {
        (
            self.nodes
                .values()
                .filter(|n| !self.restored_row(&n.cluster, RowKind::Node, &n.key))
                .cloned()
                .collect(),
            self.pools
                .values()
                .filter(|p| !self.restored_row(&p.cluster, RowKind::Pool, &p.key))
                .map(|r| PoolRow::clone(r))
                .collect(),
            self.events_with_reason(reason),
        )
    }

    /// Each node as the readiness audit reads it, per cluster: a node is spot when its own
    /// capacity type is, or its pool's (a CKS node's comes from its NodePool's computeClass).
    pub fn audit_nodes(&self) -> BTreeMap<String, Vec<NodeFacts>> {
        let spot_pools: HashSet<(&str, &str)> = self
            .pools
            .values()
            .filter(|p| p.capacity_type == CapacityType::Spot)
            .map(|p| (p.cluster.as_str(), p.name.as_str()))
            .collect();
        let mut out: BTreeMap<String, Vec<NodeFacts>> = BTreeMap::new();
        let seen = self
            .nodes
            .values()
            .filter(|n| !self.restored_row(&n.cluster, RowKind::Node, &n.key));
        for n in seen {
            let facts = NodeFacts {
                name: n.name.clone(),
                pool: n.pool.clone(),
                zone: n.zone.clone(),
                provider: n.provider,
                spot: n.capacity_type == CapacityType::Spot
                    || n.pool
                        .as_deref()
                        .is_some_and(|p| spot_pools.contains(&(n.cluster.as_str(), p))),
            };
            // Not `entry`: that would copy the cluster's name for each of 10,000 nodes.
            match out.get_mut(n.cluster.as_str()) {
                Some(nodes) => nodes.push(facts),
                None => {
                    out.insert(n.cluster.clone(), vec![facts]);
                }
            }
        }
        out
    }

    /// Events about Nodes that report refused evictions.
    pub fn eviction_signals(&self) -> Vec<EventRow> {
        self.events_of(is_eviction_signal)
    }

    /// Karpenter's `InsufficientCapacityError` events about NodeClaims.
    pub fn launch_failure_signals(&self) -> Vec<EventRow> {
        self.events_of(is_launch_failure)
    }

    /// The events `wanted` picks.
    pub fn events_of(&self, wanted: fn(&EventRow) -> bool) -> Vec<EventRow> {
        self.events
            .values()
            .filter(|e| wanted(e))
            .cloned()
            .collect()
    }

    fn events_with_reason(&self, reason: &str) -> Vec<EventRow> {
        self.events
            .values()
            .filter(|e| e.reason == reason)
            .cloned()
            .collect()
    }
}
