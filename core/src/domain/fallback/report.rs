//! What each fallback pair ran on-demand while its spot side was short, and whether to move
//! back.

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;

use crate::CapacityType;
use crate::domain::capacity::score::{GOOD_SCORE, human, rank};
use crate::domain::conditions_history::held;
use crate::domain::cost::cents;
use crate::domain::prices::PriceCatalog;
use crate::domain::savings::report::hours;
use crate::model::{
    CapacityGrid, ConditionTransition, FallbackReport, FallbackRow, Lifetime, MoveBack, PairKind,
    PoolRow,
};
use crate::nodepool::ConditionType;

/// The Capacity Finder score at or above which a zone ranks well enough to move back to:
/// the same bar the Finder's own "ranks well" uses.
pub const MOVE_BACK_SCORE: f64 = GOOD_SCORE;

/// What [`report`] reads.
pub struct Inputs<'a> {
    /// The pairs as [`super::pairs`] gives them, with no figures yet.
    pub pairs: &'a [FallbackRow],
    /// The pools as they are now (the pairs' spot pools at least): the spot side's current
    /// Capacity condition and queued nodes.
    pub pools: &'a [PoolRow],
    /// Node lifetimes that overlap `[from, to)` (the ledger's), and those running now (the
    /// advice counts them).
    pub lifetimes: &'a [Lifetime],
    /// `Capacity` transitions of any pools in `[from, to)`, with each pool's last one before
    /// `from` (so a pool short since before the range counts from its start).
    pub capacity: &'a [ConditionTransition],
    pub prices: &'a PriceCatalog,
    /// The capacity grid, for the Finder's score of the spot side's zone; `None` leaves
    /// every score unknown (and no move back is advised).
    pub grid: Option<&'a CapacityGrid>,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// Running lifetimes end here.
    pub now: DateTime<Utc>,
    /// How long the spot side must have been fulfilling before a move back is advised
    /// (`--fallback-move-back-minutes`).
    pub move_back_after: Duration,
}

/// Every pair's row over the range, and the totals.
pub fn report(inp: &Inputs) -> FallbackReport {
    let pairs: Vec<FallbackRow> = inp.pairs.iter().map(|p| row(inp, p)).collect();
    FallbackReport {
        from: Some(inp.from),
        to: Some(inp.to),
        short_node_hours: pairs.iter().map(|p| p.short_node_hours).sum(),
        extra_usd: pairs.iter().map(|p| p.extra_usd).sum(),
        move_back_after_minutes: u32::try_from(inp.move_back_after.num_minutes().max(0))
            .unwrap_or(u32::MAX),
        pairs,
    }
}

/// `[start, end)` intervals, sorted and merged.
fn merge(mut v: Vec<(DateTime<Utc>, DateTime<Utc>)>) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    v.sort();
    let mut out: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Seconds of `[s, e)` inside the merged `intervals`.
fn inside(s: DateTime<Utc>, e: DateTime<Utc>, intervals: &[(DateTime<Utc>, DateTime<Utc>)]) -> i64 {
    intervals
        .iter()
        .map(|&(a, b)| (e.min(b) - s.max(a)).num_seconds().max(0))
        .sum()
}

fn row(inp: &Inputs, pair: &FallbackRow) -> FallbackRow {
    let (from, to) = (inp.from, inp.to.min(inp.now));
    let karpenter = pair.kind == PairKind::Karpenter;
    // When the spot side was short: any of its pools' Capacity not True. A Karpenter pool
    // allows spot, so every on-demand node it launched stood in for spot.
    let short = if karpenter {
        vec![(from, to)]
    } else {
        let mut spans = Vec::new();
        for pool in &pair.spot_pools {
            let one: Vec<ConditionTransition> = inp
                .capacity
                .iter()
                .filter(|t| {
                    t.type_ == ConditionType::Capacity
                        && t.cluster == pair.cluster
                        && &t.pool == pool
                })
                .cloned()
                .collect();
            spans.extend(
                held(&one, from, to)
                    .into_iter()
                    .filter(|(t, _, _)| t.status != "True")
                    .map(|(_, s, e)| (s, e)),
            );
        }
        merge(spans)
    };
    let mut r = FallbackRow {
        from: Some(inp.from),
        to: Some(inp.to),
        spot_short_hours: (!karpenter).then(|| short.iter().map(|&(s, e)| hours(s, e)).sum()),
        ..pair.clone()
    };
    for l in inp.lifetimes.iter().filter(|l| {
        l.cluster == pair.cluster
            && l.pool.as_deref() == Some(pair.on_demand_pool.as_str())
            && l.capacity_type == CapacityType::OnDemand
    }) {
        let (s, e) = (
            l.started_at.max(from),
            l.ended_at.unwrap_or(inp.now).min(to),
        );
        if l.ended_at.is_none() {
            r.on_demand_nodes_now += 1;
        }
        if e <= s {
            continue;
        }
        r.on_demand_node_hours += hours(s, e);
        let short_s = inside(s, e, &short);
        if short_s == 0 {
            continue;
        }
        let h = Decimal::from(short_s) / Decimal::from(3600);
        r.short_node_hours += h;
        let look = |instance_type: &str, c| {
            inp.prices
                .lookup(&l.cluster, l.zone.as_deref(), instance_type, c)
        };
        let own = l.instance_type.as_deref().unwrap_or_default();
        // Beyond the spot pool's node: its type where an annotation pairs two types (a
        // Karpenter pool's nodes are each their own type).
        let spot_type = if karpenter {
            own
        } else {
            pair.instance_type.as_str()
        };
        match (
            look(own, CapacityType::OnDemand),
            look(spot_type, CapacityType::Spot),
        ) {
            (Some(od), Some(spot)) => r.extra_usd += h * (od.usd_per_hour - spot.usd_per_hour),
            _ => r.unpriced_nodes += 1,
        }
    }
    r.extra_usd = cents(r.extra_usd);
    r.short_node_hours = r.short_node_hours.round_dp(3);
    r.on_demand_node_hours = r.on_demand_node_hours.round_dp(3);
    r.spot_short_hours = r.spot_short_hours.map(|h| h.round_dp(3));
    advise(inp, pair, &mut r);
    r
}

