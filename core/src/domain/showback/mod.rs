//! Showback: each node's cost over a range split among the pods that ran on it, by their share
//! of its requests, time-weighted; what no pod requested is its pool's idle. The rows and the
//! idle rows add up to the fleet's cost to the cent.
//!
//! # The method (OpenCost's allocation: "Cost allocation", opencost.io/docs)
//! - A pod's share of a GPU node is its `nvidia.com/gpu` request ÷ the node's GPUs; of any other
//!   node, the larger of its CPU and memory requests as fractions of the node's allocatable.
//!   A pod's share is at most 1.
//! - Where the shares of the pods on a node at one moment add up to more than 1 (CPU and memory
//!   taken as the larger of the two can), each is scaled down so they add up to 1 then.
//! - A pod's cost is the node's price per hour × its (scaled) share × the hours it ran there in
//!   the range; its on-demand cost the same at the on-demand price of the node's type. The
//!   node's cost less its pods' is the idle of its pool.
//! - Money is kept exact ([`Decimal`]) until the end, then rounded to cents by the largest
//!   remainder: the total is the savings report's `actual_usd` (the exact sum rounded once) and
//!   the rounded rows and idle rows add up to it exactly.
//! - A node without a price (paid or on-demand) is left out of the money, as in the savings
//!   report; its pods' hours are counted as `unpriced_pod_hours`, never as $0.
//!
//! Killed pods and lost GPU-hours are counted as the savings report counts them per lifetime
//! (`preemption_pods` rows of preemptions with T=0 in the range; DaemonSet pods aside).
//!
//! [`Showback`] folds one node at a time, so a server streams the ledger's pod intervals
//! ordered by node and holds one node's at once.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use rust_decimal::{Decimal, RoundingStrategy};

use crate::domain::prices::{CapacityType, PriceCatalog};
use crate::domain::savings::report::{Priced, overlap, price};
use crate::model::{
    IdleRow, KilledPod, Lifetime, NO_TEAM, PodInterval, ShowbackBy, ShowbackReport, ShowbackRow,
    ShowbackTotal,
};

#[cfg(test)]
mod tests;

/// Pod intervals one report reads at most (in node-uid order; past it the report says
/// `truncated`). About 300 bytes each while read: 2 million pods restarting over 30 days is
/// the scale this allows for, and the fold holds one node's intervals at a time.
pub const MAX_INTERVALS: usize = 2_000_000;

/// What a report is made of besides the pod intervals.
pub struct Params<'a> {
    /// The lifetimes that overlap the range (as the savings report reads them).
    pub lifetimes: &'a [Lifetime],
    pub prices: &'a PriceCatalog,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    /// Running lifetimes and intervals end here.
    pub now: DateTime<Utc>,
    pub by: ShowbackBy,
    /// The label teams are read from (`--team-label`).
    pub team_label: &'a str,
}

/// A row's exact sums.
#[derive(Default)]
struct Acc {
    cost: Decimal,
    on_demand: Decimal,
    pod_hours: Decimal,
    gpu_hours: Decimal,
    spot_gpu_hours: Decimal,
    unpriced_pod_hours: Decimal,
    without_requests: HashSet<String>,
    preemptions: HashSet<String>,
    pods_killed: u32,
    lost_gpu_s: i64,
}

#[derive(Default)]
struct IdleAcc {
    cost: Decimal,
    on_demand: Decimal,
    gpu_hours: Decimal,
    unpriced_node_hours: Decimal,
}

/// The fold: [`Showback::node`] once per node with its intervals, [`Showback::killed`] with
/// the preempted pods, then [`Showback::finish`].
pub struct Showback<'a> {
    by: ShowbackBy,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    now: DateTime<Utc>,
    team_label: String,
    lifetimes: HashMap<&'a str, Priced<'a>>,
    done: HashSet<&'a str>,
    rows: BTreeMap<String, Acc>,
    idle: BTreeMap<(String, String), IdleAcc>,
    cost: Decimal,
    on_demand: Decimal,
    gpu_hours: Decimal,
    unpriced_nodes: u32,
    /// The team of each workload on a node preempted in the range, by (node uid, namespace,
    /// workload).
    teams_of_preempted: HashMap<(String, String, String), Option<String>>,
    killed: Vec<KilledPod>,
    truncated: bool,
}

