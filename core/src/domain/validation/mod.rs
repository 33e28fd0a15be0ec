//! Pure validation of a NodePool spec: the checks behind the `Validated` condition.
//!
//! The embedded cluster's NodePool controller, the server and the create form all call
//! [`validate`], so a pool the form accepts is one the controller marks `Valid`.
//!
//! Sources (URLs in `docs/sources.md`): CoreWeave: Node Pool reference (spec fields,
//! `minNodes`/`maxNodes` for the autoscaler, taints), CoreWeave: Spot Node Pools (Spot is
//! refused on Superchip instance types), CoreWeave: Workload scheduling on CKS (user labels and
//! annotations may not use the `*.coreweave.cloud` / `*.coreweave.com` domains), and the
//! Kubernetes syntax rules for label keys and values (qualified names, at most 63 characters
//! per name part).
//!
//! No tokio or kube here: this module is compiled to wasm for the browser.

#[cfg(any(test, feature = "testing"))]
pub mod cases;
mod syntax;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::catalog;
use crate::labels::RESERVED_DOMAINS;
use crate::model::PoolDraft;
use crate::nodepool::{
    ComputeClass, NodePoolSpec, ScaleDownStrategy, TaintEffect, UpdateStrategyType,
};

pub use syntax::{dns_subdomain_problem, label_value_problem, qualified_name_problem};

/// One problem with a spec, tied to the field that has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// JSON path of the field, e.g. `metadata.name`, `spec.instanceType` or `spec.nodeLabels`;
    /// for map and list fields the offending key or index is named in `message`.
    pub field: String,
    /// A sentence a person can act on.
    pub message: String,
}

impl FieldError {
    /// A problem with `field` (a JSON path, or a form-only field such as `confirm`).
    pub fn at(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Why Spot is refused on Superchip types, in the words of CoreWeave: Spot Node Pools.
pub const SUPERCHIP_SPOT_REASON: &str = "Spot Node Pools are supported for all instance types \
     except Superchip-powered instances (for example, GH200, GB200, GB300)";

/// Every problem of `spec`, in field order; empty when the spec is valid.
pub fn validate(spec: &NodePoolSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut err = |field: &'static str, message: String| {
        errs.push(FieldError {
            field: field.into(),
            message,
        })
    };

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
        // CoreWeave: Node Pool reference, "Image": "If name is set, kernel must be empty and
        // releaseTrain must be stable."
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

/// Every problem of a pool the create form or `POST /api/v1/pools/validate` is about to send:
/// the cluster is named, `metadata.name` is a DNS-1123 subdomain not already `taken` in that
/// cluster, and the spec passes [`validate`].
///
/// `taken(name)` answers whether the cluster already has a NodePool of that name (the form asks
/// its live store, the server its hub); the API server's 409 remains the final word.
pub fn validate_draft(draft: &PoolDraft, taken: impl Fn(&str) -> bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if draft.cluster.trim().is_empty() {
        errs.push(FieldError {
            field: "cluster".into(),
            message: "choose the cluster (zone) to create the pool in".into(),
        });
    }
    let name = draft.name.as_str();
    let name_problem = if name.is_empty() {
        Some("name is required".to_string())
    } else {
        dns_subdomain_problem(name)
    };
    if let Some(message) = name_problem {
        errs.push(FieldError {
            field: "metadata.name".into(),
            message,
        });
    } else if taken(name) {
        errs.push(FieldError {
            field: "metadata.name".into(),
            message: format!(
                "a NodePool named \"{name}\" already exists in {}",
                draft.cluster
            ),
        });
    }
    errs.extend(validate(&draft.spec));
    errs
}

/// Things about a valid spec the user should know before creating it; never blocking.
///
/// Today: `image` and `gpu` are mutually exclusive and `image` wins (CoreWeave: Node Pool
/// reference), so a set `gpu.version` next to an image is ignored.
pub fn notes(spec: &NodePoolSpec) -> Vec<FieldError> {
    let gpu_version = spec
        .gpu
        .as_ref()
        .and_then(|g| g.version.as_deref())
        .is_some_and(|v| !v.is_empty());
    let image = spec.image.as_ref().is_some_and(|i| {
        i.name.as_deref().is_some_and(|n| !n.is_empty())
            || i.kernel.as_deref().is_some_and(|k| !k.is_empty())
            || i.release_train.is_some()
    });
    if gpu_version && image {
        vec![FieldError {
            field: "spec.gpu.version".into(),
            message: "image and gpu are mutually exclusive: image wins and gpu.version is \
                      ignored (CoreWeave: Node Pool reference)"
                .into(),
        }]
    } else {
        Vec::new()
    }
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
    // minNodes/maxNodes bound the autoscaler only (CoreWeave: Node Pool reference); a manually
    // sized pool may carry `minNodes: 0, maxNodes: 0` next to `targetNodes: 1`, as that page's
    // example-nodepool does.
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

#[cfg(test)]
mod tests;
