//! Pure validation of a NodePool spec: the checks behind the `Validated` condition.
//!
//! The embedded cluster's NodePool controller, the server and the create form all call
//! [`validate`], so a pool the form accepts is one the controller marks `Valid`.
//!
//! Sources: seed 001 (spec fields, `minNodes`/`maxNodes` for the autoscaler, taints), seed 000
//! (Spot is refused on Superchip instance types), seed 002 (user labels and annotations may not
//! use the `*.coreweave.cloud` / `*.coreweave.com` domains), and the Kubernetes syntax rules for
//! label keys and values (qualified names, at most 63 characters per name part).
//!
//! No tokio or kube here: this module is compiled to wasm for the browser.

use std::fmt;

use crate::catalog;
use crate::labels::RESERVED_DOMAINS;
use crate::nodepool::{
    ComputeClass, NodePoolSpec, ScaleDownStrategy, TaintEffect, UpdateStrategyType,
};

/// One problem with a spec, tied to the field that has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// JSON path of the field, e.g. `spec.instanceType` or `spec.nodeLabels`; for map and list
    /// fields the offending key or index is named in `message`.
    pub field: &'static str,
    /// A sentence a person can act on.
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Why Spot is refused on Superchip types, in seed 000's words.
pub const SUPERCHIP_SPOT_REASON: &str = "Spot Node Pools are supported for all instance types \
     except Superchip-powered instances (for example, GH200, GB200, GB300)";

/// Every problem of `spec`, in field order; empty when the spec is valid.
pub fn validate(spec: &NodePoolSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut err = |field: &'static str, message: String| errs.push(FieldError { field, message });

    let instance = spec.instance_type.trim();
    let known_type = catalog::instance_type(instance);
    if instance.is_empty() {
        err("spec.instanceType", "instanceType is required".into());
    } else if known_type.is_none() {
        err(
            "spec.instanceType",
            format!("unknown instance type \"{instance}\": not in the CoreWeave instance catalog"),
        );
    }

    match &spec.compute_class {
        ComputeClass::Other(other) => err(
            "spec.computeClass",
            format!("unsupported computeClass \"{other}\": must be one of default, spot"),
        ),
        ComputeClass::Spot => match known_type {
            Some(t) if t.superchip => err(
                "spec.computeClass",
                format!(
                    "computeClass spot is not available for Superchip instance type {} ({}): \
                     {SUPERCHIP_SPOT_REASON}",
                    t.id, t.gpu_model
                ),
            ),
            Some(t) if !t.spot_ok => err(
                "spec.computeClass",
                format!(
                    "computeClass spot is not available for instance type {}",
                    t.id
                ),
            ),
            _ => {}
        },
        ComputeClass::Default => {}
    }

    validate_counts(spec, &mut err);

    for (key, value) in &spec.node_labels {
        if let Some(m) = qualified_name_problem(key) {
            err("spec.nodeLabels", format!("label key \"{key}\": {m}"));
        } else if let Some(domain) = reserved_domain(key) {
            err("spec.nodeLabels", reserved_message("label", key, domain));
        }
        if let Some(m) = label_value_problem(value) {
            err(
                "spec.nodeLabels",
                format!("label \"{key}\" value \"{value}\": {m}"),
            );
        }
    }
    for key in spec.node_annotations.keys() {
        if let Some(m) = qualified_name_problem(key) {
            err(
                "spec.nodeAnnotations",
                format!("annotation key \"{key}\": {m}"),
            );
        } else if let Some(domain) = reserved_domain(key) {
            err(
                "spec.nodeAnnotations",
                reserved_message("annotation", key, domain),
            );
        }
    }
    for (i, taint) in spec.node_taints.iter().enumerate() {
        if let Some(m) = qualified_name_problem(&taint.key) {
            err(
                "spec.nodeTaints",
                format!("taint {i} key \"{}\": {m}", taint.key),
            );
        }
        if let Some(m) = taint.value.as_deref().and_then(label_value_problem) {
            err("spec.nodeTaints", format!("taint {i} value: {m}"));
        }
        if let TaintEffect::Other(e) = &taint.effect {
            err(
                "spec.nodeTaints",
                format!(
                    "taint {i} effect \"{e}\": must be one of NoSchedule, PreferNoSchedule, NoExecute"
                ),
            );
        }
    }

    if let Some(ScaleDownStrategy::Other(s)) = spec
        .lifecycle
        .as_ref()
        .and_then(|l| l.scale_down_strategy.as_ref())
    {
        err(
            "spec.lifecycle.scaleDownStrategy",
            format!("unsupported scaleDownStrategy \"{s}\": must be IdleOnly or PreferIdle"),
        );
    }
    if let Some(UpdateStrategyType::Other(s)) = spec
        .node_configuration_update_strategy
        .as_ref()
        .and_then(|u| u.type_.as_ref())
    {
        err(
            "spec.nodeConfigurationUpdateStrategy.type",
            format!("unsupported update strategy \"{s}\": must be Manual, OnSpecUpdate or Always"),
        );
    }
    if let Some(image) = &spec.image {
        // Seed 001: "If name is set, kernel must be empty and releaseTrain must be stable."
        let named = image.name.as_deref().is_some_and(|n| !n.is_empty());
        let kernel = image.kernel.as_deref().is_some_and(|k| !k.is_empty());
        let latest = image
            .release_train
            .as_ref()
            .is_some_and(|t| t.as_str() != "stable");
        if named && (kernel || latest) {
            err(
                "spec.image",
                "when image.name is set, image.kernel must be empty and image.releaseTrain must be stable".into(),
            );
        }
    }
    errs
}

