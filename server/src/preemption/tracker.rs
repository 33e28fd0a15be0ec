//! Follows every node's preemption signals over time and keeps the views of preempted nodes:
//! their timelines (derived purely from the observations), the pods they held at T=0, waves
//! and metrics.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use spotboard_core::Provider;
use spotboard_core::domain::preemption::evictions::{self, ErrorKind};
use spotboard_core::domain::preemption::timeline::{Observation, derive, grace_fit};
use spotboard_core::model::{EventRow, NodeRow, PodImpact, PreemptionView, Preemptions, Wave};

use super::metrics::{EvictionLabels, Metrics, PreemptionLabels, WaveLabels};

/// How long a removed node's preemption stays in the view.
pub const KEEP_REMOVED: Duration = Duration::hours(1);
/// Preemptions in one cluster closer than this form one wave (default of `--wave-gap-seconds`).
pub const WAVE_GAP: Duration = Duration::seconds(60);

/// One node's record.
struct Followed {
    row: NodeRow,
    provider: Provider,
    /// Only the observations where something changed.
    history: Vec<Observation>,
    pods: Option<Vec<PodImpact>>,
    pods_error: Option<String>,
    counted: bool,
    /// Refusal events already counted in metrics and sent to the ledger.
    refused_recorded: u32,
    /// The pods read at T=0, uid -> `namespace/name`.
    pod_names: HashMap<String, String>,
    /// Pods seen terminating past their grace period while the node is under notice
    /// (`namespace/name`).
    past_grace: Vec<String>,
    /// The node carried the drill annotation while followed: a rehearsal, kept marked even
    /// once an abort removed the annotation.
    drill: bool,
}

/// The tracker's state.
pub struct Tracker {
    nodes: HashMap<String, Followed>,
    /// Nodes seen neither under notice nor draining: only the first such observation, which
    /// a later notice's timeline starts from. Almost every node is here, so they are kept
    /// apart from [`Followed`] and its whole row (10k nodes: 0.5 MB here against 9 MB).
    quiet: HashMap<String, Observation>,
    waves: Vec<Wave>,
    wave_gap: Duration,
    /// A wave counts in `spotboard_preemption_waves_total` once it has this many nodes.
    wave_min_nodes: usize,
    /// Refused-eviction events about Nodes, by `(cluster, node name)` then event key.
    refusals: HashMap<(String, String), HashMap<String, EventRow>>,
    /// Where each refusal event is filed in `refusals`.
    refusal_at: HashMap<String, (String, String)>,
    /// Whether the first whole look was taken: nodes already under notice then were
    /// preempted at unknown times, so they join no wave (a restart during a drain must not
    /// page a wave of every node it finds draining).
    looked: bool,
}

impl Default for Tracker {
    fn default() -> Self {
        Tracker::new(WAVE_GAP, 2)
    }
}

/// A node whose pods should be read now (it just reached T=0).
pub struct NeedsPods {
    pub uid: String,
    pub cluster: String,
    pub node: String,
    /// A drill's T=0: its pods are read for the card, never linked in the ledger as a
    /// preemption's hits.
    pub drill: bool,
}

impl Tracker {
    /// A tracker grouping preemptions less than `wave_gap` apart into one wave, counting a
    /// wave once it has `wave_min_nodes` nodes.
    pub fn new(wave_gap: Duration, wave_min_nodes: usize) -> Self {
        Tracker {
            nodes: HashMap::new(),
            quiet: HashMap::new(),
            waves: Vec::new(),
            wave_gap,
            wave_min_nodes,
            refusals: HashMap::new(),
            refusal_at: HashMap::new(),
            looked: false,
        }
    }

    /// A whole look at the cluster's nodes (at start, and after falling behind the hub's
    /// facts): nodes not in `nodes` are gone. Returns the nodes that just reached T=0.
    pub fn observe(
        &mut self,
        nodes: &[impl std::borrow::Borrow<NodeRow>],
        now: DateTime<Utc>,
        metrics: &Metrics,
    ) -> Vec<NeedsPods> {
        let present: std::collections::HashSet<&str> =
            nodes.iter().map(|n| n.borrow().key.as_str()).collect();
        let fresh = nodes
            .iter()
            .filter_map(|n| self.node(n.borrow(), now, metrics))
            .collect();
        let gone: Vec<String> = self
            .nodes
            .keys()
            .chain(self.quiet.keys())
            .filter(|k| !present.contains(k.as_str()))
            .cloned()
            .collect();
        for uid in gone {
            self.gone(&uid, now);
        }
        self.expire(now);
        self.looked = true;
        fresh
    }

