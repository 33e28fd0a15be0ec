use super::*;
use crate::nodepool::{Image, Lifecycle, ReleaseTrain, Taint};

fn spec(instance: &str, class: &str, target: i32) -> NodePoolSpec {
    NodePoolSpec::new(class, instance, target)
}

fn fields(s: &NodePoolSpec) -> Vec<String> {
    validate(s).into_iter().map(|e| e.field).collect()
}

#[test]
fn instance_type_and_compute_class_table() {
    let cases: [(&str, &str, &[&str]); 8] = [
        ("gd-8xa100-i128", "default", &[]),
        ("gd-8xh100ib-i128", "spot", &[]),
        ("cd-gp-a192-genoa", "spot", &[]),
        ("gb200-4x", "default", &[]),
        ("gb200-4x", "spot", &["spec.computeClass"]),
        ("gd-1xgh200", "spot", &["spec.computeClass"]),
        ("gd-8xz999-i128", "spot", &["spec.instanceType"]),
        ("gd-8xa100-i128", "preemptible", &["spec.computeClass"]),
    ];
    for (instance, class, want) in cases {
        assert_eq!(
            fields(&spec(instance, class, 1)),
            want,
            "{instance}/{class}"
        );
    }
}

#[test]
fn superchip_spot_message_gives_seed_reason() {
    let errs = validate(&spec("gb200-4x", "spot", 2));
    assert_eq!(errs.len(), 1);
    assert!(errs[0].message.contains("Superchip"), "{}", errs[0]);
    assert!(errs[0].message.contains(SUPERCHIP_SPOT_REASON));
    assert!(errs[0].to_string().starts_with("spec.computeClass: "));
}

#[test]
fn empty_instance_type_is_required() {
    let errs = validate(&spec("  ", "default", 1));
    assert_eq!(errs[0].field, "spec.instanceType");
    assert!(errs[0].message.contains("required"));
}

#[test]
fn counts_table() {
    // (autoscaling, target, min, max, expected fields)
    type Case = (bool, i32, Option<i32>, Option<i32>, &'static [&'static str]);
    let cases: [Case; 10] = [
        (false, 1, Some(0), Some(0), &[]), // the Node Pool reference's example-nodepool
        (false, 0, None, None, &[]),
        (false, -1, None, None, &["spec.targetNodes"]),
        (
            false,
            1,
            Some(-2),
            Some(-1),
            &["spec.minNodes", "spec.maxNodes"],
        ),
        (true, 3, Some(1), Some(6), &[]),
        (true, 1, Some(1), Some(1), &[]),
        (true, 7, Some(1), Some(6), &["spec.targetNodes"]),
        (true, 0, Some(1), Some(6), &["spec.targetNodes"]),
        (true, 3, Some(5), Some(2), &["spec.minNodes"]),
        (true, 3, None, None, &[]),
    ];
    for (autoscaling, target, min, max, want) in cases {
        let s = NodePoolSpec {
            autoscaling,
            min_nodes: min,
            max_nodes: max,
            ..spec("turin-gp", "default", target)
        };
        assert_eq!(
            fields(&s),
            want,
            "autoscaling={autoscaling} {min:?}<={target}<={max:?}"
        );
    }
}

#[test]
fn labels_and_annotations_table() {
    let cases: [(&str, &str, &[&str]); 11] = [
        ("team", "ml-training", &[]),
        ("example.com/owner", "a.b_c-1", &[]),
        ("team", "", &[]),
        (
            "qos.coreweave.cloud/interruptable",
            "true",
            &["spec.nodeLabels"],
        ),
        ("node.coreweave.com/x", "y", &["spec.nodeLabels"]),
        ("coreweave.com/x", "y", &["spec.nodeLabels"]),
        ("notcoreweave.com/x", "y", &[]),
        ("Bad_Prefix/x", "y", &["spec.nodeLabels"]),
        ("-leading", "y", &["spec.nodeLabels"]),
        ("team", "has space", &["spec.nodeLabels"]),
        ("team", "2026-11-21T10:04:05Z", &["spec.nodeLabels"]),
    ];
    for (key, value, want) in cases {
        let mut s = spec("turin-gp", "default", 1);
        s.node_labels.insert(key.into(), value.into());
        assert_eq!(fields(&s), want, "label {key}={value}");
    }
    let long = "a".repeat(64);
    let mut s = spec("turin-gp", "default", 1);
    s.node_labels.insert(long.clone(), "v".into());
    s.node_labels.insert("k".into(), long);
    assert_eq!(fields(&s), ["spec.nodeLabels", "spec.nodeLabels"]);

    let mut s = spec("turin-gp", "default", 1);
    s.node_annotations
        .insert("example.com/note".into(), "any value: ok".into());
    assert!(validate(&s).is_empty());
    s.node_annotations
        .insert("sunk.coreweave.com/lock".into(), "x".into());
    let errs = validate(&s);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "spec.nodeAnnotations");
    assert!(errs[0].message.contains("coreweave.com"), "{}", errs[0]);
}

