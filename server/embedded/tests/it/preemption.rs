//! Spot preemption in the embedded cluster, exactly as CoreWeave's Spot Node Pools page describes: T=0 cordon, label
//! and "Preemption pending"; T+2 min evicted-at, "Preemption in progress" and the drain; removal
//! by T+7 min with "Deleted for preemption"; the pool scales back up. Observed through kube-rs.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use spotboard_core::labels;
use spotboard_core::nodepool::ConditionType;
use tokio::time::Instant;

use common::sim::{counts, events, eventually, pool, pool_nodes, reason, zone};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotated_spot_node_is_preempted_as_the_spot_node_pools_page_says() {
    let speed = 120.0;
    let z = zone(0, 3, speed).await;
    let before = pool_nodes(&z.client, "h100-spot-train").await;
    assert_eq!(before.len(), 4);
    let victim = before[0].name_any();
    let nodes = Api::<Node>::all(z.client.clone());
    let pods = Api::<Pod>::all(z.client.clone());
    let on_victim = ListParams::default().fields(&format!("spec.nodeName={victim}"));
    let trainer = pods
        .list(&on_victim)
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|p| p.namespace().as_deref() == Some("ml-training"))
        .unwrap();
    let pods = Api::<Pod>::namespaced(z.client.clone(), "ml-training");
    assert_eq!(
        trainer
            .spec
            .as_ref()
            .unwrap()
            .termination_grace_period_seconds,
        Some(600)
    );

    let t0 = Instant::now();
    let patch = json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
    nodes
        .patch(&victim, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();

    // T=0: cordoned, labelled, warned; pods keep running and the drain has not started.
    let n = eventually(Duration::from_secs(2), "T=0 cordon and label", || async {
        nodes.get_opt(&victim).await.unwrap().filter(|n| {
            n.labels()
                .get(labels::PENDING_PREEMPTION)
                .map(String::as_str)
                == Some("true")
        })
    })
    .await;
    assert_eq!(n.spec.as_ref().unwrap().unschedulable, Some(true));
    assert!(
        !n.labels().contains_key(labels::EVICTED_AT),
        "the drain starts only at T+2"
    );
    let pending = eventually(
        Duration::from_secs(2),
        "Preemption pending event",
        || async {
            events(&z.client, &victim, labels::REASON_PREEMPTION_PENDING)
                .await
                .pop()
        },
    )
    .await;
    assert_eq!(pending.type_.as_deref(), Some("Warning"));
    assert_eq!(
        pending.source.as_ref().unwrap().component.as_deref(),
        Some("preemption-controller")
    );
    assert_eq!(pending.involved_object.kind.as_deref(), Some("Node"));
    assert_eq!(pending.involved_object.uid, n.metadata.uid);
    let p = pods.get(&trainer.name_any()).await.unwrap();
    assert!(
        p.metadata.deletion_timestamp.is_none(),
        "running jobs continue at T=0"
    );

    // T+2 min: evicted-at label, warning, pods terminating with their grace period.
    let n = eventually(Duration::from_secs(3), "T+2 evicted-at", || async {
        nodes
            .get_opt(&victim)
            .await
            .unwrap()
            .filter(|n| n.labels().contains_key(labels::EVICTED_AT))
    })
    .await;
    let drain_after = t0.elapsed();
    let two_min = Duration::from_secs_f64(120.0 / speed);
    assert!(
        drain_after >= two_min.mul_f64(0.9),
        "drain after {drain_after:?}, want >= {two_min:?}"
    );
    let stamp = n.labels()[labels::EVICTED_AT].clone();
    assert!(
        chrono::NaiveDateTime::parse_from_str(&stamp, "%Y-%m-%dT%H-%M-%SZ").is_ok(),
        "{stamp}"
    );
    eventually(
        Duration::from_secs(2),
        "Preemption in progress event",
        || async {
            events(&z.client, &victim, labels::REASON_PREEMPTION_IN_PROGRESS)
                .await
                .pop()
        },
    )
    .await;
    let terminating = eventually(Duration::from_secs(2), "trainer terminating", || async {
        pods.get_opt(&trainer.name_any())
            .await
            .unwrap()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
    })
    .await;
    assert_eq!(
        terminating.metadata.deletion_grace_period_seconds,
        Some(600)
    );

    // Removal: the 600 s trainer outlives the window, so the node goes at T+7 min.
    eventually(Duration::from_secs(5), "node deleted", || async {
        nodes
            .get_opt(&victim)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    let removed_after = t0.elapsed();
    let seven_min = Duration::from_secs_f64(420.0 / speed);
    assert!(
        removed_after >= seven_min.mul_f64(0.9),
        "removed after {removed_after:?}, want ~{seven_min:?}"
    );
    eventually(
        Duration::from_secs(2),
        "Deleted for preemption event",
        || async {
            events(&z.client, &victim, labels::REASON_DELETED_FOR_PREEMPTION)
                .await
                .pop()
        },
    )
    .await;

    // The pool stays, drops a node, and scales back up with a new one; the StatefulSet's pod
    // comes back on it.
    let np = pool(&z.client, "h100-spot-train")
        .await
        .expect("the pool stays");
    assert!(counts(&np).2 <= 4);
    let old: Vec<String> = before.iter().map(ResourceExt::name_any).collect();
    let fresh = eventually(
        Duration::from_secs(20),
        "pool back at 4 with a new node",
        || async {
            let nodes = pool_nodes(&z.client, "h100-spot-train").await;
            let p = pool(&z.client, "h100-spot-train").await?;
            let fresh = nodes
                .iter()
                .find(|n| !old.contains(&n.name_any()))?
                .name_any();
            (counts(&p).2 == 4 && reason(&p, ConditionType::AtTarget) == "True/TargetMet")
                .then_some(fresh)
        },
    )
    .await;
    assert!(
        !events(&z.client, "h100-spot-train", "CWNodeDeleted")
            .await
            .is_empty()
    );
    eventually(
        Duration::from_secs(10),
        "trainer rescheduled on the new node",
        || async {
            let p = pods.get_opt(&trainer.name_any()).await.unwrap()?;
            let on = p.spec.as_ref()?.node_name.clone()?;
            // On a node that joined after the preemption (normally `fresh`; another random
            // preemption may have brought a second one).
            let joined = on == fresh || !old.contains(&on);
            (joined && p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(())
        },
    )
    .await;
}
