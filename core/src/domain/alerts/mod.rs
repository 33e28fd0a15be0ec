//! One alert model for what a platform team is paged for on Spot capacity: preemption
//! waves, a pool preempted above the rate threshold, slow replacements, eviction errors, and
//! a NodePool out of quota or capacity for too long. Pure: the server hands in what it holds
//! and announces what [`Episodes::step`] returns.
//!
//! Rules (the defaults are the flags' defaults; each matches a rule of
//! `server/deploy/prometheus/spotboard-rules.yaml`):
//! - **wave**: a wave (preemptions in one cluster less than `--wave-gap-seconds`, 60, apart)
//!   of at least `--wave-min-nodes` (2) nodes fires while it grows and resolves when it closes;
//! - **rate**: a pool still running spot nodes preempted above `--rate-alert-pct` (10 %) in
//!   24 h (the article's rule: AWS, "Best practices for handling EC2 Spot Instance
//!   interruptions"; [`crate::domain::preemption::rates::flag`]);
//! - **replacement-latency**: a pool still running spot nodes whose replacement latency p95
//!   over 24 h is above 90 s (the same article: 90 s of AWS's 2-minute notice);
//! - **eviction-errors**: a pool's preemptions of the last 15 minutes hold eviction errors
//!   ([`crate::domain::preemption::evictions`]);
//! - **condition**: a NodePool's `Quota` or `Capacity` condition False for longer than
//!   `--alert-condition-minutes` (15), timed from the condition's own lastTransitionTime (a
//!   condition without one is not judged: its age is unknown);
//! - **pending-work**: a cluster with a pod requesting GPUs that has waited for a node
//!   (unschedulable or gated) longer than `--alert-pending-minutes` (15: Cast AI's "Risks and
//!   detection" page advises alerting on pods pending 15 minutes or more), timed from its
//!   `PodScheduled` condition's lastTransitionTime; one episode per cluster, whose summary gives the cluster's waiting
//!   work and its commonest cause.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::domain::preemption::evictions::{EvictionCounts, counts};
use crate::domain::preemption::rates::{RateBy, RateRow, Window};
use crate::model::{
    ALERT_SCHEMA, Alert, AlertKind, AlertStatus, PoolRow, PreemptionView, WaitingPool, Wave,
};
use crate::nodepool::ConditionType;

/// The thresholds alerts are judged against.
#[derive(Clone, Debug)]
pub struct Thresholds {
    /// `--wave-min-nodes`: a wave alerts from this many nodes.
    pub wave_min_nodes: usize,
    /// `--wave-gap-seconds`: a wave is open while its last preemption is this recent.
    pub wave_gap: Duration,
    /// Replacement latency p95 over 24 h above this alerts, seconds.
    pub latency_s: f64,
    /// Eviction errors of preemptions whose T=0 is this recent alert.
    pub eviction_window: Duration,
    /// `--alert-condition-minutes`: Quota or Capacity False for longer than this alerts.
    pub condition_after: Duration,
    /// `--alert-pending-minutes`: a pod requesting GPUs waiting longer than this alerts.
    pub pending_after: Duration,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            wave_min_nodes: 2,
            wave_gap: Duration::seconds(60),
            latency_s: 90.0,
            eviction_window: Duration::minutes(15),
            condition_after: Duration::minutes(15),
            pending_after: Duration::minutes(15),
        }
    }
}

/// What the alerts are judged from: the preemption tracker's waves and cards, the ledger's
/// rates (flagged), and the pools as they are now.
#[derive(Clone, Copy, Default)]
pub struct Inputs<'a> {
    pub waves: &'a [Wave],
    pub rates: &'a [RateRow],
    pub preemptions: &'a [PreemptionView],
    /// Shared with the server's hub, which holds them: read every second, not copied.
    pub pools: &'a [Arc<PoolRow>],
    /// The waiting work as last published; the clusters' rows (`pool: None`) are judged.
    pub waiting: &'a [WaitingPool],
}

fn firing(
    kind: AlertKind,
    key: String,
    (cluster, pool): (&str, Option<&str>),
    summary: String,
    (value, threshold): (f64, f64),
    started: Option<DateTime<Utc>>,
) -> Alert {
    let path = match pool {
        Some(p) if kind == AlertKind::Condition => format!("/pools/{cluster}/{p}"),
        // The pools table's waiting column and the pool pages say which pool and why.
        _ if kind == AlertKind::PendingWork => "/".to_string(),
        _ => "/preemptions".to_string(),
    };
    Alert {
        schema: ALERT_SCHEMA.into(),
        status: AlertStatus::Firing,
        kind,
        key,
        cluster: cluster.into(),
        pool: pool.map(Into::into),
        summary,
        value,
        threshold,
        started,
        resolved: None,
        nodes: Vec::new(),
        path,
    }
}

