//! The behaviour model's own check of a NodePool spec, written from CoreWeave's pages,
//! independently of the product's validation. The embedded cluster is the fixture the product
//! is tested against: if it judged with the product's code, a wrong rule would pass every
//! test twice. A spec this rejects gets `Validated=False` ([`super::conditions`]) with one
//! [`Problem`] per broken rule.
//!
//! What CKS checks, as the pages state it:
//! - CoreWeave: Node Pool reference
//!   (<https://docs.coreweave.com/products/cks/reference/node-pool>): `instanceType` is
//!   required and must be a type CoreWeave offers; `computeClass` is `default` or `spot`;
//!   `targetNodes`, `minNodes`, `maxNodes` are not negative, and with `autoscaling`
//!   `minNodes ≤ targetNodes ≤ maxNodes` (the bounds are the autoscaler's only: a manual pool
//!   may carry `minNodes: 0, maxNodes: 0` beside `targetNodes: 1`, as the page's
//!   `example-nodepool` does); taint effects are `NoSchedule`, `PreferNoSchedule` or
//!   `NoExecute`; `lifecycle.scaleDownStrategy` is `IdleOnly` or `PreferIdle`;
//!   `nodeConfigurationUpdateStrategy.type` is `Manual`, `OnSpecUpdate` or `Always`; with
//!   `image.name` set, `image.kernel` is empty and `image.releaseTrain` is `stable`.
//! - CoreWeave: Spot Node Pools
//!   (<https://docs.coreweave.com/platform/capacity-plans/spot-node-pools>): spot is offered for
//!   every instance type except Superchip-powered ones (GH200, GB200, GB300).
//! - CoreWeave: Workload scheduling on CKS
//!   (<https://docs.coreweave.com/products/cks/clusters/scheduling/workload-scheduling>): user
//!   labels and annotations may not use the `*.coreweave.com` / `*.coreweave.cloud` domains.
//! - Kubernetes: Labels and Selectors, "Syntax and character set"
//!   (<https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set>):
//!   `nodeLabels` / `nodeAnnotations` / taint keys are qualified names, label and taint values
//!   are label values.
//!
//! Which instance types exist, and which are Superchips or refuse spot, is catalog DATA read
//! from `spotboard_core::catalog`: data, not a rule.

use std::fmt;

use serde_json::Value;
use spotboard_core::nodepool::NodePoolSpec;

/// One broken rule, tied to the spec field that breaks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// JSON path of the field (`spec.instanceType`, `spec.nodeLabels`, …); the key or index
    /// at fault is named in `message`.
    pub field: String,
    pub message: String,
}

/// `field: message`, the form the `Validated` condition's message lists problems in.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The domains CKS keeps for itself (CoreWeave CKS: labels).
const CKS_DOMAINS: [&str; 2] = ["coreweave.com", "coreweave.cloud"];