/// Seconds since the epoch.
fn secs(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

fn hours_of(seconds: i64) -> Decimal {
    Decimal::from(seconds.max(0)) / Decimal::from(3600)
}

/// A pod's share of its node (see the module's method), 0 to 1.
pub fn share(iv: &PodInterval) -> Decimal {
    let part = |asked: u64, of: Option<u64>| match of {
        Some(a) if a > 0 => Decimal::from(asked) / Decimal::from(a),
        _ => Decimal::ZERO,
    };
    let s = if iv.node_gpus > 0 {
        Decimal::from(iv.gpus) / Decimal::from(iv.node_gpus)
    } else {
        part(iv.cpu_m, iv.node_cpu_m).max(part(iv.memory_b, iv.node_memory_b))
    };
    s.min(Decimal::ONE)
}

/// Each interval's share × seconds inside `[a, b)`, scaled where the shares on the node add up
/// to more than 1; and each interval's seconds there.
pub fn weighted_seconds(
    intervals: &[PodInterval],
    a: i64,
    b: i64,
    now: i64,
) -> Vec<(Decimal, i64)> {
    let clipped: Vec<(i64, i64)> = intervals
        .iter()
        .map(|iv| {
            let s = secs(iv.started_at).max(a);
            let e = iv.ended_at.map_or(now, secs).min(b);
            (s, e.max(s))
        })
        .collect();
    let shares: Vec<Decimal> = intervals.iter().map(share).collect();
    let mut out: Vec<(Decimal, i64)> = clipped
        .iter()
        .map(|(s, e)| (Decimal::ZERO, e - s))
        .collect();
    // Ends sort before starts at the same second: a pod replaced at second t is not on the
    // node with its replacement.
    let mut events: Vec<(i64, bool, usize)> = Vec::with_capacity(2 * clipped.len());
    for (i, (s, e)) in clipped.iter().enumerate() {
        if e > s && !shares[i].is_zero() {
            events.push((*s, true, i));
            events.push((*e, false, i));
        }
    }
    events.sort_unstable();
    let mut active: Vec<usize> = Vec::new();
    let mut sum = Decimal::ZERO;
    let mut prev = i64::MIN;
    let mut k = 0;
    while k < events.len() {
        let t = events[k].0;
        if !active.is_empty() && t > prev {
            let len = Decimal::from(t - prev);
            let scale = if sum > Decimal::ONE {
                Decimal::ONE / sum
            } else {
                Decimal::ONE
            };
            for &i in &active {
                out[i].0 += shares[i] * len * scale;
            }
        }
        while k < events.len() && events[k].0 == t {
            let (_, start, i) = events[k];
            if start {
                active.push(i);
                sum += shares[i];
            } else if let Some(at) = active.iter().position(|&j| j == i) {
                active.swap_remove(at);
                sum -= shares[i];
            }
            k += 1;
        }
        if active.is_empty() {
            // No drift from adding and taking the same shares.
            sum = Decimal::ZERO;
        }
        prev = t;
    }
    out
}

/// `exact` rounded to cents so that they add up to `target` (itself in cents): each is
/// rounded down, then the cents left over go one each to the largest remainders (ties to the
/// earlier entry); cents over are taken from the smallest remainders.
pub fn apportion(exact: &[Decimal], target: Decimal) -> Vec<Decimal> {
    let cent = Decimal::new(1, 2);
    let mut out: Vec<Decimal> = exact
        .iter()
        .map(|d| d.round_dp_with_strategy(2, RoundingStrategy::ToNegativeInfinity))
        .collect();
    if out.is_empty() {
        return out;
    }
    let rest: Vec<Decimal> = exact.iter().zip(&out).map(|(e, r)| e - r).collect();
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|&a, &b| rest[b].cmp(&rest[a]).then(a.cmp(&b)));
    let sum: Decimal = out.iter().sum();
    let mut left = ((target - sum) / cent).round();
    let mut at = 0;
    while left > Decimal::ZERO {
        out[order[at % order.len()]] += cent;
        left -= Decimal::ONE;
        at += 1;
    }
    at = 0;
    while left < Decimal::ZERO {
        out[order[order.len() - 1 - at % order.len()]] -= cent;
        left += Decimal::ONE;
        at += 1;
    }
    out
}

impl<'a> Showback<'a> {
    pub fn new(p: &Params<'a>) -> Self {
        Self {
            by: p.by,
            from: p.from,
            to: p.to.min(p.now),
            now: p.now,
            team_label: p.team_label.to_string(),
            lifetimes: p
                .lifetimes
                .iter()
                .map(|l| (l.uid.as_str(), price(p.prices, l)))
                .collect(),
            done: HashSet::new(),
            rows: BTreeMap::new(),
            idle: BTreeMap::new(),
            cost: Decimal::ZERO,
            on_demand: Decimal::ZERO,
            gpu_hours: Decimal::ZERO,
            unpriced_nodes: 0,
            teams_of_preempted: HashMap::new(),
            killed: Vec::new(),
            truncated: false,
        }
    }

