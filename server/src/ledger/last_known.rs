//! Each cluster's last known state in the ledger (table `last_known`): written about once a
//! minute by the replica that writes, read once at start so that a restarted spotboard shows
//! the fleet it last saw, marked stale since then, while its watches list the clusters again
//! (`crate::hub::Hub::restore`).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::Ledger;
use super::store::{db, secs, text, time};
use crate::Result;
use crate::hub::{Hub, decode_known};

/// The bytes of one cluster's last known state read back at most: its rows as JSON, about
/// 400 bytes a node and 1 KB a pool (10,000 nodes are about 5 MB). A larger one is skipped
/// with a log line and the cluster starts empty, as it would without one.
pub const MAX_BODY: usize = 256 << 20;

/// How often the writer keeps each listed cluster's state by default (`--last-known-seconds`).
pub const KEEP_EVERY: Duration = Duration::from_secs(60);

/// One cluster's last known state as read back: when it was current, and its rows as JSON.
pub struct Known {
    pub cluster: String,
    pub as_of: DateTime<Utc>,
    pub body: String,
}

impl Ledger {
    /// Keeps `body` (the JSON of [`KnownRows`]) as `cluster`'s last known state as of `as_of`,
    /// replacing the one before.
    ///
    /// Errors: the database failed, or this replica does not write.
    pub async fn keep_known(&self, cluster: &str, as_of: DateTime<Utc>, body: &str) -> Result<()> {
        self.writable()?;
        sqlx::query(
            "INSERT INTO last_known (cluster, as_of, body) VALUES ($1, $2, $3)
             ON CONFLICT (cluster) DO UPDATE SET as_of = excluded.as_of, body = excluded.body",
        )
        .bind(text(cluster).into_owned())
        .bind(secs(as_of))
        // Bound as is: a kept body is base64 or serde_json's, which escapes every control
        // character, so it holds no NUL for `text` to strip (and no copy is made of it).
        .bind(body)
        .execute(&self.pool)
        .await
        .map_err(db("keeping a cluster's last known state"))?;
        Ok(())
    }

    /// Moves `cluster`'s last known state to `as_of` without writing its rows again: they
    /// have not changed since they were kept.
    ///
    /// Errors: the database failed, or this replica does not write.
    pub async fn known_still(&self, cluster: &str, as_of: DateTime<Utc>) -> Result<()> {
        self.writable()?;
        sqlx::query("UPDATE last_known SET as_of = $1 WHERE cluster = $2")
            .bind(secs(as_of))
            .bind(text(cluster).into_owned())
            .execute(&self.pool)
            .await
            .map_err(db("keeping a cluster's last known state"))?;
        Ok(())
    }

    /// The last known states of `clusters` (others are left in the table: a run watching
    /// other contexts does not delete them), each at most [`MAX_BODY`] bytes; a larger one is
    /// left out with a log line.
    ///
    /// Errors: the database failed.
    pub async fn known(&self, clusters: &[String]) -> Result<Vec<Known>> {
        self.known_within(clusters, MAX_BODY).await
    }

    async fn known_within(&self, clusters: &[String], max: usize) -> Result<Vec<Known>> {
        let rows = sqlx::query("SELECT cluster, as_of, length(body) FROM last_known")
            .fetch_all(&self.pool)
            .await
            .map_err(db("reading the last known states"))?;
        let mut out = Vec::new();
        for r in rows {
            let cluster: String = r.get(0);
            if !clusters.contains(&cluster) {
                continue;
            }
            // `length` counts characters; a byte is at least one, so this bounds both.
            let chars = usize::try_from(r.get::<i64, _>(2)).unwrap_or(usize::MAX);
            if chars > max {
                tracing::warn!(%cluster, chars, max,
                    "last known state too large to read back; the cluster starts empty");
                continue;
            }
            let body: String = sqlx::query("SELECT body FROM last_known WHERE cluster = $1")
                .bind(&cluster)
                .fetch_one(&self.pool)
                .await
                .map_err(db("reading a last known state"))?
                .get(0);
            out.push(Known {
                cluster,
                as_of: time(r.get(1)),
                body,
            });
        }
        Ok(out)
    }
}

/// Reads the last known state of every cluster the hub watches and shows it
/// ([`Hub::restore`]); a state that does not decode is skipped with a log line. Returns how
/// many clusters were restored.
pub async fn restore(ledger: &Ledger, hub: &Hub) -> usize {
    let clusters = hub.cluster_names();
    let known = match ledger.known(&clusters).await {
        Ok(k) => k,
        Err(e) => {
            tracing::warn!(error = %e, "no last known state read; the clusters start empty");
            return 0;
        }
    };
    let mut restored = 0;
    for k in known {
        match decode_known(&k.body, MAX_BODY) {
            Ok(rows) => {
                let n = hub.restore(&k.cluster, k.as_of, rows);
                if n > 0 {
                    restored += 1;
                    tracing::info!(cluster = %k.cluster, rows = n, as_of = %k.as_of,
                        "showing the last known state until the cluster is listed");
                }
            }
            Err(e) => tracing::warn!(cluster = %k.cluster, error = %e,
                "last known state does not decode; the cluster starts empty"),
        }
    }
    restored
}

