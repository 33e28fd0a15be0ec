//! OpenAPI documents for kubectl.
//!
//! What kubectl 1.33 needs, read from its source (`cli-runtime/pkg/resource/
//! query_param_verifier_v3.go`, `kubectl/pkg/cmd/apply/patcher.go`):
//! - `kubectl apply` (default `--validate=strict`) looks in `/openapi/v3` for the group-version
//!   document, finds the PATCH operation whose `x-kubernetes-group-version-kind` is the kind
//!   being applied, and if it lists a `fieldValidation` parameter it sends
//!   `fieldValidation=Strict` and leaves validation to the server. Every PATCH operation here
//!   lists it.
//! - Its validator still loads `/openapi/v2` (protobuf) eagerly and fails without it, so
//!   `/openapi/v2` serves a minimal valid document with no definitions.
//! - The patcher computes a strategic merge patch only when the PATCH operation accepts
//!   `application/strategic-merge-patch+json`; otherwise a JSON merge patch, which is what
//!   a custom resource gets. None of the operations here advertise strategic merge.
//! - `kubectl explain` finds a kind's schema in `components.schemas` by the same extension.

use serde_json::{Map, Value, json};
use std::hash::{Hash, Hasher};

use super::discovery::GIT_VERSION;
use super::resources::{Kind, ResourceType};

/// A served group-version document and the hash kubectl caches it under.
struct GvDoc {
    /// `api/v1` or `apis/{group}/{version}`.
    path: String,
    hash: String,
    body: Value,
}

/// The OpenAPI v3 documents of one API server's kinds, built once per server.
pub struct OpenApi {
    docs: Vec<GvDoc>,
}

impl OpenApi {
    /// The documents of every group-version among `served`.
    pub fn new(served: &[Kind]) -> Self {
        let mut gvs: Vec<(&str, &str)> = Vec::new();
        for k in served {
            let i = k.info();
            if !gvs.contains(&(i.group, i.version)) {
                gvs.push((i.group, i.version));
            }
        }
        let docs = gvs
            .into_iter()
            .map(|(g, v)| {
                let body = gv_document(served, g, v);
                let mut h = std::collections::hash_map::DefaultHasher::new();
                body.to_string().hash(&mut h);
                GvDoc {
                    path: gv_path(g, v),
                    hash: format!("{:016X}", h.finish()),
                    body,
                }
            })
            .collect();
        Self { docs }
    }

    /// `/openapi/v3`: the index of group-version documents. `prefix` is the path prefix the
    /// request came with (client-go fetches `serverRelativeURL` as an absolute path).
    pub fn v3_index(&self, prefix: &str) -> Value {
        let paths: Map<String, Value> = self
            .docs
            .iter()
            .map(|d| {
                let url = format!("{prefix}/openapi/v3/{}?hash={}", d.path, d.hash);
                (d.path.clone(), json!({"serverRelativeURL": url}))
            })
            .collect();
        json!({"paths": paths})
    }

