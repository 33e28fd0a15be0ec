//! The writes the recorder owes the ledger, and the queue that holds them until the database
//! takes them: in order, a batch to a transaction, the oldest dropped past [`MAX_QUEUED`].

use std::collections::VecDeque;

use chrono::{DateTime, Utc};
use spotboard_core::domain::capacity::launch_failures::LaunchFailure;
use spotboard_core::domain::departures::EndReason;
use spotboard_core::model::{ConditionView, Lifetime};

use crate::Result;
use crate::ledger::Ledger;

/// Writes queued while the database is away or slower than the watches, at most; past this
/// the oldest are dropped, with one error in the log when dropping starts and one with the
/// count once the queue is written. Why this many: a first list queues a start per node and
/// the conditions of every pool at once, 150,000 writes for 20 clusters of 5,000 nodes and
/// 10,000 NodePools; at 100,000 (the size before) that first list alone overflowed and lost
/// lifetimes from a healthy database. About 300 bytes a queued lifetime, while queued.
pub const MAX_QUEUED: usize = 400_000;

/// One write the recorder owes the ledger. Each is idempotent.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    // Boxed: a lifetime is ten times the size of the other writes, and a queue of 10k
    // node starts (a first list) would hold every slot at its size.
    Started(Box<Lifetime>),
    Preempting {
        uid: String,
        t0: DateTime<Utc>,
    },
    /// A preemption drill reached the node at `t0`.
    Drill {
        uid: String,
        t0: DateTime<Utc>,
    },
    Ended {
        uid: String,
        at: DateTime<Utc>,
        reason: EndReason,
        /// What decided `reason` ([`spotboard_core::domain::departures::decide`]).
        evidence: String,
    },
    /// The node's Ready condition turned True at `at` (first time seen).
    Ready {
        uid: String,
        at: DateTime<Utc>,
    },
    /// A Karpenter launch failure event as it is now.
    LaunchFailure(Box<LaunchFailure>),
    /// A NodePool condition as it is since `since`.
    Condition {
        cluster: String,
        pool: String,
        condition: Box<ConditionView>,
        since: DateTime<Utc>,
    },
}

impl Write {
    /// Writes this on `conn` (a transaction's: see [`WriteQueue::flush`]).
    async fn apply(&self, ledger: &Ledger, conn: &mut sqlx::AnyConnection) -> Result<()> {
        match self {
            Write::Started(l) => ledger.started_on(conn, l).await,
            Write::Preempting { uid, t0 } => ledger.preempting_on(conn, uid, *t0).await,
            Write::Drill { uid, t0 } => ledger.drilled_on(conn, uid, *t0).await,
            Write::Ended {
                uid,
                at,
                reason,
                evidence,
            } => {
                ledger
                    .ended_because_on(conn, uid, *at, reason.as_str(), Some(evidence))
                    .await
            }
            Write::Ready { uid, at } => ledger.ready_on(conn, uid, *at).await,
            Write::LaunchFailure(f) => ledger.launch_failure_on(conn, f).await,
            Write::Condition {
                cluster,
                pool,
                condition,
                since,
            } => {
                ledger
                    .condition_on(conn, cluster, pool, condition, *since)
                    .await
            }
        }
    }
}

/// Queued writes committed together. A first list of 20 clusters queues about 160,000 (node
/// lifetimes, Ready times, conditions); written one statement a commit, they kept the
/// dashboard's one core busy for half a minute after the list, mostly in the kernel
/// appending each commit to SQLite's write-ahead log. A batch holds the database's write
/// lock for one commit of this many rows, tens of milliseconds.
pub const WRITES_PER_COMMIT: usize = 1_000;

/// Writes not yet in the database, oldest first, with when each was queued.
#[derive(Default)]
pub struct WriteQueue {
    writes: VecDeque<(std::time::Instant, Write)>,
    /// Writes dropped from the full queue since it was last written out.
    dropped: u64,
}

impl WriteQueue {
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// The writes queued, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Write> {
        self.writes.iter().map(|(_, w)| w)
    }

    /// Queues `w`; past [`MAX_QUEUED`] the oldest is dropped, with one error in the log when
    /// dropping starts.
    pub fn push(&mut self, w: Write) {
        if self.writes.len() >= MAX_QUEUED {
            self.writes.pop_front();
            if self.dropped == 0 {
                tracing::error!(
                    max = MAX_QUEUED,
                    "more unwritten ledger changes than the queue holds (the database is away, \
                     or slower than the watches): dropping the oldest"
                );
            }
            self.dropped += 1;
        }
        self.writes.push_back((std::time::Instant::now(), w));
    }

    /// Drops the writes queued longer than `keep` ago (a replica that does not write keeps
    /// only the recent ones, for a takeover).
    pub fn keep_recent(&mut self, keep: std::time::Duration) {
        while self
            .writes
            .front()
            .is_some_and(|(at, _)| at.elapsed() > keep)
        {
            self.writes.pop_front();
        }
        self.compact();
    }

    #[cfg(test)]
    pub fn clear(&mut self) {
        self.writes.clear();
    }

    /// Writes the queue in order, [`WRITES_PER_COMMIT`] to a transaction, stopping at the
    /// first failure: its batch is rolled back and stays queued (every write is idempotent,
    /// so the batch's earlier writes are simply made again).
    pub async fn flush(&mut self, ledger: &Ledger) -> Result<()> {
        while !self.writes.is_empty() {
            let batch = self.writes.len().min(WRITES_PER_COMMIT);
            let mut tx = ledger.begin().await?;
            for (_, w) in self.writes.iter().take(batch) {
                w.apply(ledger, &mut tx).await?;
            }
            tx.commit()
                .await
                .map_err(crate::ledger::store::db("committing"))?;
            self.writes.drain(..batch);
        }
        if self.dropped > 0 {
            tracing::error!(
                dropped = self.dropped,
                "the ledger's queue is written; the changes dropped meanwhile are lost"
            );
            self.dropped = 0;
        }
        self.compact();
        Ok(())
    }

    // A first list queues one write per node; once they are written the queue's buffer
    // would stay at that size for good.
    fn compact(&mut self) {
        let keep = self.writes.len().max(64);
        if self.writes.capacity() > 4 * keep {
            self.writes.shrink_to(keep);
        }
    }
}
