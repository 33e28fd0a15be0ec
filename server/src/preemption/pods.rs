//! The pods of a node at T=0, as blast-radius rows.

use app::labels::{POD_GRACEFUL_INTERRUPTIBLE, POD_INTERRUPTABLE};
use app::model::PodImpact;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, ResourceExt, api::ListParams};

/// Kubernetes' default `terminationGracePeriodSeconds`.
pub const DEFAULT_GRACE_S: i64 = 30;

/// The pods bound to `node`.
///
/// Errors: the API server could not be asked (the message is shown in place of the pods).
pub async fn on_node(client: kube::Client, node: &str) -> Result<Vec<PodImpact>, String> {
    let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let pods = Api::<Pod>::all(client)
        .list(&lp)
        .await
        .map_err(|e| format!("could not list the pods on {node}: {e}"))?;
    let mut out: Vec<PodImpact> = pods.items.iter().map(impact).collect();
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(out)
}

fn impact(p: &Pod) -> PodImpact {
    let owner = p.owner_references().first();
    let l = p.labels();
    let eviction_label = if l.contains_key(POD_GRACEFUL_INTERRUPTIBLE) {
        Some("graceful-interruptible".to_string())
    } else if l.contains_key(POD_INTERRUPTABLE) {
        Some("interruptable".to_string())
    } else {
        None
    };
    PodImpact {
        namespace: p.namespace().unwrap_or_default(),
        name: p.name_any(),
        owner_kind: owner.map(|o| o.kind.clone()),
        owner_name: owner.map(|o| o.name.clone()),
        grace_s: p
            .spec
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(DEFAULT_GRACE_S),
        eviction_label,
        fit: None,
    }
}
