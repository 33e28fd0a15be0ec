//! The pods of a node at T=0, as blast-radius rows: owner, its replicas now, the budget that
//! covers them, grace period and CKS eviction label.

use std::collections::BTreeSet;

use app::domain::preemption::readiness::{covering_pdb, replicas};
use app::labels::{POD_GRACEFUL_INTERRUPTIBLE, POD_INTERRUPTABLE};
use app::model::PodImpact;

use super::facts;

/// The pods bound to `node`, with their owners' replica counts (active pods of the same
/// owner in the namespace) and covering PodDisruptionBudget.
///
/// Errors: the pods could not be listed (the message is shown in place of the pods). A
/// failure to list budgets leaves `pdb` empty and is logged.
pub async fn on_node(client: kube::Client, node: &str) -> Result<Vec<PodImpact>, String> {
    let mine = facts::pods(&client, None, Some(&format!("spec.nodeName={node}")))
        .await
        .map_err(|e| format!("{e} (node {node})"))?;
    // Replicas are counted in the namespaces the node's pods live in, not cluster-wide.
    let namespaces: BTreeSet<&str> = mine.iter().map(|p| p.namespace.as_str()).collect();
    let mut in_scope = Vec::new();
    for ns in &namespaces {
        match facts::pods(&client, Some(ns), None).await {
            Ok(p) => in_scope.extend(p),
            Err(e) => tracing::warn!(error = %e, node, "replica counts incomplete"),
        }
    }
    let pdbs = match facts::pdbs(&client).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(error = %e, node, "blast radius without PodDisruptionBudgets");
            Vec::new()
        }
    };
    let counts = replicas(&in_scope);
    let mut out: Vec<PodImpact> = mine
        .iter()
        .map(|p| {
            let eviction_label = if p.labels.contains_key(POD_GRACEFUL_INTERRUPTIBLE) {
                Some("graceful-interruptible".to_string())
            } else if p.labels.contains_key(POD_INTERRUPTABLE) {
                Some("interruptable".to_string())
            } else {
                None
            };
            PodImpact {
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
                eviction_label,
                fit: None,
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(out)
}
