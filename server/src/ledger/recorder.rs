//! Records node lifetimes from what the watches see: every node the hub holds is a lifetime
//! (backfilled from its creationTimestamp when first seen); a node seen cordoned for
//! preemption gets its T=0; a node that leaves ends as `preempted` (it was being preempted),
//! `scaled down` (its pool still exists) or `deleted`. Lifetimes still open in the ledger for
//! nodes that are gone when spotboard starts end at the last heartbeat: they ended while
//! nobody was watching.
//!
//! What the hub shows is turned into [`Write`]s at once and queued; the queue is then written
//! in order. A database that is away keeps the queue (up to [`MAX_QUEUED`]), so a node that
//! starts and ends during an outage is still recorded when the database returns, and since
//! every write is idempotent, one that is written twice changes nothing.

use std::collections::{HashMap, HashSet, VecDeque};

use app::catalog;
use app::model::{Lifetime, NodeRow};
use chrono::{DateTime, Utc};

use super::Ledger;
use crate::Result;

#[derive(Clone)]
struct Seen {
    cluster: String,
    node: String,
    pool: Option<String>,
    preempting: bool,
}

/// How long a vanished node waits for its "Preemption pending" event before its end reason
/// is decided (the node and event watches are independent streams).
pub const END_GRACE: chrono::Duration = chrono::Duration::seconds(3);

/// Writes queued while the database is away, at most; past this the oldest are dropped with
/// an error in the log (hours of a large fleet's changes).
pub const MAX_QUEUED: usize = 100_000;

/// One write the recorder owes the ledger. Each is idempotent.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    Started(Lifetime),
    Preempting {
        uid: String,
        t0: DateTime<Utc>,
    },
    Ended {
        uid: String,
        at: DateTime<Utc>,
        reason: &'static str,
    },
}

impl Write {
    async fn apply(&self, ledger: &Ledger) -> Result<()> {
        match self {
            Write::Started(l) => ledger.started(l).await,
            Write::Preempting { uid, t0 } => ledger.preempting(uid, *t0).await,
            Write::Ended { uid, at, reason } => ledger.ended(uid, *at, reason).await,
        }
    }
}

/// The recorder's memory between looks.
#[derive(Default)]
pub struct Recorder {
    seen: HashMap<String, Seen>,
    /// Nodes no longer in the cluster, with when they were first missed.
    vanished: HashMap<String, DateTime<Utc>>,
    /// Clusters whose leftovers from before this start have been closed.
    reconciled: HashSet<String>,
    /// Writes not yet in the database, oldest first.
    queue: VecDeque<Write>,
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
        capacity_type: n.capacity_type.clone(),
        gpus: n
            .instance_type
            .as_deref()
            .and_then(catalog::instance_type)
            .map(|t| t.gpus)
            .unwrap_or(0),
        started_at: n.created.unwrap_or(now),
        ..Default::default()
    }
}

impl Recorder {
    /// One look: queues what changed since the last one, then writes the queue. Only
    /// clusters whose watches have listed are judged, so a cluster still connecting does not
    /// look empty.
    ///
    /// Errors: the database failed; what was not written stays queued for the next look.
    pub async fn step(
        &mut self,
        ledger: &Ledger,
        inputs: &crate::hub::LedgerInputs,
        now: DateTime<Utc>,
    ) -> Result<()> {
        self.observe(inputs, now);
        self.reconcile(ledger, inputs, now).await?;
        self.flush(ledger).await?;
        ledger.beat(now).await
    }