/// Every `every`, keeps the state of each cluster whose watches have all listed (a cluster
/// still connecting, or showing its restored state, keeps the state it had). Rows that have
/// not changed since this writer last kept them are not written again; only their time
/// moves. Only the replica that writes writes; a failure is logged once until a write
/// succeeds.
pub fn spawn_writer(ledger: Ledger, hub: Hub, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut failing = false;
        // Per cluster, a hash of the rows this writer last kept.
        let mut kept: HashMap<String, u64> = HashMap::new();
        loop {
            tokio::time::sleep(every).await;
            if ledger.writer().holds() {
                for cluster in hub.cluster_names() {
                    // Serialized under the hub's read lock, one cluster at a time.
                    let Some(body) = hub.known_rows(&cluster) else {
                        continue;
                    };
                    let hash = {
                        let mut h = std::hash::DefaultHasher::new();
                        body.hash(&mut h);
                        h.finish()
                    };
                    let now = Utc::now();
                    let write = if kept.get(&cluster) == Some(&hash) {
                        ledger.known_still(&cluster, now).await
                    } else {
                        ledger.keep_known(&cluster, now, &body).await
                    };
                    match write {
                        Ok(()) => {
                            failing = false;
                            kept.insert(cluster, hash);
                        }
                        Err(e) if !failing => {
                            failing = true;
                            tracing::warn!(error = %e, "last known state not kept; trying again");
                        }
                        Err(_) => {}
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sqlite() -> (tempfile::TempDir, Ledger) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("ledger.sqlite").display());
        let ledger = Ledger::open(&url).await.unwrap();
        (dir, ledger)
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[tokio::test]
    async fn each_clusters_state_is_replaced_and_read_back_within_its_budget() {
        let (_dir, ledger) = sqlite().await;
        ledger
            .keep_known(
                "zone-a",
                at("2026-11-28T14:00:00Z"),
                r#"{"pools":[],"nodes":[]}"#,
            )
            .await
            .unwrap();
        ledger
            .keep_known(
                "zone-a",
                at("2026-11-28T14:01:00Z"),
                r#"{"pools":[{"x":1}]}"#,
            )
            .await
            .unwrap();
        ledger
            .keep_known("zone-b", at("2026-11-28T14:01:00Z"), &"x".repeat(100))
            .await
            .unwrap();
        ledger
            .keep_known("zone-c", at("2026-11-28T14:01:00Z"), "{}")
            .await
            .unwrap();
        let wanted = ["zone-a".to_string(), "zone-b".to_string()];
        let mut got: Vec<(String, DateTime<Utc>, String)> = ledger
            .known_within(&wanted, 50)
            .await
            .unwrap()
            .into_iter()
            .map(|k| (k.cluster, k.as_of, k.body))
            .collect();
        got.sort();
        // zone-b is over the budget, zone-c not asked for; zone-a's second state replaced
        // its first.
        assert_eq!(
            got,
            vec![(
                "zone-a".to_string(),
                at("2026-11-28T14:01:00Z"),
                r#"{"pools":[{"x":1}]}"#.to_string()
            )]
        );
        assert_eq!(ledger.known(&wanted).await.unwrap().len(), 2);
        // Rows unchanged: only the time moves.
        ledger
            .known_still("zone-a", at("2026-11-28T14:05:00Z"))
            .await
            .unwrap();
        let a = ledger.known_within(&wanted, 50).await.unwrap().remove(0);
        assert_eq!(
            (a.as_of, a.body.as_str()),
            (at("2026-11-28T14:05:00Z"), r#"{"pools":[{"x":1}]}"#)
        );
    }

    /// A state that does not decode is skipped, the others restored; a replica that does not
    /// write keeps nothing.
    #[tokio::test]
    async fn a_state_that_does_not_decode_is_skipped_and_a_follower_keeps_nothing() {
        let (_dir, ledger) = sqlite().await;
        let hub = Hub::new(&[("zone-a".into(), None), ("zone-b".into(), None)]);
        ledger
            .keep_known("zone-a", at("2026-11-28T14:00:00Z"), "{not json")
            .await
            .unwrap();
        let node = spotboard_core::model::NodeRow {
            key: "n1".into(),
            cluster: "zone-b".into(),
            name: "g1".into(),
            ..Default::default()
        };
        let rows = serde_json::json!({"pools": [], "nodes": [node]}).to_string();
        ledger
            .keep_known("zone-b", at("2026-11-28T14:00:00Z"), &rows)
            .await
            .unwrap();
        assert_eq!(restore(&ledger, &hub).await, 1);
        let snap = hub.snapshot(&spotboard_core::model::Scope::pools());
        let states: Vec<_> = snap
            .clusters
            .iter()
            .map(|c| (c.name.clone(), c.state))
            .collect();
        assert_eq!(
            states,
            vec![
                (
                    "zone-a".to_string(),
                    spotboard_core::model::LinkState::Connecting
                ),
                (
                    "zone-b".to_string(),
                    spotboard_core::model::LinkState::Stale
                )
            ]
        );

        let follower = ledger.with_writer(crate::leader::Leadership::following("replica-1"));
        assert!(matches!(
            follower.keep_known("zone-a", Utc::now(), "{}").await,
            Err(crate::Error::NotWriter { .. })
        ));
    }
}
