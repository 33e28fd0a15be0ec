//! Object metadata rules: what the server sets on create, keeps on update, and how it
//! tells a spec change (a new `generation`) from a status or metadata change.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use super::resources::{Kind, ResourceType};
use super::status::ApiError;

/// Which part of an object a write targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The resource itself: status changes are ignored where `/status` exists.
    Main,
    /// The `/status` subresource: only status changes are kept.
    Status,
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `metadata.name`, or `""`.
pub fn name(obj: &Value) -> &str {
    str_at(obj, "/metadata/name")
}

/// `metadata.namespace`, or `""`.
pub fn namespace(obj: &Value) -> &str {
    str_at(obj, "/metadata/namespace")
}

/// `metadata.resourceVersion`, or `""`.
pub fn resource_version(obj: &Value) -> &str {
    str_at(obj, "/metadata/resourceVersion")
}

/// `metadata.finalizers` is non-empty.
pub fn has_finalizers(obj: &Value) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

/// The `metadata` map, created if missing or not an object.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    let map = obj.as_object_mut().expect("object");
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    meta.as_object_mut().expect("object")
}

/// RFC 3339 with whole seconds and `Z`, as Kubernetes writes `metav1.Time`.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Writes `metadata.resourceVersion`.
pub fn set_resource_version(obj: &mut Value, rv: u64) {
    meta_mut(obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
}

/// Checks a DNS-1123 subdomain (≤ 253 characters of `a-z0-9-.`, alphanumeric at both ends),
/// the rule for the names of every kind served here.
pub fn validate_name(name: &str) -> Result<(), String> {
    let ok_chars = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    let ends_ok = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if name.is_empty() {
        return Err("metadata.name: Required value: name or generateName is required".into());
    }
    if name.len() > 253
        || !ok_chars
        || !ends_ok(name.bytes().next())
        || !ends_ok(name.bytes().last())
    {
        return Err(format!(
            "metadata.name: Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist \
             of lower case alphanumeric characters, '-' or '.', and must start and end with an \
             alphanumeric character"
        ));
    }
    Ok(())
}

/// Checks `apiVersion`/`kind` of a body against the URL and sets them when absent.
fn check_type(rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    let map = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the request body must be a JSON object"))?;
    for (field, want) in [("apiVersion", rt.api_version), ("kind", rt.kind)] {
        match map.get(field).and_then(Value::as_str) {
            Some(got) if !got.is_empty() && got != want => {
                return Err(ApiError::bad_request(format!(
                    "the {field} of the provided object ({got}) does not match the {field} \
                     expected for {} ({want})",
                    rt.group_resource()
                )));
            }
            _ => {
                map.insert(field.into(), Value::String(want.into()));
            }
        }
    }
    Ok(())
}

/// Checks the body's namespace against the URL's, filling it in when absent.
fn check_namespace(rt: &ResourceType, ns: &str, obj: &mut Value) -> Result<(), ApiError> {
    let meta = meta_mut(obj);
    if !rt.namespaced {
        meta.remove("namespace");
        return Ok(());
    }
    match meta.get("namespace").and_then(Value::as_str) {
        Some(got) if !got.is_empty() && got != ns => Err(ApiError::bad_request(format!(
            "the namespace of the provided object ({got}) does not match the namespace sent on \
             the request ({ns})"
        ))),
        _ => {
            meta.insert("namespace".into(), Value::String(ns.into()));
            Ok(())
        }
    }
}

/// Prepares a body for creation in namespace `ns` (`""` for cluster-scoped kinds): type
/// and namespace checked, `uid`, `creationTimestamp` and `generation: 1` set, deletion
/// fields and `managedFields` dropped. The caller picks the name (for `generateName`) and
/// the resourceVersion.
///
/// Errors: 400 for a body that contradicts the URL.
pub fn prepare_create(
    kind: Kind,
    ns: &str,
    mut obj: Value,
    now: DateTime<Utc>,
) -> Result<Value, ApiError> {
    let rt = kind.info();
    check_type(rt, &mut obj)?;
    check_namespace(rt, ns, &mut obj)?;
    let meta = meta_mut(&mut obj);
    meta.insert(
        "uid".into(),
        Value::String(uuid::Uuid::new_v4().to_string()),
    );
    meta.insert("creationTimestamp".into(), Value::String(timestamp(now)));
    meta.insert("generation".into(), json!(1));
    // Why managedFields go: nothing here implements field ownership, and they would double
    // the size of every stored object.
    for k in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "resourceVersion",
        "selfLink",
    ] {
        meta.remove(k);
    }
    Ok(obj)
}

/// Whether anything outside `metadata` and `status` differs: the change that bumps
/// `metadata.generation`.
pub fn spec_changed(old: &Value, new: &Value) -> bool {
    const NOT_SPEC: [&str; 4] = ["metadata", "status", "apiVersion", "kind"];
    let empty = Map::new();
    let (o, n) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let relevant =
        |m: &Map<String, Value>| m.keys().filter(|k| !NOT_SPEC.contains(&k.as_str())).count();
    relevant(o) != relevant(n)
        || o.iter()
            .filter(|(k, _)| !NOT_SPEC.contains(&k.as_str()))
            .any(|(k, v)| n.get(k) != Some(v))
}

/// Builds the version to store when `new` replaces `old` through `target`: name and
/// namespace must match (400 otherwise), server-managed metadata is kept from `old`, the
/// status or everything-but-status is kept according to the target and the kind's
/// subresources, and `generation` increments on spec changes. The resourceVersion check
/// and the new resourceVersion are the caller's.
pub fn prepare_update(
    kind: Kind,
    old: &Value,
    mut new: Value,
    target: Target,
) -> Result<Value, ApiError> {
    let rt = kind.info();
    check_type(rt, &mut new)?;
    let old_name = name(old).to_string();
    match name(&new) {
        "" => {
            meta_mut(&mut new).insert("name".into(), Value::String(old_name.clone()));
        }
        n if n != old_name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({old_name})"
            )));
        }
        _ => {}
    }
    check_namespace(rt, namespace(old), &mut new)?;

    let mut out = match target {
        Target::Status => {
            let mut out = old.clone();
            set_or_remove(&mut out, "status", new.get("status").cloned());
            out
        }
        Target::Main => {
            if rt.status_subresource {
                set_or_remove(&mut new, "status", old.get("status").cloned());
            }
            new
        }
    };

    let old_meta = old.get("metadata").and_then(Value::as_object);
    let meta = meta_mut(&mut out);
    for k in [
        "uid",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        match old_meta.and_then(|m| m.get(k)) {
            Some(v) => meta.insert(k.into(), v.clone()),
            None => meta.remove(k),
        };
    }
    meta.remove("managedFields");
    meta.remove("selfLink");
    if spec_changed(old, &out) {
        let generation = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta_mut(&mut out).insert("generation".into(), json!(generation + 1));
    }
    Ok(out)
}

fn set_or_remove(obj: &mut Value, key: &str, value: Option<Value>) {
    if let Some(map) = obj.as_object_mut() {
        match value {
            Some(v) => map.insert(key.into(), v),
            None => map.remove(key),
        };
    }
}

/// Random lowercase suffix for `generateName`, from the same consonant-and-digit alphabet
/// Kubernetes uses (no vowels, so no accidental words).
pub fn name_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests;
