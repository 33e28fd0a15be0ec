//! Records node lifetimes from what the watches see: every node the hub holds is a lifetime
//! (backfilled from its creationTimestamp when first seen); a node seen cordoned for
//! preemption gets its T=0; a node that leaves ends with the reason and evidence
//! `spotboard_core::domain::departures::decide` reads from what was seen of it (its
//! preemption notice, Karpenter's disruption event, its CKS lifecycle state, its NodePool's
//! target, a cordon after it stopped being Ready). Lifetimes still open in the ledger for
//! nodes that are gone when spotboard starts end at the last heartbeat: they ended while
//! nobody was watching.
//!
//! What the hub shows is turned into [`Write`]s at once and queued ([`writes`]); the queue is
//! then written in order. A database that is away keeps the queue (up to `MAX_QUEUED`), so a
//! node that starts and ends during an outage is still recorded when the database returns,
//! and since every write is idempotent, one that is written twice changes nothing.
//!
//! NodePool conditions go the same way: each pool's conditions when first seen (the backfill
//! at start), then every transition (a new status, reason or lastTransitionTime).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use spotboard_core::domain::departures;
use spotboard_core::model::{ConditionView, EventRow, Lifetime, NodeRow, PoolRow};

use super::Ledger;
use crate::Result;
use crate::hub::Fact;

mod writes;
pub use writes::Write;
use writes::WriteQueue;

#[derive(Clone)]
struct Seen {
    // Shared copies: every node of a cluster, and of a pool, names the same one.
    cluster: std::sync::Arc<str>,
    node: String,
    pool: Option<std::sync::Arc<str>>,
    preempting: bool,
    /// Its Ready time is queued.
    ready: bool,
    /// spotboard's drill annotation is on the node now (its notice is a rehearsal).
    drill: bool,
    /// Its drill's T=0 is queued.
    drilled: bool,
    /// Its CKS lifecycle state when last seen, if it had left `production` for repair
    /// (`triage` or `zap`).
    repair_state: Option<&'static str>,
    /// While it is not Ready: since when, and whether a cordon came after.
    not_ready: Option<NotReady>,
}

/// A node's time not Ready as the recorder follows it, for
/// [`departures::DrainedNotReady`].
#[derive(Clone, Copy)]
struct NotReady {
    since: DateTime<Utc>,
    /// It was already cordoned when first seen not Ready: a cordon then is no repair's.
    cordoned_before: bool,
    /// It was cordoned while not Ready, after it stopped being Ready.
    drained: bool,
}

/// A NodePool condition's status and reason as last queued, and since when.
struct Held {
    status: String,
    reason: String,
    since: DateTime<Utc>,
}

impl Held {
    fn is(&self, c: &ConditionView) -> bool {
        self.status == c.status && self.reason == c.reason
    }
}

/// Karpenter disruption notes kept before those of departed nodes are dropped.
const MAX_DISRUPTIONS: usize = 10_000;

/// How long a vanished node waits for its "Preemption pending" event before its end reason
/// is decided (the node and event watches are independent streams).
pub const END_GRACE: chrono::Duration = chrono::Duration::seconds(3);

/// The recorder's memory between facts.
#[derive(Default)]
pub struct Recorder {
    seen: HashMap<String, Seen>,
    /// Nodes no longer in the cluster, with when they were first missed.
    vanished: HashMap<String, DateTime<Utc>>,
    /// "Preemption pending" events by (cluster, node): their key and last time seen.
    pending: HashMap<(String, String), (String, DateTime<Utc>)>,
    /// Pool uid → (cluster, name, its CKS `targetNodes` and `currentNodes`), for a vanished
    /// node's end reason.
    pools: HashMap<String, PoolSeen>,
    /// Karpenter's last `DisruptionTerminating` message per (cluster, node), with the event's
    /// time: it decides a node's end only if the node left within [`DISRUPTION_COUNTS_FOR`].
    disruptions: HashMap<(String, String), (String, DateTime<Utc>)>,
    /// Clusters whose every watch has listed: only they are judged.
    synced: HashSet<String>,
    /// Clusters whose leftovers from before this start have been closed.
    reconciled: HashSet<String>,
    /// Writes not yet in the database.
    queue: WriteQueue,
    /// How long a replica that does not write keeps its writes ([`super::FOLLOWER_KEEPS`]
    /// unless a test says otherwise).
    keep_for: Option<std::time::Duration>,
    /// Per (cluster, pool, condition type): what was last queued.
    conditions: HashMap<(String, String, String), Held>,
}

