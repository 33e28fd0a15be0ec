//! Row-level JSON merge patches (RFC 7386): the server sends only the fields of a row that
//! changed; the browser merges them into its copy.
//!
//! Rows are small and mostly flat, so a top-level diff is enough: a changed nested value
//! (a condition list, a label map) is sent whole and replaces the old one whole. A removed key
//! is sent as `null`, which is why optional row fields deserialize a missing value as `None`.

use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

use crate::{Error, Result};

mod patched;

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

/// Applies a patch made by [`diff`] to a typed row.
///
/// The row is written out as JSON text with each field the patch names taken from the patch
/// instead (a `null` leaves the field out, so it reads back as `None` or its default), and
/// read back as `T`. A patched field is replaced whole, as [`diff`] sends it: a label map
/// that lost a key loses it here too (RFC 7386's recursive merge would keep it). The text is
/// read the way the snapshot is, so the browser's wasm holds one deserializer per row type,
/// and no `serde_json::Value` of the row is built.
///
/// Errors: [`Error::Decode`] when the row is not a struct, or when the patched text no longer
/// fits the row type (a server and browser of different versions); the row is left
/// unchanged then.
pub fn apply<T: Serialize + DeserializeOwned>(row: &mut T, patch: &Value) -> Result<()> {
    let err = |source| Error::Decode {
        what: "patched row",
        source,
    };
    let Value::Object(patch) = patch else {
        *row = decode(patch).map_err(err)?;
        return Ok(());
    };
    let mut text = Vec::with_capacity(512);
    row.serialize(patched::Patched::new(&mut text, patch))
        .map_err(err)?;
    // Read as text (see above); serde_json writes nothing but UTF-8.
    let text = std::str::from_utf8(&text)
        .map_err(|_| err(serde::ser::Error::custom("the patched row is not UTF-8")))?;
    *row = serde_json::from_str(text).map_err(err)?;
    Ok(())
}

/// A row from its JSON value (a delta's added row).
///
/// Through the value's text, not `serde_json::from_value`: the snapshot is read from text, and
/// a second way of reading would compile every row's deserializer into the wasm once more
/// (23 KB of the dashboard's wasm in brotli, measured 2026-11-26).
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

    /// A row with what the real ones have: a map, an optional field, a list left out when
    /// empty.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
    struct Row {
        name: String,
        labels: std::collections::BTreeMap<String, String>,
        #[serde(default)]
        zone: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        problems: Vec<String>,
    }

    fn round(old: &Row, new: &Row) -> Row {
        let patch = diff(
            &serde_json::to_value(old).unwrap(),
            &serde_json::to_value(new).unwrap(),
        )
        .expect("rows differ");
        let mut row = old.clone();
        apply(&mut row, &patch).unwrap();
        row
    }

    #[test]
    fn whatever_changed_the_patched_row_is_the_new_one() {
        let old = Row {
            name: "a".into(),
            labels: [("x".into(), "1".into()), ("y".into(), "2".into())].into(),
            zone: Some("US-EAST-04A".into()),
            problems: vec!["quota".into()],
        };
        // A map that lost a key is replaced whole (a recursive merge would keep the key).
        let mut new = old.clone();
        new.labels.remove("y");
        assert_eq!(round(&old, &new), new);
        // An optional field removed, and a list emptied (left out of the new row's JSON).
        let mut new = old.clone();
        new.zone = None;
        new.problems.clear();
        assert_eq!(round(&old, &new), new);
        // And back: fields the old row's JSON left out are written from the patch.
        assert_eq!(round(&new, &old), old);
    }

    #[test]
    fn keys_the_row_does_not_have_are_ignored_and_only_structs_are_patched() {
        let mut row = Row::default();
        apply(&mut row, &serde_json::json!({"name": "b", "future": 1})).unwrap();
        assert_eq!(row.name, "b");
        let mut n = 3u32;
        let e = apply(&mut n, &serde_json::json!({"a": 1})).unwrap_err();
        assert!(e.to_string().contains("struct"), "{e}");
        assert_eq!(n, 3);
        // A patch that is not an object is the whole new value.
        apply(&mut n, &serde_json::json!(4)).unwrap();
        assert_eq!(n, 4);
    }
}