#[test]
fn taints_table() {
    let cases: [(&str, Option<&str>, &str, &[&str]); 5] = [
        ("dedicated", Some("ml"), "NoSchedule", &[]),
        ("example.com/gpu", None, "NoExecute", &[]),
        ("bad key!", None, "NoSchedule", &["spec.nodeTaints"]),
        (
            "dedicated",
            Some("bad value!"),
            "NoSchedule",
            &["spec.nodeTaints"],
        ),
        ("dedicated", None, "Sometimes", &["spec.nodeTaints"]),
    ];
    for (key, value, effect, want) in cases {
        let mut s = spec("turin-gp", "default", 1);
        s.node_taints.push(Taint {
            key: key.into(),
            value: value.map(Into::into),
            effect: effect.into(),
        });
        assert_eq!(fields(&s), want, "taint {key}={value:?}:{effect}");
    }
}

#[test]
fn lifecycle_and_image_rules() {
    let mut s = spec("turin-gp", "default", 1);
    s.lifecycle = Some(Lifecycle {
        scale_down_strategy: Some("Whenever".into()),
        disable_unhealthy_node_eviction: None,
    });
    s.image = Some(Image {
        kernel: Some("6.8".into()),
        name: Some("ncore-image".into()),
        release_train: Some(ReleaseTrain::Stable),
    });
    assert_eq!(
        fields(&s),
        ["spec.lifecycle.scaleDownStrategy", "spec.image"]
    );
}

#[test]
fn several_problems_are_all_reported() {
    let mut s = spec("gb300-4x", "spot", -1);
    s.node_labels
        .insert("node.coreweave.cloud/state".into(), "x".into());
    assert_eq!(
        fields(&s),
        ["spec.computeClass", "spec.targetNodes", "spec.nodeLabels"]
    );
}

#[test]
fn shared_cases_table() {
    for case in cases::CASES {
        let (name, spec) = crate::domain::manifest::from_text(case.manifest)
            .unwrap_or_else(|e| panic!("{}: {e}", case.title));
        let draft = PoolDraft {
            cluster: "c".into(),
            name,
            spec,
        };
        let got: Vec<String> = validate_draft(&draft, |_| false)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(got, case.fields, "{}", case.title);
        let spec_fields = validate(&draft.spec).len();
        assert_eq!(
            spec_fields > 0,
            case.spec_level && !case.fields.is_empty(),
            "{}",
            case.title
        );
    }
}

#[test]
fn draft_needs_cluster_and_a_free_dns_name() {
    let valid = NodePoolSpec {
        ..spec("turin-gp", "default", 1)
    };
    let draft = |cluster: &str, name: &str| PoolDraft {
        cluster: cluster.into(),
        name: name.into(),
        spec: valid.clone(),
    };
    let fields_of = |d: &PoolDraft, taken: &[&str]| -> Vec<String> {
        validate_draft(d, |n| taken.contains(&n))
            .into_iter()
            .map(|e| e.field)
            .collect()
    };
    assert!(fields_of(&draft("c", "cpu-pool"), &[]).is_empty());
    assert_eq!(fields_of(&draft("", "cpu-pool"), &[]), ["cluster"]);
    assert_eq!(fields_of(&draft("c", ""), &[]), ["metadata.name"]);
    assert_eq!(fields_of(&draft("c", "-bad"), &[]), ["metadata.name"]);
    assert_eq!(
        fields_of(&draft("c", &"a".repeat(254)), &[]),
        ["metadata.name"]
    );
    let taken = validate_draft(&draft("c", "cpu-pool"), |n| n == "cpu-pool");
    assert_eq!(taken.len(), 1);
    assert!(
        taken[0].message.contains("already exists in c"),
        "{}",
        taken[0]
    );
}

#[test]
fn image_wins_over_gpu_version_note() {
    let mut s = spec("turin-gp", "default", 1);
    s.gpu = Some(crate::nodepool::Gpu {
        version: Some("570".into()),
    });
    assert!(notes(&s).is_empty());
    s.image = Some(Image {
        name: Some("ncore".into()),
        ..Default::default()
    });
    let n = notes(&s);
    assert_eq!(n.len(), 1);
    assert!(n[0].message.contains("image wins"));
    assert!(validate(&s).is_empty(), "a note is not an error");
}
