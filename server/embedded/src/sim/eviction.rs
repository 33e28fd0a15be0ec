//! Evictions as drains ask for them: through the `pods/eviction` subresource, so a
//! PodDisruptionBudget can refuse (429) and the drain retries, as CKS's drain, Karpenter's
//! termination controller and `kubectl drain` do (Kubernetes: API-initiated Eviction).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, EvictParams, Preconditions};

use super::clock::secs;
use super::pods::PodRef;

/// Simulated time between a drain's attempts at the evictions a budget refused (`kubectl
/// drain` waits 5 s).
pub const RETRY: Duration = secs(5);

/// What one eviction did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evicted {
    /// The pod is terminating (or was already gone, or replaced by a namesake).
    Done,
    /// A budget refused: the API server's message (kube-rs keeps the `Status` message, not
    /// the cause naming the budget).
    Refused(String),
    /// Anything else (logged): try again later.
    Failed,
}

/// Asks the API server to evict `p` (this incarnation only, by uid), with the pod's own
/// grace period.
pub async fn evict(client: &kube::Client, p: &PodRef) -> Evicted {
    let api: Api<Pod> = Api::namespaced(client.clone(), &p.namespace);
    let params = EvictParams {
        delete_options: Some(DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(p.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        }),
        ..EvictParams::default()
    };
    match api.evict(&p.name, &params).await {
        Ok(_) => Evicted::Done,
        Err(kube::Error::Api(e)) if matches!(e.code, 404 | 409) => Evicted::Done,
        Err(kube::Error::Api(e)) if e.code == 429 => Evicted::Refused(e.message),
        Err(e) => {
            tracing::warn!(pod = %p.name, "eviction: {e}");
            Evicted::Failed
        }
    }
}
