//! The NodePool CRD as YAML, generated from `spotboard_core::nodepool` and committed at
//! `server/crd/nodepools.compute.coreweave.com.yaml` (a test fails when it is stale).

use kube::CustomResourceExt;

/// The CRD YAML.
pub fn yaml() -> String {
    let crd = spotboard_core::nodepool::NodePool::crd();
    // The CRD is plain data; serializing it cannot fail.
    serde_yaml::to_string(&crd).unwrap_or_default()
}
