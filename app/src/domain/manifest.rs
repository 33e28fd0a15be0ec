//! A draft pool as a NodePool manifest in YAML (or JSON), both ways.
//!
//! The create form shows the manifest beside its fields and reads edits back; the
//! `POST /api/v1/pools/validate` endpoint reads manifests from scripts and CI. Both use this
//! module, so what the form shows is exactly what `kubectl apply -f` would send.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::PoolDraft;
use crate::nodepool::{GROUP, NodePoolSpec, VERSION};

/// `apiVersion` of a NodePool manifest.
pub fn api_version() -> String {
    format!("{GROUP}/{VERSION}")
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Metadata,
    spec: NodePoolSpec,
}

#[derive(Default, Serialize, Deserialize)]
struct Metadata {
    #[serde(default)]
    name: String,
    /// Anything else in metadata (labels, annotations) passes through untouched.
    #[serde(flatten)]
    extra: BTreeMap<String, Value>,
}

/// Why a manifest could not be read, with where (1-based line and column) when known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestError {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "line {l}, column {c}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// The manifest of `draft` as YAML (`apiVersion`, `kind`, `metadata.name`, `spec`).
pub fn to_yaml(draft: &PoolDraft) -> String {
    let manifest = Manifest {
        api_version: Some(api_version()),
        kind: Some("NodePool".into()),
        metadata: Metadata {
            name: draft.name.clone(),
            extra: BTreeMap::new(),
        },
        spec: draft.spec.clone(),
    };
    // Serializing plain data structs to YAML cannot fail.
    serde_yaml::to_string(&manifest).unwrap_or_default()
}

/// `(metadata.name, spec)` of a NodePool manifest in YAML or JSON (JSON is YAML).
///
/// A document without `spec` is read as a bare spec (name empty), so a script can lint just
/// the spec. Errors: not YAML, wrong field types (with line and column), or an `apiVersion` /
/// `kind` that is not a CoreWeave NodePool.
pub fn from_text(text: &str) -> Result<(String, NodePoolSpec), ManifestError> {
    let value: serde_yaml::Value = serde_yaml::from_str(text).map_err(yaml_error)?;
    let has_spec = value.as_mapping().is_some_and(|m| m.contains_key("spec"));
    if !has_spec {
        let spec: NodePoolSpec = serde_yaml::from_str(text).map_err(yaml_error)?;
        return Ok((String::new(), spec));
    }
    let manifest: Manifest = serde_yaml::from_str(text).map_err(yaml_error)?;
    if let Some(v) = manifest.api_version.as_deref()
        && v != api_version()
    {
        return Err(plain(format!(
            "apiVersion \"{v}\" is not {}: this is not a CoreWeave NodePool",
            api_version()
        )));
    }
    if let Some(k) = manifest.kind.as_deref()
        && k != "NodePool"
    {
        return Err(plain(format!("kind \"{k}\" is not NodePool")));
    }
    Ok((manifest.metadata.name, manifest.spec))
}

fn plain(message: String) -> ManifestError {
    ManifestError {
        line: None,
        column: None,
        message,
    }
}

fn yaml_error(e: serde_yaml::Error) -> ManifestError {
    let location = e.location();
    ManifestError {
        line: location.as_ref().map(|l| l.line()),
        column: location.as_ref().map(|l| l.column()),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodepool::{ComputeClass, Taint, TaintEffect};

    fn draft() -> PoolDraft {
        let mut spec = NodePoolSpec {
            compute_class: ComputeClass::Spot,
            instance_type: "gd-8xh100ib-i128".into(),
            target_nodes: 2,
            ..Default::default()
        };
        spec.node_labels.insert("team".into(), "ml".into());
        spec.node_taints.push(Taint {
            key: "dedicated".into(),
            value: Some("ml".into()),
            effect: TaintEffect::NoExecute,
        });
        PoolDraft {
            cluster: "c".into(),
            name: "h100-spot".into(),
            spec,
        }
    }

    #[test]
    fn yaml_round_trips_and_names_the_kind() {
        let d = draft();
        let yaml = to_yaml(&d);
        assert!(yaml.starts_with("apiVersion: compute.coreweave.com/v1alpha1\nkind: NodePool\n"));
        assert!(yaml.contains("computeClass: spot"), "{yaml}");
        assert!(yaml.contains("effect: NoExecute"), "{yaml}");
        let (name, spec) = from_text(&yaml).unwrap();
        assert_eq!(name, "h100-spot");
        assert_eq!(spec, d.spec);
    }

    #[test]
    fn json_and_bare_specs_are_read() {
        let (name, spec) = from_text(
            r#"{"metadata":{"name":"a"},"spec":{"instanceType":"turin-gp","targetNodes":3}}"#,
        )
        .unwrap();
        assert_eq!((name.as_str(), spec.target_nodes), ("a", 3));
        let (name, spec) = from_text("instanceType: turin-gp\ntargetNodes: 1\n").unwrap();
        assert_eq!(
            (name.as_str(), spec.instance_type.as_str()),
            ("", "turin-gp")
        );
    }

    #[test]
    fn errors_say_where() {
        let e = from_text("spec:\n  instanceType: turin-gp\n  targetNodes: many\n").unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.message.contains("targetNodes"), "{e}");
        let e = from_text("spec: [unclosed\n").unwrap_err();
        assert!(e.line.is_some(), "{e}");
        let e =
            from_text("apiVersion: v1\nkind: Pod\nspec:\n  instanceType: x\n  targetNodes: 1\n")
                .unwrap_err();
        assert!(e.message.contains("not a CoreWeave NodePool"), "{e}");
    }
}
