//! The NodePool CRD as YAML, generated from `app::nodepool` and committed at
//! `server/crd/nodepools.compute.coreweave.com.yaml` (a test fails when it is stale).

use kube::CustomResourceExt;

/// The CRD YAML.
pub fn yaml() -> String {
    let crd = app::nodepool::NodePool::crd();
    // The CRD is plain data; serializing it cannot fail.
    serde_yaml::to_string(&crd).unwrap_or_default()
}
