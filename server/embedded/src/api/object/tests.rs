use super::*;
use crate::api::resources::test_nodepools;

fn now() -> DateTime<Utc> {
    "2026-11-21T10:00:00Z".parse().unwrap()
}

#[test]
fn create_sets_server_fields() {
    let body = json!({"metadata": {"name": "p", "resourceVersion": "9",
                      "managedFields": [{}], "deletionTimestamp": "x"}, "spec": {}});
    let o = prepare_create(Kind::Pods, "default", body, now()).unwrap();
    assert_eq!(o["apiVersion"], "v1");
    assert_eq!(o["kind"], "Pod");
    assert_eq!(o["metadata"]["namespace"], "default");
    assert_eq!(o["metadata"]["generation"], 1);
    assert_eq!(o["metadata"]["creationTimestamp"], "2026-11-21T10:00:00Z");
    assert_eq!(o["metadata"]["uid"].as_str().unwrap().len(), 36);
    for gone in ["resourceVersion", "managedFields", "deletionTimestamp"] {
        assert!(o["metadata"].get(gone).is_none(), "{gone}");
    }
}

#[test]
fn create_rejects_contradictions() {
    let wrong_ns = json!({"metadata": {"name": "p", "namespace": "other"}});
    assert_eq!(
        prepare_create(Kind::Pods, "default", wrong_ns, now())
            .unwrap_err()
            .code,
        400
    );
    let wrong_kind = json!({"kind": "Node", "metadata": {"name": "p"}});
    assert_eq!(
        prepare_create(Kind::Pods, "default", wrong_kind, now())
            .unwrap_err()
            .code,
        400
    );
    let cluster = json!({"metadata": {"name": "n", "namespace": "x"}});
    let o = prepare_create(Kind::Nodes, "", cluster, now()).unwrap();
    assert!(o["metadata"].get("namespace").is_none());
}

#[test]
fn names_are_dns_subdomains() {
    assert!(validate_name("gpu-pool.a1").is_ok());
    assert!(validate_name("").is_err());
    assert!(validate_name("Upper").is_err());
    assert!(validate_name("-lead").is_err());
    assert!(validate_name("trail-").is_err());
    assert!(validate_name(&"a".repeat(254)).is_err());
    let s = name_suffix();
    assert_eq!(s.len(), 5);
    assert!(validate_name(&s).is_ok());
}

fn stored() -> Value {
    json!({"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
           "metadata": {"name": "np", "uid": "u1", "generation": 1, "resourceVersion": "5",
                        "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"targetNodes": 1}, "status": {"currentNodes": 0}})
}

#[test]
fn main_update_ignores_status_and_bumps_generation_on_spec_change() {
    let mut new = stored();
    new["spec"]["targetNodes"] = json!(2);
    new["status"]["currentNodes"] = json!(7);
    new["metadata"]["uid"] = json!("forged");
    let out = prepare_update(test_nodepools(), &stored(), new, Target::Main).unwrap();
    assert_eq!(out["spec"]["targetNodes"], 2);
    assert_eq!(out["status"]["currentNodes"], 0);
    assert_eq!(out["metadata"]["uid"], "u1");
    assert_eq!(out["metadata"]["generation"], 2);
}

#[test]
fn metadata_only_update_keeps_generation() {
    let mut new = stored();
    new["metadata"]["labels"] = json!({"a": "b"});
    let out = prepare_update(test_nodepools(), &stored(), new, Target::Main).unwrap();
    assert_eq!(out["metadata"]["generation"], 1);
    assert_eq!(out["metadata"]["labels"]["a"], "b");
}

#[test]
fn status_update_changes_only_status() {
    let mut new = stored();
    new["spec"]["targetNodes"] = json!(9);
    new["status"]["currentNodes"] = json!(3);
    new["metadata"]["labels"] = json!({"a": "b"});
    let out = prepare_update(test_nodepools(), &stored(), new, Target::Status).unwrap();
    assert_eq!(out["spec"]["targetNodes"], 1);
    assert_eq!(out["status"]["currentNodes"], 3);
    assert!(out["metadata"].get("labels").is_none());
    assert_eq!(out["metadata"]["generation"], 1);
}

#[test]
fn update_name_must_match() {
    let mut new = stored();
    new["metadata"]["name"] = json!("other");
    let e = prepare_update(test_nodepools(), &stored(), new, Target::Main).unwrap_err();
    assert_eq!(e.code, 400);
    let mut unnamed = stored();
    unnamed["metadata"].as_object_mut().unwrap().remove("name");
    let out = prepare_update(test_nodepools(), &stored(), unnamed, Target::Main).unwrap();
    assert_eq!(name(&out), "np");
}

#[test]
fn events_without_status_subresource_keep_everything() {
    let old = json!({"metadata": {"name": "e", "namespace": "d", "generation": 1}, "count": 1});
    let new = json!({"metadata": {"name": "e"}, "count": 2, "status": {"x": 1}});
    let out = prepare_update(Kind::Events, &old, new, Target::Main).unwrap();
    assert_eq!(out["count"], 2);
    assert_eq!(out["status"]["x"], 1);
    assert_eq!(out["metadata"]["namespace"], "d");
}
