//! How the store keeps an object: its serialized JSON (compressed once its kind has a
//! dictionary: [`super::packing`]), plus the labels and the few fields that lists and watches
//! filter on.
//!
//! Why not a `serde_json::Value`: its maps are B-trees whose nodes are allocated at full
//! capacity, so a pod of 1.3 KB of JSON takes about 11 KB as a tree; the scale benchmark's
//! 10k nodes and 50k pods would hold 640 MiB. As bytes they take a sixth of that, and the
//! commonest reads (a list or a watch without a table) write the bytes out as they are.
//! Writes, tables and selectors on fields not indexed here parse the JSON again, which
//! costs microseconds per object.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use super::packing::{Dictionary, Packed};
use super::selectors::{FieldSelector, LabelSelector, field_string, scalar_string};

/// A stored object, shared by the store, the change history and every watcher.
pub type Obj = Arc<Stored>;

/// Field paths kept ready for field selectors and for the store's own bookkeeping: the
/// ones kubectl (`describe node`: `spec.nodeName`, `status.phase`; `describe` of anything:
/// `involvedObject.*`) and controllers select on.
const INDEXED: [&str; 10] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.resourceVersion",
    "spec.nodeName",
    "status.phase",
    "involvedObject.kind",
    "involvedObject.name",
    "involvedObject.namespace",
    "involvedObject.uid",
];

/// One object at one resourceVersion.
///
/// The indexed fields and the labels are kept end to end in one string: as a box per string
/// they were some twenty small allocations per object, 60 MB of the embedded cluster's heap
/// at 10k nodes and 50k pods.
#[derive(Debug)]
pub struct Stored {
    json: Packed,
    /// The [`INDEXED`] fields in that order, then each label's key and value.
    text: Box<str>,
    /// Where each of the strings in `text` ends.
    ends: Box<[u32]>,
}

impl Stored {
    /// Serializes `value` and indexes it; the JSON is kept as it is.
    pub fn new(value: &Value) -> Self {
        Self::packed(value, None)
    }

    /// Serializes `value`, compresses it with `dictionary` when there is one, and indexes it.
    pub fn packed(value: &Value, dictionary: Option<&Arc<Dictionary>>) -> Self {
        let json = serde_json::to_vec(value).expect("a JSON value serializes");
        let json = Packed::new(json, dictionary);
        let mut text = String::new();
        let mut ends = Vec::new();
        let mut put = |s: &str| {
            text.push_str(s);
            ends.push(u32::try_from(text.len()).expect("an object's index is under 4 GiB"));
        };
        for path in INDEXED {
            put(&field_string(value, path));
        }
        for (k, v) in value
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            put(k);
            put(&scalar_string(v));
        }
        Self {
            json,
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }

    /// The `i`-th string of `text`.
    fn piece(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    fn label(&self, key: &str) -> Option<&str> {
        (INDEXED.len()..self.ends.len())
            .step_by(2)
            .find(|&i| self.piece(i) == key)
            .map(|i| self.piece(i + 1))
    }

    /// The object as JSON bytes (decompressed anew on each call when compressed).
    pub fn json(&self) -> Bytes {
        self.json.bytes()
    }

    /// Length of the object's JSON, bytes.
    pub fn json_len(&self) -> usize {
        self.json.len()
    }

    /// Appends the object's JSON to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        self.json.write_to(out);
    }

    /// Whether the JSON is kept compressed.
    #[cfg(test)]
    pub fn is_compressed(&self) -> bool {
        self.json.is_compressed()
    }

    /// The object as a tree (parsed anew on each call).
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json()).expect("stored JSON parses")
    }

    fn indexed(&self, path: &str) -> Option<&str> {
        INDEXED
            .iter()
            .position(|p| *p == path)
            .map(|i| self.piece(i))
    }

    pub fn name(&self) -> &str {
        self.piece(0)
    }

    pub fn namespace(&self) -> &str {
        self.piece(1)
    }

    pub fn uid(&self) -> &str {
        self.piece(2)
    }

    pub fn resource_version(&self) -> &str {
        self.piece(3)
    }

    /// Whether the object's labels and fields satisfy both selectors. Parses the JSON
    /// only when the field selector reads a path not indexed here.
    pub fn matches(&self, labels: &LabelSelector, fields: &FieldSelector) -> bool {
        if !labels.matches_with(|k| self.label(k)) {
            return false;
        }
        if fields.paths().all(|p| self.indexed(p).is_some()) {
            fields.matches_with(|p| self.indexed(p).unwrap_or("").to_string())
        } else {
            fields.matches(&self.value())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Stored {
        Stored::new(&json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                         "labels": {"app": "train", "n": "3"}},
            "spec": {"nodeName": "g1", "priority": 5},
            "status": {"phase": "Running"}}))
    }

    #[test]
    fn keeps_json_and_index() {
        let p = pod();
        assert_eq!(
            (p.name(), p.namespace(), p.uid(), p.resource_version()),
            ("p", "ns", "u", "7")
        );
        assert_eq!(p.value()["spec"]["nodeName"], "g1");
        let back: Value = serde_json::from_slice(&p.json()).unwrap();
        assert_eq!(back, p.value());
    }

    #[test]
    fn selectors_use_the_index_or_parse() {
        let p = pod();
        let m = |l: &str, f: &str| {
            p.matches(
                &LabelSelector::parse(l).unwrap(),
                &FieldSelector::parse(f).unwrap(),
            )
        };
        assert!(m("app=train", "spec.nodeName=g1,status.phase!=Succeeded"));
        assert!(m("n>2", "involvedObject.uid="));
        assert!(!m("app=infer", ""));
        assert!(!m("absent", ""), "a label that is not there");
        assert!(m("!absent,n", ""));
        assert!(
            m("", "spec.priority=5"),
            "an unindexed path is read from the JSON"
        );
        assert!(!m("", "spec.priority=6"));
    }
}
