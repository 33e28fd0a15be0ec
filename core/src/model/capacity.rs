//! Capacity by zone and the Capacity Finder: the feed format spotboard reads, and the grid and
//! ranking it shows.
//!
//! # The capacity feed (a JSON file or URL, `--capacity-feed`)
//! ```json
//! {
//!   "source": "who produced it",
//!   "generatedAt": "2026-11-21T08:00:00Z",
//!   "confidential": false,
//!   "entries": [
//!     { "zone": "US-EAST-04A", "instanceType": "gd-8xh100ib-i128",
//!       "capacityType": "spot", "availableNodes": 7, "observedAt": "2026-11-21T07:59:30Z" }
//!   ]
//! }
//! ```
//! `availableNodes` is how many more nodes of that type the zone could hand out now.
//! `capacityType` is `spot` or `on-demand`. `observedAt` defaults to `generatedAt`. A feed with
//! `confidential: true` (CoreWeave's own capacity data is confidential to the customer) is
//! marked as such wherever it is shown or exported. The embedded cluster serves this format at
//! `GET /capacity-feed` on each zone's API server.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::CapacityType;

/// A capacity feed document (see the module docs for the format).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityFeed {
    /// Who produced the feed, shown beside its figures.
    #[serde(default)]
    pub source: String,
    pub generated_at: DateTime<Utc>,
    /// Results the customer must not share (CoreWeave Capacity Data).
    #[serde(default)]
    pub confidential: bool,
    #[serde(default)]
    pub entries: Vec<FeedEntry>,
}

/// One zone × instance type × capacity type of a feed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedEntry {
    pub zone: String,
    pub instance_type: String,
    /// `spot` or `on-demand` (anything else reads as `unknown` and is not used).
    pub capacity_type: CapacityType,
    /// Nodes the zone could hand out now.
    pub available_nodes: u32,
    #[serde(default)]
    pub observed_at: Option<DateTime<Utc>>,
}

/// What one capacity source last said, for the page's "sources" line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceStatus {
    /// `clusters`, a feed file path or URL.
    pub name: String,
    /// The feed's own `source` text, once read.
    pub source: Option<String>,
    /// Time of the last successful read.
    pub as_of: Option<DateTime<Utc>>,
    /// The last error, when the last read failed (the previous data is kept and shown stale).
    pub error: Option<String>,
    pub confidential: bool,
}

/// One cell of the grid: what spotboard knows about spot for an instance type in a zone.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CapacityCell {
    pub cluster: String,
    pub zone: String,
    pub instance_type: String,
    /// The worst Capacity condition reason among this zone's spot pools of this type
    /// (Sufficient, Partial, PartialNodeAffinity, NoneAvailable, NoneAvailableNodeAffinity,
    /// QueuedAwaitingCapacity), `None` without such pools.
    pub capacity_reason: Option<String>,
    /// Spot pools of this type in the zone.
    pub pools: u32,
    /// Sum of `status.queuedNodes` over those pools.
    pub queued_nodes: i64,
    /// Sum of `status.currentNodes` (delivered) over those pools.
    pub current_nodes: i64,
    /// Median seconds from a pool falling below target (AtTarget False) to reaching it again,
    /// over recent observations in this zone for this type.
    pub median_fulfil_seconds: Option<u64>,
    /// The 95th percentile (nearest rank) of the same samples.
    #[serde(default)]
    pub p95_fulfil_seconds: Option<u64>,
    /// This fleet's own history here, from the ledger's condition history (`None` without a
    /// ledger or before it is read): the longest any of these spot pools sat with Capacity
    /// reason `QueuedAwaitingCapacity` in the last 24 h, seconds.
    #[serde(default)]
    pub queued_seconds_24h: Option<u64>,
    /// The same over the last 7 d.
    #[serde(default)]
    pub queued_seconds_7d: Option<u64>,
    /// Times these pools fell below `targetNodes` (AtTarget False) in the last 7 d, and how
    /// many of those reached it again.
    #[serde(default)]
    pub scale_ups_7d: Option<u32>,
    #[serde(default)]
    pub fulfilled_7d: Option<u32>,
    /// The ledger's 24 h preemption rate of this type in this zone, percent: spot nodes
    /// preempted in the window over spot nodes that ran in it (the definition of
    /// [`crate::domain::preemption::rates`]); `None` when the ledger has no such node.
    pub preemption_rate_pct: Option<f64>,
    /// Spot nodes that ran in the window: the rate's denominator.
    pub spot_nodes: i64,
    /// From the feed: nodes the zone could hand out now.
    pub available_nodes: Option<u32>,
    /// When the feed's figure was observed.
    pub available_as_of: Option<DateTime<Utc>>,
    /// The feed's figure is confidential (CoreWeave Capacity Data).
    pub confidential: bool,
    /// Spot price, USD per instance-hour, as decimal text (catalog; `None` when unpublished).
    pub spot_usd_h: Option<String>,
    /// On-demand price, USD per instance-hour, as decimal text.
    pub on_demand_usd_h: Option<String>,
    /// When the cluster data was observed (the grid's build time for live clusters).
    pub observed_at: Option<DateTime<Utc>>,
}

