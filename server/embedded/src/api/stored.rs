//! How the store keeps an object: its serialized JSON, plus the labels and the few fields
//! that lists and watches filter on.
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
#[derive(Debug)]
pub struct Stored {
    json: Bytes,
    labels: Box<[(Box<str>, Box<str>)]>,
    indexed: [Box<str>; INDEXED.len()],
}

impl Stored {
    /// Serializes `value` and indexes it.
    pub fn new(value: &Value) -> Self {
        let json = Bytes::from(serde_json::to_vec(value).expect("a JSON value serializes"));
        let labels = value
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.as_str().into(), scalar_string(v).into()))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            json,
            labels,
            indexed: INDEXED.map(|path| field_string(value, path).into_boxed_str()),
        }
    }

    /// The object as JSON bytes.
    pub fn json(&self) -> &Bytes {
        &self.json
    }

    /// The object as a tree (parsed anew on each call).
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.json).expect("stored JSON parses")
    }

    fn indexed(&self, path: &str) -> Option<&str> {
        INDEXED
            .iter()
            .position(|p| *p == path)
            .map(|i| &*self.indexed[i])
    }

    pub fn name(&self) -> &str {
        &self.indexed[0]
    }

    pub fn namespace(&self) -> &str {
        &self.indexed[1]
    }

    pub fn uid(&self) -> &str {
        &self.indexed[2]
    }

    pub fn resource_version(&self) -> &str {
        &self.indexed[3]
    }

    /// Whether the object's labels and fields satisfy both selectors. Parses the JSON
    /// only when the field selector reads a path not indexed here.
    pub fn matches(&self, labels: &LabelSelector, fields: &FieldSelector) -> bool {
        let label = |k: &str| {
            self.labels
                .iter()
                .find(|(key, _)| &**key == k)
                .map(|(_, v)| &**v)
        };
        if !labels.matches_with(label) {
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
        let back: Value = serde_json::from_slice(p.json()).unwrap();
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
        assert!(
            m("", "spec.priority=5"),
            "an unindexed path is read from the JSON"
        );
        assert!(!m("", "spec.priority=6"));
    }
}
