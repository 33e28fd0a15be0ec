//! Response shapes a client can ask for in `Accept`: the plain object, `Table` (what
//! `kubectl get` prints) or `PartialObjectMetadata` (what kube-rs metadata watchers read).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::printers;
use super::resources::Kind;

/// What a `Table` row carries in `object` (`includeObject` query parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    /// `PartialObjectMetadata` (the default, enough for kubectl's `-A` and `--show-labels`).
    Metadata,
    Object,
}

/// How objects are rendered in a response or a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Plain,
    /// `meta.k8s.io/v1` `PartialObjectMetadata` / `PartialObjectMetadataList`.
    Metadata,
    /// `meta.k8s.io/v1` `Table`.
    Table(IncludeObject),
}

/// Picks the first media range of `accept` this server can produce; plain JSON otherwise.
/// `include_object` is the `includeObject` parameter (`None`, `Metadata`, `Object`).
pub fn negotiate(accept: &str, include_object: Option<&str>) -> Format {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let essence = parts.next().unwrap_or("");
        let mut as_ = "";
        let mut group = "";
        for p in parts {
            match p.split_once('=') {
                Some(("as", v)) => as_ = v,
                Some(("g", v)) => group = v,
                _ => {}
            }
        }
        if !matches!(essence, "application/json" | "*/*" | "application/*") {
            continue;
        }
        match (as_, group) {
            ("", _) => return Format::Plain,
            ("Table", "meta.k8s.io") => {
                let include = match include_object {
                    Some("None") => IncludeObject::None,
                    Some("Object") => IncludeObject::Object,
                    _ => IncludeObject::Metadata,
                };
                return Format::Table(include);
            }
            ("PartialObjectMetadata" | "PartialObjectMetadataList", "meta.k8s.io") => {
                return Format::Metadata;
            }
            _ => continue,
        }
    }
    Format::Plain
}

/// `obj` reduced to `PartialObjectMetadata`.
pub fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// One `Table` row for `obj`.
pub fn row(kind: Kind, obj: &Value, include: IncludeObject, now: DateTime<Utc>) -> Value {
    let mut row = Map::new();
    row.insert(
        "cells".into(),
        Value::Array(printers::cells(kind, obj, now)),
    );
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row.insert("object".into(), partial_metadata(obj));
        }
        IncludeObject::Object => {
            row.insert("object".into(), obj.clone());
        }
    }
    Value::Object(row)
}

/// A `Table` of `objects` with list metadata `list_meta` (`resourceVersion`, `continue`).
pub fn table<'a>(
    kind: Kind,
    objects: impl IntoIterator<Item = &'a Value>,
    include: IncludeObject,
    list_meta: Value,
    now: DateTime<Utc>,
) -> Value {
    let columns: Vec<Value> = printers::columns(kind)
        .iter()
        .map(|c| c.to_json())
        .collect();
    let rows: Vec<Value> = objects
        .into_iter()
        .map(|o| row(kind, o, include, now))
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_GET: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,\
                               application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    #[test]
    fn negotiates_like_the_api_server() {
        assert_eq!(
            negotiate(KUBECTL_GET, None),
            Format::Table(IncludeObject::Metadata)
        );
        assert_eq!(
            negotiate(KUBECTL_GET, Some("Object")),
            Format::Table(IncludeObject::Object)
        );
        assert_eq!(negotiate("application/json", None), Format::Plain);
        assert_eq!(negotiate("", None), Format::Plain);
        assert_eq!(
            negotiate(
                "application/vnd.kubernetes.protobuf, application/json",
                None
            ),
            Format::Plain
        );
        assert_eq!(
            negotiate(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                None
            ),
            Format::Metadata
        );
        assert_eq!(
            negotiate("application/json;as=Other;g=x.io,application/json", None),
            Format::Plain
        );
    }

    #[test]
    fn table_has_columns_rows_and_partial_objects() {
        let node = json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {"a": "b"}}, "spec": {}});
        let t = table(
            Kind::Nodes,
            [&node],
            IncludeObject::Metadata,
            json!({"resourceVersion": "7"}),
            Utc::now(),
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"]["resourceVersion"], "7");
        assert_eq!(t["columnDefinitions"][0]["name"], "Name");
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        assert_eq!(t["rows"][0]["cells"][0], "n1");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["rows"][0]["object"]["metadata"]["labels"]["a"], "b");
        let r = row(Kind::Nodes, &node, IncludeObject::None, Utc::now());
        assert!(r.get("object").is_none());
        let r = row(Kind::Nodes, &node, IncludeObject::Object, Utc::now());
        assert_eq!(r["object"]["kind"], "Node");
    }
}
