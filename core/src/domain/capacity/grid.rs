//! Building the capacity grid from what the clusters show and what the feeds say.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::Provider;
use crate::catalog;
use crate::domain::capacity::obtainability::{PoolHistory, percentile};
use crate::domain::cost::unit_prices;
use crate::domain::preemption::rates::{RateRow, zone_type_24h};
use crate::model::{CapacityCell, CapacityFeed, CapacityGrid, FeedEntry, PoolRow, SourceStatus};

/// Everything the grid is built from, gathered by the server.
pub struct GridInputs<'a> {
    /// `(cluster, zone)` of every watched cluster whose zone is known.
    pub clusters: &'a [(String, String)],
    /// Shared with the server's hub, which holds them: read every 2 s, not copied.
    pub pools: &'a [Arc<PoolRow>],
    /// The ledger's preemption rates ([`crate::domain::preemption::rates`]); cells read the
    /// 24 h row of their zone and instance type.
    pub rates: &'a [RateRow],
    /// Seconds from AtTarget False to True, per `(zone, instance type)`.
    pub fulfil: &'a BTreeMap<(String, String), Vec<u64>>,
    /// The ledger's history per `(cluster, pool)` ([`super::obtainability::per_pool`]);
    /// `None` without a ledger or before it is read.
    pub history: Option<&'a BTreeMap<(String, String), PoolHistory>>,
    /// Each feed's status and its last good document.
    pub feeds: &'a [(SourceStatus, Option<CapacityFeed>)],
    pub now: DateTime<Utc>,
}

/// Capacity condition reasons from best to worst, for "the worst among the pools".
const REASON_ORDER: [&str; 6] = [
    "Sufficient",
    "PartialNodeAffinity",
    "Partial",
    "QueuedAwaitingCapacity",
    "NoneAvailableNodeAffinity",
    "NoneAvailable",
];

fn worse(a: Option<String>, b: &str) -> Option<String> {
    let rank = |r: &str| REASON_ORDER.iter().position(|x| *x == r).unwrap_or(2);
    match a {
        Some(a) if rank(&a) >= rank(b) => Some(a),
        _ => Some(b.to_string()),
    }
}

/// The median of `v` (the lower middle for an even count); `None` when empty.
pub fn median(v: &[u64]) -> Option<u64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.get(s.len().checked_sub(1)? / 2).copied()
}

/// The latest spot figure per (zone, instance type) over all feeds, with its confidentiality.
fn feed_index(
    feeds: &[(SourceStatus, Option<CapacityFeed>)],
) -> BTreeMap<(String, String), (FeedEntry, DateTime<Utc>, bool)> {
    let mut out: BTreeMap<(String, String), (FeedEntry, DateTime<Utc>, bool)> = BTreeMap::new();
    for feed in feeds.iter().filter_map(|(_, f)| f.as_ref()) {
        for e in feed
            .entries
            .iter()
            .filter(|e| e.capacity_type == crate::CapacityType::Spot)
        {
            let at = e.observed_at.unwrap_or(feed.generated_at);
            let key = (e.zone.to_ascii_uppercase(), e.instance_type.clone());
            if out.get(&key).is_none_or(|(_, t, _)| at > *t) {
                out.insert(key, (e.clone(), at, feed.confidential));
            }
        }
    }
    out
}

/// Whether `cluster` in `zone` is a CKS cluster: its zone is one of CoreWeave's, or one of its
/// pools is a CoreWeave NodePool (a zone newer than the shipped list).
fn is_cks(cluster: &str, zone: &str, pools: &[Arc<PoolRow>]) -> bool {
    catalog::zones()
        .iter()
        .any(|z| z.eq_ignore_ascii_case(zone))
        || pools
            .iter()
            .any(|p| p.cluster == cluster && p.provider == Provider::Cks)
}

