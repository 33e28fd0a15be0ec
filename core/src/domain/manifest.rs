//! A draft pool as a NodePool manifest in YAML (or JSON), both ways.
//!
//! The create form shows the manifest beside its fields and reads edits back; the
//! `POST /api/v1/pools/validate` endpoint reads manifests from scripts and CI. Both use this
//! module, so what the form shows is exactly what `kubectl apply -f` would send.
//!
//! YAML is read by serde-saphyr with a budget ([`MAX_MANIFEST_BYTES`], [`read_options`]): a
//! YAML anchor referenced by aliases expands to a copy at each reference, so a few kilobytes
//! of `&a [x, x, …]` and `[*a, *a, …]` can stand for millions of values (serde_yaml 0.9
//! limited the alias jumps, not what they expanded to: 7 KB took 218 MiB). The same parser
//! and budget run in the browser (the form) and on the server (the validate endpoint).

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
    serde_saphyr::to_string(&manifest).unwrap_or_default()
}

/// Largest manifest read, in bytes: the server's request body limit (64 KiB). A NodePool
/// manifest is well under 4 KiB.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;

/// What one manifest may make the parser do. A real manifest has a few hundred parser
/// events, a depth under 10, no anchors and no aliases; these bounds are far above that
/// and far below what hurts (the largest, 20,000 events and 10,000 replayed by aliases,
/// parse in a few milliseconds and a few hundred KB). YAML 1.2 booleans only
/// (`yes`/`no`/`on` stay strings), as serde_yaml read them.
pub fn read_options() -> serde_saphyr::Options {
    let aliases = serde_saphyr::alias_limits! {
        // Events injected by all aliases together: the bound on what aliases expand to.
        max_total_replayed_events: 10_000,
        max_replay_stack_depth: 8,
        max_alias_expansions_per_anchor: 100,
    };
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: 1,
            max_depth: 32,
            max_events: 20_000,
            max_nodes: 10_000,
            max_aliases: 100,
            max_anchors: 100,
            max_recorded_anchor_events: 10_000,
            max_recorded_anchor_bytes: 256 * 1024,
            max_total_scalar_bytes: 4 * MAX_MANIFEST_BYTES,
            max_merge_keys: 100,
        },
        alias_limits: aliases,
        strict_booleans: true,
    }
}

/// `text` as `T` within [`read_options`]' budget.
fn read<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, ManifestError> {
    serde_saphyr::from_str_with_options(text, read_options()).map_err(|e| {
        let mut error = yaml_error(e);
        name_the_key(&mut error, text);
        error
    })
}

/// Prefixes `error`'s message with the mapping key on the line it points at, when the parser's
/// message does not name it: serde-saphyr says "invalid i32" where a person needs
/// "targetNodes: invalid i32" (serde_yaml named the field).
fn name_the_key(error: &mut ManifestError, text: &str) {
    let Some(line) = error.line.and_then(|n| text.lines().nth(n - 1)) else {
        return;
    };
    let entry = line.trim_start().trim_start_matches("- ");
    let Some((key, _)) = entry.split_once(':') else {
        return;
    };
    let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
    let is_key = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    if is_key && !error.message.contains(key) {
        error.message = format!("{key}: {}", error.message);
    }
}

/// Only whether the document is a mapping with a `spec` key.
#[derive(Deserialize)]
struct HasSpec {
    #[serde(default)]
    spec: Option<serde::de::IgnoredAny>,
}

/// `(metadata.name, spec)` of a NodePool manifest in YAML or JSON (JSON is YAML).
///
/// A document without `spec` is read as a bare spec (name empty), so a script can lint just
/// the spec. Errors: not YAML, wrong field types (with line and column), or an `apiVersion` /
/// `kind` that is not a CoreWeave NodePool, or a text over the budget (more than
/// [`MAX_MANIFEST_BYTES`], or past a bound of [`read_options`]: aliases that expand too far,
/// too deep, too many values).
pub fn from_text(text: &str) -> Result<(String, NodePoolSpec), ManifestError> {
    if text.len() > MAX_MANIFEST_BYTES {
        return Err(plain(format!(
            "the manifest is {} bytes; at most {MAX_MANIFEST_BYTES} are read",
            text.len()
        )));
    }
    // A document that is not a mapping (or does not parse) is read as a bare spec below,
    // whose error then says what and where.
    let has_spec = read::<HasSpec>(text).is_ok_and(|d| d.spec.is_some());
    if !has_spec {
        let spec: NodePoolSpec = read(text)?;
        return Ok((String::new(), spec));
    }
    let manifest: Manifest = read(text)?;
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

fn yaml_error(e: serde_saphyr::Error) -> ManifestError {
    use serde_saphyr::MessageFormatter;
    let location = e.location();
    let at = |n: u64| usize::try_from(n).ok().filter(|&n| n > 0);
    // The message without its location (ManifestError's Display adds it) or a snippet of
    // the source. Its text can quote the input: control characters are escaped, as the
    // formatter's documentation asks of callers that print it.
    let message: String = serde_saphyr::DefaultMessageFormatter
        .format_message(&e)
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_debug().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect();
    ManifestError {
        line: location.and_then(|l| at(l.line())),
        column: location.and_then(|l| at(l.column())),
        message,
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
