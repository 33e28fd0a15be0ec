//! The spot readiness audit, read on demand: every cluster's pods as the hub's pod watch has
//! them, and its PodDisruptionBudgets, listed with spotboard's read-only account, against the
//! hub's nodes and pools.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use spotboard_core::domain::preemption::readiness::{AuditFold, NodeFacts};
use spotboard_core::model::{ClusterAudit, PoolReadiness, Readiness};

use super::workload_reads;
use crate::hub::Hub;

/// How long one audit is served before it is made again: a page refreshing every few
/// seconds must not fold every pod and list every budget of every cluster each time.
pub const CACHE_FOR: Duration = Duration::from_secs(15);

/// The audit and its cache.
#[derive(Clone)]
pub struct ReadinessAudit {
    hub: Hub,
    clients: Arc<HashMap<String, kube::Client>>,
    cache: Arc<tokio::sync::Mutex<Option<(Instant, Readiness)>>>,
}

impl ReadinessAudit {
    pub fn new(hub: Hub, clients: HashMap<String, kube::Client>) -> Self {
        Self {
            hub,
            clients: Arc::new(clients),
            cache: Arc::default(),
        }
    }

    /// Publishes the audit on the hub's stream (a row per cluster, a row per pool) every
    /// [`CACHE_FOR`] while a `/preemptions` or pool page is open (nobody looking, no budgets
    /// listed).
    pub fn spawn_publisher(&self, hub: Hub) -> tokio::task::JoinHandle<()> {
        let audit = self.clone();
        tokio::spawn(async move {
            let mut last: Option<Instant> = None;
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                if hub.preemption_viewers() == 0 || last.is_some_and(|t| t.elapsed() < CACHE_FOR) {
                    continue;
                }
                last = Some(Instant::now());
                let report = audit.report().await;
                let (clusters, pools) = audit.stream_rows(report);
                hub.publish(clusters);
                hub.publish(pools);
            }
        })
    }

    /// `report` as the stream's rows: one per watched cluster (a cluster with no spot pool
    /// gets one too, so a page can tell "nothing to audit" from "not audited yet") and the
    /// pools' audits.
    fn stream_rows(&self, report: Readiness) -> (Vec<ClusterAudit>, Vec<PoolReadiness>) {
        let mut clusters: Vec<&String> = self.clients.keys().collect();
        clusters.sort();
        let clusters = clusters
            .into_iter()
            .map(|c| ClusterAudit {
                cluster: c.clone(),
                generated_at: report.generated_at,
                errors: report
                    .errors
                    .iter()
                    .filter(|e| e.starts_with(&format!("{c}: ")))
                    .cloned()
                    .collect(),
            })
            .collect();
        (clusters, report.pools)
    }

    /// The audit of every pool with spot nodes, at most [`CACHE_FOR`] old. A cluster whose
    /// pods have not been listed yet, or whose budgets cannot be listed, is named in
    /// `errors`; the others are still audited.
    pub async fn report(&self) -> Readiness {
        // Held across the budgets' listing on purpose: concurrent requests wait for one audit.
        let mut cache = self.cache.lock().await;
        if let Some((at, r)) = cache.as_ref()
            && at.elapsed() < CACHE_FOR
        {
            return r.clone();
        }
        let mut nodes = self.hub.audit_nodes();
        let mut out = Readiness {
            generated_at: Some(Utc::now()),
            ..Default::default()
        };
        let mut clusters: Vec<&String> = self.clients.keys().collect();
        clusters.sort();
        let audits = clusters.into_iter().filter_map(|cluster| {
            let nodes = nodes.remove(cluster.as_str()).unwrap_or_default();
            nodes
                .iter()
                .any(|n| n.spot)
                .then(|| audit_cluster(&self.hub, cluster, &self.clients[cluster], nodes))
        });
        // Concurrently, each bounded: one slow cluster must not hold the others' answer.
        for (pools, errors) in futures::future::join_all(audits).await {
            out.pools.extend(pools);
            out.errors.extend(errors);
        }
        *cache = Some((Instant::now(), out.clone()));
        out
    }
}

/// How long one cluster's budgets may take to list.
pub const CLUSTER_TIMEOUT: Duration = Duration::from_secs(20);

/// One cluster's audit and what could not be read there.
///
/// The pods are the hub's (its pod watch keeps each pod's workload facts, shared by the
/// workload's replicas): listing them here cost 500 list requests of 100 pods every 15 s at
/// 50,000 pods, and the dashboard a few MB of decoded pages each time. Only the budgets,
/// a few objects, are listed.
async fn audit_cluster(
    hub: &Hub,
    cluster: &str,
    client: &kube::Client,
    nodes: Vec<NodeFacts>,
) -> (Vec<PoolReadiness>, Vec<String>) {
    // The pods are taken before the budgets are listed (up to 20 s): the nodes were read a
    // moment ago, and pods read later could sit on nodes the fold was not given.
    let pods = match hub.pod_bindings(cluster) {
        Ok(pods) => pods,
        Err(e) => return (Vec::new(), vec![format!("{cluster}: {e}")]),
    };
    let pdbs = tokio::time::timeout(CLUSTER_TIMEOUT, workload_reads::pdbs(client))
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", CLUSTER_TIMEOUT.as_secs())));
    // The fold (140-310 ms at 50,000 pods) runs off the runtime's worker threads, which
    // serve the streams.
    let cluster = cluster.to_string();
    let audited = tokio::task::spawn_blocking(move || {
        let folding = Instant::now();
        let mut fold = AuditFold::new(&cluster, &nodes);
        for (facts, node) in &pods {
            fold.add_on(facts, node.as_deref());
        }
        let out = match pdbs {
            Ok(pdbs) => (fold.finish(Some(&pdbs)), Vec::new()),
            Err(e) => (
                fold.finish(None),
                vec![format!("{cluster}: {e}; budget findings are left out")],
            ),
        };
        tracing::debug!(
            cluster,
            pods = pods.len(),
            folded_ms = folding.elapsed().as_millis() as u64,
            "readiness audit"
        );
        out
    })
    .await;
    audited.unwrap_or_else(|e| (Vec::new(), vec![format!("the audit failed: {e}")]))
}
