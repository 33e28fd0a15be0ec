//! Karpenter's refused launches in the ledger: every `InsufficientCapacityError` event seen,
//! kept past the hour Kubernetes keeps events, for the 7-day counts beside the capacity grid.

use chrono::{DateTime, Utc};
use spotboard_core::domain::capacity::launch_failures::LaunchFailure;
use sqlx::{AnyConnection, Row};

use super::Ledger;
use super::store::{db, secs, text, time};
use crate::Result;

/// Launch failures read from the ledger at most, newest first.
pub const MAX_READ: i64 = 50_000;

impl Ledger {
    /// Records event `f` as it is now. Recording it again with a higher `count` or a later
    /// `last_seen` raises them; nothing is ever lowered, so a write that arrives twice or out
    /// of order changes nothing.
    ///
    /// Errors: the database failed, or this replica does not write.
    pub async fn launch_failure(&self, f: &LaunchFailure) -> Result<()> {
        self.launch_failure_on(&mut *self.connection().await?, f)
            .await
    }

    /// [`Self::launch_failure`] on `conn`: a connection of the pool, or a transaction's.
    pub(super) async fn launch_failure_on(
        &self,
        conn: &mut AnyConnection,
        f: &LaunchFailure,
    ) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "INSERT INTO launch_failures (cluster, uid, nodeclaim, message, count, last_seen)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (cluster, uid) DO UPDATE SET
               count = CASE WHEN excluded.count > launch_failures.count
                            THEN excluded.count ELSE launch_failures.count END,
               last_seen = CASE WHEN excluded.last_seen > launch_failures.last_seen
                                THEN excluded.last_seen ELSE launch_failures.last_seen END",
        )
        .bind(text(&f.cluster).into_owned())
        .bind(text(&f.uid).into_owned())
        .bind(text(&f.nodeclaim).into_owned())
        .bind(text(&f.message).into_owned())
        .bind(i64::from(f.count))
        .bind(secs(f.last_seen))
        .execute(&mut *conn)
        .await
        .map_err(db("recording a Karpenter launch failure"))?;
        Ok(())
    }

    /// The launch failures last seen at or after `from`, newest first, at most
    /// [`MAX_READ`] of them (a week of a fleet short of capacity everywhere is read in bounded
    /// memory; the oldest beyond it are left out of the counts).
    ///
    /// Errors: the database could not be read.
    pub async fn launch_failures_since(&self, from: DateTime<Utc>) -> Result<Vec<LaunchFailure>> {
        let rows = sqlx::query(
            "SELECT cluster, uid, nodeclaim, message, count, last_seen FROM launch_failures
             WHERE last_seen >= $1 ORDER BY last_seen DESC LIMIT $2",
        )
        .bind(secs(from))
        .bind(MAX_READ)
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading Karpenter's launch failures"))?;
        Ok(rows
            .iter()
            .map(|r| LaunchFailure {
                cluster: r.get("cluster"),
                uid: r.get("uid"),
                nodeclaim: r.get("nodeclaim"),
                message: r.get("message"),
                count: u32::try_from(r.get::<i64, _>("count")).unwrap_or(u32::MAX),
                last_seen: time(r.get::<i64, _>("last_seen")),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};

    use super::*;

    fn failure(uid: &str, count: u32, last_seen: DateTime<Utc>) -> LaunchFailure {
        LaunchFailure {
            cluster: "aws".into(),
            uid: uid.into(),
            nodeclaim: "gpu-spot-b2x7k".into(),
            message: "NodeClaim gpu-spot-b2x7k event: insufficient capacity".into(),
            count,
            last_seen,
        }
    }

    /// What the ledger holds of the 7 days before `t`.
    async fn week(ledger: &Ledger, t: DateTime<Utc>) -> Vec<LaunchFailure> {
        ledger
            .launch_failures_since(t - Duration::days(7))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_failure_is_kept_once_and_never_lowered() {
        let ledger = Ledger::open("sqlite::memory:").await.unwrap();
        let t = Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap();
        ledger.launch_failure(&failure("u1", 2, t)).await.unwrap();
        // The same event again, older and with a lower count (a write that arrived late).
        ledger
            .launch_failure(&failure("u1", 1, t - Duration::minutes(5)))
            .await
            .unwrap();
        let got = week(&ledger, t).await;
        assert_eq!(got, vec![failure("u1", 2, t)]);
        // It repeats: both rise.
        let later = t + Duration::minutes(3);
        ledger
            .launch_failure(&failure("u1", 3, later))
            .await
            .unwrap();
        ledger
            .launch_failure(&failure("u2", 1, t - Duration::days(8)))
            .await
            .unwrap();
        let got = week(&ledger, t).await;
        assert_eq!(
            got,
            vec![failure("u1", 3, later)],
            "u2 is older than the window"
        );
    }
}
