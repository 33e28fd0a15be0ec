//! A preemption's pods in the ledger: the pods a preempted node held at T=0, linked to its
//! lifetime, how each ended, and "why did my pod stop?" by pod name.

use spotboard_core::model::{PodHit, PodImpact};
use sqlx::Row;

use super::Ledger;
use super::lifetimes::lifetime;
use super::store::{db, secs, time};
use crate::Result;

/// A `preemption_pods` row's eleven pod columns ([`POD_COLUMNS`]), starting at column `at`.
fn pod_impact(r: &sqlx::any::AnyRow, at: usize) -> PodImpact {
    PodImpact {
        namespace: r.get(at),
        name: r.get(at + 1),
        owner_kind: r.get(at + 2),
        owner_name: r.get(at + 3),
        grace_s: r.get(at + 4),
        eviction_label: r.get(at + 5),
        replicas: r
            .get::<Option<i64>, _>(at + 6)
            .and_then(|n| u32::try_from(n).ok()),
        pdb: r.get(at + 7),
        outcome: r.get(at + 8),
        gpus: r
            .get::<Option<i64>, _>(at + 9)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0),
        started_at: r.get::<Option<i64>, _>(at + 10).map(time),
        // Only the live view needs it (for GKE's grace-period fit); the ledger does not keep it.
        system: false,
        fit: None,
    }
}

/// The pod columns [`pod_impact`] reads, of `preemption_pods p`.
const POD_COLUMNS: &str = "p.namespace, p.name, p.owner_kind, p.owner_name, p.grace_s, \
    p.eviction_label, p.replicas, p.pdb, p.outcome, p.gpus, p.started_at";

impl Ledger {
    /// Links the pods a preempted node held at T=0 to its lifetime (once per pod).
    pub async fn preempted_pods(&self, node_uid: &str, pods: &[PodImpact]) -> Result<()> {
        self.writable()?;
        // One transaction: a reader sees the whole blast radius or none of it, never part.
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(db("recording a preemption's pods"))?;
        for p in pods {
            sqlx::query(
                "INSERT INTO preemption_pods
                   (node_uid, namespace, name, owner_kind, owner_name, grace_s, eviction_label, replicas, pdb, outcome, gpus, started_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (node_uid, namespace, name) DO NOTHING",
            )
            .bind(node_uid)
            .bind(&p.namespace)
            .bind(&p.name)
            .bind(p.owner_kind.clone())
            .bind(p.owner_name.clone())
            .bind(p.grace_s)
            .bind(p.eviction_label.clone())
            .bind(p.replicas.map(i64::from))
            .bind(p.pdb.clone())
            .bind(p.outcome.clone())
            .bind(i64::from(p.gpus))
            .bind(p.started_at.map(secs))
            .execute(&mut *tx)
            .await
            .map_err(db("recording a preemption's pods"))?;
        }
        tx.commit()
            .await
            .map_err(db("recording a preemption's pods"))?;
        Ok(())
    }

    /// Records how the pods linked to `node_uid` ended: `(namespace, name, outcome)`.
    ///
    /// Errors: the database refused the update.
    pub async fn pod_outcomes(
        &self,
        node_uid: &str,
        outcomes: &[(String, String, String)],
    ) -> Result<()> {
        self.writable()?;
        for (ns, name, outcome) in outcomes {
            sqlx::query(
                "UPDATE preemption_pods SET outcome = $1 WHERE node_uid = $2 AND namespace = $3 AND name = $4",
            )
            .bind(outcome)
            .bind(node_uid)
            .bind(ns)
            .bind(name)
            .execute(&self.pool)
            .await
            .map_err(db("recording how a preemption's pods ended"))?;
        }
        Ok(())
    }

    /// The pods linked to a preempted node, by namespace and name.
    pub async fn pods_of(&self, node_uid: &str) -> Result<Vec<PodImpact>> {
        let rows = sqlx::query(&format!(
            "SELECT {POD_COLUMNS} FROM preemption_pods p WHERE node_uid = $1 ORDER BY namespace, name"
        ))
        .bind(node_uid)
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading a preemption's pods"))?;
        Ok(rows.iter().map(|r| pod_impact(r, 0)).collect())
    }

    /// The preemptions that hit pods of `namespace` whose name starts with `name` (a pod, or
    /// a Deployment's or StatefulSet's pods by their common prefix), newest T=0 first (SQLite
    /// and PostgreSQL sort NULLs differently, so nodes without T=0 are put last explicitly), at
    /// most 100: "why did my pod stop?" answered beyond Kubernetes' event TTL.
    ///
    /// Errors: the database could not be read.
    pub async fn hits_on(&self, namespace: &str, name: &str) -> Result<Vec<PodHit>> {
        let rows = sqlx::query(&format!(
            "SELECT l.uid, l.cluster, l.node, l.pool, l.instance_type, l.zone, l.capacity_type, l.gpus,
                    l.started_at, l.ended_at, l.end_reason, l.preemption_t0, {POD_COLUMNS}
             FROM preemption_pods p JOIN node_lifetimes l ON l.uid = p.node_uid
             WHERE p.namespace = $1 AND p.name LIKE $2
             ORDER BY l.preemption_t0 IS NULL, l.preemption_t0 DESC, p.name LIMIT 100"
        ))
        .bind(namespace)
        .bind(format!("{name}%"))
        .fetch_all(&self.pool)
        .await
        .map_err(db("looking up a pod's preemptions"))?;
        Ok(rows
            .iter()
            .map(|r| PodHit {
                node: lifetime(r),
                pod: pod_impact(r, 12),
            })
            .collect())
    }
}
