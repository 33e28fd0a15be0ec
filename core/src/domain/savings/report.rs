//! The savings report over a time range.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Duration, Utc};
use rust_decimal::Decimal;

use super::net::{self, NetParts};
use crate::domain::cost::{HOURS_PER_MONTH, cents};
use crate::domain::prices::{CapacityType, PriceCatalog};
use crate::model::{
    CostBucket, CostRow, FleetGroup, Lifetime, PreemptionCost, PricedLine, RunRate, SavingsReport,
    UnitPrice,
};

/// What a report is computed from.
pub struct ReportInput<'a> {
    pub lifetimes: &'a [Lifetime],
    pub prices: &'a PriceCatalog,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// The present: running lifetimes end here, and the run rate is taken here.
    pub now: DateTime<Utc>,
    /// A reserved price to compare with, percent off on-demand (`--reserved-discount-pct`).
    pub reserved_discount_pct: Option<Decimal>,
}

/// The key of a lifetime in one breakdown (its cluster, zone, …).
type GroupKey = fn(&Lifetime) -> String;

/// Hours between two instants, exact to the second.
pub fn hours(from: DateTime<Utc>, to: DateTime<Utc>) -> Decimal {
    Decimal::from((to - from).num_seconds().max(0)) / Decimal::from(3600)
}

pub(crate) struct Priced<'a> {
    pub(crate) life: &'a Lifetime,
    pub(crate) paid: Option<UnitPrice>,
    pub(crate) on_demand: Option<UnitPrice>,
    /// The spot price of the same type, whatever the node ran as (for the what-if).
    spot: Option<UnitPrice>,
}

impl Priced<'_> {
    pub(crate) fn known(&self) -> Option<(Decimal, Decimal)> {
        Some((
            self.paid.as_ref()?.usd_per_hour,
            self.on_demand.as_ref()?.usd_per_hour,
        ))
    }
}

pub(crate) fn price<'a>(prices: &PriceCatalog, life: &'a Lifetime) -> Priced<'a> {
    let look = |c| {
        prices.lookup(
            &life.cluster,
            life.zone.as_deref(),
            life.instance_type.as_deref().unwrap_or_default(),
            c,
        )
    };
    Priced {
        life,
        paid: look(life.capacity_type),
        on_demand: look(CapacityType::OnDemand),
        spot: look(CapacityType::Spot),
    }
}

