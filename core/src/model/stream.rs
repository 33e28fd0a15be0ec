use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    CapacityCell, ClusterAudit, ClusterRow, EventRow, NodeRow, PoolRow, PreemptionView,
    SourceStatus, UndeliveredAlert, Wave,
};
use crate::domain::preemption::rates::RateRow;

/// What a stream (or snapshot) covers.
///
/// The dashboard needs only pools and clusters; a pool page also needs that pool's nodes,
/// events and preemptions; `/preemptions` needs every preemption, wave, rate and undelivered
/// alert. Scoping keeps a 10k-node fleet out of a browser that shows 40 pools.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    /// `Some((cluster, pool name))` to include that pool's nodes, events and preemptions.
    #[serde(default)]
    pub pool: Option<(String, String)>,
    /// Include the preemption rows: every cluster's with no `pool`, that pool's with one.
    #[serde(default)]
    pub preemptions: bool,
    /// Include the capacity grid's cells and sources (`/capacity`).
    #[serde(default)]
    pub capacity: bool,
}

impl Scope {
    /// The dashboard scope: every pool and cluster, no nodes or events.
    pub fn pools() -> Self {
        Self::default()
    }

    /// One pool's page: every pool and cluster, plus the nodes, events and preemptions of
    /// this pool.
    pub fn pool(cluster: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            pool: Some((cluster.into(), name.into())),
            preemptions: true,
            capacity: false,
        }
    }

    /// `/preemptions`: every pool and cluster, and every preemption row.
    pub fn preemptions() -> Self {
        Self {
            preemptions: true,
            ..Self::default()
        }
    }

    /// `/capacity`: every pool and cluster, and the capacity grid's rows.
    pub fn capacity() -> Self {
        Self {
            capacity: true,
            ..Self::default()
        }
    }

    /// The scope a stream URL's query names (see [`Scope::query`]).
    pub fn from_query(
        cluster: Option<String>,
        pool: Option<String>,
        preemptions: bool,
        capacity: bool,
    ) -> Self {
        match (cluster, pool) {
            (Some(c), Some(p)) => Self::pool(c, p),
            _ if preemptions => Self::preemptions(),
            _ if capacity => Self::capacity(),
            _ => Self::pools(),
        }
    }

    /// The query string of the stream URL for this scope (empty for [`Scope::pools`]).
    pub fn query(&self) -> String {
        match &self.pool {
            Some((c, n)) => format!(
                "cluster={}&pool={}",
                encode_component(c),
                encode_component(n)
            ),
            None if self.preemptions => "preemptions=1".to_string(),
            None if self.capacity => "capacity=1".to_string(),
            None => String::new(),
        }
    }

    /// Whether a node or event row of `cluster`/`pool` belongs in this scope.
    pub fn wants(&self, cluster: &str, pool: Option<&str>) -> bool {
        match (&self.pool, pool) {
            (Some((c, n)), Some(p)) => c == cluster && n == p,
            _ => false,
        }
    }

    /// Whether pool `name`'s row in `cluster` belongs in this scope: every pool's, but on a
    /// pool page only its own (the other pools' counts change a thousand times a second at
    /// 10k nodes; the header reads the cluster rows' sums).
    pub fn wants_pool_row(&self, cluster: &str, name: &str) -> bool {
        self.pool
            .as_ref()
            .is_none_or(|(c, n)| c == cluster && n == name)
    }

    /// Whether a preemption row of `cluster`/`pool` belongs in this scope.
    pub fn wants_preemption(&self, cluster: &str, pool: Option<&str>) -> bool {
        self.preemptions && (self.pool.is_none() || self.wants(cluster, pool))
    }

    /// Whether a cluster's readiness audit belongs in this scope: every cluster's on
    /// `/preemptions`, the pool's cluster's on a pool page.
    pub fn wants_audit(&self, cluster: &str) -> bool {
        self.preemptions && self.pool.as_ref().is_none_or(|(c, _)| c == cluster)
    }

    /// Whether a row about a whole cluster (its fallback pairs) belongs in this scope: every
    /// cluster's on fleet pages, the pool's cluster's on a pool page (few rows, which the
    /// page filters to its pool).
    pub fn wants_cluster(&self, cluster: &str) -> bool {
        self.pool.as_ref().is_none_or(|(c, _)| c == cluster)
    }

    /// Whether a launch failure row of `cluster` belongs in this scope: `/capacity`'s, and a
    /// pool page of that cluster (which filters to its pool); no other page shows them.
    pub fn wants_launch_failures(&self, cluster: &str) -> bool {
        self.capacity || self.pool.as_ref().is_some_and(|(c, _)| c == cluster)
    }

    /// Whether the fleet-wide preemption rows (waves, rates, undelivered alerts) belong in
    /// this scope: `/preemptions` only.
    pub fn wants_fleet_preemptions(&self) -> bool {
        self.preemptions && self.pool.is_none()
    }
}