/// How long after Karpenter's `DisruptionTerminating` event a node's departure is still its
/// doing: the hour Kubernetes keeps the event. A node Karpenter gave up on and kept, or a later
/// node under a reused name (Karpenter on AWS names nodes after their IPs), is not misread.
pub const DISRUPTION_COUNTS_FOR: chrono::Duration = chrono::Duration::hours(1);

/// How long after a CKS NodePool was last seen with `targetNodes` below `currentNodes` a node
/// that leaves it is still read as scaled down: the pool's status may catch up before the
/// Node object goes, or before its removal is seen.
pub const SCALE_DOWN_WINDOW: chrono::Duration = chrono::Duration::minutes(2);

/// A pool as the recorder keeps it.
#[derive(Clone, Debug)]
struct PoolSeen {
    cluster: String,
    name: String,
    /// The last time this CKS NodePool was seen with `targetNodes` below `currentNodes`, and
    /// those two figures then (never for GKE and Karpenter pools, which have no target).
    shrinking: Option<((i32, i32), DateTime<Utc>)>,
}

impl PoolSeen {
    /// `p` as seen at `now`; `before` is what was kept of it, whose last scale-down stands
    /// until a newer one is seen.
    fn of(p: &PoolRow, before: Option<&PoolSeen>, now: DateTime<Utc>) -> Self {
        let target = (p.provider == spotboard_core::Provider::Cks)
            .then_some(p.current_nodes.map(|c| (p.target_nodes, c)))
            .flatten()
            .filter(|(t, c)| t < c);
        PoolSeen {
            cluster: p.cluster.clone(),
            name: p.name.clone(),
            shrinking: target
                .map(|t| (t, now))
                .or_else(|| before.and_then(|b| b.shrinking)),
        }
    }
}

/// The lifetime a node row starts. Its capacity type is the row's (the hub derives it once:
/// the node's labels, else its CKS NodePool's computeClass).
pub fn lifetime(n: &NodeRow, now: DateTime<Utc>) -> Lifetime {
    Lifetime {
        uid: n.key.clone(),
        cluster: n.cluster.clone(),
        node: n.name.clone(),
        pool: n.pool.clone(),
        instance_type: n.instance_type.clone(),
        zone: n.zone.clone(),
        capacity_type: n.capacity_type,
        // The row's count: the node's capacity, else the catalog's (see `projection::gpus`).
        gpus: n.gpus.unwrap_or(0),
        started_at: n.created.unwrap_or(now),
        ..Default::default()
    }
}

impl Recorder {
    /// Queues what is due now (nodes whose grace ran out), writes the queue, closes this
    /// start's leftovers and beats. Called once a second, after the facts that arrived. On
    /// a replica that does not write (see [`crate::leader`]) it only keeps recent writes.
    ///
    /// The queue goes before the leftovers: after a takeover it holds how the nodes that left
    /// meanwhile ended (preempted, scaled down), which the leftovers' "deleted at the last
    /// heartbeat" must not overwrite.
    ///
    /// Errors: the database failed; what was not written stays queued for the next step.
    pub async fn step(&mut self, ledger: &Ledger, now: DateTime<Utc>) -> Result<()> {
        self.settle(now);
        if !ledger.writer().holds() {
            self.follow();
            return Ok(());
        }
        self.queue.flush(ledger).await?;
        self.reconcile(ledger, now).await?;
        ledger.beat(now).await
    }

    /// Writes not yet in the database.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The writes queued, oldest first.
    pub fn queued_writes(&self) -> impl Iterator<Item = &Write> {
        self.queue.iter()
    }

    /// A recorder whose follower keeps its writes for `d` instead of [`super::FOLLOWER_KEEPS`].
    pub fn keeping_for(mut self, d: std::time::Duration) -> Self {
        self.keep_for = Some(d);
        self
    }

    /// On a replica that does not write: the holder writes what this one sees, so only the
    /// recent writes are kept (for a takeover), and this start's leftovers are judged again
    /// by whichever replica writes next.
    fn follow(&mut self) {
        self.queue
            .keep_recent(self.keep_for.unwrap_or(super::FOLLOWER_KEEPS));
        self.reconciled.clear();
    }