/// Every problem CKS would report for `spec`, by field; empty when it is valid.
pub fn check(spec: &NodePoolSpec) -> Vec<Problem> {
    // The spec as the API server stored it: the rules read JSON fields, not the product's
    // typed view of them.
    let v = serde_json::to_value(spec).unwrap_or(Value::Null);
    let mut out = Vec::new();
    let mut flag = |field: &str, message: String| {
        out.push(Problem {
            field: field.to_string(),
            message,
        })
    };
    let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();

    let t = text("instanceType").trim();
    let offered = spotboard_core::catalog::instance_type(t);
    if t.is_empty() {
        flag("spec.instanceType", "instanceType must be set".into());
    } else if offered.is_none() {
        flag(
            "spec.instanceType",
            format!("instance type {t} is not offered"),
        );
    }
    match text("computeClass") {
        "" | "default" => {}
        "spot" => match offered {
            Some(it) if it.superchip => flag(
                "spec.computeClass",
                format!(
                    "spot is not offered for {}: Spot Node Pools take every instance type \
                         except Superchip-powered ones",
                    it.id
                ),
            ),
            Some(it) if !it.spot_ok => flag(
                "spec.computeClass",
                format!("spot capacity is not offered for {}", it.id),
            ),
            _ => {}
        },
        other => flag(
            "spec.computeClass",
            format!("computeClass {other} is not one of default, spot"),
        ),
    }

    let count = |k: &str| v.get(k).and_then(Value::as_i64);
    let mut any_negative = false;
    for k in ["targetNodes", "minNodes", "maxNodes"] {
        if let Some(n) = count(k).filter(|n| *n < 0) {
            flag(&format!("spec.{k}"), format!("{k} is negative ({n})"));
            any_negative = true;
        }
    }
    let autoscaling = v.get("autoscaling").and_then(Value::as_bool) == Some(true);
    if autoscaling && !any_negative {
        let target = count("targetNodes").unwrap_or(0);
        let min = count("minNodes").unwrap_or(0);
        match count("maxNodes") {
            Some(max) if min > max => {
                flag("spec.minNodes", format!("minNodes {min} > maxNodes {max}"))
            }
            Some(max) if target > max => flag(
                "spec.targetNodes",
                format!("targetNodes {target} > maxNodes {max}"),
            ),
            _ if target < min => flag(
                "spec.targetNodes",
                format!("targetNodes {target} < minNodes {min}"),
            ),
            _ => {}
        }
    }

    for (what, field) in [("label", "nodeLabels"), ("annotation", "nodeAnnotations")] {
        let Some(map) = v.get(field).and_then(Value::as_object) else {
            continue;
        };
        for (key, value) in map {
            let spec_field = format!("spec.{field}");
            if !qualified_name(key) {
                flag(
                    &spec_field,
                    format!("{what} key {key} is not a qualified name"),
                );
            } else if let Some(d) = cks_domain(key) {
                flag(
                    &spec_field,
                    format!("{what} key {key} is in CKS's domain {d}"),
                );
            }
            if what == "label" && !label_value(value.as_str().unwrap_or_default()) {
                flag(&spec_field, format!("label {key} has an invalid value"));
            }
        }
    }
    for (i, taint) in v
        .get("nodeTaints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let key = taint.get("key").and_then(Value::as_str).unwrap_or_default();
        if !qualified_name(key) {
            flag(
                "spec.nodeTaints",
                format!("taint {i}: key {key} is not a qualified name"),
            );
        }
        if let Some(value) = taint.get("value").and_then(Value::as_str)
            && !label_value(value)
        {
            flag("spec.nodeTaints", format!("taint {i}: invalid value"));
        }
        let effect = taint
            .get("effect")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect) {
            flag(
                "spec.nodeTaints",
                format!("taint {i}: effect {effect} is not known"),
            );
        }
    }

    let nested = |a: &str, b: &str| v.get(a).and_then(|x| x.get(b)).and_then(Value::as_str);
    if let Some(s) =
        nested("lifecycle", "scaleDownStrategy").filter(|s| !["IdleOnly", "PreferIdle"].contains(s))
    {
        flag(
            "spec.lifecycle.scaleDownStrategy",
            format!("scaleDownStrategy {s} is not known"),
        );
    }
    if let Some(s) = nested("nodeConfigurationUpdateStrategy", "type")
        .filter(|s| !["Manual", "OnSpecUpdate", "Always"].contains(s))
    {
        flag(
            "spec.nodeConfigurationUpdateStrategy.type",
            format!("update strategy {s} is not known"),
        );
    }
    let named = nested("image", "name").is_some_and(|n| !n.is_empty());
    let kernel = nested("image", "kernel").is_some_and(|k| !k.is_empty());
    let train = nested("image", "releaseTrain").unwrap_or("stable");
    if named && (kernel || train != "stable") {
        flag(
            "spec.image",
            "a named image takes no kernel and the stable release train".into(),
        );
    }
    out
}

/// A Kubernetes qualified name: an optional DNS-subdomain prefix and `/`, then 1 to 63
/// characters of alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
fn qualified_name(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            })
    });
    prefix_ok && !name.is_empty() && label_value(name)
}

/// A Kubernetes label value: empty, or up to 63 alphanumerics, `-`, `_`, `.`, starting and
/// ending alphanumeric.
pub(crate) fn label_value(v: &str) -> bool {
    let edge = |c: Option<char>| c.is_none_or(|c| c.is_ascii_alphanumeric());
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && edge(v.chars().next())
        && edge(v.chars().last())
}

/// The CKS domain a key's prefix falls in (`coreweave.com/x`, `qos.coreweave.cloud/x`).
fn cks_domain(key: &str) -> Option<&'static str> {
    let prefix = key.split_once('/')?.0.to_ascii_lowercase();
    CKS_DOMAINS
        .into_iter()
        .find(|d| prefix == *d || prefix.ends_with(&format!(".{d}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values() {
        assert!(qualified_name("team"));
        assert!(qualified_name("example.com/team"));
        assert!(!qualified_name("Example.com/team"));
        assert!(!qualified_name("bad key!"));
        assert!(!qualified_name("/x"));
        assert!(label_value(""));
        assert!(!label_value("has space"));
        assert!(!label_value(&"a".repeat(64)));
        assert_eq!(cks_domain("qos.coreweave.cloud/x"), Some("coreweave.cloud"));
        assert_eq!(cks_domain("notcoreweave.com/x"), None);
    }
}
