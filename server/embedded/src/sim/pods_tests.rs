use super::*;
use crate::sim::placement::Placement;

fn info(node: Option<&str>, policy: Policy, gpus: u32) -> PodInfo {
    PodInfo {
        uid: format!("uid-{gpus}-{node:?}"),
        node: node.map(Into::into),
        gpus,
        cpu_m: 1000,
        policy,
        daemon: false,
        deleting: false,
        finished: false,
        owner: Some(Owner::ReplicaSet),
        node_selector: Arc::default(),
        gated: false,
        placement: None,
    }
}

fn k(name: &str) -> PodKey {
    ("ml-training".into(), name.into())
}

#[test]
fn millicores_parse() {
    for (q, want) in [("16", 16_000), ("500m", 500), ("1.5", 1_500), ("x", 0)] {
        assert_eq!(millicores(q), want, "{q}");
    }
}

#[test]
fn node_states_follow_the_cks_labels_page() {
    let mut idx = PodIndex::default();
    idx.upsert(k("train-0"), info(Some("g1"), Policy::NonInterruptible, 8));
    idx.upsert(k("infer-a"), info(Some("g2"), Policy::Interruptible, 2));
    idx.upsert(k("db-0"), info(Some("g3"), Policy::Graceful, 0));
    let mut ds = info(Some("g2"), Policy::NonInterruptible, 0);
    ds.daemon = true;
    ds.owner = Some(Owner::DaemonSet);
    idx.upsert(k("cilium-x"), ds);

    // (node, idle, drained)
    let cases = [
        ("g1", false, false), // non-interruptible trainer
        ("g2", true, false),  // interruptible only (the DaemonSet pod does not count)
        ("g3", false, false), // gracefully interruptible blocks scale-down
        ("g4", true, true),   // empty
    ];
    for (node, idle, drained) in cases {
        assert_eq!(idx.idle(node), idle, "{node} idle");
        assert_eq!(idx.drained(node), drained, "{node} drained");
    }
    assert!(idx.hosts_graceful("g3") && !idx.hosts_graceful("g1"));
    assert_eq!(idx.used("g1"), (8, 1000));
    assert_eq!(idx.bound_to("g2").len(), 2);
    let ev = idx.evictable("g2");
    assert_eq!(ev.len(), 1);
    assert_eq!((ev[0].0.name.as_str(), ev[0].1), ("infer-a", true));
    assert_eq!(ev[0].0.uid, idx.pods[&k("infer-a")].uid);
}

#[test]
fn terminating_pods_hold_the_node_until_gone() {
    let mut idx = PodIndex::default();
    let mut p = info(Some("g1"), Policy::NonInterruptible, 8);
    idx.upsert(k("train-0"), p.clone());
    p.deleting = true;
    idx.upsert(k("train-0"), p);
    assert!(
        idx.idle("g1"),
        "terminating pods do not hold off a scale-down"
    );
    assert!(!idx.drained("g1"), "but the node is not drained yet");
    assert!(idx.evictable("g1").is_empty(), "not deleted twice");
    assert_eq!(idx.used("g1").0, 8);
    idx.remove(&k("train-0"));
    assert!(idx.drained("g1"));
    assert_eq!(idx.len(), 0);
}

#[test]
fn pending_pods_leave_the_queue_when_bound() {
    let mut idx = PodIndex::default();
    idx.upsert(k("b"), info(None, Policy::Interruptible, 2));
    idx.upsert(k("a"), info(None, Policy::Interruptible, 2));
    let mut gone = info(None, Policy::Interruptible, 2);
    gone.deleting = true;
    idx.upsert(k("c"), gone);
    let names: Vec<_> = idx.pending().into_iter().map(|(k, _)| k.1).collect();
    assert_eq!(names, ["a", "b"]);
    idx.bind(&k("a"), "g9");
    assert_eq!(idx.pending().len(), 1);
    assert_eq!(idx.used("g9").0, 2);
    // A failed binding goes back to the queue, but only for the same incarnation.
    idx.unbind(&k("a"), "another-uid", "g9");
    assert_eq!(idx.pending().len(), 1);
    let uid = idx.pods[&k("a")].uid.clone();
    idx.unbind(&k("a"), &uid, "g9");
    assert_eq!(idx.pending().len(), 2);
    assert_eq!(idx.used("g9").0, 0);
}

/// A fresh selector and placement, allocated anew as a decoded pod's are.
fn template(pool: &str) -> PodInfo {
    let spec: k8s_openapi::api::core::v1::PodSpec = serde_json::from_value(serde_json::json!({
        "containers": [],
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                         "effect": "NoExecute", "tolerationSeconds": 300}],
    }))
    .unwrap();
    let mut p = info(Some("g1"), Policy::Interruptible, 1);
    p.node_selector = Arc::from(vec![("pool".to_string(), pool.to_string())]);
    p.placement = Placement::from_spec(&spec);
    p
}

#[test]
fn pods_of_one_template_share_one_copy_of_their_node_selector_and_placement() {
    let mut idx = PodIndex::default();
    idx.upsert(k("a-0"), template("a"));
    idx.upsert(k("a-1"), template("a"));
    idx.upsert(k("b-0"), template("b"));
    let (a0, a1, b0) = (
        &idx.pods[&k("a-0")],
        &idx.pods[&k("a-1")],
        &idx.pods[&k("b-0")],
    );
    assert!(Arc::ptr_eq(&a0.node_selector, &a1.node_selector));
    assert!(!Arc::ptr_eq(&a0.node_selector, &b0.node_selector));
    assert_eq!(*b0.node_selector, [("pool".to_string(), "b".to_string())]);
    let placement = |p: &PodInfo| p.placement.clone().unwrap();
    assert!(Arc::ptr_eq(&placement(a0), &placement(b0)));
    let node = |p: &PodInfo| p.node.clone().unwrap();
    assert!(Arc::ptr_eq(&node(a0), &node(b0)));
    // A binding's node name is the node's one copy too.
    idx.upsert(k("c"), info(None, Policy::Interruptible, 1));
    idx.bind(&k("c"), "g1");
    assert!(Arc::ptr_eq(
        &node(&idx.pods[&k("c")]),
        &node(&idx.pods[&k("a-0")])
    ));
    assert_eq!(idx.used("g1"), (4, 4000));
}

#[test]
fn copies_no_pod_holds_are_swept_and_held_ones_stay() {
    let mut idx = PodIndex::default();
    idx.upsert(k("kept"), template("kept"));
    let kept = idx.pods[&k("kept")].node_selector.clone();
    for i in 0..500 {
        let name = format!("p-{i}");
        idx.upsert(k(&name), template(&name));
        idx.remove(&k(&name));
    }
    assert!(
        idx.selectors.copies.len() <= 32,
        "{}",
        idx.selectors.copies.len()
    );
    idx.upsert(k("again"), template("kept"));
    assert!(Arc::ptr_eq(&idx.pods[&k("again")].node_selector, &kept));
}
