//! The spot readiness audit, read on demand: every cluster's pods as the hub's pod watch has
//! them, and its PodDisruptionBudgets, listed with spotboard's read-only account, against the
//! hub's nodes and pools.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
// tokio's clock, not std's: the cadence and the cache age are then one clock, which a test
// with paused time can move.
use spotboard_core::domain::preemption::readiness::{AuditFold, NodeFacts};
use spotboard_core::model::{ClusterAudit, PoolReadiness, Readiness};
use tokio::time::Instant;

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
    /// listed). Each one is made afresh: served from the cache, an audit a page request had
    /// refreshed just after the last publish would be sent again, and a pod would wait up to
    /// twice [`CACHE_FOR`] to be named.
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
                let report = audit.audit_now().await;
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
        self.audit_into(&mut cache).await
    }

    /// A new audit, whatever the cache holds; it becomes the cache.
    pub async fn audit_now(&self) -> Readiness {
        let mut cache = self.cache.lock().await;
        self.audit_into(&mut cache).await
    }

    async fn audit_into(&self, cache: &mut Option<(Instant, Readiness)>) -> Readiness {
        // Stamped when the nodes are read, not when the budgets come back: its age is the data's.
        let read_at = Instant::now();
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
        *cache = Some((read_at, out.clone()));
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
        let folding = std::time::Instant::now();
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

#[cfg(test)]
mod tests {
    use super::*;
    use spotboard_core::model::Scope;

    /// A client for a cluster with no spot nodes: the audit never calls it.
    fn idle_client() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URL"));
        kube::Client::try_from(config).expect("a client")
    }

    /// A hub watching one cluster, `zone-a`, and its audit.
    fn one_idle_cluster() -> (Hub, ReadinessAudit) {
        let hub = Hub::new(&[("zone-a".into(), None)]);
        let clients = HashMap::from([("zone-a".into(), idle_client())]);
        (hub.clone(), ReadinessAudit::new(hub, clients))
    }

    fn published_at(hub: &Hub) -> Option<chrono::DateTime<Utc>> {
        let audits = hub.snapshot(&Scope::preemptions()).audits;
        assert_eq!(audits.len(), 1, "one row per watched cluster: {audits:?}");
        audits[0].generated_at
    }

    /// A page's `GET /api/v1/readiness` fills the cache; the stream must not be sent that
    /// audit again as if it were new, or a pod waits two periods to be named.
    #[tokio::test(start_paused = true)]
    async fn the_stream_gets_a_fresh_audit_each_period_whatever_the_cache_holds() {
        let (hub, audit) = one_idle_cluster();
        let served = audit.report().await.generated_at;
        assert!(served.is_some());

        let _page = hub.subscribe(&Scope::preemptions(), None);
        let publisher = audit.spawn_publisher(hub.clone());
        tokio::time::sleep(Duration::from_secs(2)).await;
        let first = published_at(&hub);
        assert!(
            first > served,
            "the first publish is a new audit, not the page's cached one"
        );

        // A page request in between is served the cache and changes nothing ...
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(audit.report().await.generated_at, first);
        // ... and one period after the first publish, the stream has the next audit.
        tokio::time::sleep(CACHE_FOR - Duration::from_secs(5)).await;
        let second = published_at(&hub);
        assert!(second > first, "a new audit {CACHE_FOR:?} after the last");
        publisher.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn nobody_looking_means_no_audit() {
        let (hub, audit) = one_idle_cluster();
        let publisher = audit.spawn_publisher(hub.clone());
        tokio::time::sleep(CACHE_FOR * 2).await;
        assert!(hub.snapshot(&Scope::preemptions()).audits.is_empty());
        publisher.abort();
    }
}