/// Percent-encodes a URL path segment or query value (RFC 3986 unreserved characters stay).
pub fn encode_component(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The kinds of row a stream carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowKind {
    Cluster,
    Pool,
    Node,
    Event,
    /// A [`PreemptionView`], keyed by node uid.
    Preemption,
    /// A [`Wave`], keyed by [`Wave::key`].
    Wave,
    /// A [`RateRow`], keyed by [`RateRow::row_key`].
    Rate,
    /// An [`UndeliveredAlert`], keyed by [`UndeliveredAlert::key`].
    Alert,
    /// A [`ClusterAudit`] (when the spot readiness audit ran, and its errors), keyed by
    /// cluster.
    Audit,
    /// One pool's spot readiness audit ([`super::PoolReadiness`]), keyed by
    /// [`super::PoolReadiness::key`].
    PoolAudit,
    /// A [`CapacityCell`] of the capacity grid, keyed by [`CapacityCell::key`].
    Cell,
    /// A capacity [`SourceStatus`], keyed by its name.
    Source,
    /// An [`Alert`](super::Alert) firing now, keyed by its key: every page's header shows
    /// them.
    Firing,
    /// The work waiting for a pool or a cluster ([`super::WaitingPool`]), keyed by
    /// [`super::WaitingPool::key`].
    Waiting,
    /// A fallback pair over the last 24 h ([`super::FallbackRow`]), keyed by
    /// [`super::FallbackRow::key`].
    Fallback,
    /// A Kueue ClusterQueue now ([`super::QueueRow`]), keyed by [`super::QueueRow::key`].
    Queue,
    /// Karpenter's refused launches in one zone for one instance type
    /// ([`super::LaunchFailureRow`]), keyed by [`super::LaunchFailureRow::key`].
    LaunchFailure,
}

/// Everything in a scope at one revision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The serving process's epoch: random per start, so revisions of two processes (a
    /// restart, or two replicas behind one address) are never taken for each other.
    /// Below 2^53, so JavaScript reads it exactly.
    #[serde(default)]
    pub epoch: u64,
    /// The hub revision this snapshot is current at; deltas after it have `rev > this`.
    pub rev: u64,
    pub clusters: Vec<ClusterRow>,
    pub pools: Vec<PoolRow>,
    pub nodes: Vec<NodeRow>,
    pub events: Vec<EventRow>,
    /// Preemptions in scope, active first (by T=0), then those removed within the hour.
    #[serde(default)]
    pub preemptions: Vec<PreemptionView>,
    /// Newest first.
    #[serde(default)]
    pub waves: Vec<Wave>,
    /// The ledger's preemption rates (see [`crate::domain::preemption::rates`]).
    #[serde(default)]
    pub rates: Vec<RateRow>,
    /// Wave alerts the webhook did not take, newest first.
    #[serde(default)]
    pub alerts: Vec<UndeliveredAlert>,
    /// When the clusters in scope were audited, and their errors, by cluster.
    #[serde(default)]
    pub audits: Vec<ClusterAudit>,
    /// The spot readiness audit of the pools in scope, by key.
    #[serde(default)]
    pub pool_audits: Vec<super::PoolReadiness>,
    /// The capacity grid's cells, by key.
    #[serde(default)]
    pub cells: Vec<CapacityCell>,
    /// The capacity sources (the clusters and each feed) and what they last said.
    #[serde(default)]
    pub sources: Vec<SourceStatus>,
    /// Alerts firing now, by key (every scope).
    #[serde(default)]
    pub firing: Vec<super::Alert>,
    /// The waiting work of the clusters and pools in scope, by key.
    #[serde(default)]
    pub waiting: Vec<super::WaitingPool>,
    /// The fallback pairs of the clusters in scope over the last 24 h, by key.
    #[serde(default)]
    pub fallback: Vec<super::FallbackRow>,
    /// The Kueue ClusterQueues of the clusters in scope, by key (none without Kueue).
    #[serde(default)]
    pub queues: Vec<super::QueueRow>,
    /// Karpenter's refused launches of the clusters in scope over 7 d, by key.
    #[serde(default)]
    pub launch_failures: Vec<super::LaunchFailureRow>,
}

/// One change to one row. The unit of the live stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    /// The hub revision after this change; strictly increasing.
    pub rev: u64,
    pub kind: RowKind,
    /// The row's key (object uid; cluster name for clusters).
    pub key: String,
    pub change: Change,
}

/// What happened to a row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// A row that did not exist: the whole row as JSON.
    Add(Value),
    /// An existing row changed: a JSON merge patch (RFC 7386) of its fields, carrying only
    /// the fields that changed. See [`crate::live::patch`].
    Patch(Value),
    /// The row is gone.
    Remove,
}

/// The names of the Server-Sent Events of the live stream (`GET /api/v1/stream`).
///
/// `snapshot` carries a [`Snapshot`], `delta` a [`Delta`], both as JSON in `data:`; the SSE
/// `id:` is the revision, so a reconnecting browser's `Last-Event-ID` says where to resume.
pub mod sse {
    /// Event name of a [`super::Snapshot`].
    pub const SNAPSHOT: &str = "snapshot";
    /// Event name of a [`super::Delta`].
    pub const DELTA: &str = "delta";

    /// An event's id, which a reconnecting EventSource sends back as `Last-Event-ID`:
    /// `EPOCH-REV`.
    pub fn event_id(epoch: u64, rev: u64) -> String {
        format!("{epoch}-{rev}")
    }

    /// `(epoch, rev)` of an [`event_id`]; `None` for anything else (an id from before
    /// epochs, or garbage), which the server answers with a snapshot.
    pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
        let (epoch, rev) = id.trim().split_once('-')?;
        Some((epoch.parse().ok()?, rev.parse().ok()?))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn event_ids_round_trip_and_reject_the_rest() {
            assert_eq!(parse_event_id(&event_id(7, 42)), Some((7, 42)));
            assert_eq!(parse_event_id("42"), None);
            assert_eq!(parse_event_id("a-1"), None);
            assert_eq!(parse_event_id("1-"), None);
            assert_eq!(parse_event_id("-1-2"), None);
        }
    }
}