/// The spot side's state now: `Err(sentence)` while a pool of it is short (or when it is
/// not known since when it has capacity), else since when all of it has been fulfilling:
/// the latest of its pools' Capacity True transitions (queued nodes are judged now only;
/// their history is not recorded).
fn spot_state(inp: &Inputs, pair: &FallbackRow) -> Result<Option<DateTime<Utc>>, String> {
    let mut since: Option<DateTime<Utc>> = None;
    for name in &pair.spot_pools {
        let Some(p) = inp
            .pools
            .iter()
            .find(|p| p.cluster == pair.cluster && &p.name == name)
        else {
            return Err(format!("spot pool {name} is not in the cluster"));
        };
        let capacity = p
            .conditions
            .iter()
            .find(|c| c.type_ == ConditionType::Capacity);
        let queued = p.queued_nodes.unwrap_or(0);
        match capacity {
            Some(c) if c.status == "True" && queued == 0 => match c.last_transition {
                Some(t) => since = since.max(Some(t)),
                None => {
                    return Err(format!(
                        "spot pool {name} has capacity, since a time its Capacity condition does not give"
                    ));
                }
            },
            Some(c) if c.status != "True" => {
                return Err(format!(
                    "spot pool {name} is short (Capacity: {})",
                    if c.reason.is_empty() {
                        &c.status
                    } else {
                        &c.reason
                    }
                ));
            }
            Some(_) => return Err(format!("spot pool {name} has {queued} queued nodes")),
            None => return Err(format!("spot pool {name} reports no Capacity condition")),
        }
    }
    Ok(since)
}

/// Fills the move-back state, the Finder's score and the note.
fn advise(inp: &Inputs, pair: &FallbackRow, r: &mut FallbackRow) {
    let n = r.on_demand_nodes_now;
    if n == 0 {
        r.move_back = MoveBack::Nothing;
        r.note = format!("no on-demand node of {} runs", pair.on_demand_pool);
        return;
    }
    let nodes = if n == 1 { "node" } else { "nodes" };
    r.finder_score = inp.grid.and_then(|g| {
        rank(g, &pair.instance_type, n, None, inp.now)
            .ranked
            .into_iter()
            .find(|z| {
                z.cluster == pair.cluster && pair.zone.as_deref().is_none_or(|zone| z.zone == zone)
            })
            .map(|z| z.score)
    });
    r.move_back = MoveBack::Wait;
    if pair.kind == PairKind::Karpenter {
        r.note = format!(
            "{n} on-demand {nodes}: Karpenter launches on-demand in a NodePool that allows spot only when spot is unavailable; it has no capacity condition to say when spot is back"
        );
        return;
    }
    let since = match spot_state(inp, pair) {
        Err(why) => {
            r.note = format!("keep the {n} on-demand {nodes}: {why}");
            return;
        }
        Ok(since) => since,
    };
    r.spot_fulfilling_since = since;
    let held_for = since.map(|s| (inp.now - s).max(Duration::zero()));
    let zone = pair.zone.as_deref().unwrap_or(&pair.cluster);
    match held_for {
        Some(d) if d < inp.move_back_after => {
            r.note = format!(
                "spot has had capacity for {} of the {} asked before moving back",
                human(d.num_seconds() as u64),
                human(inp.move_back_after.num_seconds().max(0) as u64)
            );
        }
        _ => {
            let held = held_for.map_or_else(
                || "spot has capacity".to_string(),
                |d| {
                    format!(
                        "spot has had capacity for {}",
                        human(d.num_seconds() as u64)
                    )
                },
            );
            match r.finder_score {
                Some(s) if s >= MOVE_BACK_SCORE => {
                    r.move_back = MoveBack::MoveBack;
                    r.note = format!(
                        "move back: {held} and the Capacity Finder scores {zone} {s:.0} for {n} × {}; move the {n} on-demand {nodes} of {} to {}",
                        pair.instance_type,
                        pair.on_demand_pool,
                        pair.spot_pools.join(", ")
                    );
                }
                Some(s) => {
                    r.note = format!(
                        "{held}, but the Capacity Finder scores {zone} {:.0} for {n} × {} (below {MOVE_BACK_SCORE:.0})",
                        // Down, so 69.7 never reads as 70 below 70.
                        s.floor(),
                        pair.instance_type
                    );
                }
                None => {
                    r.note = format!(
                        "{held}, but the Capacity Finder has no score for {} in {zone}",
                        pair.instance_type
                    );
                }
            }
        }
    }
}
