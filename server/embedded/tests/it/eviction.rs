//! Evictions in the embedded cluster: the `pods/eviction` subresource against a
//! PodDisruptionBudget, through kube-rs, and a Spot preemption whose drain a budget refuses
//! (CoreWeave: Node Pool reference, events `CWNodeDrainingPDBViolation` and
//! `CWNodeDrainingForceDelete`).

use crate::common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{EvictParams, ListParams};
use kube::{Api, ResourceExt};
use spotboard_core::labels;
use spotboard_embedded::sim::BLOCKING_BUDGET;

use common::objects::api_code;
use common::sim::{events, eventually, gone, pool_nodes, preempt, zone};

async fn budgeted_pods(pods: &Api<Pod>) -> Vec<Pod> {
    let (_, _, app) = BLOCKING_BUDGET;
    let lp = ListParams::default().labels(&format!("app.kubernetes.io/name={app}"));
    pods.list(&lp)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_allows_one_eviction_refuses_the_next_and_the_reader_may_not_evict() {
    let z = zone(1, 3, 1.0).await;
    let (_, namespace, _) = BLOCKING_BUDGET;
    let pods: Api<Pod> = Api::namespaced(z.evictions.clone(), namespace);
    let running = budgeted_pods(&pods).await;
    assert_eq!(running.len(), 8, "four replicas on each of two nodes");

    let reader: Api<Pod> = Api::namespaced(z.reader.clone(), namespace);
    let denied = reader
        .evict(&running[0].name_any(), &EvictParams::default())
        .await
        .unwrap_err();
    assert_eq!(api_code(denied), 403, "evicting is a write");

    pods.evict(&running[0].name_any(), &EvictParams::default())
        .await
        .expect("maxUnavailable 1: the first eviction goes");
    let p = pods.get(&running[0].name_any()).await.unwrap();
    assert!(p.metadata.deletion_timestamp.is_some(), "terminating");

    match pods
        .evict(&running[1].name_any(), &EvictParams::default())
        .await
    {
        Err(kube::Error::Api(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (429, "TooManyRequests"));
            assert_eq!(
                e.message,
                "Cannot evict pod as it would violate the pod's disruption budget."
            );
        }
        other => panic!("the second eviction is refused, got {other:?}"),
    }
    let p = pods.get(&running[1].name_any()).await.unwrap();
    assert!(
        p.metadata.deletion_timestamp.is_none(),
        "a refusal deletes nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preemption_drain_refused_by_a_budget_is_reported_and_ends_in_force_deletion() {
    let z = zone(1, 3, 240.0).await;
    let (pool, namespace, app) = BLOCKING_BUDGET;
    let nodes: Api<Node> = Api::all(z.client.clone());
    let victim = pool_nodes(&z.client, pool).await[0].name_any();
    let pods: Api<Pod> = Api::all(z.client.clone());
    let on_victim = ListParams::default().fields(&format!("spec.nodeName={victim}"));
    let held: Vec<String> = pods
        .list(&on_victim)
        .await
        .unwrap()
        .items
        .iter()
        .filter(|p| p.namespace().as_deref() == Some(namespace))
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(held.len(), 4);

    preempt(&nodes, &victim).await;
    // At speed 240 the 7-minute window is 1.75 s.
    gone(&nodes, &victim, Duration::from_secs(20)).await;

    let refused = events(&z.client, &victim, labels::REASON_CKS_PDB_VIOLATION).await;
    assert_eq!(
        refused.len(),
        3,
        "one eviction goes (maxUnavailable 1), the other three are refused, each reported once: {refused:?}"
    );
    for e in &refused {
        let msg = e.message.as_deref().unwrap_or_default();
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert!(msg.contains(labels::PDB_REFUSAL_MESSAGE), "{msg}");
        assert!(
            held.iter().any(|p| msg.contains(p.as_str())),
            "names the pod: {msg}"
        );
    }
    let on_pool = events(&z.client, pool, labels::REASON_CKS_PDB_VIOLATION).await;
    assert_eq!(on_pool.len(), 3, "the NodePool gets them too");

    let forced = events(&z.client, &victim, labels::REASON_CKS_FORCE_DELETE).await;
    let msg = forced[0].message.clone().unwrap_or_default();
    let killed = held.iter().filter(|p| msg.contains(p.as_str())).count();
    assert!(killed >= 3, "the refused pods die with the node: {msg}");
    assert!(msg.contains(app), "{msg}");

    // The pod garbage collector deletes them after its quarantine.
    eventually(
        Duration::from_secs(20),
        "the orphans are collected",
        || async {
            pods.list(&on_victim)
                .await
                .unwrap()
                .items
                .is_empty()
                .then_some(())
        },
    )
    .await;
}