    /// Starts again from the whole hub (at start, after falling behind the facts, and when a
    /// cluster has just listed): queues what changed since the recorder last knew (no I/O).
    /// Only clusters whose watches have listed are judged, so a cluster still connecting
    /// does not look empty.
    pub fn observe(&mut self, inputs: &crate::hub::LedgerInputs, now: DateTime<Utc>) {
        self.synced = inputs.synced.clone();
        let before = std::mem::take(&mut self.pools);
        self.pools = inputs
            .pools
            .iter()
            .map(|p| (p.key.clone(), PoolSeen::of(p, before.get(&p.key), now)))
            .collect();
        for p in &inputs.pools {
            self.pool_conditions(p, now);
        }
        self.pending.clear();
        for e in &inputs.preemptions {
            self.signal(e);
        }
        for e in &inputs.launch_failures {
            self.launch_failure(e, now);
        }
        // A drain can outlast its event: what was noted for nodes still here stands.
        self.prune_disruptions();
        for e in &inputs.departures {
            self.departure(e, now);
        }
        let present: HashSet<&str> = inputs.nodes.iter().map(|n| n.key.as_str()).collect();
        for n in &inputs.nodes {
            self.node(n, now);
        }
        let gone: Vec<String> = self
            .seen
            .iter()
            .filter(|(uid, s)| self.synced.contains(&*s.cluster) && !present.contains(uid.as_str()))
            .map(|(u, _)| u.clone())
            .collect();
        for uid in gone {
            self.vanished.entry(uid).or_insert(now);
        }
        self.settle(now);
    }

    /// One change from the hub (no I/O). A cluster that has just listed asks for a whole
    /// look instead: returns `false` then.
    pub fn apply(&mut self, fact: &Fact, now: DateTime<Utc>) -> bool {
        match fact {
            Fact::Node { row: Some(n), .. } => self.node(n, now),
            Fact::Node { key, row: None } => {
                if self.seen.contains_key(key) {
                    self.vanished.entry(key.clone()).or_insert(now);
                }
            }
            Fact::Pool { key, row: Some(p) } => {
                let seen = PoolSeen::of(p, self.pools.get(key), now);
                self.pools.insert(key.clone(), seen);
                self.pool_conditions(p, now);
            }
            Fact::Pool { key, row: None } => {
                self.pools.remove(key);
            }
            Fact::PreemptionSignal { row: Some(e), .. } => {
                if let Some((cluster, node, t0)) = self.signal(e) {
                    let uid = self
                        .seen
                        .iter()
                        .find(|(_, s)| *s.cluster == *cluster && s.node == node && !s.preempting)
                        .map(|(u, _)| u.clone());
                    if let Some(uid) = uid {
                        self.preempting(&uid, t0);
                    }
                }
            }
            Fact::PreemptionSignal { key, row: None } => {
                self.pending.retain(|_, (k, _)| k != key);
            }
            // The preemption watch records refusals with the preemption they belong to.
            Fact::EvictionSignal { .. } => {}
            Fact::LaunchFailureSignal { row: Some(e), .. } => self.launch_failure(e, now),
            Fact::DepartureSignal { row: Some(e), .. } => self.departure(e, now),
            // The event expired: what it said stands until its node leaves.
            Fact::DepartureSignal { row: None, .. } => {}
            // An event Kubernetes let expire: the ledger keeps what it recorded.
            Fact::LaunchFailureSignal { row: None, .. } => {}
            Fact::Synced { .. } => return false,
        }
        true
    }

    /// Notes a Karpenter `DisruptionTerminating` event about a node (at `now` when it has no
    /// time). Past [`MAX_DISRUPTIONS`] notes, those of nodes no longer here are dropped.
    fn departure(&mut self, e: &EventRow, now: DateTime<Utc>) {
        if let Some(node) = e.object.strip_prefix("Node/") {
            self.disruptions.insert(
                (e.cluster.clone(), node.to_string()),
                (e.message.clone(), e.last_seen.unwrap_or(now)),
            );
        }
        if self.disruptions.len() > MAX_DISRUPTIONS {
            self.prune_disruptions();
        }
    }

    /// Drops the disruption notes of nodes the recorder does not hold.
    fn prune_disruptions(&mut self) {
        let here: HashSet<(&str, &str)> = self
            .seen
            .values()
            .map(|s| (&*s.cluster, s.node.as_str()))
            .collect();
        self.disruptions
            .retain(|(c, n), _| here.contains(&(c.as_str(), n.as_str())));
    }