    /// Writes not yet in the database.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    fn push(&mut self, w: Write) {
        if self.queue.len() >= MAX_QUEUED {
            self.queue.pop_front();
            tracing::error!(
                max = MAX_QUEUED,
                "the ledger has been away too long: dropping its oldest unwritten change"
            );
        }
        self.queue.push_back(w);
    }

    /// Turns one look at the hub into queued writes (no I/O).
    pub fn observe(&mut self, inputs: &crate::hub::LedgerInputs, now: DateTime<Utc>) {
        let crate::hub::LedgerInputs {
            nodes,
            pools,
            preemptions,
            synced,
        } = inputs;
        // The "Preemption pending" event outlives a preemption faster than a look (at high
        // simulation speeds, T=0 to removal can fall between two looks): it decides too.
        let pending: HashMap<(&str, &str), DateTime<Utc>> = preemptions
            .iter()
            .filter_map(|e| {
                let node = e.object.strip_prefix("Node/")?;
                Some(((e.cluster.as_str(), node), e.last_seen.unwrap_or(now)))
            })
            .collect();
        let present: HashSet<&str> = nodes.iter().map(|n| n.key.as_str()).collect();
        for n in nodes.iter().filter(|n| synced.contains(&n.cluster)) {
            let signal = pending.get(&(n.cluster.as_str(), n.name.as_str())).copied();
            let preempting = n.notice || signal.is_some();
            let t0 = signal.unwrap_or(now);
            let newly_preempting = match self.seen.get_mut(&n.key) {
                None => {
                    self.seen.insert(
                        n.key.clone(),
                        Seen {
                            cluster: n.cluster.clone(),
                            node: n.name.clone(),
                            pool: n.pool.clone(),
                            preempting,
                        },
                    );
                    self.push(Write::Started(lifetime(n, now)));
                    preempting
                }
                Some(s) if preempting && !s.preempting => {
                    s.preempting = true;
                    true
                }
                Some(_) => false,
            };
            if newly_preempting {
                self.push(Write::Preempting {
                    uid: n.key.clone(),
                    t0,
                });
            }
        }
        let gone: Vec<(String, Seen)> = self
            .seen
            .iter()
            .filter(|(uid, s)| synced.contains(&s.cluster) && !present.contains(uid.as_str()))
            .map(|(u, s)| (u.clone(), s.clone()))
            .collect();
        for (uid, mut s) in gone {
            let missed = *self.vanished.entry(uid.clone()).or_insert(now);
            let signal = pending.get(&(s.cluster.as_str(), s.node.as_str()));
            if signal.is_none() && !s.preempting && now - missed < END_GRACE {
                continue;
            }
            if let Some(t0) = signal {
                if !s.preempting {
                    self.push(Write::Preempting {
                        uid: uid.clone(),
                        t0: *t0,
                    });
                }
                s.preempting = true;
            }
            let pool_exists = s
                .pool
                .as_ref()
                .is_some_and(|p| pools.iter().any(|r| r.cluster == s.cluster && &r.name == p));
            let reason = if s.preempting {
                "preempted"
            } else if pool_exists {
                "scaled down"
            } else {
                "deleted"
            };
            self.push(Write::Ended {
                uid: uid.clone(),
                at: missed,
                reason,
            });
            self.seen.remove(&uid);
            self.vanished.remove(&uid);
        }
    }

    /// Once per cluster per start: lifetimes left open in the ledger for nodes that are gone
    /// end at the last heartbeat. Marked done only once every write went through, so a
    /// database that fails halfway makes the next look try the whole cluster again.
    async fn reconcile(
        &mut self,
        ledger: &Ledger,
        inputs: &crate::hub::LedgerInputs,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let present: HashSet<&str> = inputs.nodes.iter().map(|n| n.key.as_str()).collect();
        for cluster in &inputs.synced {
            if self.reconciled.contains(cluster) {
                continue;
            }
            let last_beat = ledger.last_beat().await?.unwrap_or(now);
            for uid in ledger.open_uids(cluster).await? {
                // A node this run saw (its start may still be queued) is not a leftover.
                if !present.contains(uid.as_str()) && !self.seen.contains_key(&uid) {
                    ledger.ended(&uid, last_beat, "deleted").await?;
                }
            }
            self.reconciled.insert(cluster.clone());
        }
        Ok(())
    }

    /// Writes the queue in order, stopping at the first failure (which stays queued).
    async fn flush(&mut self, ledger: &Ledger) -> Result<()> {
        while let Some(w) = self.queue.front() {
            w.apply(ledger).await?;
            self.queue.pop_front();
        }
        Ok(())
    }
}