    /// A node as the hub now has it. Returns it when it just reached T=0 (its pods should
    /// be read now).
    pub fn node(
        &mut self,
        n: &NodeRow,
        now: DateTime<Utc>,
        metrics: &Metrics,
    ) -> Option<NeedsPods> {
        let obs = Observation {
            at: now,
            notice: n.notice,
            draining: n.evicted_at.is_some(),
            gone: false,
        };
        if !obs.notice && !obs.draining && !self.nodes.contains_key(&n.key) {
            self.quiet.entry(n.key.clone()).or_insert(obs);
            return None;
        }
        // A drill that is over (its notice and annotation gone: aborted, or its window ended)
        // closes its card, so a later real preemption of the node is seen and counted.
        if !n.drill
            && !obs.notice
            && !obs.draining
            && self.nodes.get(&n.key).is_some_and(|f| f.drill)
        {
            self.nodes.remove(&n.key);
            self.quiet.insert(n.key.clone(), obs);
            return None;
        }
        let first = self.quiet.remove(&n.key);
        let f = self.nodes.entry(n.key.clone()).or_insert_with(|| Followed {
            row: n.clone(),
            provider: n.provider,
            history: first.into_iter().collect(),
            pods: None,
            pods_error: None,
            counted: false,
            refused_recorded: 0,
            pod_names: HashMap::new(),
            past_grace: Vec::new(),
            drill: false,
        });
        f.row = n.clone();
        f.drill |= n.drill;
        let changed = f
            .history
            .last()
            .is_none_or(|l| l.notice != obs.notice || l.draining != obs.draining);
        if changed {
            f.history.push(obs);
        }
        if !n.notice || f.counted {
            return None;
        }
        f.counted = true;
        // A drill gets its card and its pods read, and nothing else: no preemption counted,
        // no wave (which would page someone).
        if f.drill {
            return Some(NeedsPods {
                uid: n.key.clone(),
                cluster: n.cluster.clone(),
                node: n.name.clone(),
                drill: true,
            });
        }
        metrics
            .preemptions
            .get_or_create(&PreemptionLabels {
                cluster: n.cluster.as_str().into(),
                pool: n.pool.as_deref().unwrap_or_default().into(),
                zone: n.zone.as_deref().unwrap_or_default().into(),
                instance_type: n.instance_type.as_deref().unwrap_or_default().into(),
            })
            .inc();
        if self.looked {
            self.join_wave(&n.cluster, &n.name, now, metrics);
        }
        Some(NeedsPods {
            uid: n.key.clone(),
            cluster: n.cluster.clone(),
            node: n.name.clone(),
            drill: false,
        })
    }

    /// Node `uid` left the cluster: a preempted node is kept, marked gone, for
    /// [`KEEP_REMOVED`]; any other is forgotten.
    pub fn gone(&mut self, uid: &str, now: DateTime<Utc>) {
        if self.quiet.remove(uid).is_some() {
            return;
        }
        let Some(f) = self.nodes.get_mut(uid) else {
            return;
        };
        if !f.counted {
            self.nodes.remove(uid);
            return;
        }
        if f.history.last().is_none_or(|l| !l.gone) {
            f.history.push(Observation {
                at: now,
                notice: false,
                draining: false,
                gone: true,
            });
        }
    }

    /// Whether node `uid` has a preemption this tracker shows.
    pub fn follows_preemption(&self, uid: &str) -> bool {
        self.nodes.get(uid).is_some_and(|f| f.counted)
    }

    /// Forgets preempted nodes removed more than [`KEEP_REMOVED`] ago.
    pub fn expire(&mut self, now: DateTime<Utc>) {
        self.nodes.retain(|_, f| {
            f.history
                .last()
                .is_none_or(|l| !l.gone || now - l.at < KEEP_REMOVED)
        });
    }

