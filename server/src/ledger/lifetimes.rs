//! Node lifetimes in the ledger: a node's start, its preemption's T=0, refused evictions, when
//! it turned Ready and how it ended, the lifetimes overlapping a window (the savings and
//! the preemption rates read those) and those beginning in one (the survival curves' cohort).

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use spotboard_core::CapacityType;
use spotboard_core::domain::preemption::evictions::EvictionCounts;
use spotboard_core::model::Lifetime;
use sqlx::{AnyConnection, Row};

use super::Ledger;
use super::store::{ABANDONED_AFTER, db, secs, time};
use crate::Result;

/// A `node_lifetimes` row, its twelve columns first in the query (and `ready_at` anywhere).
pub(super) fn lifetime(r: &sqlx::any::AnyRow) -> Lifetime {
    Lifetime {
        uid: r.get(0),
        cluster: r.get(1),
        node: r.get(2),
        pool: r.get(3),
        instance_type: r.get(4),
        zone: r.get(5),
        capacity_type: CapacityType::parse(&r.get::<String, _>(6)),
        gpus: u32::try_from(r.get::<i64, _>(7)).unwrap_or(0),
        started_at: time(r.get(8)),
        ended_at: r.get::<Option<i64>, _>(9).map(time),
        end_reason: r.get(10),
        end_evidence: r
            .try_get::<Option<String>, _>("end_evidence")
            .ok()
            .flatten(),
        preemption_t0: r.get::<Option<i64>, _>(11).map(time),
        // By name: only the queries that need it select it.
        ready_at: r
            .try_get::<Option<i64>, _>("ready_at")
            .ok()
            .flatten()
            .map(time),
        evictions: EvictionCounts {
            refused: count(r, "evictions_refused"),
            past_grace: count(r, "pods_past_grace"),
            killed: count(r, "pods_killed"),
        },
        drill_t0: r
            .try_get::<Option<i64>, _>("drill_t0")
            .ok()
            .flatten()
            .map(time),
        work_lost_gpu_s: r
            .try_get::<Option<i64>, _>("work_lost_gpu_s")
            .ok()
            .flatten()
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or(0),
    }
}

/// A count column by name; 0 when the query does not select it or it is NULL.
fn count(r: &sqlx::any::AnyRow, name: &str) -> u32 {
    r.try_get::<Option<i64>, _>(name)
        .ok()
        .flatten()
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0)
}

/// The preemption columns of a lifetime in `between`: refusals as recorded; the pods held at
/// T=0 by how they stood when the node went, DaemonSet pods aside (see
/// `spotboard_core::domain::preemption::evictions`); and the GPU-seconds of work those pods
/// lost ([`Lifetime::work_lost_gpu_s`]), once the node has ended. Integer seconds on both
/// backends; PostgreSQL's `SUM` of BIGINT is NUMERIC, hence the cast.
const PREEMPTION_COLUMNS: &str = "evictions_refused,
    (SELECT COUNT(*) FROM preemption_pods p WHERE p.node_uid = node_lifetimes.uid
       AND (p.owner_kind IS NULL OR p.owner_kind <> 'DaemonSet')
       AND p.outcome IN ('still running', 'terminating')) AS pods_killed,
    (SELECT COUNT(*) FROM preemption_pods p WHERE p.node_uid = node_lifetimes.uid
       AND (p.owner_kind IS NULL OR p.owner_kind <> 'DaemonSet')
       AND p.outcome = 'terminating past its grace period') AS pods_past_grace,
    (SELECT CAST(SUM(p.gpus * (node_lifetimes.ended_at - p.started_at)) AS BIGINT)
       FROM preemption_pods p WHERE p.node_uid = node_lifetimes.uid
       AND node_lifetimes.ended_at IS NOT NULL AND p.gpus > 0
       AND p.started_at IS NOT NULL AND p.started_at <= node_lifetimes.ended_at
       AND (p.owner_kind IS NULL OR p.owner_kind <> 'DaemonSet')
       AND (p.outcome IS NULL OR p.outcome <> 'Succeeded')) AS work_lost_gpu_s";

impl Ledger {
    /// Records a node that started (or is seen for the first time). A known uid keeps its
    /// start; its pool, type and zone are refreshed.
    pub async fn started(&self, l: &Lifetime) -> Result<()> {
        self.started_on(&mut *self.connection().await?, l).await
    }