    /// The report read fewer intervals than the ledger holds.
    pub fn truncated(&mut self) {
        self.truncated = true;
    }

    fn pool_of(l: &Lifetime) -> (String, String) {
        (
            l.cluster.clone(),
            l.pool.clone().unwrap_or_else(|| "(none)".into()),
        )
    }

    fn key(&self, l: &Lifetime, namespace: &str, team: Option<&str>) -> String {
        match self.by {
            ShowbackBy::Namespace => namespace.to_string(),
            ShowbackBy::Team => team.unwrap_or(NO_TEAM).to_string(),
            ShowbackBy::Pool => {
                let (c, p) = Self::pool_of(l);
                format!("{c}/{p}")
            }
        }
    }

    /// Whether `life` was preempted with T=0 in the range (its pods are then counted as hit).
    fn preempted_in_range(&self, life: &Lifetime) -> bool {
        life.preemption_t0
            .is_some_and(|t| t >= self.from && t < self.to)
    }

    /// Node `node_uid` and every interval of its pods that overlaps the range. A node that is
    /// not among the lifetimes, or is folded a second time, is ignored.
    pub fn node(&mut self, node_uid: &str, intervals: &[PodInterval]) {
        let Some(p) = self.lifetimes.get(node_uid) else {
            return;
        };
        let life: &'a Lifetime = p.life;
        let known = p.known();
        if !self.done.insert(life.uid.as_str()) {
            return;
        }
        let h = overlap(life, self.from, self.to, self.now);
        let a = secs(life.started_at.max(self.from));
        let b = secs(life.ended_at.unwrap_or(self.now).min(self.to));
        let weighted = weighted_seconds(intervals, a, b, secs(self.now));
        let spot = life.capacity_type == CapacityType::Spot;
        let preempted = self.preempted_in_range(life);
        let mut allocated = (Decimal::ZERO, Decimal::ZERO);
        let mut pod_gpu_hours = Decimal::ZERO;
        for (iv, (w, s)) in intervals.iter().zip(weighted) {
            if preempted {
                self.teams_of_preempted.insert(
                    (life.uid.clone(), iv.namespace.clone(), iv.workload.clone()),
                    iv.team.clone(),
                );
            }
            if s <= 0 {
                continue;
            }
            let key = self.key(life, &iv.namespace, iv.team.as_deref());
            let row = self.rows.entry(key).or_default();
            let ran = hours_of(s);
            row.pod_hours += ran;
            let g = Decimal::from(iv.gpus) * ran;
            row.gpu_hours += g;
            pod_gpu_hours += g;
            if spot {
                row.spot_gpu_hours += g;
            }
            if iv.gpus == 0 && iv.cpu_m == 0 && iv.memory_b == 0 {
                row.without_requests.insert(iv.pod_uid.clone());
            }
            match known {
                Some((unit, od)) => {
                    let node_hours = w / Decimal::from(3600);
                    let (c, o) = (unit * node_hours, od * node_hours);
                    row.cost += c;
                    row.on_demand += o;
                    allocated.0 += c;
                    allocated.1 += o;
                }
                None => row.unpriced_pod_hours += ran,
            }
        }
        let node_gpu_hours = Decimal::from(life.gpus) * h;
        self.gpu_hours += node_gpu_hours;
        let idle = self.idle.entry(Self::pool_of(life)).or_default();
        idle.gpu_hours += (node_gpu_hours - pod_gpu_hours).max(Decimal::ZERO);
        match known {
            Some((unit, od)) => {
                let (c, o) = (unit * h, od * h);
                self.cost += c;
                self.on_demand += o;
                idle.cost += c - allocated.0;
                idle.on_demand += o - allocated.1;
            }
            None => {
                if !h.is_zero() {
                    self.unpriced_nodes += 1;
                    idle.unpriced_node_hours += h;
                }
            }
        }
    }

    /// The pods preempted nodes held at T=0 (any node; those not preempted in the range are
    /// ignored at the end).
    pub fn killed(&mut self, pods: impl IntoIterator<Item = KilledPod>) {
        self.killed.extend(pods);
    }

