//! Row-level JSON merge patches (RFC 7386): the server sends only the fields of a row that
//! changed; the browser merges them into its copy.
//!
//! Rows are small and mostly flat, so a top-level diff is enough: a changed nested value
//! (a condition list, a label map) is sent whole. A removed key is sent as `null`, which is
//! why optional row fields deserialize a missing value as `None`.

use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

use crate::{Error, Result};

/// The merge patch that turns `old` into `new`, or `None` when they are equal.
///
/// Both must be JSON objects; anything else yields the whole `new` value.
pub fn diff(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    let (Value::Object(o), Value::Object(n)) = (old, new) else {
        return Some(new.clone());
    };
    let mut out = Map::new();
    for (k, nv) in n {
        if o.get(k) != Some(nv) {
            out.insert(k.clone(), nv.clone());
        }
    }
    for k in o.keys() {
        if !n.contains_key(k) {
            out.insert(k.clone(), Value::Null);
        }
    }
    Some(Value::Object(out))
}

/// Applies a merge patch to a typed row.
///
/// Errors: [`Error::Decode`] when the patched value no longer fits the row type (a server
/// and browser of different versions); the row is left unchanged then.
pub fn apply<T: Serialize + DeserializeOwned>(row: &mut T, patch: &Value) -> Result<()> {
    let mut v = serde_json::to_value(&*row).map_err(|source| Error::Decode {
        what: "row",
        source,
    })?;
    json_patch::merge(&mut v, patch);
    *row = decode(&v).map_err(|source| Error::Decode {
        what: "patched row",
        source,
    })?;
    Ok(())
}

/// A row from its JSON value.
///
/// Through the value's text, not `serde_json::from_value`: the snapshot is read from text, and
/// a second way of reading would compile every row's deserializer into the wasm once more
/// (about 90 KB before wasm-opt). A row is a few hundred bytes, so the detour costs
/// microseconds per delta.
///
/// Errors: `serde_json::Error` when the value does not fit `T`.
pub fn decode<T: DeserializeOwned>(value: &Value) -> serde_json::Result<T> {
    serde_json::from_str(&value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeRow;

    #[test]
    fn diff_carries_only_changed_fields() {
        let a = NodeRow {
            key: "u1".into(),
            cluster: "c".into(),
            name: "n".into(),
            pool: Some("p".into()),
            ..Default::default()
        };
        let mut b = a.clone();
        b.cordoned = true;
        b.pool = None;
        let va = serde_json::to_value(&a).unwrap();
        let vb = serde_json::to_value(&b).unwrap();
        let p = diff(&va, &vb).expect("rows differ");
        assert_eq!(p, serde_json::json!({"cordoned": true, "pool": null}));
        assert_eq!(diff(&va, &va), None);

        let mut c = a.clone();
        apply(&mut c, &p).unwrap();
        assert_eq!(c, b);
    }

    #[test]
    fn a_patch_of_the_wrong_shape_is_an_error_and_changes_nothing() {
        let mut row = NodeRow::default();
        let before = row.clone();
        assert!(apply(&mut row, &serde_json::json!({"pods": "many"})).is_err());
        assert_eq!(row, before);
    }
}
