//! Unknown-field detection for `fieldValidation`.
//!
//! Choice: `Warn` (the default) and `Strict` both answer unknown fields with `Warning`
//! headers (kubectl prints `Warning: unknown field "spec.foo"`) and store the object
//! anyway. A real server rejects them under `Strict`, but the dashboard's bad-input tests
//! must be able to create exactly such objects through the same path kubectl uses, and a
//! warning still tells a person at the terminal what is wrong. Only custom resources are
//! checked, against their CRD's `openAPIV3Schema`: the built-in kinds have no schema here.

use serde_json::Value;

use super::resources::Kind;

/// Dotted paths (`spec.placement`, `spec.nodeTaints[0].color`) of fields in `obj` that
/// the kind's schema does not declare. Empty for kinds without a schema.
pub fn unknown_fields(kind: Kind, obj: &Value) -> Vec<String> {
    let Some(crd) = &kind.info().crd else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let (Some(map), Some(props)) = (obj.as_object(), crd.schema.get("properties")) {
        for (k, v) in map {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            match props.get(k) {
                Some(s) => walk(s, v, k, &mut out),
                None => out.push(k.clone()),
            }
        }
    }
    out
}

fn walk(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            if props.is_none() && additional.is_none() {
                // An object schema that names nothing constrains nothing.
                return;
            }
            for (k, v) in map {
                let sub = format!("{path}.{k}");
                match (props.and_then(|p| p.get(k)), additional) {
                    (Some(s), _) => walk(s, v, &sub, out),
                    (None, Some(Value::Bool(false))) | (None, None) => out.push(sub),
                    (None, Some(Value::Bool(true))) => {}
                    (None, Some(s)) => walk(s, v, &sub, out),
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    walk(s, v, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// The `Warning` header value for one unknown field (RFC 7234 warn-code 299).
pub fn warning(field: &str) -> String {
    format!("299 - \"unknown field \\\"{field}\\\"\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resources::test_nodepools;
    use serde_json::json;

    #[test]
    fn known_nodepools_have_no_unknown_fields() {
        let np = json!({"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
            "metadata": {"name": "a", "whatever": 1},
            "spec": {"instanceType": "x", "targetNodes": 1, "computeClass": "spot",
                     "nodeLabels": {"any": "thing"}, "nodeTaints": [{"key": "k", "effect": "NoSchedule"}],
                     "lifecycle": {"scaleDownStrategy": "IdleOnly"}},
            "status": {"conditions": [{"type": "Capacity", "status": "True", "reason": "Sufficient"}]}});
        assert_eq!(unknown_fields(test_nodepools(), &np), Vec::<String>::new());
    }

    #[test]
    fn unknown_fields_are_named_by_path() {
        let np = json!({"metadata": {"name": "a"}, "extraTop": 1,
            "spec": {"instanceType": "x", "targetNodes": 1, "placement": {"rack": 1},
                     "nodeTaints": [{"key": "k", "color": "red"}]}});
        let mut found = unknown_fields(test_nodepools(), &np);
        found.sort();
        assert_eq!(
            found,
            ["extraTop", "spec.nodeTaints[0].color", "spec.placement"]
        );
        assert!(unknown_fields(Kind::Pods, &np).is_empty());
        assert_eq!(warning("spec.x"), r#"299 - "unknown field \"spec.x\"""#);
    }
}
