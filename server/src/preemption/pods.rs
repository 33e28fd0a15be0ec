//! The pods of a node at T=0, as blast-radius rows: owner, its replicas now, the budget that
//! covers them, grace period and CKS eviction label.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use spotboard_core::domain::preemption::evictions::{
    OUTCOME_PAST_GRACE, OUTCOME_STILL_RUNNING, OUTCOME_TERMINATING,
};
use spotboard_core::domain::preemption::readiness::covering_pdb;
use spotboard_core::labels::{POD_GRACEFUL_INTERRUPTIBLE, POD_INTERRUPTABLE};
use spotboard_core::model::PodImpact;

use super::shared_reads::SharedReads;
use super::workload_reads;
use crate::hub::Hub;

/// The pods bound to `node` of `cluster`, with their owners' replica counts (active pods of
/// the same owner in the namespace, found by the template labels they share, never by
/// listing the whole namespace) and covering PodDisruptionBudget, each with its uid.
///
/// Waits its turn in `shared` (a wave's reads run [`super::shared_reads::READS_AT_ONCE`] at
/// a time) and takes the replica counts and budgets another node of the wave read moments
/// ago from there.
///
/// Errors: the pods could not be listed (the message is shown in place of the pods). A
/// failure to list budgets leaves `pdb` empty and is logged.
pub async fn on_node(
    client: kube::Client,
    cluster: &str,
    node: &str,
    shared: &SharedReads,
) -> Result<Vec<(PodImpact, String)>, String> {
    let _turn = shared.turn().await;
    let on_node = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let mine = workload_reads::pods(&client, None, on_node)
        .await
        .map_err(|e| format!("{e} (node {node})"))?;
    // One count per owner on the node, of that owner's siblings only.
    let mut counts: HashMap<(String, String), u32> = HashMap::new();
    // DaemonSet pods are one per node by design: their count says nothing about this loss.
    for (p, _) in mine
        .iter()
        .filter(|(p, _)| p.owner_kind.as_deref().is_some_and(|k| k != "DaemonSet"))
    {
        let key = (p.namespace.clone(), p.workload());
        if counts.contains_key(&key) {
            continue;
        }
        let shared_key = (cluster.to_string(), key.0.clone(), key.1.clone());
        if let Some(n) = shared.replicas(&shared_key, Instant::now()) {
            counts.insert(key, n);
            continue;
        }
        let Some(selector) = workload_reads::sibling_selector(p) else {
            continue;
        };
        let lp = ListParams::default().labels(&selector);
        match workload_reads::replicas_of(&client, &key, lp).await {
            Ok(n) => {
                shared.put_replicas(shared_key, n, Instant::now());
                counts.insert(key, n);
            }
            Err(e) => tracing::warn!(error = %e, node, "replica count unknown"),
        }
    }
    let pdbs = match shared.pdbs(cluster, Instant::now()) {
        Some(b) => b,
        None => match workload_reads::pdbs(&client).await {
            Ok(b) => {
                let b = Arc::new(b);
                shared.put_pdbs(cluster, b.clone(), Instant::now());
                b
            }
            Err(e) => {
                tracing::warn!(error = %e, node, "blast radius without PodDisruptionBudgets");
                Arc::default()
            }
        },
    };
    let mut out: Vec<(PodImpact, String)> = mine
        .iter()
        .map(|(p, started_at)| {
            let eviction_label = if p.labels.contains_key(POD_GRACEFUL_INTERRUPTIBLE) {
                Some("graceful-interruptible".to_string())
            } else if p.labels.contains_key(POD_INTERRUPTABLE) {
                Some("interruptable".to_string())
            } else {
                None
            };
            let impact = PodImpact {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
                owner_kind: p.owner_kind.clone(),
                owner_name: p.owner_name.clone(),
                replicas: p
                    .owner_kind
                    .as_ref()
                    .and_then(|_| counts.get(&(p.namespace.clone(), p.workload())).copied()),
                pdb: covering_pdb(&pdbs, p).map(|b| b.name.clone()),
                grace_s: p.grace_s,
                system: p.system,
                eviction_label,
                gpus: p.gpus,
                started_at: *started_at,
                ..Default::default()
            };
            (impact, p.uid.clone())
        })
        .collect();
    out.sort_by(|(a, _), (b, _)| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(out)
}

/// Longest wait for a preempted node to leave before its pods' outcomes are read anyway.
const OUTCOME_WAIT: Duration = Duration::from_secs(15 * 60);

/// Waits until node uid `node_uid` has left the hub (which already watches nodes: no polling
/// of the API server; a namesake GKE recreates has another uid), then reads
/// how each pod held at T=0 on `node` ended, in one list: `(namespace, name, outcome)`,
/// outcomes as [`PodImpact::outcome`] describes them.
///
/// Errors: the pods could not be listed (the API server was unreachable).
pub async fn outcomes(
    client: kube::Client,
    node: &str,
    node_uid: &str,
    pods: &[(PodImpact, String)],
    hub: &Hub,
) -> Result<Vec<(String, String, String)>, String> {
    let gone = async {
        while hub.has_node(node_uid) {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    // Past the wait the outcomes are read anyway (a stale cluster keeps its nodes).
    let _ = tokio::time::timeout(OUTCOME_WAIT, gone).await;
    // A grace period is judged against the node's removal, not against the read.
    let removed_at = Utc::now();
    // The kubelet's last status writes land just before the node goes.
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Pods that ended on the node stay bound to it; one not listed here was deleted.
    let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let left = Api::<Pod>::all(client)
        .list(&lp)
        .await
        .map_err(|e| format!("could not list the pods of {node}: {e}"))?
        .items;
    Ok(pods
        .iter()
        .map(|(p, uid)| {
            let now = left
                .iter()
                .find(|x| x.uid().as_deref() == Some(uid.as_str()));
            (
                p.namespace.clone(),
                p.name.clone(),
                outcome(now, uid, removed_at),
            )
        })
        .collect())
}

/// How a pod held at T=0 (uid `uid`) ended, from what the API server has now; a pod still
/// there is past its grace period when that ended before `removed_at`, its node's removal.
pub fn outcome(now: Option<&Pod>, uid: &str, removed_at: chrono::DateTime<Utc>) -> String {
    let Some(p) = now.filter(|p| p.uid().as_deref() == Some(uid)) else {
        return "deleted".into();
    };
    let status = p.status.as_ref();
    match status.and_then(|s| s.phase.as_deref()) {
        Some("Failed") => format!(
            "Failed: {}",
            status
                .and_then(|s| s.reason.clone())
                .unwrap_or_else(|| "no reason".into())
        ),
        Some("Succeeded") => "Succeeded".into(),
        // `deletionTimestamp` is when the grace period ends (the API server sets it to the
        // delete's time plus the grace).
        _ => match &p.metadata.deletion_timestamp {
            Some(t) if t.0.as_second() < removed_at.timestamp() => OUTCOME_PAST_GRACE.into(),
            Some(_) => OUTCOME_TERMINATING.into(),
            None => OUTCOME_STILL_RUNNING.into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn outcomes_name_what_happened() {
        let failed = pod(serde_json::json!({
            "metadata": {"name": "a", "uid": "u1"},
            "status": {"phase": "Failed", "reason": "Terminated"}
        }));
        assert_eq!(
            outcome(Some(&failed), "u1", Utc::now()),
            "Failed: Terminated"
        );
        assert_eq!(
            outcome(Some(&failed), "other", Utc::now()),
            "deleted",
            "a namesake is not the pod"
        );
        assert_eq!(outcome(None, "u1", Utc::now()), "deleted");
        let running = pod(serde_json::json!({
            "metadata": {"name": "a", "uid": "u1"}, "status": {"phase": "Running"}
        }));
        assert_eq!(outcome(Some(&running), "u1", Utc::now()), "still running");
        let deleting = |at: &str| {
            pod(serde_json::json!({
                "metadata": {"name": "a", "uid": "u1", "deletionTimestamp": at},
                "status": {"phase": "Running"}
            }))
        };
        assert_eq!(
            outcome(Some(&deleting("2999-01-01T00:00:00Z")), "u1", Utc::now()),
            "terminating"
        );
        assert_eq!(
            outcome(Some(&deleting("2020-01-01T00:00:00Z")), "u1", Utc::now()),
            "terminating past its grace period"
        );
    }
}
