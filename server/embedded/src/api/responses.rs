//! Encoding objects and lists into HTTP responses in the negotiated [`Format`].

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::{Value, json};

use super::resources::Kind;
use super::store::Listing;
use super::stored::{Obj, Stored};
use super::table::{self, Format};

/// A JSON response with `Content-Type: application/json`.
pub fn json_bytes(code: StatusCode, body: impl Into<Body>) -> Response {
    let mut resp = (code, body.into()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// `value` as a JSON response.
pub fn json(code: StatusCode, value: &Value) -> Response {
    json_bytes(
        code,
        serde_json::to_vec(value).expect("a JSON value serializes"),
    )
}

/// One object, as itself, as `PartialObjectMetadata`, or as a one-row `Table`.
pub fn object(code: StatusCode, kind: Kind, obj: &Stored, format: Format) -> Response {
    match format {
        Format::Plain => json_bytes(code, obj.json()),
        Format::Metadata => json(code, &table::partial_metadata(&obj.value())),
        Format::Table(include) => {
            let meta = json!({"resourceVersion": obj.resource_version()});
            let value = obj.value();
            json(
                code,
                &table::table(kind, [&value], include, meta, Utc::now()),
            )
        }
    }
}

fn list_meta(listing: &Listing) -> Value {
    let mut meta = json!({"resourceVersion": listing.resource_version.to_string()});
    if let Some(token) = &listing.continue_token {
        meta["continue"] = json!(token);
    }
    if let Some(n) = listing.remaining {
        meta["remainingItemCount"] = json!(n);
    }
    meta
}

/// A page of a list: `{Kind}List` (items with apiVersion and kind, as stored),
/// `PartialObjectMetadataList`, or a `Table`.
pub fn list(kind: Kind, listing: &Listing, format: Format) -> Response {
    let meta = list_meta(listing);
    match format {
        Format::Table(include) => {
            let values: Vec<Value> = listing.items.iter().map(|o| o.value()).collect();
            let t = table::table(kind, &values, include, meta, Utc::now());
            json(StatusCode::OK, &t)
        }
        Format::Metadata => {
            let items: Vec<Value> = listing
                .items
                .iter()
                .map(|o| table::partial_metadata(&o.value()))
                .collect();
            json(
                StatusCode::OK,
                &json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                        "metadata": meta, "items": items}),
            )
        }
        Format::Plain => {
            let rt = kind.info();
            let body = plain_list(&rt.list_kind(), rt.api_version, &meta, &listing.items);
            json_bytes(StatusCode::OK, body)
        }
    }
}

/// Writes a list from the stored JSON of its items, without parsing them or copying them
/// into one big tree: a 50k-pod list is a concatenation.
pub fn plain_list(list_kind: &str, api_version: &str, meta: &Value, items: &[Obj]) -> Vec<u8> {
    let size: usize = items.iter().map(|i| i.json_len() + 1).sum();
    let mut buf = Vec::with_capacity(128 + size);
    let head = json!({"kind": list_kind, "apiVersion": api_version, "metadata": meta});
    let head = serde_json::to_vec(&head).expect("a JSON value serializes");
    buf.extend_from_slice(&head[..head.len() - 1]);
    buf.extend_from_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        item.write_json(&mut buf);
    }
    buf.extend_from_slice(b"]}");
    buf
}

/// Adds one `Warning` header per message.
pub fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        if let Ok(v) = HeaderValue::from_str(w) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn plain_list_is_valid_json_with_items() {
        let items = vec![
            Arc::new(Stored::new(&json!({"metadata": {"name": "a"}}))),
            Arc::new(Stored::new(&json!({"metadata": {"name": "b"}}))),
        ];
        let bytes = plain_list(
            "NodeList",
            "v1",
            &json!({"resourceVersion": "3", "continue": "ab"}),
            &items,
        );
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["kind"], "NodeList");
        assert_eq!(v["metadata"]["continue"], "ab");
        assert_eq!(v["items"][1]["metadata"]["name"], "b");
        let empty: Value =
            serde_json::from_slice(&plain_list("PodList", "v1", &json!({}), &[])).unwrap();
        assert_eq!(empty["items"], json!([]));
    }
}