/// `GET /api/v1/capacity`: zones (columns) × instance types (rows).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CapacityGrid {
    pub generated_at: Option<DateTime<Utc>>,
    /// `(cluster, zone)` in display order.
    pub zones: Vec<(String, String)>,
    pub instance_types: Vec<String>,
    pub cells: Vec<CapacityCell>,
    pub sources: Vec<SourceStatus>,
    /// Some figure comes from a confidential source.
    pub confidential: bool,
    /// Karpenter's refused launches in the clusters that run Karpenter, most failures in 24 h
    /// first (the grid's columns are CKS zones; these are not).
    #[serde(default)]
    pub launch_failures: Vec<LaunchFailureRow>,
}

/// Karpenter launches the cloud provider refused for want of capacity, per cluster × zone ×
/// instance type, over the last 7 days: `InsufficientCapacityError` events on NodeClaims
/// (kubernetes-sigs/karpenter), each counted once per offering its message names. The ledger
/// keeps them past the one hour Kubernetes keeps events; without a ledger only the events the
/// cluster still holds count.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LaunchFailureRow {
    pub cluster: String,
    /// The zone the provider's message names (AWS: "in the Availability Zone you requested
    /// (us-east-1a)"); empty when it names none.
    pub zone: String,
    /// The instance type the provider's message names ("sufficient p5.48xlarge capacity");
    /// empty when it names none.
    pub instance_type: String,
    /// The Karpenter NodePools whose NodeClaims failed here, by name (a NodeClaim is named
    /// `<nodepool>-<suffix>`); empty when no watched NodePool matches.
    pub pools: Vec<String>,
    /// Failed launches in the last 24 h and 7 d.
    pub failures_24h: u32,
    pub failures_7d: u32,
    /// When the last one was seen (the event's `lastTimestamp`).
    pub last_at: Option<DateTime<Utc>>,
    /// The provider's error in the last one, at most 1 KB.
    pub last_message: String,
}

impl LaunchFailureRow {
    /// The row's key on the live stream: `cluster/zone/instance type`.
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.cluster, self.zone, self.instance_type)
    }
}

impl CapacityCell {
    /// The cell's key on the live stream: its cluster and instance type.
    pub fn key(&self) -> String {
        format!("{}/{}", self.cluster, self.instance_type)
    }
}

impl CapacityGrid {
    /// The grid as the live stream carries it, cell by cell: columns are the cells' clusters
    /// by name (the server's order), rows the catalog's order, then other types by name.
    pub fn from_rows(mut cells: Vec<CapacityCell>, sources: Vec<SourceStatus>) -> Self {
        let mut zones: Vec<(String, String)> = cells
            .iter()
            .map(|c| (c.cluster.clone(), c.zone.clone()))
            .collect();
        zones.sort();
        zones.dedup();
        let catalog_index = |t: &str| {
            crate::catalog::instance_types()
                .iter()
                .position(|it| it.id == t)
                .unwrap_or(usize::MAX)
        };
        let mut instance_types: Vec<String> =
            cells.iter().map(|c| c.instance_type.clone()).collect();
        instance_types.sort_by(|a, b| catalog_index(a).cmp(&catalog_index(b)).then(a.cmp(b)));
        instance_types.dedup();
        cells.sort_by_key(CapacityCell::key);
        Self {
            generated_at: None,
            confidential: cells.iter().any(|c| c.confidential),
            zones,
            instance_types,
            cells,
            sources,
            launch_failures: Vec::new(),
        }
    }

    /// The cell of `zone` × `instance_type`, if any.
    pub fn cell(&self, zone: &str, instance_type: &str) -> Option<&CapacityCell> {
        self.cells
            .iter()
            .find(|c| c.zone == zone && c.instance_type == instance_type)
    }
}

/// One part of a zone's score: its value in [0, 1], its weight, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScorePart {
    /// `availability`, `preemption`, `price`, `fulfilment` or `freshness`.
    pub name: String,
    pub value: f64,
    pub weight: f64,
    pub why: String,
}

/// A zone ranked for one instance type × node count.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ZoneScore {
    pub cluster: String,
    pub zone: String,
    /// 0–100; 0 when the zone cannot place any of the request.
    pub score: f64,
    pub parts: Vec<ScorePart>,
    pub confidential: bool,
    /// This fleet's own history in the zone for the type, in one line ("queued 40 min in
    /// 24 h, 2.1 h in 7 d; 3 of 4 scale-ups fulfilled"); `None` when it has none.
    #[serde(default)]
    pub history: Option<String>,
    /// Set when the score ranks the zone well (70 or more) but this fleet's pools waited
    /// 10 minutes or more for capacity here in the last 24 h: the two disagree, and the page
    /// says so.
    #[serde(default)]
    pub history_warning: Option<String>,
}

/// `GET /api/v1/capacity-finder`: zones ranked for `instance_type` × `count`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FinderResult {
    pub instance_type: String,
    pub count: u32,
    pub region: Option<String>,
    /// False for types Spot does not offer (Superchips), with the reason.
    pub eligible: bool,
    pub reason: Option<String>,
    pub ranked: Vec<ZoneScore>,
    /// Per zone, `(node count, score)` points for the chart: how the score falls as the
    /// request grows.
    pub curves: Vec<(String, Vec<(u32, f64)>)>,
    pub confidential: bool,
}