/// Hours of `life` inside `[from, to]`, running lifetimes ending at `now`.
pub(crate) fn overlap(
    life: &Lifetime,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Decimal {
    let end = life.ended_at.unwrap_or(now).min(to);
    let start = life.started_at.max(from);
    if end <= start {
        Decimal::ZERO
    } else {
        hours(start, end)
    }
}

/// One priced lifetime's share of a group: its hours in the range and their cost, and
/// what its preemption (if T=0 is in the range) cost.
struct Share {
    hours: Decimal,
    actual: Decimal,
    base: Decimal,
    net: NetParts,
}

impl Share {
    /// `p`'s share over `h` hours at `unit` paid and `od` on-demand per instance-hour; `gap`
    /// is its capacity gap in node-hours when it was preempted in the range.
    fn of(p: &Priced, h: Decimal, unit: Decimal, od: Decimal, gap: Option<Decimal>) -> Self {
        let gpus = Decimal::from(p.life.gpus);
        let mut net = NetParts {
            gpu_hours: h * gpus,
            ..Default::default()
        };
        if p.life.gpus > 0 {
            net.gpu_baseline_usd = h * od;
        }
        if let Some(gap) = gap {
            net.preemptions = 1;
            net.gap_node_hours = gap;
            net.gap_usd = gap * unit;
            net.lost_work_gpu_hours = Decimal::from(p.life.work_lost_gpu_s) / Decimal::from(3600);
            if p.life.gpus > 0 {
                // The on-demand price per GPU-hour of the node's type.
                net.lost_work_usd = net.lost_work_gpu_hours * od / gpus;
            }
        }
        Self {
            hours: h,
            actual: h * unit,
            base: h * od,
            net,
        }
    }
}

/// A group's row as it is summed: the cost columns and the net parts.
#[derive(Default)]
struct Sum {
    row: CostRow,
    net: NetParts,
}

impl Sum {
    fn add(&mut self, s: &Share) {
        self.row.node_hours += s.hours;
        self.row.actual_usd += s.actual;
        self.row.baseline_usd += s.base;
        self.row.savings_usd += s.base - s.actual;
        self.net.add(&s.net);
    }

    /// The finished row: net savings computed from the exact sums, then money in cents.
    fn finish(self, reserved: Option<Decimal>) -> CostRow {
        let mut row = self.row;
        row.net = net::finish(&self.net, row.baseline_usd, row.actual_usd, reserved);
        row.node_hours = cents(row.node_hours);
        row.actual_usd = cents(row.actual_usd);
        row.baseline_usd = cents(row.baseline_usd);
        row.savings_usd = cents(row.savings_usd);
        row
    }
}

/// The report for `input`. Money is rounded to cents at the end, never in between.
pub fn report(input: &ReportInput) -> SavingsReport {
    let ReportInput {
        lifetimes,
        prices,
        from,
        to,
        now,
        reserved_discount_pct,
    } = *input;
    let to = to.min(now);
    let priced: Vec<Priced> = lifetimes.iter().map(|l| price(prices, l)).collect();
    let mut r = SavingsReport {
        from: Some(from),
        to: Some(to),
        hours: hours(from, to),
        ..Default::default()
    };
    let dims: [(&str, GroupKey); 5] = [
        ("cluster", |l| l.cluster.clone()),
        ("zone", |l| {
            l.zone.clone().unwrap_or_else(|| "unknown".into())
        }),
        ("pool", |l| {
            format!("{}/{}", l.cluster, l.pool.as_deref().unwrap_or("(none)"))
        }),
        ("instance type", |l| {
            l.instance_type.clone().unwrap_or_else(|| "unknown".into())
        }),
        ("capacity type", |l| l.capacity_type.to_string()),
    ];
    let mut groups: Vec<BTreeMap<String, Sum>> = dims.iter().map(|_| BTreeMap::new()).collect();
    let mut total = Sum::default();
    let mut sources = BTreeSet::new();
    let gap_of = gaps(&priced, from, to, now);
    for p in &priced {
        let h = overlap(p.life, from, to, now);
        if h.is_zero() {
            continue;
        }
        r.lines.push(PricedLine {
            uid: p.life.uid.clone(),
            node: p.life.node.clone(),
            cluster: p.life.cluster.clone(),
            capacity_type: p.life.capacity_type,
            instance_type: p.life.instance_type.clone(),
            hours: h.round_dp(4),
            unit_usd_h: p.paid.as_ref().map(|u| u.usd_per_hour),
            on_demand_usd_h: p.on_demand.as_ref().map(|u| u.usd_per_hour),
            source: p.paid.as_ref().map(|u| u.source.clone()),
            as_of: p.paid.as_ref().map(|u| u.as_of.clone()),
        });
        let Some((unit, od)) = p.known() else {
            r.unpriced_nodes += 1;
            for ((_, key), rows) in dims.iter().zip(groups.iter_mut()) {
                rows.entry(key(p.life)).or_default().row.unpriced_nodes += 1;
            }
            continue;
        };
        for u in [&p.paid, &p.on_demand].into_iter().flatten() {
            sources.insert(format!("{} (as of {})", u.source, u.as_of));
        }
        let share = Share::of(p, h, unit, od, gap_of.get(p.life.uid.as_str()).copied());
        total.add(&share);
        for ((_, key), rows) in dims.iter().zip(groups.iter_mut()) {
            rows.entry(key(p.life)).or_default().add(&share);
        }
    }
    r.node_hours = total.row.node_hours;
    r.actual_usd = total.row.actual_usd;
    r.baseline_usd = total.row.baseline_usd;
    r.savings_usd = r.baseline_usd - r.actual_usd;
    r.net = total.finish(reserved_discount_pct).net;
    // The same figure from the same exact sums: savings as a percent of the baseline.
    r.savings_pct = r.net.gross_pct;
    // Project from the hours the ledger covers: a range reaching back before the first
    // recorded node would otherwise dilute the hourly average.
    let covered_from = lifetimes
        .iter()
        .map(|l| l.started_at)
        .min()
        .map_or(from, |first| first.max(from));
    let covered = hours(covered_from, to);
    if !covered.is_zero() {
        let month = Decimal::from(HOURS_PER_MONTH);
        r.projected_month_usd = cents(r.actual_usd / covered * month);
        r.projected_month_baseline_usd = cents(r.baseline_usd / covered * month);
    }
    r.preemption = preemption_cost(&priced, &gap_of);
    (r.run_rate, r.fleet) = run_rate(&priced);
    r.series = series(&priced, from, to, now);
    r.breakdowns = dims
        .iter()
        .zip(groups)
        .map(|((name, _), rows)| {
            let mut rows: Vec<CostRow> = rows
                .into_iter()
                .map(|(key, sum)| CostRow {
                    key,
                    ..sum.finish(reserved_discount_pct)
                })
                .collect();
            rows.sort_by(|a, b| b.actual_usd.cmp(&a.actual_usd).then(a.key.cmp(&b.key)));
            (name.to_string(), rows)
        })
        .collect();
    r.price_sources = sources.into_iter().collect();
    for m in [&mut r.actual_usd, &mut r.baseline_usd, &mut r.savings_usd] {
        *m = cents(*m);
    }
    r.node_hours = cents(r.node_hours);
    r.hours = cents(r.hours);
    r
}

/// For each preempted lifetime in a pool with T=0 in the range, by uid: the node-hours from
/// T=0 until its replacement (the pool's next node,
/// [`crate::domain::preemption::replacement::pair`]) was Ready (until `to` while none is).
/// Ready, not created: a node that cannot run pods yet replaces nothing.
fn gaps<'a>(
    priced: &[Priced<'a>],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> HashMap<&'a str, Decimal> {
    let pairs = crate::domain::preemption::replacement::pair(priced.iter().map(|p| p.life));
    let mut out = HashMap::new();
    for p in priced {
        let Some(t0) = p.life.preemption_t0.filter(|t| *t >= from && *t <= to) else {
            continue;
        };
        if p.life.pool.is_none() {
            continue;
        }
        let replacement = pairs
            .get(p.life.uid.as_str())
            .and_then(|r| replaced_at(r, now))
            .map(|r| r.min(to.min(now)));
        out.insert(
            p.life.uid.as_str(),
            hours(t0, replacement.unwrap_or(to.min(now))),
        );
    }
    out
}

/// The capacity gaps summed, at the preempted nodes' own prices and GPU counts (an unpriced
/// node's hours count, its USD cannot).
fn preemption_cost(priced: &[Priced], gaps: &HashMap<&str, Decimal>) -> PreemptionCost {
    let mut cost = PreemptionCost::default();
    for p in priced {
        let Some(&lost) = gaps.get(p.life.uid.as_str()) else {
            continue;
        };
        cost.preemptions += 1;
        cost.lost_node_hours += lost;
        cost.lost_gpu_hours += lost * Decimal::from(p.life.gpus);
        if let Some((unit, _)) = p.known() {
            cost.lost_usd += lost * unit;
        }
    }
    cost.lost_node_hours = cents(cost.lost_node_hours);
    cost.lost_gpu_hours = cents(cost.lost_gpu_hours);
    cost.lost_usd = cents(cost.lost_usd);
    cost
}

/// When `r` replaced its victim: its Ready time. Without one, its creation when the ledger
/// will not get a Ready time any more (the replacement has ended, or it was recorded over an
/// hour ago, before Ready times were kept); `None` while it may still turn Ready (the loss runs
/// on).
fn replaced_at(r: &Lifetime, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let settled = r.ended_at.is_some() || r.started_at < now - chrono::Duration::hours(1);
    r.ready_at.or(settled.then_some(r.started_at))
}

/// The fleet running now: USD per hour paid and on-demand, and per-type groups for the what-if.
fn run_rate(priced: &[Priced]) -> (RunRate, Vec<FleetGroup>) {
    let mut rate = RunRate::default();
    let mut fleet: BTreeMap<String, FleetGroup> = BTreeMap::new();
    for p in priced.iter().filter(|p| p.life.ended_at.is_none()) {
        rate.running_nodes += 1;
        let Some((unit, od)) = p.known() else {
            rate.unpriced_nodes += 1;
            continue;
        };
        rate.actual_usd_h += unit;
        rate.baseline_usd_h += od;
        let t = p.life.instance_type.clone().unwrap_or_default();
        if let Some(spot) = p.spot.as_ref().map(|u| u.usd_per_hour) {
            let g = fleet.entry(t.clone()).or_insert_with(|| FleetGroup {
                instance_type: t,
                on_demand_usd_h: od,
                spot_usd_h: spot,
                ..Default::default()
            });
            g.nodes += 1;
        }
    }
    rate.difference_usd_h = rate.baseline_usd_h - rate.actual_usd_h;
    (rate, fleet.into_values().collect())
}

/// Hourly buckets up to two days, daily beyond.
fn series(
    priced: &[Priced],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Vec<CostBucket> {
    let step = if to - from <= Duration::hours(48) {
        Duration::hours(1)
    } else {
        Duration::days(1)
    };
    let mut out = Vec::new();
    let mut start = from;
    while start < to && out.len() < 400 {
        let end = (start + step).min(to);
        let mut b = CostBucket {
            start,
            ..Default::default()
        };
        for p in priced {
            if let Some((unit, od)) = p.known() {
                let h = overlap(p.life, start, end, now);
                b.actual_usd += h * unit;
                b.baseline_usd += h * od;
            }
        }
        b.actual_usd = cents(b.actual_usd);
        b.baseline_usd = cents(b.baseline_usd);
        out.push(b);
        start = end;
    }
    out
}

/// The report's range as text for exports: `2026-11-20T00:00:00Z..2026-11-21T00:00:00Z`.
pub fn range_label(r: &SavingsReport) -> String {
    let t = |t: Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339()).unwrap_or_default();
    format!("{}..{}", t(r.from), t(r.to))
}