/// The grid, a CKS grid: columns are the CKS clusters with a known zone, rows the spot-eligible
/// catalog types plus any other type a pool of those clusters uses. GKE and Karpenter clusters
/// are left out: their instance types have no CoreWeave zone, price or capacity condition, and
/// every cell would read "unknown".
pub fn build_grid(inp: &GridInputs) -> CapacityGrid {
    let feeds = feed_index(inp.feeds);
    let clusters: Vec<(String, String)> = inp
        .clusters
        .iter()
        .filter(|(c, z)| is_cks(c, z, inp.pools))
        .cloned()
        .collect();
    let mut types: Vec<String> = catalog::instance_types()
        .iter()
        .filter(|t| t.spot_ok)
        .map(|t| t.id.clone())
        .collect();
    for p in inp.pools {
        if clusters.iter().any(|(c, _)| *c == p.cluster)
            && !types.contains(&p.instance_type)
            && !p.instance_type.is_empty()
        {
            types.push(p.instance_type.clone());
        }
    }
    let mut cells = Vec::new();
    for (cluster, zone) in &clusters {
        for t in &types {
            let mut cell = CapacityCell {
                cluster: cluster.clone(),
                zone: zone.clone(),
                instance_type: t.clone(),
                observed_at: Some(inp.now),
                ..Default::default()
            };
            let spot_pools: Vec<&PoolRow> = inp
                .pools
                .iter()
                .filter(|p| &p.cluster == cluster && &p.instance_type == t)
                .filter(|p| p.capacity_type == crate::CapacityType::Spot)
                .map(|p| &**p)
                .collect();
            // A zone where the fleet runs no spot pool of the type has no history of its own.
            if let Some(history) = inp.history.filter(|_| !spot_pools.is_empty()) {
                let mine: Vec<&PoolHistory> = spot_pools
                    .iter()
                    .filter_map(|p| history.get(&(p.cluster.clone(), p.name.clone())))
                    .collect();
                cell.queued_seconds_24h =
                    Some(mine.iter().map(|h| h.queued_24h_s).max().unwrap_or(0));
                cell.queued_seconds_7d =
                    Some(mine.iter().map(|h| h.queued_7d_s).max().unwrap_or(0));
                cell.scale_ups_7d = Some(mine.iter().map(|h| h.scale_ups_7d).sum());
                cell.fulfilled_7d = Some(mine.iter().map(|h| h.fulfilled_7d).sum());
            }
            for p in &spot_pools {
                cell.pools += 1;
                cell.queued_nodes += i64::from(p.queued_nodes.unwrap_or(0));
                cell.current_nodes += i64::from(p.current_nodes.unwrap_or(0));
                if let Some(c) = p
                    .conditions
                    .iter()
                    .find(|c| c.type_ == crate::nodepool::ConditionType::Capacity)
                {
                    cell.capacity_reason = worse(cell.capacity_reason.take(), &c.reason);
                }
            }
            if let Some(r) = zone_type_24h(inp.rates, zone, t) {
                cell.preemption_rate_pct = Some(r.rate_pct);
                cell.spot_nodes = i64::from(r.spot_nodes);
            }
            let samples = inp.fulfil.get(&(zone.clone(), t.clone()));
            cell.median_fulfil_seconds = samples.and_then(|v| median(v));
            cell.p95_fulfil_seconds = samples.and_then(|v| percentile(v, 0.95));
            if let Some((e, at, confidential)) = feeds.get(&(zone.to_ascii_uppercase(), t.clone()))
            {
                cell.available_nodes = Some(e.available_nodes);
                cell.available_as_of = Some(*at);
                cell.confidential = *confidential;
            }
            if let Some(it) = catalog::instance_type(t) {
                let prices = unit_prices(it, zone);
                cell.spot_usd_h = prices.spot.map(|p| p.to_string());
                cell.on_demand_usd_h = prices.on_demand.map(|p| p.to_string());
            }
            cells.push(cell);
        }
    }
    CapacityGrid {
        generated_at: Some(inp.now),
        zones: clusters,
        instance_types: types,
        confidential: cells.iter().any(|c| c.confidential),
        cells,
        sources: inp.feeds.iter().map(|(s, _)| s.clone()).collect(),
        // Filled by the server from Karpenter's events and the ledger
        // ([`super::launch_failures::rows`]): they are not cells of this grid.
        launch_failures: Vec::new(),
    }
}
