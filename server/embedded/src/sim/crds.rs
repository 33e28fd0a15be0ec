//! The custom resources each zone's API server is started with, and the extra route a CKS
//! zone serves: what a vendor installs on a real cluster, registered by the behaviour model
//! because the API server itself names no vendor.

use kube::CustomResourceExt;
use serde_json::{Value, json};

use super::fleet::Flavor;

/// Where a CKS zone's API server serves the zone's capacity feed (the feed format of
/// `spotboard_core::model::capacity`), for the dashboard's capacity grid to read as it would read a
/// provider's.
pub const CAPACITY_FEED_PATH: &str = "/capacity-feed";

/// The CRDs a zone serves: a CKS zone (`None`) CoreWeave's NodePool and Kueue's four kinds;
/// a Karpenter zone Karpenter's NodePool; a GKE zone none (GKE node pools are not Kubernetes
/// objects), so the GKE zone is the fleet's cluster without Kueue.
pub fn for_zone(fleet: Option<Flavor>) -> Vec<Value> {
    match fleet {
        None => [vec![coreweave_nodepool()], kueue()].concat(),
        Some(Flavor::Karpenter) => vec![karpenter_nodepool()],
        Some(Flavor::Gke) => Vec::new(),
    }
}

/// CoreWeave's NodePool CRD (`compute.coreweave.com/v1alpha1`) as the product declares it,
/// in the `coreweave` category so `kubectl get coreweave` lists pools (`kubectl get all`
/// leaves cluster-scoped kinds out).
pub fn coreweave_nodepool() -> Value {
    let mut crd =
        serde_json::to_value(spotboard_core::nodepool::NodePool::crd()).expect("CRD serializes");
    crd["spec"]["names"]["categories"] = json!(["coreweave"]);
    crd
}

/// Karpenter's NodePool CRD (`karpenter.sh/v1`), with the printer columns of Karpenter's own
/// CRD (Karpenter: NodePools, https://karpenter.sh/docs/concepts/nodepools/). The schema keeps
/// `spec` and `status` open: the embedded cluster stores what the behaviour model writes.
pub fn karpenter_nodepool() -> Value {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "nodepools.karpenter.sh"},
        "spec": {
            "group": "karpenter.sh",
            "names": {"kind": "NodePool", "listKind": "NodePoolList", "plural": "nodepools",
                      "singular": "nodepool", "categories": ["karpenter"]},
            "scope": "Cluster",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": open.clone(), "status": open}}},
                "additionalPrinterColumns": [
                    {"name": "NodeClass", "type": "string",
                     "jsonPath": ".spec.template.spec.nodeClassRef.name"},
                    {"name": "Nodes", "type": "string", "jsonPath": ".status.resources.nodes"},
                    {"name": "Ready", "type": "string",
                     "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    {"name": "Weight", "type": "integer", "priority": 1, "jsonPath": ".spec.weight"},
                ],
            }],
        },
    })
}

/// Kueue's CRDs (`kueue.x-k8s.io/v1beta1`): ResourceFlavor, ClusterQueue (cluster-scoped),
/// LocalQueue and Workload (namespaced), with the printer columns of Kueue's own CRDs (Kueue:
/// API reference). The schemas keep `spec` and `status` open, as for Karpenter's.
pub fn kueue() -> Vec<Value> {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let crd = |kind: &str, plural: &str, singular: &str, namespaced: bool, columns: Value| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.kueue.x-k8s.io")},
            "spec": {
                "group": "kueue.x-k8s.io",
                "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural,
                          "singular": singular, "categories": ["kueue"]},
                "scope": if namespaced { "Namespaced" } else { "Cluster" },
                "versions": [{
                    "name": "v1beta1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "properties": {"spec": open.clone(), "status": open.clone()}}},
                    "additionalPrinterColumns": columns,
                }],
            },
        })
    };
    let age = json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"});
    vec![
        crd(
            "ResourceFlavor",
            "resourceflavors",
            "resourceflavor",
            false,
            json!([age]),
        ),
        crd(
            "ClusterQueue",
            "clusterqueues",
            "clusterqueue",
            false,
            json!([
                {"name": "Cohort", "type": "string", "jsonPath": ".spec.cohort"},
                {"name": "Strategy", "type": "string", "priority": 1,
                 "jsonPath": ".spec.queueingStrategy"},
                {"name": "Pending Workloads", "type": "integer",
                 "jsonPath": ".status.pendingWorkloads"},
                {"name": "Admitted Workloads", "type": "integer", "priority": 1,
                 "jsonPath": ".status.admittedWorkloads"},
            ]),
        ),
        crd(
            "LocalQueue",
            "localqueues",
            "localqueue",
            true,
            json!([
                {"name": "ClusterQueue", "type": "string", "jsonPath": ".spec.clusterQueue"},
                {"name": "Pending Workloads", "type": "integer",
                 "jsonPath": ".status.pendingWorkloads"},
                {"name": "Admitted Workloads", "type": "integer",
                 "jsonPath": ".status.admittedWorkloads"},
            ]),
        ),
        crd(
            "Workload",
            "workloads",
            "workload",
            true,
            json!([
                {"name": "Queue", "type": "string", "jsonPath": ".spec.queueName"},
                {"name": "Reserved in", "type": "string",
                 "jsonPath": ".status.admission.clusterQueue"},
                {"name": "Admitted", "type": "string",
                 "jsonPath": ".status.conditions[?(@.type==\"Admitted\")].status"},
                {"name": "Finished", "type": "string",
                 "jsonPath": ".status.conditions[?(@.type==\"Finished\")].status"},
                age,
            ]),
        ),
    ]
}
