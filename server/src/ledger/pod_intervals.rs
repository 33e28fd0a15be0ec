//! Showback's pod intervals in the ledger (table `pod_intervals`): written by
//! [`super::pod_recorder`], read ordered by node for `spotboard_core::domain::showback`.

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use spotboard_core::model::{KilledPod, PodInterval};
use sqlx::Row;

use super::Ledger;
use super::store::{db, secs, text, time};
use crate::Result;

/// Open intervals read back at start at most (more than the largest fleet's running pods).
pub const MAX_OPEN: i64 = 2_000_000;

/// The columns [`interval`] reads.
const COLUMNS: &str = "pod_uid, started_at, ended_at, cluster, node_uid, namespace, workload, \
    team, gpus, cpu_m, memory_b, node_gpus, node_cpu_m, node_memory_b";

fn count(r: &sqlx::any::AnyRow, i: usize) -> u64 {
    u64::try_from(r.get::<i64, _>(i)).unwrap_or(0)
}

fn maybe(r: &sqlx::any::AnyRow, i: usize) -> Option<u64> {
    r.get::<Option<i64>, _>(i)
        .and_then(|n| u64::try_from(n).ok())
}

fn interval(r: &sqlx::any::AnyRow) -> PodInterval {
    PodInterval {
        pod_uid: r.get(0),
        started_at: time(r.get(1)),
        ended_at: r.get::<Option<i64>, _>(2).map(time),
        cluster: r.get(3),
        node_uid: r.get(4),
        namespace: r.get(5),
        workload: r.get(6),
        team: r.get(7),
        gpus: u32::try_from(count(r, 8)).unwrap_or(u32::MAX),
        cpu_m: count(r, 9),
        memory_b: count(r, 10),
        node_gpus: u32::try_from(count(r, 11)).unwrap_or(u32::MAX),
        node_cpu_m: maybe(r, 12),
        node_memory_b: maybe(r, 13),
    }
}

/// What showback's fold reads ([`interval`]'s order): the cluster is not read (the node's
/// lifetime has it), and a pod's uid only where it requests nothing (the fold counts those
/// pods); about a third less to sort and copy over a month of intervals.
const FOLD_COLUMNS: &str = "CASE WHEN gpus = 0 AND cpu_m = 0 AND memory_b = 0 THEN pod_uid ELSE '' END, \
    started_at, ended_at, '', node_uid, namespace, workload, team, gpus, cpu_m, memory_b, \
    node_gpus, node_cpu_m, node_memory_b";

/// An interval the recorder closes: the pod's uid, its start (the row's key) and its end.
pub type Close = (String, DateTime<Utc>, DateTime<Utc>);

impl Ledger {
    /// Opens `starts` and closes `ends`, in one transaction: a reader sees a pod move from one
    /// interval to the next whole. Opening an interval twice, or closing a closed one, changes
    /// nothing.
    ///
    /// Errors: the database failed, or this replica does not write.
    pub async fn pod_intervals(&self, starts: &[PodInterval], ends: &[Close]) -> Result<()> {
        self.writable()?;
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(db("recording pod intervals"))?;
        for (uid, started, ended) in ends {
            sqlx::query(
                "UPDATE pod_intervals SET ended_at = $1
                 WHERE pod_uid = $2 AND started_at = $3 AND ended_at IS NULL",
            )
            .bind(secs(*ended).max(secs(*started)))
            .bind(uid)
            .bind(secs(*started))
            .execute(&mut *tx)
            .await
            .map_err(db("closing a pod interval"))?;
        }
        for iv in starts {
            let big = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            sqlx::query(
                "INSERT INTO pod_intervals (pod_uid, started_at, cluster, node_uid, namespace, workload,
                   team, gpus, cpu_m, memory_b, node_gpus, node_cpu_m, node_memory_b)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                 ON CONFLICT (pod_uid, started_at) DO NOTHING",
            )
            .bind(text(&iv.pod_uid).into_owned())
            .bind(secs(iv.started_at))
            .bind(text(&iv.cluster).into_owned())
            .bind(text(&iv.node_uid).into_owned())
            .bind(text(&iv.namespace).into_owned())
            .bind(text(&iv.workload).into_owned())
            .bind(iv.team.as_deref().map(|t| text(t).into_owned()))
            .bind(i64::from(iv.gpus))
            .bind(big(iv.cpu_m))
            .bind(big(iv.memory_b))
            .bind(i64::from(iv.node_gpus))
            .bind(iv.node_cpu_m.map(big))
            .bind(iv.node_memory_b.map(big))
            .execute(&mut *tx)
            .await
            .map_err(db("opening a pod interval"))?;
        }
        tx.commit().await.map_err(db("recording pod intervals"))?;
        Ok(())
    }

    /// The intervals still open, at most [`MAX_OPEN`]: where the recorder takes up after a
    /// restart or a takeover.
    ///
    /// Errors: the database could not be read.
    pub async fn open_pod_intervals(&self) -> Result<Vec<PodInterval>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM pod_intervals WHERE ended_at IS NULL LIMIT $1"
        ))
        .bind(MAX_OPEN)
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading the open pod intervals"))?;
        Ok(rows.iter().map(interval).collect())
    }

    /// Calls `each` with every interval that overlaps `[from, to)`, ordered by node, streamed
    /// (one row in memory at a time here), at most `limit` of them, as showback's fold reads
    /// them: `cluster` empty, and `pod_uid` empty unless the pod requests nothing. Returns
    /// whether there were more.
    ///
    /// Errors: the database could not be read.
    pub async fn each_pod_interval(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
        mut each: impl FnMut(PodInterval),
    ) -> Result<bool> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT {FOLD_COLUMNS} FROM pod_intervals
             WHERE (ended_at IS NULL OR ended_at > $1) AND started_at < $2
             ORDER BY node_uid LIMIT $3"
        );
        let mut rows = sqlx::query(&sql)
            .bind(secs(from))
            .bind(secs(to))
            .bind(limit.saturating_add(1))
            .fetch(&self.pool);
        let mut n = 0i64;
        while let Some(r) = rows.try_next().await.map_err(db("reading pod intervals"))? {
            n += 1;
            if n > limit {
                return Ok(true);
            }
            each(interval(&r));
        }
        Ok(false)
    }

    /// Every interval, whole, by pod and start (for tests).
    #[cfg(test)]
    pub(super) async fn all_pod_intervals(&self) -> Vec<PodInterval> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM pod_intervals ORDER BY pod_uid, started_at"
        ))
        .fetch_all(&self.pool)
        .await
        .unwrap();
        rows.iter().map(interval).collect()
    }

    /// The pods that nodes preempted with T=0 in `[from, to)` held then.
    ///
    /// Errors: the database could not be read.
    pub async fn killed_pods(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<KilledPod>> {
        let rows = sqlx::query(
            "SELECT p.node_uid, p.namespace, p.name, p.owner_kind, p.owner_name, p.outcome, p.gpus, p.started_at
             FROM preemption_pods p JOIN node_lifetimes l ON l.uid = p.node_uid
             WHERE l.preemption_t0 >= $1 AND l.preemption_t0 < $2",
        )
        .bind(secs(from))
        .bind(secs(to))
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading the preempted pods"))?;
        Ok(rows
            .iter()
            .map(|r| KilledPod {
                node_uid: r.get(0),
                namespace: r.get(1),
                pod: r.get(2),
                owner_kind: r.get(3),
                owner_name: r.get(4),
                outcome: r.get(5),
                gpus: r
                    .get::<Option<i64>, _>(6)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(0),
                started_at: r.get::<Option<i64>, _>(7).map(time),
            })
            .collect())
    }
}
