//! Follows every node's preemption signals over time and keeps the views of preempted nodes:
//! their timelines (derived purely from the observations), the pods they held at T=0, waves
//! and metrics.

use std::collections::HashMap;

use app::domain::preemption::Provider;
use app::domain::preemption::timeline::{Observation, derive, grace_fit};
use app::model::{NodeRow, PodImpact, PreemptionView, Preemptions, Wave};
use chrono::{DateTime, Duration, Utc};

use super::metrics::{Metrics, PreemptionLabels, WaveLabels};

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
}

/// The tracker's state.
pub struct Tracker {
    nodes: HashMap<String, Followed>,
    waves: Vec<Wave>,
    /// How many of `waves` (oldest first) have been announced as closed.
    announced: usize,
    wave_gap: Duration,
}

impl Default for Tracker {
    fn default() -> Self {
        Tracker::new(WAVE_GAP)
    }
}

/// A node whose pods should be read now (it just reached T=0).
pub struct NeedsPods {
    pub uid: String,
    pub cluster: String,
    pub node: String,
}

impl Tracker {
    /// A tracker grouping preemptions less than `wave_gap` apart into one wave.
    pub fn new(wave_gap: Duration) -> Self {
        Tracker {
            nodes: HashMap::new(),
            waves: Vec::new(),
            announced: 0,
            wave_gap,
        }
    }

    /// Waves that closed (no new preemption for the wave gap) since the last call: each is
    /// announced once, with all its nodes.
    pub fn closed_waves(&mut self, now: DateTime<Utc>) -> Vec<Wave> {
        let gap = self.wave_gap;
        let mut out = Vec::new();
        while let Some(w) = self.waves.get(self.announced) {
            if w.last.is_some_and(|l| now - l > gap) {
                out.push(w.clone());
                self.announced += 1;
            } else {
                break;
            }
        }
        out
    }

    /// A whole look at the cluster's nodes (at start, and after falling behind the hub's
    /// facts): nodes not in `nodes` are gone. Returns the nodes that just reached T=0.
    pub fn observe(
        &mut self,
        nodes: &[NodeRow],
        now: DateTime<Utc>,
        metrics: &Metrics,
    ) -> Vec<NeedsPods> {
        let present: std::collections::HashSet<&str> =
            nodes.iter().map(|n| n.key.as_str()).collect();
        let fresh = nodes
            .iter()
            .filter_map(|n| self.node(n, now, metrics))
            .collect();
        let gone: Vec<String> = self
            .nodes
            .keys()
            .filter(|k| !present.contains(k.as_str()))
            .cloned()
            .collect();
        for uid in gone {
            self.gone(&uid, now);
        }
        self.expire(now);
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
        let f = self.nodes.entry(n.key.clone()).or_insert_with(|| Followed {
            row: n.clone(),
            provider: n.provider,
            history: Vec::new(),
            pods: None,
            pods_error: None,
            counted: false,
        });
        f.row = n.clone();
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
        metrics
            .preemptions
            .get_or_create(&PreemptionLabels {
                cluster: n.cluster.clone(),
                pool: n.pool.clone().unwrap_or_default(),
                zone: n.zone.clone().unwrap_or_default(),
                instance_type: n.instance_type.clone().unwrap_or_default(),
            })
            .inc();
        self.join_wave(&n.cluster, &n.name, now, metrics);
        Some(NeedsPods {
            uid: n.key.clone(),
            cluster: n.cluster.clone(),
            node: n.name.clone(),
        })
    }

    /// Node `uid` left the cluster: a preempted node is kept, marked gone, for
    /// [`KEEP_REMOVED`]; any other is forgotten.
    pub fn gone(&mut self, uid: &str, now: DateTime<Utc>) {
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
        if let Some(w) = self
            .waves
            .iter_mut()
            .rev()
            .find(|w| w.cluster == cluster && w.last.is_some_and(|l| now - l <= gap))
        {
            w.last = Some(now);
            w.nodes.push(node.to_string());
            return;
        }
        metrics
            .waves
            .get_or_create(&WaveLabels {
                cluster: cluster.to_string(),
            })
            .inc();
        tracing::warn!(cluster, node, "preemption wave started");
        self.waves.push(Wave {
            cluster: cluster.to_string(),
            started: Some(now),
            last: Some(now),
            nodes: vec![node.to_string()],
        });
        // Keep the last 50, never dropping one not yet announced.
        let keep_from = self.waves.len().saturating_sub(50).min(self.announced);
        self.waves.drain(..keep_from);
        self.announced -= keep_from;
    }

    /// Stores the pods read for a node at T=0.
    pub fn set_pods(&mut self, uid: &str, pods: Result<Vec<PodImpact>, String>) {
        if let Some(f) = self.nodes.get_mut(uid) {
            match pods {
                Ok(p) => f.pods = Some(p),
                Err(e) => f.pods_error = Some(e),
            }
        }
    }

    /// Sets how the pods of node `uid` ended: `(namespace, name, outcome)`.
    pub fn set_outcomes(&mut self, uid: &str, outcomes: &[(String, String, String)]) {
        let Some(pods) = self.nodes.get_mut(uid).and_then(|f| f.pods.as_mut()) else {
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
            undelivered: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn node(uid: &str, notice: bool) -> NodeRow {
        NodeRow {
            key: uid.into(),
            cluster: "c1".into(),
            name: format!("n-{uid}"),
            pool: Some("p".into()),
            provider: Provider::Cks,
            capacity_type: app::domain::preemption::CapacityType::Unknown,
            notice,
            ..Default::default()
        }
    }

    #[test]
    fn t0_once_waves_group_close_preemptions_and_removed_nodes_stay_an_hour() {
        let t =
            |s: i64| Utc.with_ymd_and_hms(2026, 11, 21, 8, 0, 0).unwrap() + Duration::seconds(s);
        let m = Metrics::default();
        let mut tr = Tracker::default();
        assert!(
            tr.observe(&[node("a", false), node("b", false)], t(0), &m)
                .is_empty()
        );
        let fresh = tr.observe(&[node("a", true), node("b", false)], t(1), &m);
        assert_eq!(fresh.len(), 1, "T=0 seen once");
        assert!(
            tr.observe(&[node("a", true), node("b", true)], t(30), &m)
                .len()
                == 1
        );
        assert_eq!(tr.view(t(31)).waves.len(), 1, "30 s apart: one wave");
        assert_eq!(tr.view(t(31)).waves[0].nodes.len(), 2);
        // Both gone; a third preemption much later starts a new wave.
        tr.observe(&[node("c", true)], t(500), &m);
        let v = tr.view(t(501));
        assert_eq!(v.waves.len(), 2);
        assert!(v.nodes.iter().filter(|n| n.timeline.removed()).count() == 2);
        assert!(
            m.encode()
                .contains("spotboard_preemption_waves_total{cluster=\"c1\"} 2"),
            "{}",
            m.encode()
        );
        // An hour later the removed ones are forgotten.
        tr.observe(&[node("c", true)], t(500 + 3601), &m);
        assert_eq!(tr.view(t(500 + 3601)).nodes.len(), 1);
    }
}
