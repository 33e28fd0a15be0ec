//! PATCH bodies: JSON Patch (RFC 6902), JSON Merge Patch (RFC 7386), strategic merge patch
//! and server-side apply, each turned into a new version of a JSON object.

use serde_json::Value;

/// The patch formats, by request `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`, applied as a merge patch (see [`apply`]).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply), applied as a merge patch.
    Apply,
}

impl PatchKind {
    /// The kind for a `Content-Type` header value (parameters ignored).
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        match essence {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// Why a patch failed: the body did not parse (a 400) or did not apply (a 422).
#[derive(Debug, PartialEq)]
pub enum PatchError {
    Malformed(String),
    NotApplicable(String),
}

/// Parses a patch body of `kind`, for callers that need it before the target exists
/// (server-side apply creating an object).
pub fn parse_body(kind: PatchKind, body: &[u8]) -> Result<Value, PatchError> {
    match kind {
        PatchKind::Apply => serde_yaml::from_slice::<Value>(body)
            .map_err(|e| PatchError::Malformed(format!("error decoding YAML: {e}"))),
        _ => serde_json::from_slice::<Value>(body)
            .map_err(|e| PatchError::Malformed(format!("error decoding patch: {e}"))),
    }
}

/// Applies a patch of `kind` to a copy of `doc` and returns the result.
///
/// Strategic merge patch is applied as a JSON merge patch after dropping its directives
/// (`$patch`, `$setElementOrder/…`, `$retainKeys`, `$deleteFromPrimitiveList/…`). Why that
/// is enough here: the clients of the embedded cluster (kubectl cordon/label/annotate, the
/// behaviour model, tests) send strategic patches that set scalar fields and maps, which
/// merge identically; for lists a merge patch replaces the whole list, and the behaviour
/// model writes lists (conditions, taints) whole. A real server would merge list items by
/// their merge key instead; nothing here relies on that. Server-side apply is likewise a
/// merge of the applied configuration, without field ownership.
pub fn apply(kind: PatchKind, doc: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let mut out = doc.clone();
    match kind {
        PatchKind::Json => {
            let ops: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| PatchError::Malformed(format!("error decoding JSON patch: {e}")))?;
            json_patch::patch(&mut out, &ops.0)
                .map_err(|e| PatchError::NotApplicable(format!("the JSON patch failed: {e}")))?;
        }
        PatchKind::Merge | PatchKind::Apply => {
            let patch = parse_body(kind, body)?;
            require_object(&patch)?;
            json_patch::merge(&mut out, &patch);
        }
        PatchKind::Strategic => {
            let mut patch = parse_body(kind, body)?;
            require_object(&patch)?;
            strip_directives(&mut patch);
            json_patch::merge(&mut out, &patch);
        }
    }
    Ok(out)
}

fn require_object(patch: &Value) -> Result<(), PatchError> {
    if patch.is_object() {
        Ok(())
    } else {
        Err(PatchError::Malformed(
            "a merge patch must be a JSON object".to_string(),
        ))
    }
}

/// Removes strategic-merge directives so that they are never stored as fields; a map
/// marked `$patch: delete` becomes `null` (delete, in merge-patch terms).
fn strip_directives(patch: &mut Value) {
    match patch {
        Value::Object(map) => {
            let delete_me = map.get("$patch").and_then(Value::as_str) == Some("delete");
            if delete_me {
                *patch = Value::Null;
                return;
            }
            map.retain(|k, _| !k.starts_with('$'));
            for v in map.values_mut() {
                strip_directives(v);
            }
        }
        Value::Array(items) => {
            items.retain(|v| {
                !(v.is_object()
                    && v.get("$patch").is_some()
                    && v.as_object().is_some_and(|m| m.len() == 1))
            });
            for v in items {
                strip_directives(v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({"metadata": {"name": "n", "labels": {"a": "1", "b": "2"}},
               "spec": {"unschedulable": false, "taints": [{"key": "x"}]}})
    }

    #[test]
    fn content_types() {
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchKind::Merge)
        );
        assert_eq!(
            PatchKind::from_content_type("application/apply-patch+yaml"),
            Some(PatchKind::Apply)
        );
        assert_eq!(PatchKind::from_content_type("application/json"), None);
    }

    #[test]
    fn merge_patch_follows_rfc7386() {
        let out = apply(
            PatchKind::Merge,
            &doc(),
            br#"{"metadata":{"labels":{"a":null,"c":"3"}},"spec":{"taints":[]}}"#,
        )
        .unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"b": "2", "c": "3"}));
        assert_eq!(out["spec"]["taints"], json!([]));
        assert_eq!(out["spec"]["unschedulable"], false);
    }

    #[test]
    fn strategic_patch_is_a_merge_without_directives() {
        let body = br#"{"spec":{"unschedulable":true,"$setElementOrder/taints":[{"key":"x"}]},
                        "metadata":{"$retainKeys":["labels"],"annotations":{"k":"v"}}}"#;
        let out = apply(PatchKind::Strategic, &doc(), body).unwrap();
        assert_eq!(out["spec"]["unschedulable"], true);
        assert!(out["spec"].get("$setElementOrder/taints").is_none());
        assert!(out["metadata"].get("$retainKeys").is_none());
        assert_eq!(out["metadata"]["annotations"]["k"], "v");
        assert_eq!(out["spec"]["taints"], json!([{"key": "x"}]));
        let out = apply(
            PatchKind::Strategic,
            &doc(),
            br#"{"metadata":{"labels":{"$patch":"delete"}}}"#,
        )
        .unwrap();
        assert!(out["metadata"].get("labels").is_none());
    }

    #[test]
    fn json_patch_follows_rfc6902() {
        let body = br#"[{"op":"test","path":"/metadata/name","value":"n"},
                        {"op":"add","path":"/metadata/labels/c","value":"3"},
                        {"op":"remove","path":"/spec/taints/0"}]"#;
        let out = apply(PatchKind::Json, &doc(), body).unwrap();
        assert_eq!(out["metadata"]["labels"]["c"], "3");
        assert_eq!(out["spec"]["taints"], json!([]));
        let failing = br#"[{"op":"test","path":"/metadata/name","value":"other"}]"#;
        assert!(matches!(
            apply(PatchKind::Json, &doc(), failing),
            Err(PatchError::NotApplicable(_))
        ));
        assert!(matches!(
            apply(PatchKind::Json, &doc(), b"{"),
            Err(PatchError::Malformed(_))
        ));
    }

    #[test]
    fn apply_patch_accepts_yaml() {
        let body = b"spec:\n  unschedulable: true\nmetadata:\n  labels:\n    a: \"9\"\n";
        let out = apply(PatchKind::Apply, &doc(), body).unwrap();
        assert_eq!(out["spec"]["unschedulable"], true);
        assert_eq!(out["metadata"]["labels"]["a"], "9");
        assert!(matches!(
            apply(PatchKind::Merge, &doc(), b"[1]"),
            Err(PatchError::Malformed(_))
        ));
    }
}