    /// The (`targetNodes`, `currentNodes`) of node `uid`'s CKS NodePool when it was last seen
    /// shrinking, if that was within [`SCALE_DOWN_WINDOW`] of `at`.
    fn pool_target(&self, uid: &str, at: DateTime<Utc>) -> Option<(i32, i32)> {
        let s = self.seen.get(uid)?;
        let pool = s.pool.as_deref()?;
        let (target, when) = self
            .pools
            .values()
            .find(|p| p.cluster == *s.cluster && p.name == pool)?
            .shrinking?;
        (at - when <= SCALE_DOWN_WINDOW).then_some(target)
    }

    /// Queues event `e`'s launch failure as it is now (written again as it repeats).
    fn launch_failure(&mut self, e: &EventRow, now: DateTime<Utc>) {
        if let Some(f) = spotboard_core::domain::capacity::launch_failures::from_event(e, now) {
            self.queue.push(Write::LaunchFailure(Box::new(f)));
        }
    }

    /// Queues the conditions of `p` that are new or changed since last queued. A condition
    /// without lastTransitionTime counts from `now` the first time it is seen.
    fn pool_conditions(&mut self, p: &PoolRow, now: DateTime<Utc>) {
        for c in p.conditions.iter().filter(|c| !c.status.is_empty()) {
            let key = (
                p.cluster.clone(),
                p.name.clone(),
                c.type_.as_str().to_string(),
            );
            let last = self.conditions.get(&key);
            let since = match (c.last_transition, last) {
                (Some(t), _) => t,
                // Unchanged and undated: the first sighting stands.
                (None, Some(h)) if h.is(c) => h.since,
                (None, _) => now,
            };
            if last.is_some_and(|h| h.is(c) && h.since == since) {
                continue;
            }
            self.conditions.insert(
                key,
                Held {
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                    since,
                },
            );
            self.queue.push(Write::Condition {
                cluster: p.cluster.clone(),
                pool: p.name.clone(),
                condition: Box::new(c.clone()),
                since,
            });
        }
    }

    /// Notes a "Preemption pending" event; returns (cluster, node, T=0) when it is one.
    fn signal(&mut self, e: &EventRow) -> Option<(String, String, DateTime<Utc>)> {
        // A drill's "Preemption pending" is a rehearsal's, not the provider's.
        if e.drill {
            return None;
        }
        let node = e.object.strip_prefix("Node/")?;
        let t0 = e.last_seen.unwrap_or_else(Utc::now);
        self.pending
            .insert((e.cluster.clone(), node.to_string()), (e.key.clone(), t0));
        Some((e.cluster.clone(), node.to_string(), t0))
    }

    /// A node as the hub now has it: a lifetime starts when it is new, T=0 is recorded when
    /// it is first under notice (its cordon, or the "Preemption pending" event, which can
    /// outrun the cordon at high simulation speeds).
    fn node(&mut self, n: &NodeRow, now: DateTime<Utc>) {
        if !self.synced.contains(&n.cluster) {
            return;
        }
        self.vanished.remove(&n.key);
        let signal = self
            .pending
            .get(&(n.cluster.clone(), n.name.clone()))
            .map(|(_, at)| *at);
        // A node under a drill's notice is recorded as drilled, never as preempting.
        let preempting = !n.drill && (n.notice || signal.is_some());
        match self.seen.get(&n.key) {
            None => {
                self.seen.insert(
                    n.key.clone(),
                    Seen {
                        cluster: crate::watch::names::shared(&n.cluster),
                        node: n.name.clone(),
                        pool: n.pool.as_deref().map(crate::watch::names::shared),
                        preempting: false,
                        ready: false,
                        drill: false,
                        drilled: false,
                        repair_state: None,
                        not_ready: None,
                    },
                );
                self.queue.push(Write::Started(Box::new(lifetime(n, now))));
                if preempting {
                    self.preempting(&n.key, signal.unwrap_or(now));
                }
            }
            Some(s) if preempting && !s.preempting => {
                self.preempting(&n.key, signal.unwrap_or(now));
            }
            Some(_) => {}
        }
        if let Some(s) = self.seen.get_mut(&n.key) {
            s.drill = n.drill;
            s.repair_state = match n.state.as_deref() {
                Some("triage") => Some("triage"),
                Some("zap") => Some("zap"),
                _ => None,
            };
            s.not_ready = match (n.ready, s.not_ready) {
                (Some(false), None) => Some(NotReady {
                    since: n.not_ready_since().unwrap_or(now),
                    cordoned_before: n.cordoned,
                    drained: false,
                }),
                (Some(false), Some(mut was)) => {
                    was.drained |= n.cordoned && !was.cordoned_before;
                    Some(was)
                }
                // Ready again (or no longer reporting): a later cordon starts afresh.
                _ => None,
            };
            if n.drill && n.notice && !s.drilled {
                s.drilled = true;
                self.queue.push(Write::Drill {
                    uid: n.key.clone(),
                    t0: now,
                });
            }
        }
        if let Some(at) = n.ready_since()
            && let Some(s) = self.seen.get_mut(&n.key)
            && !s.ready
        {
            s.ready = true;
            self.queue.push(Write::Ready {
                uid: n.key.clone(),
                at,
            });
        }
    }