    fn join_wave(&mut self, cluster: &str, node: &str, now: DateTime<Utc>, metrics: &Metrics) {
        let gap = self.wave_gap;
        let i = match self
            .waves
            .iter()
            .rposition(|w| w.cluster == cluster && w.last.is_some_and(|l| now - l <= gap))
        {
            Some(i) => {
                let w = &mut self.waves[i];
                w.last = Some(now);
                w.nodes.push(node.to_string());
                w.node_count = w.nodes.len();
                i
            }
            None => {
                self.waves.push(Wave {
                    cluster: cluster.to_string(),
                    started: Some(now),
                    last: Some(now),
                    nodes: vec![node.to_string()],
                    node_count: 1,
                });
                // The last 50 are kept: alerts judge only open waves, the newest.
                let keep_from = self.waves.len().saturating_sub(50);
                self.waves.drain(..keep_from);
                self.waves.len() - 1
            }
        };
        if self.waves[i].nodes.len() == self.wave_min_nodes {
            metrics
                .waves
                .get_or_create(&WaveLabels {
                    cluster: cluster.into(),
                })
                .inc();
            tracing::warn!(cluster, node, "preemption wave");
        }
    }

    /// A refused-eviction event about a Node changed; `None`: it is gone (events expire).
    pub fn refusal(&mut self, key: &str, row: Option<&EventRow>) {
        if let Some(at) = self.refusal_at.remove(key)
            && let Some(m) = self.refusals.get_mut(&at)
        {
            m.remove(key);
            if m.is_empty() {
                self.refusals.remove(&at);
            }
        }
        let Some(e) = row else { return };
        let Some(node) = e.object.strip_prefix("Node/") else {
            return;
        };
        let at = (e.cluster.clone(), node.to_string());
        self.refusal_at.insert(key.to_string(), at.clone());
        self.refusals
            .entry(at)
            .or_default()
            .insert(key.to_string(), e.clone());
    }

    /// Every refused-eviction event there is now (a whole look), in place of those known.
    pub fn refusals_from(&mut self, rows: &[EventRow]) {
        self.refusals.clear();
        self.refusal_at.clear();
        for e in rows {
            self.refusal(&e.key, Some(e));
        }
    }

    /// The refusal events of `f`'s node since its T=0 (a namesake's older events are not its;
    /// a minute of slack for the event's clock).
    fn refusals_of(&self, f: &Followed, t0: DateTime<Utc>) -> Vec<&EventRow> {
        self.refusals
            .get(&(f.row.cluster.clone(), f.row.name.clone()))
            .into_iter()
            .flat_map(HashMap::values)
            .filter(|e| e.last_seen.is_none_or(|t| t >= t0 - Duration::minutes(1)))
            .collect()
    }

    /// Preempted nodes whose refusals grew since last asked, read from `views` (this
    /// tracker's [`Self::view`]), with their count now: each new refusal is counted once in
    /// `spotboard_eviction_errors_total` here, and the caller records the count in the ledger.
    pub fn new_refusals(
        &mut self,
        views: &[PreemptionView],
        metrics: &Metrics,
    ) -> Vec<(String, u32)> {
        let mut grown = Vec::new();
        for v in views {
            let n = evictions::counts(&v.evictions).refused;
            let Some(f) = self
                .nodes
                .get_mut(&v.uid)
                .filter(|f| n > f.refused_recorded)
            else {
                continue;
            };
            let drill = f.drill;
            if !drill {
                count_errors(metrics, &f.row, ErrorKind::Refused, n - f.refused_recorded);
            }
            f.refused_recorded = n;
            // A drill's refusals are on its card; the ledger's eviction errors are
            // preemptions' alone.
            if !drill {
                grown.push((v.uid.clone(), n));
            }
        }
        grown
    }

    /// Stores the pods read for a node at T=0, each with its uid.
    pub fn set_pods(&mut self, uid: &str, pods: Result<Vec<(PodImpact, String)>, String>) {
        if let Some(f) = self.nodes.get_mut(uid) {
            match pods {
                Ok(p) => {
                    f.pod_names = p
                        .iter()
                        .map(|(p, uid)| (uid.clone(), format!("{}/{}", p.namespace, p.name)))
                        .collect();
                    f.pods = Some(p.into_iter().map(|(p, _)| p).collect());
                }
                Err(e) => f.pods_error = Some(e),
            }
        }
    }

