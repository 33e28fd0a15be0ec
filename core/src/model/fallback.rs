//! Fallback to on-demand on the wire: each fallback pair, the on-demand node-hours it ran
//! while its spot side was short, what they cost beyond spot, and whether to move back
//! (`GET /api/v1/fallback`, and the stream's `fallback` rows).

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// The annotation, on an on-demand NodePool, that names the spot pool(s) it stands in for
/// (comma-separated NodePool names in the same cluster). It makes a pair of pools whose
/// instance types differ, or picks one spot pool where several share the type.
pub const FALLBACK_FOR_ANNOTATION: &str = "spotboard.dev/fallback-for";

/// How spotboard took two pools as a fallback pair.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum PairKind {
    /// A CKS spot NodePool and an on-demand one of the same instanceType in the same cluster
    /// (and zone, where both give one).
    #[default]
    SameInstanceType,
    /// The on-demand NodePool's [`FALLBACK_FOR_ANNOTATION`] names the spot pool.
    Annotation,
    /// One Karpenter NodePool whose requirements allow both `spot` and `on-demand`
    /// (`karpenter.sh/capacity-type`): Karpenter launches on-demand there only when spot is
    /// unavailable (Karpenter: NodePools, "capacity type").
    Karpenter,
}

/// What the pair's on-demand side should do now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MoveBack {
    /// No on-demand node runs: nothing to move.
    #[default]
    Nothing,
    /// On-demand nodes run and the spot side is short, or not fulfilling for long enough, or
    /// its zone does not rank well: keep them.
    Wait,
    /// The spot side has been fulfilling for the configured time and the Capacity Finder
    /// ranks its zone well: the on-demand nodes can move back to spot.
    MoveBack,
}

/// One fallback pair over a range: one on-demand pool and the spot pool(s) it stands in for,
/// then its figures (`spotboard_core::domain::fallback::pairs` gives the pairs with no
/// figures yet). Keyed by cluster and on-demand pool (an on-demand pool is in at most one
/// pair, so its hours are never counted twice). Flat, as every stream row: the browser
/// patches rows field by field, and only a plain struct can be patched
/// (`super::patch::apply`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FallbackRow {
    pub cluster: String,
    /// The spot side's zone (CKS clusters are zonal), when its pools give one.
    pub zone: Option<String>,
    /// The spot pool(s) the on-demand pool stands in for (for a Karpenter pair, the pool
    /// itself), sorted.
    pub spot_pools: Vec<String>,
    pub on_demand_pool: String,
    /// The spot side's instanceType (a Karpenter pool's types, comma-separated).
    pub instance_type: String,
    pub kind: PairKind,
    /// The range the hours cover, `[from, to)`.
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    /// Node-hours the on-demand pool's on-demand nodes ran in the range (from the ledger's
    /// node lifetimes).
    pub on_demand_node_hours: Decimal,
    /// Of those, node-hours while the spot side was short: any spot pool's `Capacity`
    /// condition not `True` (CoreWeave: Node Pool reference, `status.conditions`); for a
    /// Karpenter pair every on-demand node-hour.
    pub short_node_hours: Decimal,
    /// Hours in the range the spot side was short; `None` for a Karpenter pair (Karpenter
    /// NodePools have no capacity condition).
    pub spot_short_hours: Option<Decimal>,
    /// USD, to the cent: each on-demand node's hours while short × (its on-demand price − the
    /// spot price of the pair's instanceType, USD per instance-hour in its zone and cluster;
    /// a Karpenter node's own type), from the price catalog (source and date on
    /// `/api/v1/prices`). A node whose two prices are not both known is left
    /// out and counted in `unpriced_nodes`: never guessed.
    pub extra_usd: Decimal,
    /// On-demand nodes that ran while short whose hours could not be priced.
    pub unpriced_nodes: u32,
    /// On-demand nodes of the pool running now.
    pub on_demand_nodes_now: u32,
    /// Since when every spot pool of the pair has been fulfilling (`Capacity` True, no
    /// queued nodes); `None` while one is short, and for a Karpenter pair.
    pub spot_fulfilling_since: Option<DateTime<Utc>>,
    /// The Capacity Finder's score (0–100) for the spot side's zone × instanceType at the
    /// on-demand pool's node count; `None` when the grid has no cell for it.
    pub finder_score: Option<f64>,
    pub move_back: MoveBack,
    /// One sentence: why to wait, or what to move.
    pub note: String,
}

impl FallbackRow {
    /// `cluster/on-demand pool`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.cluster, self.on_demand_pool)
    }
}

/// `GET /api/v1/fallback`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FallbackReport {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub pairs: Vec<FallbackRow>,
    /// The sum of the pairs' `short_node_hours`.
    pub short_node_hours: Decimal,
    /// The sum of the pairs' `extra_usd`.
    pub extra_usd: Decimal,
    /// Minutes the spot side must have been fulfilling before a move back is advised
    /// (`--fallback-move-back-minutes`).
    pub move_back_after_minutes: u32,
}