    fn preempting(&mut self, uid: &str, t0: DateTime<Utc>) {
        if let Some(s) = self.seen.get_mut(uid) {
            s.preempting = true;
            self.queue.push(Write::Preempting {
                uid: uid.to_string(),
                t0,
            });
        }
    }

    /// Ends the vanished nodes whose end reason is known: a preemption (its signal came),
    /// or, after [`END_GRACE`] without one, a scale-down or deletion.
    fn settle(&mut self, now: DateTime<Utc>) {
        let mut vanished: Vec<(String, DateTime<Utc>)> =
            self.vanished.iter().map(|(u, t)| (u.clone(), *t)).collect();
        vanished.sort();
        for (uid, missed) in vanished {
            let Some(s) = self.seen.get(&uid).cloned() else {
                self.vanished.remove(&uid);
                continue;
            };
            let signal = self
                .pending
                .get(&(s.cluster.to_string(), s.node.clone()))
                .map(|(_, at)| *at);
            if signal.is_none() && !s.preempting && now - missed < END_GRACE {
                continue;
            }
            if let Some(t0) = signal
                && !s.preempting
            {
                self.preempting(&uid, t0);
            }
            let key = (s.cluster.to_string(), s.node.clone());
            let pool_target = self.pool_target(&uid, missed);
            let disruption = self
                .disruptions
                .remove(&key)
                .filter(|(_, at)| missed - *at <= DISRUPTION_COUNTS_FOR)
                .map(|(m, _)| m);
            let (reason, evidence) = departures::decide(&departures::Signals {
                preempted: s.preempting || signal.is_some(),
                drill: s.drill,
                karpenter_disruption: disruption,
                cks_state: s.repair_state.map(str::to_string),
                pool_target,
                drained_not_ready: s.not_ready.filter(|n| n.drained).map(|n| {
                    departures::DrainedNotReady {
                        since: n.since,
                        left: missed,
                    }
                }),
            });
            self.queue.push(Write::Ended {
                uid: uid.clone(),
                at: missed,
                reason,
                evidence,
            });
            self.seen.remove(&uid);
            self.vanished.remove(&uid);
        }
    }

    /// Once per cluster per start: lifetimes left open in the ledger for nodes that are gone
    /// end at the last heartbeat. Marked done only once every write went through, so a
    /// database that fails halfway makes the next look try the whole cluster again.
    async fn reconcile(&mut self, ledger: &Ledger, now: DateTime<Utc>) -> Result<()> {
        let synced: Vec<String> = self.synced.iter().cloned().collect();
        for cluster in &synced {
            if self.reconciled.contains(cluster) {
                continue;
            }
            let abandoned = ledger.end_abandoned(cluster, now).await?;
            if abandoned > 0 {
                tracing::info!(
                    cluster,
                    abandoned,
                    "ended nodes an earlier embedded run left open, at its last heartbeat"
                );
            }
            let last_beat = ledger.last_beat().await?.unwrap_or(now);
            for uid in ledger.open_uids(cluster).await? {
                // A node this run saw (its start may still be queued) is not a leftover.
                if !self.seen.contains_key(&uid) {
                    ledger
                        .ended(&uid, last_beat, spotboard_core::model::END_UNOBSERVED)
                        .await?;
                }
            }
            self.reconciled.insert(cluster.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