    /// [`Self::started`] on `conn`: a connection of the pool, or a transaction's.
    pub(super) async fn started_on(&self, conn: &mut AnyConnection, l: &Lifetime) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "INSERT INTO node_lifetimes (uid, cluster, node, pool, instance_type, zone, capacity_type, gpus, started_at, cluster_uid)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (uid) DO UPDATE SET pool = excluded.pool, instance_type = excluded.instance_type,
                 zone = excluded.zone, capacity_type = excluded.capacity_type, gpus = excluded.gpus",
        )
        .bind(&l.uid)
        .bind(&l.cluster)
        .bind(&l.node)
        .bind(l.pool.clone())
        .bind(l.instance_type.clone())
        .bind(l.zone.clone())
        .bind(l.capacity_type.as_str())
        .bind(i64::from(l.gpus))
        .bind(secs(l.started_at))
        .bind(&self.identity)
        .execute(&mut *conn)
        .await
        .map_err(db("recording a node"))?;
        Ok(())
    }

    /// Records T=0 of a preemption, once.
    pub async fn preempting(&self, uid: &str, t0: DateTime<Utc>) -> Result<()> {
        self.preempting_on(&mut *self.connection().await?, uid, t0)
            .await
    }

    /// [`Self::preempting`] on `conn`: a connection of the pool, or a transaction's.
    pub(super) async fn preempting_on(
        &self,
        conn: &mut AnyConnection,
        uid: &str,
        t0: DateTime<Utc>,
    ) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "UPDATE node_lifetimes SET preemption_t0 = $1 WHERE uid = $2 AND preemption_t0 IS NULL",
        )
        .bind(secs(t0))
        .bind(uid)
        .execute(&mut *conn)
        .await
        .map_err(db("recording a preemption"))?;
        Ok(())
    }

    /// Records that `refused` evictions were refused on preempted node `uid` (a count of its
    /// refusal events); only ever raises the recorded count, so a replay or a replica that saw
    /// fewer changes nothing.
    ///
    /// Errors: the database refused the write, or this replica is not the writer.
    pub async fn evictions_refused(&self, uid: &str, refused: u32) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "UPDATE node_lifetimes SET evictions_refused = $1
             WHERE uid = $2 AND (evictions_refused IS NULL OR evictions_refused < $1)",
        )
        .bind(i64::from(refused))
        .bind(uid)
        .execute(&self.pool)
        .await
        .map_err(db("recording refused evictions"))?;
        Ok(())
    }

    /// Records T=0 of a preemption drill on node `uid`, once (spotboard's drill annotation
    /// seen together with the provider's notice). Never sets `preemption_t0`: a drill is no
    /// preemption for rates, survival curves or savings.
    ///
    /// On `conn`: a connection of the pool, or a transaction's (the recorder's batches).
    ///
    /// Errors: the database refused the write, or this replica is not the writer.
    pub(super) async fn drilled_on(
        &self,
        conn: &mut AnyConnection,
        uid: &str,
        t0: DateTime<Utc>,
    ) -> Result<()> {
        self.writable()?;
        sqlx::query("UPDATE node_lifetimes SET drill_t0 = $1 WHERE uid = $2 AND drill_t0 IS NULL")
            .bind(secs(t0))
            .bind(uid)
            .execute(&mut *conn)
            .await
            .map_err(db("recording a drill"))?;
        Ok(())
    }

    /// Records when a node first turned Ready (its Ready condition's lastTransitionTime), once.
    pub async fn ready(&self, uid: &str, at: DateTime<Utc>) -> Result<()> {
        self.ready_on(&mut *self.connection().await?, uid, at).await
    }

    /// [`Self::ready`] on `conn`: a connection of the pool, or a transaction's.
    pub(super) async fn ready_on(
        &self,
        conn: &mut AnyConnection,
        uid: &str,
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.writable()?;
        sqlx::query("UPDATE node_lifetimes SET ready_at = $1 WHERE uid = $2 AND ready_at IS NULL")
            .bind(secs(at))
            .bind(uid)
            .execute(&mut *conn)
            .await
            .map_err(db("recording a node's Ready time"))?;
        Ok(())
    }

    /// Ends an open lifetime for `reason` (one of
    /// [`spotboard_core::domain::departures::EndReason`]'s spellings), without evidence.
    pub async fn ended(&self, uid: &str, at: DateTime<Utc>, reason: &str) -> Result<()> {
        self.ended_because(uid, at, reason, None).await
    }

    /// Ends an open lifetime for `reason`, with the `evidence` that decided it. A lifetime
    /// already ended keeps its first ending.
    ///
    /// Errors: the database failed, or this replica does not write.
    pub async fn ended_because(
        &self,
        uid: &str,
        at: DateTime<Utc>,
        reason: &str,
        evidence: Option<&str>,
    ) -> Result<()> {
        self.ended_because_on(&mut *self.connection().await?, uid, at, reason, evidence)
            .await
    }

    /// [`Self::ended_because`] on `conn`: a connection of the pool, or a transaction's.
    pub(super) async fn ended_because_on(
        &self,
        conn: &mut AnyConnection,
        uid: &str,
        at: DateTime<Utc>,
        reason: &str,
        evidence: Option<&str>,
    ) -> Result<()> {
        self.writable()?;
        sqlx::query("UPDATE node_lifetimes SET ended_at = $1, end_reason = $2, end_evidence = $4 WHERE uid = $3 AND ended_at IS NULL")
            .bind(secs(at))
            .bind(reason)
            .bind(uid)
            .bind(evidence.map(|e| super::store::text(e).into_owned()))
            .execute(&mut *conn)
            .await
            .map_err(db("ending a node"))?;
        Ok(())
    }

    /// Uids of this run's open lifetimes of `cluster`.
    pub async fn open_uids(&self, cluster: &str) -> Result<Vec<String>> {
        sqlx::query(
            "SELECT uid FROM node_lifetimes WHERE cluster = $1 AND cluster_uid = $2 AND ended_at IS NULL",
        )
        .bind(cluster)
        .bind(&self.identity)
        .fetch(&self.pool)
        .map_ok(|r| r.get::<String, _>(0))
        .try_collect()
        .await
        .map_err(db("listing open nodes"))
    }

    /// Ends the lifetimes of `cluster` that other embedded runs left open, once that run's
    /// heartbeat has been silent for [`ABANDONED_AFTER`]: at its last heartbeat (or at their
    /// start, when it never beat). A run still beating is left alone. Returns how many ended.
    pub async fn end_abandoned(&self, cluster: &str, now: DateTime<Utc>) -> Result<u64> {
        self.writable()?;
        let runs = sqlx::query(
            "SELECT DISTINCT cluster_uid FROM node_lifetimes
             WHERE cluster = $1 AND ended_at IS NULL AND cluster_uid <> '' AND cluster_uid <> $2",
        )
        .bind(cluster)
        .bind(&self.identity)
        .fetch_all(&self.pool)
        .await
        .map_err(db("listing other runs"))?;
        let mut ended = 0;
        for run in runs.iter().map(|r| r.get::<String, _>(0)) {
            let beat = self.beat_of(&run).await?;
            if beat.is_some_and(|b| now - b < ABANDONED_AFTER) {
                continue;
            }
            // CASE rather than max()/greatest(): one statement for SQLite and PostgreSQL.
            let done = sqlx::query(
                "UPDATE node_lifetimes
                 SET ended_at = CASE WHEN started_at > $1 THEN started_at ELSE $1 END,
                     end_reason = $4
                 WHERE cluster = $2 AND cluster_uid = $3 AND ended_at IS NULL",
            )
            .bind(beat.map(secs).unwrap_or(0))
            .bind(cluster)
            .bind(&run)
            .bind(spotboard_core::model::END_UNOBSERVED)
            .execute(&self.pool)
            .await
            .map_err(db("ending another run's nodes"))?;
            ended += done.rows_affected();
        }
        Ok(ended)
    }

    /// The cohort of a survival curve: lifetimes whose origin (Ready, else start; Unix
    /// seconds in the table) is in `[from, to)`, oldest first, every provider and capacity
    /// type (`spotboard_core::domain::survival::report` keeps the spot ones).
    ///
    /// Errors: the database could not be read.
    pub async fn began_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Lifetime>> {
        sqlx::query(
            "SELECT uid, cluster, node, pool, instance_type, zone, capacity_type, gpus, started_at, ended_at, end_reason, preemption_t0, ready_at
             FROM node_lifetimes
             WHERE COALESCE(ready_at, started_at) >= $1 AND COALESCE(ready_at, started_at) < $2
             ORDER BY started_at, uid",
        )
        .bind(secs(from))
        .bind(secs(to))
        .fetch(&self.pool)
        .map_ok(|r| lifetime(&r))
        .try_collect()
        .await
        .map_err(db("reading the ledger's lifetimes"))
    }

    /// Lifetimes overlapping `[from, to]`, oldest first.
    ///
    /// Rows are converted as they arrive: collected first, 10k rows of the driver's own
    /// representation were 16 MB of a dashboard's 58 MB peak heap, on every savings read.
    pub async fn between(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<Vec<Lifetime>> {
        let query = format!(
            "SELECT uid, cluster, node, pool, instance_type, zone, capacity_type, gpus, started_at, ended_at, end_reason, preemption_t0, ready_at, drill_t0, end_evidence,
             {PREEMPTION_COLUMNS}
             FROM node_lifetimes WHERE started_at < $1 AND (ended_at IS NULL OR ended_at > $2)
             ORDER BY started_at, uid"
        );
        sqlx::query(&query)
            .bind(secs(to))
            .bind(secs(from))
            .fetch(&self.pool)
            .map_ok(|r| lifetime(&r))
            .try_collect()
            .await
            .map_err(db("reading the ledger"))
    }
}
