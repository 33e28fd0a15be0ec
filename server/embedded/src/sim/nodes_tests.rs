use super::*;

fn spec(instance: &str) -> NodePoolSpec {
    let mut s = NodePoolSpec {
        instance_type: instance.into(),
        compute_class: "spot".into(),
        target_nodes: 1,
        ..Default::default()
    };
    s.node_labels.insert("team".into(), "ml-training".into());
    s.node_annotations
        .insert("example.com/owner".into(), "ml-platform".into());
    s.node_taints.push(spotboard_core::nodepool::Taint {
        key: "dedicated".into(),
        value: Some("ml".into()),
        effect: "NoSchedule".into(),
    });
    s
}

fn new_node<'a>(spec: &'a NodePoolSpec, active: bool) -> NewNode<'a> {
    NewNode {
        name: "g1a2b3c",
        pool: "h100-spot-train",
        spec,
        zone: "US-EAST-04A",
        zone_index: 0,
        org_id: "cw123456",
        active,
    }
}

#[test]
fn gpu_node_carries_cks_labels_pool_metadata_and_capacity() {
    let s = spec("gd-8xh100ib-i128");
    let node = node_object(&new_node(&s, true));
    let l = node.metadata.labels.as_ref().unwrap();
    for (k, v) in [
        (labels::NODE_POOL, "h100-spot-train"),
        (labels::INSTANCE_TYPE, "gd-8xh100ib-i128"),
        (labels::ZONE, "US-EAST-04A"),
        (labels::REGION, "US-EAST-04"),
        (labels::NODE_STATE, "production"),
        (labels::NODE_RESERVED, "cw123456"),
        ("team", "ml-training"),
        ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
        ("kubernetes.io/hostname", "g1a2b3c"),
    ] {
        assert_eq!(l.get(k).map(String::as_str), Some(v), "label {k}");
    }
    let a = node.metadata.annotations.as_ref().unwrap();
    assert_eq!(a["example.com/owner"], "ml-platform");
    let taints = node.spec.as_ref().unwrap().taints.clone().unwrap();
    let keys: Vec<_> = taints
        .iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect();
    assert_eq!(keys, ["dedicated:NoSchedule", "is_gpu:PreferNoSchedule"]);
    let status = node.status.as_ref().unwrap();
    assert_eq!(status.capacity.as_ref().unwrap()["nvidia.com/gpu"].0, "8");
    assert_eq!(status.capacity.as_ref().unwrap()["cpu"].0, "128");
    assert_eq!(status.allocatable.as_ref().unwrap()["cpu"].0, "126000m");
    assert_eq!(
        status.node_info.as_ref().unwrap().kubelet_version,
        "v1.33.1"
    );
    let conds: Vec<_> = status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| format!("{}={}", c.type_, c.status))
        .collect();
    assert_eq!(
        conds,
        [
            "MemoryPressure=False",
            "DiskPressure=False",
            "PIDPressure=False",
            "Ready=True",
            "CWActive=True",
            "CWRegistered=True",
            "CWNodeRemoval=False",
        ]
    );
}

#[test]
fn cpu_node_has_no_gpu_and_the_cpu_taint() {
    let s = spec("cd-gp-a192-genoa");
    let node = node_object(&new_node(&s, false));
    let status = node.status.as_ref().unwrap();
    assert!(
        !status
            .capacity
            .as_ref()
            .unwrap()
            .contains_key("nvidia.com/gpu")
    );
    let taints = node.spec.unwrap().taints.unwrap();
    assert_eq!(taints.last().unwrap().key, "is_cpu_compute");
    assert_eq!(
        condition_status(
            &Node {
                status: Some(status.clone()),
                ..Default::default()
            },
            "CWActive"
        )
        .as_deref(),
        Some("False")
    );
}

#[test]
fn gpu_products() {
    let cases = [
        ("gd-8xh200ib-i128", "NVIDIA-H200"),
        ("gd-8xl40s-i128", "NVIDIA-L40S"),
        ("gd-8xl40-i128", "NVIDIA-L40"),
        ("gb200-4x", "NVIDIA-GB200"),
        ("b200-8x", "NVIDIA-B200"),
        (
            "rtxp6000-8x",
            "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
        ),
    ];
    for (id, want) in cases {
        assert_eq!(
            gpu_product(catalog::instance_type(id).unwrap()),
            want,
            "{id}"
        );
    }
}

#[test]
fn replacing_a_condition_keeps_others_and_transition_time() {
    let conds = cw_conditions(true, None);
    let before = conds[0].last_transition_time.clone();
    let same = replace_condition(&conds, active_condition(true));
    assert_eq!(same[0].last_transition_time, before);
    assert_eq!(same.len(), 3);
    let removed = replace_condition(&conds, removal_condition(Some("Preemption")));
    assert_eq!(removed[2].status, "True");
    assert_eq!(removed[2].reason.as_deref(), Some("Preemption"));
    assert_eq!(removed[0], conds[0]);
}

#[test]
fn regions_are_zones_without_their_letter() {
    assert_eq!(region_of("US-EAST-04A"), "US-EAST-04");
    assert_eq!(region_of("EU-SOUTH-03B"), "EU-SOUTH-03");
    assert_eq!(region_of("RNO2"), "RNO2", "no letter to drop");
    assert_eq!(region_of("A"), "A");
}
