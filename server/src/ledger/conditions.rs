//! NodePool condition history in the ledger: every transition the watches see, kept beyond
//! what the NodePool itself remembers (only its current conditions).

use chrono::{DateTime, Utc};
use spotboard_core::model::{ConditionTransition, ConditionView};
use sqlx::{AnyConnection, Row};

use super::Ledger;
use super::store::{db, secs, text, time};
use crate::Result;

impl Ledger {
    /// Records condition `c` of `pool` as it is since `since` (its lastTransitionTime, or the
    /// first time it was seen). Recording the same transition again changes nothing.
    pub async fn condition(
        &self,
        cluster: &str,
        pool: &str,
        c: &ConditionView,
        since: DateTime<Utc>,
    ) -> Result<()> {
        self.condition_on(&mut *self.connection().await?, cluster, pool, c, since)
            .await
    }

    /// [`Self::condition`] on `conn`: a connection of the pool, or a transaction's.
    pub(super) async fn condition_on(
        &self,
        conn: &mut AnyConnection,
        cluster: &str,
        pool: &str,
        c: &ConditionView,
        since: DateTime<Utc>,
    ) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "INSERT INTO pool_conditions (cluster, pool, condition_type, since, status, reason, message)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (cluster, pool, condition_type, since, status, reason) DO NOTHING",
        )
        .bind(cluster)
        .bind(pool)
        .bind(c.type_.as_str())
        .bind(secs(since))
        .bind(&c.status)
        .bind(&c.reason)
        .bind(text(&c.message).into_owned())
        .execute(&mut *conn)
        .await
        .map_err(db("recording a NodePool condition"))?;
        Ok(())
    }

    /// `pool`'s transitions that held at some time in `[from, to]`: those in the window and,
    /// per condition type, the last one before it (which held at its start). Oldest first.
    ///
    /// Errors: the database could not be read.
    pub async fn conditions_of(
        &self,
        cluster: &str,
        pool: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<ConditionTransition>> {
        let rows = sqlx::query(
            "SELECT condition_type, since, status, reason, message FROM pool_conditions c
             WHERE cluster = $1 AND pool = $2 AND since <= $4
               AND (since >= $3 OR since = (SELECT MAX(since) FROM pool_conditions p
                    WHERE p.cluster = c.cluster AND p.pool = c.pool
                      AND p.condition_type = c.condition_type AND p.since < $3))
             ORDER BY since, condition_type",
        )
        .bind(cluster)
        .bind(pool)
        .bind(secs(from))
        .bind(secs(to))
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading a NodePool's condition history"))?;
        Ok(rows
            .iter()
            .map(|r| ConditionTransition {
                cluster: cluster.to_string(),
                pool: pool.to_string(),
                type_: r.get::<String, _>("condition_type").as_str().into(),
                since: time(r.get::<i64, _>("since")),
                status: r.get("status"),
                reason: r.get("reason"),
                message: r.get("message"),
            })
            .collect())
    }

    /// Every pool's transitions of condition `type_` with `since` in `[from, to]` and, per
    /// pool, the last one before `from` (which held at the window's start), oldest first: for
    /// the capacity grid's time from queued to current and queued time, over all pools at
    /// once.
    ///
    /// Errors: the database could not be read.
    pub async fn transitions_of(
        &self,
        type_: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<ConditionTransition>> {
        let rows = sqlx::query(
            "SELECT cluster, pool, since, status, reason FROM pool_conditions c
             WHERE condition_type = $1 AND since <= $3
               AND (since >= $2 OR since = (SELECT MAX(since) FROM pool_conditions p
                    WHERE p.cluster = c.cluster AND p.pool = c.pool
                      AND p.condition_type = c.condition_type AND p.since < $2))
             ORDER BY since",
        )
        .bind(type_)
        .bind(secs(from))
        .bind(secs(to))
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading the NodePools' condition history"))?;
        Ok(rows
            .iter()
            .map(|r| ConditionTransition {
                cluster: r.get("cluster"),
                pool: r.get("pool"),
                type_: type_.into(),
                since: time(r.get::<i64, _>("since")),
                status: r.get("status"),
                reason: r.get("reason"),
                message: String::new(),
            })
            .collect())
    }
}