    fn count_killed(&mut self) {
        for k in std::mem::take(&mut self.killed) {
            if k.owner_kind.as_deref() == Some("DaemonSet") {
                continue;
            }
            let Some(p) = self.lifetimes.get(k.node_uid.as_str()) else {
                continue;
            };
            let life = p.life;
            if !self.preempted_in_range(life) {
                continue;
            }
            let team = self
                .teams_of_preempted
                .get(&(k.node_uid.clone(), k.namespace.clone(), k.workload()))
                .cloned()
                .flatten();
            let key = self.key(life, &k.namespace, team.as_deref());
            let row = self.rows.entry(key).or_default();
            row.preemptions.insert(k.node_uid.clone());
            let outcome = k.outcome.as_deref();
            if matches!(outcome, Some("still running") | Some("terminating")) {
                row.pods_killed += 1;
            }
            if let (Some(end), Some(start)) = (life.ended_at, k.started_at)
                && k.gpus > 0
                && start <= end
                && outcome != Some("Succeeded")
            {
                row.lost_gpu_s += i64::from(k.gpus) * (end - start).num_seconds();
            }
        }
    }

    /// The report: every lifetime not folded yet counts as idle.
    pub fn finish(mut self) -> ShowbackReport {
        let rest: Vec<&str> = self
            .lifetimes
            .keys()
            .filter(|u| !self.done.contains(*u))
            .copied()
            .collect();
        for uid in rest {
            self.node(uid, &[]);
        }
        self.count_killed();
        let cost = crate::domain::cost::cents(self.cost);
        let on_demand = crate::domain::cost::cents(self.on_demand);
        let exact_cost: Vec<Decimal> = self
            .rows
            .values()
            .map(|r| r.cost)
            .chain(self.idle.values().map(|i| i.cost))
            .collect();
        let exact_od: Vec<Decimal> = self
            .rows
            .values()
            .map(|r| r.on_demand)
            .chain(self.idle.values().map(|i| i.on_demand))
            .collect();
        let costs = apportion(&exact_cost, cost);
        let ods = apportion(&exact_od, on_demand);
        let n = self.rows.len();
        let hours2 = |d: Decimal| d.round_dp(2);
        let mut rows: Vec<ShowbackRow> = self
            .rows
            .into_iter()
            .enumerate()
            .map(|(i, (key, r))| ShowbackRow {
                key,
                cost_usd: costs[i],
                on_demand_usd: ods[i],
                savings_usd: ods[i] - costs[i],
                pod_hours: hours2(r.pod_hours),
                gpu_hours: hours2(r.gpu_hours),
                spot_gpu_hours: hours2(r.spot_gpu_hours),
                unpriced_pod_hours: hours2(r.unpriced_pod_hours),
                pods_without_requests: r.without_requests.len() as u32,
                preemptions: r.preemptions.len() as u32,
                pods_killed: r.pods_killed,
                gpu_hours_lost: hours2(hours_of(r.lost_gpu_s)),
            })
            .collect();
        let mut idle: Vec<IdleRow> = self
            .idle
            .into_iter()
            .enumerate()
            .map(|(i, ((cluster, pool), r))| IdleRow {
                cluster,
                pool,
                cost_usd: costs[n + i],
                on_demand_usd: ods[n + i],
                savings_usd: ods[n + i] - costs[n + i],
                gpu_hours: hours2(r.gpu_hours),
                unpriced_node_hours: hours2(r.unpriced_node_hours),
            })
            .collect();
        rows.sort_by(|a, b| b.cost_usd.cmp(&a.cost_usd).then(a.key.cmp(&b.key)));
        idle.sort_by(|a, b| {
            b.cost_usd
                .cmp(&a.cost_usd)
                .then(a.cluster.cmp(&b.cluster))
                .then(a.pool.cmp(&b.pool))
        });
        let allocated_usd: Decimal = rows.iter().map(|r| r.cost_usd).sum();
        let idle_usd: Decimal = idle.iter().map(|r| r.cost_usd).sum();
        let idle_gpu_hours: Decimal = idle.iter().map(|r| r.gpu_hours).sum();
        ShowbackReport {
            from: Some(self.from),
            to: Some(self.to),
            by: self.by,
            team_label: self.team_label,
            total: ShowbackTotal {
                cost_usd: cost,
                on_demand_usd: on_demand,
                savings_usd: on_demand - cost,
                allocated_usd,
                idle_usd,
                gpu_hours: hours2(self.gpu_hours),
                idle_gpu_hours,
                unpriced_nodes: self.unpriced_nodes,
            },
            rows,
            idle,
            truncated: self.truncated,
        }
    }
}