    /// The pods still terminating past their grace period now, by `(cluster, node)` (their
    /// uids), noted on each preempted node under notice. Pods not read at T=0 are not named.
    pub fn set_past_grace(&mut self, late: &HashMap<(String, String), Vec<String>>) {
        for f in self
            .nodes
            .values_mut()
            .filter(|f| f.counted && f.history.last().is_some_and(|l| !l.gone))
        {
            let key = (f.row.cluster.clone(), f.row.name.clone());
            let mut names: Vec<String> = late
                .get(&key)
                .into_iter()
                .flatten()
                .filter_map(|u| f.pod_names.get(u).cloned())
                .collect();
            names.sort();
            f.past_grace = names;
        }
    }

    /// Sets how the pods of node `uid` ended: `(namespace, name, outcome)`. Pods killed at
    /// removal or past their grace period count in `spotboard_eviction_errors_total`, once
    /// (outcomes are read once per preemption).
    pub fn set_outcomes(
        &mut self,
        uid: &str,
        outcomes: &[(String, String, String)],
        metrics: &Metrics,
    ) {
        let Some(f) = self.nodes.get_mut(uid) else {
            return;
        };
        // DaemonSet pods die with their node by design: not eviction errors.
        let daemon = |ns: &str, name: &str| {
            f.pods.iter().flatten().any(|p| {
                p.namespace == ns && p.name == name && p.owner_kind.as_deref() == Some("DaemonSet")
            })
        };
        for kind in [ErrorKind::PastGrace, ErrorKind::Killed] {
            let n = outcomes
                .iter()
                .filter(|(ns, name, o)| {
                    evictions::outcome_kind(o) == Some(kind) && !daemon(ns, name)
                })
                .count();
            if !f.drill {
                count_errors(metrics, &f.row, kind, n as u32);
            }
        }
        let Some(pods) = f.pods.as_mut() else {
            return;
        };
        for p in pods {
            if let Some((_, _, o)) = outcomes
                .iter()
                .find(|(ns, n, _)| *ns == p.namespace && *n == p.name)
            {
                p.outcome = Some(o.clone());
            }
        }
    }

    /// The views now: active preemptions first, then removed ones, each by T=0.
    pub fn view(&self, now: DateTime<Utc>) -> Preemptions {
        let mut nodes: Vec<PreemptionView> = self
            .nodes
            .values()
            .filter_map(|f| {
                let timeline = derive(f.provider, &f.history)?;
                let pods = f.pods.clone().map(|pods| {
                    pods.into_iter()
                        .map(|mut p| {
                            p.fit = Some(grace_fit(&timeline, p.grace_s, p.system));
                            p
                        })
                        .collect()
                });
                let refusals = self.refusals_of(f, timeline.t0);
                let evictions = evictions::of_node(&refusals, pods.as_deref(), &f.past_grace);
                Some(PreemptionView {
                    cluster: f.row.cluster.clone(),
                    node: f.row.name.clone(),
                    uid: f.row.key.clone(),
                    pool: f.row.pool.clone(),
                    zone: f.row.zone.clone(),
                    instance_type: f.row.instance_type.clone(),
                    capacity_type: f.row.capacity_type,
                    timeline,
                    pods,
                    pods_error: f.pods_error.clone(),
                    evictions,
                    drill: f.drill,
                })
            })
            .collect();
        nodes.sort_by(PreemptionView::order);
        Preemptions {
            now: Some(now),
            nodes,
            waves: self.waves.iter().rev().cloned().collect(),
            // The ledger's rates and the webhook's failures are added by the watch.
            rates: Vec::new(),
            firing: Vec::new(),
            undelivered: Vec::new(),
        }
    }
}

/// Adds `n` errors of `kind` on `row`'s pool to `spotboard_eviction_errors_total`.
fn count_errors(metrics: &Metrics, row: &NodeRow, kind: ErrorKind, n: u32) {
    if n == 0 {
        return;
    }
    metrics
        .eviction_errors
        .get_or_create(&EvictionLabels {
            cluster: row.cluster.as_str().into(),
            pool: row.pool.as_deref().unwrap_or_default().into(),
            kind: kind.as_str().into(),
        })
        .inc_by(u64::from(n));
}

#[cfg(test)]
#[path = "tracker_tests.rs"]
mod tests;
