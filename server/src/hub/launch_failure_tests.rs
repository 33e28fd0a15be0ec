//! Karpenter's launch failures in the hub: a NodeClaim's event joins its pool once the pool is
//! known, and a burst of them is bounded apart from the other events.

use super::tests::node_rec;
use super::*;

/// Karpenter's launch failure event `uid` about NodeClaim `nodeclaim`.
fn launch_failure(uid: &str, nodeclaim: &str) -> crate::watch::records::EventRecord {
    crate::watch::records::EventRecord {
        uid: uid.into(),
        kind: "NodeClaim".into(),
        object_name: nodeclaim.into(),
        type_: "Warning".into(),
        reason: spotboard_core::labels::KARPENTER_INSUFFICIENT_CAPACITY.into(),
        message: format!("NodeClaim {nodeclaim} event: insufficient capacity"),
        count: 1,
        ..Default::default()
    }
}

/// The event watch may list before the NodePool and node watches: a launch failure about a
/// NodeClaim of a pool not yet known is placed on its pool's page once `known` makes the pool
/// known.
fn a_launch_failure_joins_its_pool_once_known(known: impl FnOnce(&Hub)) {
    let hub = Hub::new(&[("aws".into(), None)]);
    hub.events(
        "aws",
        Observed::Apply(launch_failure("e1", "gpu-spot-b2x7k")),
    );
    hub.flush();
    let on_page = |hub: &Hub| {
        hub.snapshot(&Scope::pool("aws", "gpu-spot"))
            .events
            .iter()
            .any(|e| e.key == "e1" && e.pool.as_deref() == Some("gpu-spot"))
    };
    assert!(!on_page(&hub));
    // The recorder is told about it whatever its pool.
    assert_eq!(hub.ledger_inputs().launch_failures.len(), 1);
    known(&hub);
    hub.flush();
    assert!(on_page(&hub));
}

#[test]
fn a_launch_failure_joins_its_karpenter_nodepool_once_the_object_is_seen() {
    a_launch_failure_joins_its_pool_once_known(|hub| {
        hub.karpenter_pools(
            "aws",
            Observed::Resync(vec![crate::watch::records::KarpenterPoolRecord {
                uid: "kp1".into(),
                name: "gpu-spot".into(),
                ..Default::default()
            }]),
        )
    });
}

/// The same when the pool is known only from its nodes' `karpenter.sh/nodepool` label.
#[test]
fn a_launch_failure_joins_a_pool_its_nodes_name() {
    a_launch_failure_joins_its_pool_once_known(|hub| {
        let node = NodeRecord {
            provider: spotboard_core::Provider::Karpenter,
            ..node_rec("n1", "ip-10-0-1-1", "gpu-spot")
        };
        hub.nodes("aws", Observed::Resync(vec![node]));
    });
}

/// A burst of launch failures (one per NodeClaim in a shortage) is bounded on its own and
/// pushes no other event out: the oldest "Preemption pending" stays.
#[test]
fn a_burst_of_launch_failures_pushes_no_preemption_event_out() {
    use crate::hub::cluster::CLAIM_EVENTS_PER_CLUSTER;
    use crate::watch::records::EventRecord;
    let hub = Hub::new(&[("aws".into(), None)]);
    let at = |s: i64| chrono::DateTime::from_timestamp(1_800_000_000 + s, 0);
    let mut events = vec![EventRecord {
        uid: "pending".into(),
        kind: "Node".into(),
        object_name: "g1".into(),
        type_: "Warning".into(),
        reason: spotboard_core::labels::REASON_PREEMPTION_PENDING.into(),
        count: 1,
        last_seen: at(0),
        ..Default::default()
    }];
    events.extend((0..CLAIM_EVENTS_PER_CLUSTER + 200).map(|i| EventRecord {
        last_seen: at(1 + i as i64),
        ..launch_failure(&format!("ice-{i}"), &format!("gpu-spot-{i:05}"))
    }));
    for e in events {
        hub.events("aws", Observed::Apply(e));
    }
    hub.flush();
    let inputs = hub.ledger_inputs();
    assert_eq!(inputs.preemptions.len(), 1);
    assert_eq!(inputs.launch_failures.len(), CLAIM_EVENTS_PER_CLUSTER);
    // The newest are kept.
    assert!(inputs.launch_failures.iter().any(|e| e.key == "ice-1199"));
    assert!(!inputs.launch_failures.iter().any(|e| e.key == "ice-0"));
}