/// Everything that is wrong at `now`, one firing alert per subject, by key.
pub fn now_wrong(inputs: Inputs<'_>, t: &Thresholds, now: DateTime<Utc>) -> Vec<Alert> {
    let mut out = Vec::new();
    for w in inputs.waves {
        let open = w.last.is_some_and(|l| now - l <= t.wave_gap);
        if !open || w.size() < t.wave_min_nodes {
            continue;
        }
        let started = w.started.map(|s| s.to_rfc3339()).unwrap_or_default();
        let mut a = firing(
            AlertKind::Wave,
            format!("wave/{}/{started}", w.cluster),
            (&w.cluster, None),
            format!(
                "{} spot nodes of {} preempted less than {} s apart",
                w.size(),
                w.cluster,
                t.wave_gap.num_seconds()
            ),
            (w.size() as f64, t.wave_min_nodes as f64),
            w.started,
        );
        a.nodes = w.nodes.clone();
        out.push(a);
    }
    for r in inputs
        .rates
        .iter()
        .filter(|r| r.by == RateBy::Pool && r.window == Window::Last24h)
    {
        // Pool names hold no '/'; some cluster (context) names do.
        let Some((cluster, pool)) = r.key.rsplit_once('/') else {
            continue;
        };
        if r.alert {
            out.push(firing(
                AlertKind::Rate,
                format!("rate/{}", r.key),
                (cluster, Some(pool)),
                format!(
                    "{}: {} % of spot nodes preempted in 24 h ({} of {}), above {} %",
                    r.key, r.rate_pct, r.preemptions, r.spot_nodes, r.alert_pct
                ),
                (r.rate_pct, r.alert_pct),
                None,
            ));
        }
        if let Some(p95) = r
            .latency_p95_s
            .filter(|s| *s > t.latency_s && r.running_spot_nodes > 0)
        {
            out.push(firing(
                AlertKind::ReplacementLatency,
                format!("replacement-latency/{}", r.key),
                (cluster, Some(pool)),
                format!(
                    "{}: replacements Ready {p95:.0} s after T=0 (p95 over 24 h), above {:.0} s",
                    r.key, t.latency_s
                ),
                (p95, t.latency_s),
                None,
            ));
        }
    }
    let mut errors: BTreeMap<(String, String), (EvictionCounts, u32)> = BTreeMap::new();
    for v in inputs
        .preemptions
        .iter()
        // A drill's refused evictions are what it rehearses, not an incident to page for.
        .filter(|v| !v.drill && !v.evictions.is_empty() && now - v.timeline.t0 <= t.eviction_window)
    {
        let pool = v.pool.clone().unwrap_or_else(|| "(no pool)".into());
        let e = errors.entry((v.cluster.clone(), pool)).or_default();
        e.0.add(&counts(&v.evictions));
        e.1 += 1;
    }
    for ((cluster, pool), (c, nodes)) in errors {
        out.push(firing(
            AlertKind::EvictionErrors,
            format!("eviction-errors/{cluster}/{pool}"),
            (&cluster, Some(&pool)),
            format!("{cluster}/{pool}: eviction errors ({c}) on {nodes} preempted node(s)"),
            (f64::from(c.total()), 0.0),
            None,
        ));
    }
    for p in inputs.pools {
        for c in p.conditions.iter().filter(|c| {
            matches!(c.type_, ConditionType::Quota | ConditionType::Capacity) && c.status == "False"
        }) {
            let Some(since) = c.last_transition.filter(|s| now - *s > t.condition_after) else {
                continue;
            };
            let minutes = (now - since).num_minutes();
            out.push(firing(
                AlertKind::Condition,
                format!("condition/{}/{}/{}", p.cluster, p.name, c.type_.as_str()),
                (&p.cluster, Some(&p.name)),
                format!(
                    "{}/{}: {}=False ({}) for {minutes} min",
                    p.cluster,
                    p.name,
                    c.type_.as_str(),
                    c.reason
                ),
                (minutes as f64, t.condition_after.num_minutes() as f64),
                Some(since),
            ));
        }
    }
    for w in inputs.waiting.iter().filter(|w| w.pool.is_none()) {
        let Some(since) = w.oldest_gpu_since.filter(|s| now - *s > t.pending_after) else {
            continue;
        };
        let minutes = (now - since).num_minutes();
        out.push(firing(
            AlertKind::PendingWork,
            format!("pending-work/{}", w.cluster),
            (&w.cluster, None),
            format!(
                "{}: pods requesting GPUs waiting for {minutes} min ({} pod(s), {} GPUs waiting; {})",
                w.cluster, w.pods, w.gpus, w.cause
            ),
            (minutes as f64, t.pending_after.num_minutes() as f64),
            Some(since),
        ));
    }
    out
}

/// The episodes going on, by key.
#[derive(Debug, Default)]
pub struct Episodes {
    open: BTreeMap<String, Alert>,
}

impl Episodes {
    /// Moves to what is wrong at `now`: returns the alerts to announce, a `firing` one for
    /// each subject newly wrong and a `resolved` one for each subject no longer wrong (with
    /// its last figures). A subject still wrong is not announced again; its figures (a wave's
    /// nodes, a rate) are updated in place.
    pub fn step(&mut self, wrong: Vec<Alert>, now: DateTime<Utc>) -> Vec<Alert> {
        let mut announce = Vec::new();
        let mut still: BTreeMap<String, Alert> = BTreeMap::new();
        for mut a in wrong {
            match self.open.remove(&a.key) {
                Some(was) => a.started = was.started,
                None => {
                    a.started = a.started.or(Some(now));
                    announce.push(a.clone());
                }
            }
            still.insert(a.key.clone(), a);
        }
        for (_, mut gone) in std::mem::take(&mut self.open) {
            gone.status = AlertStatus::Resolved;
            gone.resolved = Some(now);
            announce.push(gone);
        }
        self.open = still;
        announce
    }

    /// The alerts firing now, by key.
    pub fn firing(&self) -> Vec<Alert> {
        self.open.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests;