fn validate_counts(spec: &NodePoolSpec, err: &mut impl FnMut(&'static str, String)) {
    let counts = [
        ("spec.targetNodes", Some(spec.target_nodes)),
        ("spec.minNodes", spec.min_nodes),
        ("spec.maxNodes", spec.max_nodes),
    ];
    let mut negative = false;
    for (field, value) in counts {
        if let Some(v) = value.filter(|v| *v < 0) {
            err(field, format!("must be 0 or more, got {v}"));
            negative = true;
        }
    }
    // minNodes/maxNodes bound the autoscaler only (seed 001); a manually sized pool may carry
    // `minNodes: 0, maxNodes: 0` next to `targetNodes: 1`, as the seed's example does.
    if !spec.autoscaling || negative {
        return;
    }
    let min = spec.min_nodes.unwrap_or(0);
    if let Some(max) = spec.max_nodes {
        if min > max {
            err(
                "spec.minNodes",
                format!("minNodes ({min}) must not exceed maxNodes ({max})"),
            );
            return;
        }
        if spec.target_nodes > max {
            err(
                "spec.targetNodes",
                format!(
                    "targetNodes ({}) must not exceed maxNodes ({max}) when autoscaling",
                    spec.target_nodes
                ),
            );
        }
    }
    if spec.target_nodes < min {
        err(
            "spec.targetNodes",
            format!(
                "targetNodes ({}) must be at least minNodes ({min}) when autoscaling",
                spec.target_nodes
            ),
        );
    }
}

fn reserved_message(what: &str, key: &str, domain: &str) -> String {
    format!(
        "{what} \"{key}\" is in the reserved *.{domain} domain; CKS rejects user {what}s in \
         *.coreweave.cloud and *.coreweave.com"
    )
}

/// The reserved domain a key's prefix falls in, if any (`coreweave.com/x`,
/// `qos.coreweave.cloud/x`).
fn reserved_domain(key: &str) -> Option<&'static str> {
    let (prefix, _) = key.split_once('/')?;
    let prefix = prefix.to_ascii_lowercase();
    RESERVED_DOMAINS
        .into_iter()
        .find(|d| prefix == *d || prefix.ends_with(&format!(".{d}")))
}

/// Why `key` is not a Kubernetes qualified name (`[prefix/]name`), if it is not.
pub fn qualified_name_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty() || p.len() > 253 || !is_dns_subdomain(p))
    {
        return Some(format!(
            "prefix \"{p}\" must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253 characters)"
        ));
    }
    if name.is_empty() {
        return Some("name part must not be empty".into());
    }
    if name.len() > 63 {
        return Some("name part must be at most 63 characters".into());
    }
    if !is_label_token(name) {
        return Some(
            "name part must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"
                .into(),
        );
    }
    None
}

/// Why `value` is not a valid label value, if it is not. Empty values are valid.
pub fn label_value_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    if value.len() > 63 {
        return Some("must be at most 63 characters".into());
    }
    if !is_label_token(value) {
        return Some(
            "must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"
                .into(),
        );
    }
    None
}

fn is_label_token(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(inner)
}

fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|part| {
        let b = part.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodepool::{Image, Lifecycle, ReleaseTrain, Taint};

    fn spec(instance: &str, class: &str, target: i32) -> NodePoolSpec {
        NodePoolSpec {
            instance_type: instance.into(),
            compute_class: class.into(),
            target_nodes: target,
            ..Default::default()
        }
    }

    fn fields(s: &NodePoolSpec) -> Vec<&'static str> {
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
            (false, 1, Some(0), Some(0), &[]), // seed 001's example-nodepool
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
}