    /// `/openapi/v3/{path}` for `path` = `api/v1` or `apis/{group}/{version}`.
    pub fn v3_document(&self, path: &str) -> Option<&Value> {
        self.docs.iter().find(|d| d.path == path).map(|d| &d.body)
    }
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v2` as protobuf (`openapi_v2.Document`): `swagger: "2.0"` and an `info`,
/// nothing else. Hand-encoded: two length-delimited string fields in a nested message.
pub fn v2_protobuf() -> Vec<u8> {
    fn field(tag: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(tag << 3) | 2, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }
    let info = [field(1, b"Kubernetes"), field(2, GIT_VERSION.as_bytes())].concat();
    [field(1, b"2.0"), field(2, &info)].concat()
}

/// Component name of a kind's schema, in Kubernetes' reverse-domain style.
fn schema_name(rt: &ResourceType) -> String {
    let group = if rt.group.is_empty() {
        "io.k8s.api.core".to_string()
    } else {
        rt.group.split('.').rev().collect::<Vec<_>>().join(".")
    };
    format!("{group}.{}.{}", rt.version, rt.kind)
}

fn gvk(rt: &ResourceType) -> Value {
    json!({"group": rt.group, "version": rt.version, "kind": rt.kind})
}

fn query_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description,
           "schema": {"type": "string", "uniqueItems": true}})
}

fn path_param(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

fn operation(rt: &ResourceType, action: &str, params: Vec<Value>, schema_ref: &Value) -> Value {
    json!({
        "operationId": format!("{action}{}", rt.kind),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(rt),
        "parameters": params,
        "responses": {"200": {"description": "OK",
            "content": {"application/json": {"schema": schema_ref}}}},
    })
}

/// The paths of one kind: get/list/create on the collection, get/put/patch/delete on an
/// object, and the status subresource.
fn kind_paths(rt: &ResourceType, paths: &mut Map<String, Value>) {
    let schema_ref = json!({"$ref": format!("#/components/schemas/{}", schema_name(rt))});
    let prefix = if rt.group.is_empty() {
        format!("/api/{}", rt.version)
    } else {
        format!("/apis/{}/{}", rt.group, rt.version)
    };
    let scope = if rt.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    let mut object_params = vec![path_param("name")];
    if rt.namespaced {
        object_params.push(path_param("namespace"));
    }
    let write_params = |base: &[Value]| {
        let mut p = base.to_vec();
        p.push(query_param(
            "dryRun",
            "When present, indicates that modifications should not be persisted.",
        ));
        p.push(query_param(
            "fieldManager",
            "A name associated with the actor making these changes.",
        ));
        p.push(query_param(
            "fieldValidation",
            "How unknown fields are handled: Ignore, Warn (default) or Strict. This server warns on \
             unknown fields for Warn and Strict and stores the object either way.",
        ));
        p
    };
    let mut patch = operation(rt, "patch", write_params(&object_params), &schema_ref);
    let patch_body = json!({"schema": {"type": "object"}});
    patch["requestBody"] = json!({"content": {
        "application/json-patch+json": patch_body,
        "application/merge-patch+json": patch_body,
        "application/apply-patch+yaml": patch_body,
    }});
    let mut item = json!({"get": operation(rt, "get", object_params.clone(), &schema_ref)});
    if rt.writable {
        item["patch"] = patch.clone();
        item["put"] = operation(rt, "put", write_params(&object_params), &schema_ref);
        item["delete"] = operation(rt, "delete", write_params(&object_params), &schema_ref);
    }
    paths.insert(
        format!("{prefix}{scope}/{}/{{name}}", rt.plural),
        item.clone(),
    );
    if rt.status_subresource && rt.writable {
        paths.insert(
            format!("{prefix}{scope}/{}/{{name}}/status", rt.plural),
            item,
        );
    }
    let mut collection =
        json!({"get": operation(rt, "list", object_params[1..].to_vec(), &schema_ref)});
    if rt.writable {
        collection["post"] = operation(rt, "post", write_params(&object_params[1..]), &schema_ref);
    }
    paths.insert(format!("{prefix}{scope}/{}", rt.plural), collection);
}

/// A kind's schema: a custom resource's from its CRD, an open object with the standard fields
/// for the others (enough for `explain` to name them and for clients to find the kind).
fn kind_schema(kind: Kind) -> Value {
    let rt = kind.info();
    let mut schema = match rt.crd.as_ref().map(|c| &c.schema) {
        Some(schema) if schema.is_object() => schema.clone(),
        _ => json!({
            "type": "object",
            "description": format!("{} (served by spotboard's embedded cluster; fields are not \
                                    enumerated here).", rt.kind),
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            },
            "x-kubernetes-preserve-unknown-fields": true,
        }),
    };
    let props = schema
        .as_object_mut()
        .expect("schemas are objects")
        .entry("properties")
        .or_insert_with(|| json!({}));
    props["apiVersion"] = json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."});
    props["kind"] = json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."});
    props["metadata"] = json!({"type": "object", "description": "Standard object's metadata.",
                               "x-kubernetes-preserve-unknown-fields": true});
    schema["x-kubernetes-group-version-kind"] = json!([gvk(rt)]);
    schema
}

fn gv_document(served: &[Kind], group: &str, version: &str) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for &kind in served {
        let rt = kind.info();
        if rt.group == group && rt.version == version {
            kind_paths(rt, &mut paths);
            schemas.insert(schema_name(rt), kind_schema(kind));
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check kubectl's `queryParamVerifierV3` makes.
    fn supports_field_validation(doc: &Value, group: &str, version: &str, kind: &str) -> bool {
        doc["paths"].as_object().unwrap().values().any(|p| {
            let op = &p["patch"];
            op["x-kubernetes-group-version-kind"]
                == json!({"group": group, "version": version, "kind": kind})
                && op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|x| x["name"] == "fieldValidation")
        })
    }

    fn served() -> OpenApi {
        let kinds: Vec<Kind> = Kind::BUILT_IN
            .into_iter()
            .chain([crate::api::resources::test_nodepools()])
            .collect();
        OpenApi::new(&kinds)
    }

    #[test]
    fn index_points_at_every_group_version() {
        let api = served();
        let idx = api.v3_index("");
        let prefixed = api.v3_index("/token/t");
        let url = prefixed["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/token/t/openapi/v3/api/v1?hash="));
        for path in [
            "api/v1",
            "apis/compute.coreweave.com/v1alpha1",
            "apis/apiextensions.k8s.io/v1",
        ] {
            let url = idx["paths"][path]["serverRelativeURL"].as_str().unwrap();
            assert!(
                url.starts_with(&format!("/openapi/v3/{path}?hash=")),
                "{url}"
            );
            assert!(api.v3_document(path).is_some());
        }
        assert!(api.v3_document("apis/apps/v1").is_none());
        let built_in = OpenApi::new(&Kind::BUILT_IN);
        assert!(
            built_in
                .v3_document("apis/compute.coreweave.com/v1alpha1")
                .is_none()
        );
    }

    #[test]
    fn patch_operations_advertise_field_validation_but_not_strategic_merge() {
        let api = served();
        let np = api
            .v3_document("apis/compute.coreweave.com/v1alpha1")
            .unwrap();
        assert!(supports_field_validation(
            np,
            "compute.coreweave.com",
            "v1alpha1",
            "NodePool"
        ));
        let core = api.v3_document("api/v1").unwrap();
        for kind in ["Node", "Pod", "Event", "Namespace"] {
            assert!(supports_field_validation(core, "", "v1", kind), "{kind}");
        }
        let text = core.to_string() + &np.to_string();
        assert!(!text.contains("strategic-merge-patch"));
    }

    #[test]
    fn nodepool_schema_is_the_crds_with_its_gvk() {
        let api = served();
        let np = api
            .v3_document("apis/compute.coreweave.com/v1alpha1")
            .unwrap();
        let s = &np["components"]["schemas"]["com.coreweave.compute.v1alpha1.NodePool"];
        assert_eq!(s["x-kubernetes-group-version-kind"][0]["kind"], "NodePool");
        assert!(s["properties"]["spec"]["properties"]["instanceType"].is_object());
        assert!(s["properties"]["metadata"].is_object());
    }

    #[test]
    fn v2_is_a_small_valid_protobuf() {
        let b = v2_protobuf();
        assert_eq!(&b[..5], &[0x0a, 3, b'2', b'.', b'0']);
        assert_eq!(b[5], 0x12);
        assert_eq!(b[6] as usize, b.len() - 7);
    }
}
