//! Records node lifetimes from what the watches see: every node the hub holds is a lifetime
//! (backfilled from its creationTimestamp when first seen); a node seen cordoned for
//! preemption gets its T=0; a node that leaves ends as `preempted` (it was being preempted),
//! `scaled down` (its pool still exists) or `deleted`. Lifetimes still open in the ledger for
//! nodes that are gone when spotboard starts end at the last heartbeat: they ended while
//! nobody was watching.

use std::collections::{HashMap, HashSet};

use app::catalog;
use app::model::{Lifetime, NodeRow, PoolRow};
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

/// The recorder's memory between looks.
#[derive(Default)]
pub struct Recorder {
    seen: HashMap<String, Seen>,
    /// Nodes no longer in the cluster, with when they were first missed.
    vanished: HashMap<String, DateTime<Utc>>,
    /// Clusters whose leftovers from before this start have been closed.
    reconciled: HashSet<String>,
}

/// The provider's notice is on the node (CKS: also once the drain label is set).
fn is_preempting(n: &NodeRow) -> bool {
    n.notice || n.pending_preemption || n.evicted_at.is_some()
}

/// The lifetime a node row starts.
pub fn lifetime(n: &NodeRow, pools: &[PoolRow], now: DateTime<Utc>) -> Lifetime {
    let pool = n.pool.as_ref().and_then(|p| {
        pools
            .iter()
            .find(|r| r.cluster == n.cluster && &r.name == p)
    });
    // GKE and Karpenter nodes carry it in their labels; CKS nodes take their pool's.
    let capacity_type = match (n.capacity_type.as_str(), pool) {
        ("unknown", Some(p)) if !p.capacity_type.is_empty() => p.capacity_type.as_str(),
        (own, _) => own,
    };
    Lifetime {
        uid: n.key.clone(),
        cluster: n.cluster.clone(),
        node: n.name.clone(),
        pool: n.pool.clone(),
        instance_type: n.instance_type.clone(),
        zone: n.zone.clone(),
        capacity_type: capacity_type.into(),
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
    /// One look: records what changed since the last one. Only clusters whose watches have
    /// listed are judged, so a cluster still connecting does not look empty.
    pub async fn step(
        &mut self,
        ledger: &Ledger,
        inputs: &crate::hub::LedgerInputs,
        now: DateTime<Utc>,
    ) -> Result<()> {
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
        for cluster in synced {
            if self.reconciled.insert(cluster.clone()) {
                // Once per cluster per start, so the heartbeat is read only then.
                let last_beat = ledger.last_beat().await?.unwrap_or(now);
                for uid in ledger.open_uids(cluster).await? {
                    if !present.contains(uid.as_str()) {
                        ledger.ended(&uid, last_beat, "deleted").await?;
                    }
                }
            }
        }
        for n in nodes.iter().filter(|n| synced.contains(&n.cluster)) {
            let signal = pending.get(&(n.cluster.as_str(), n.name.as_str())).copied();
            let preempting = is_preempting(n) || signal.is_some();
            let t0 = signal.unwrap_or(now);
            match self.seen.get_mut(&n.key) {
                None => {
                    ledger.started(&lifetime(n, pools, now)).await?;
                    if preempting {
                        ledger.preempting(&n.key, t0).await?;
                    }
                    self.seen.insert(
                        n.key.clone(),
                        Seen {
                            cluster: n.cluster.clone(),
                            node: n.name.clone(),
                            pool: n.pool.clone(),
                            preempting,
                        },
                    );
                }
                Some(s) => {
                    if preempting && !s.preempting {
                        ledger.preempting(&n.key, t0).await?;
                        s.preempting = true;
                    }
                }
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
                    ledger.preempting(&uid, *t0).await?;
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
            ledger.ended(&uid, missed, reason).await?;
            self.seen.remove(&uid);
            self.vanished.remove(&uid);
        }
        ledger.beat(now).await
    }
}
