use super::*;

const EXAMPLE: &str = r#"{
  "apiVersion": "compute.coreweave.com/v1alpha1",
  "kind": "NodePool",
  "metadata": {"name": "example-nodepool"},
  "spec": {
    "autoscaling": false,
    "instanceType": "gd-8xa100-i128",
    "lifecycle": {"disableUnhealthyNodeEviction": true, "scaleDownStrategy": "IdleOnly"},
    "maxNodes": 0, "minNodes": 0, "targetNodes": 1
  },
  "status": {
    "conditions": [
      {"lastTransitionTime": "2025-05-30T17:36:00Z", "message": "NodePool configuration is valid.",
       "reason": "Valid", "status": "True", "type": "Validated"},
      {"lastTransitionTime": "2025-05-30T17:36:00Z", "message": "All nodes are on the current configuration.",
       "reason": "AllNodesUpToDate", "status": "False", "type": "NodeReconfigurationRequired"}
    ],
    "currentNodes": 1, "inProgress": 0, "queuedNodes": 0
  }
}"#;

fn spec_of(v: &serde_json::Value) -> NodePoolSpec {
    serde_json::from_value(v["spec"].clone()).expect("spec parses")
}

#[test]
fn seed_example_round_trips() {
    let v: serde_json::Value = serde_json::from_str(EXAMPLE).unwrap();
    let spec = spec_of(&v);
    assert_eq!(spec.instance_type, "gd-8xa100-i128");
    assert_eq!(spec.compute_class, ComputeClass::Default);
    assert_eq!(spec.target_nodes, 1);
    assert_eq!(
        spec.lifecycle
            .as_ref()
            .and_then(|l| l.scale_down_strategy.clone()),
        Some(ScaleDownStrategy::IdleOnly)
    );
    let status: NodePoolStatus = serde_json::from_value(v["status"].clone()).unwrap();
    assert_eq!(status.current_nodes, Some(1));
    assert_eq!(
        status.conditions[1].type_,
        ConditionType::NodeReconfigurationRequired
    );
    assert_eq!(status.conditions[1].status, ConditionStatus::False);
    let back = serde_json::to_value(&spec).unwrap();
    assert_eq!(back["instanceType"], "gd-8xa100-i128");
    assert_eq!(back["computeClass"], "default");
}

#[test]
fn unknown_enum_values_and_fields_are_kept_verbatim() {
    let v = serde_json::json!({
        "computeClass": "preemptible-v2",
        "instanceType": "gd-9xfuture",
        "targetNodes": 2,
        "nodeTaints": [{"key": "k", "effect": "NoFly"}],
        "nodeConfigurationUpdateStrategy": {"type": "Sometimes"},
        "placement": {"rack": "r12"}
    });
    let spec: NodePoolSpec = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(
        spec.compute_class,
        ComputeClass::Other("preemptible-v2".into())
    );
    assert!(!spec.compute_class.is_known());
    assert_eq!(spec.node_taints[0].effect.as_str(), "NoFly");
    assert_eq!(spec.extra["placement"]["rack"], "r12");
    let back = serde_json::to_value(&spec).unwrap();
    assert_eq!(back["computeClass"], "preemptible-v2");
    assert_eq!(back["placement"], v["placement"]);
    assert_eq!(back["nodeConfigurationUpdateStrategy"]["type"], "Sometimes");
}

#[test]
fn spot_class_and_conditions_parse() {
    let spec: NodePoolSpec = serde_json::from_value(serde_json::json!({
        "computeClass": "spot", "instanceType": "gd-8xh100ib-i128", "targetNodes": 4
    }))
    .unwrap();
    assert_eq!(spec.compute_class, ComputeClass::Spot);
    let c: Condition = serde_json::from_value(serde_json::json!({
        "type": "Capacity", "status": "False", "reason": "QueuedAwaitingCapacity"
    }))
    .unwrap();
    assert_eq!(c.type_, ConditionType::Capacity);
    assert_eq!(c.reason.as_deref(), Some("QueuedAwaitingCapacity"));
}

#[test]
fn a_wrong_type_is_an_error_not_a_panic() {
    let r: Result<NodePoolSpec, _> = serde_json::from_value(serde_json::json!({
        "instanceType": "x", "targetNodes": "three"
    }));
    assert!(r.is_err());
}
