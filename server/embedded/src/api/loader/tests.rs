use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::ObjectMeta;

use super::*;
use crate::api::history::EventType;
use crate::api::resources::test_nodepools;
use crate::api::store::ListQuery;

fn loader() -> (Arc<Store>, Loader) {
    let store = Arc::new(Store::new(100, &[test_nodepools()]));
    (store.clone(), Loader::new(store))
}

fn pod(ns: &str, name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(BTreeMap::from([("app".to_string(), "a".to_string())])),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn a_loaded_object_is_stored_as_a_create_would_store_it() {
    let (store, loader) = loader();
    let start = store.current_rv();
    let uid = loader.create(&pod("ml", "p-0")).unwrap().unwrap();
    let stored = store.get(Kind::Pods, "ml", "p-0").unwrap();
    assert_eq!(stored.uid(), uid);
    assert_eq!(stored.resource_version(), (start + 2).to_string());
    let v = stored.value();
    assert!(v["metadata"]["creationTimestamp"].is_string());
    assert_eq!(v["metadata"]["labels"]["app"], "a");
    // The namespace is made on first use, as for a create through the API.
    assert!(store.get(Kind::Namespaces, "", "ml").is_ok());
    // A watcher replaying from before the load sees the pod ADDED.
    let (changes, _) = store.changes_since(Kind::Pods, start).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].kind, EventType::Added);
}

#[test]
fn an_existing_name_is_left_alone() {
    let (store, loader) = loader();
    loader.create(&pod("ml", "p-0")).unwrap();
    let rv = store.current_rv();
    let mut changed = pod("ml", "p-0");
    changed.metadata.labels = None;
    assert_eq!(loader.create(&changed).unwrap(), None);
    assert_eq!(store.current_rv(), rv);
    let listed = store.list(Kind::Pods, &ListQuery::default());
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].value()["metadata"]["labels"]["app"], "a");
}

#[test]
fn an_invalid_name_is_refused_as_the_api_refuses_it() {
    let (store, loader) = loader();
    let e = loader.create(&pod("ml", "Not_A_Name")).unwrap_err();
    assert_eq!(e.code, 422);
    assert!(store.get(Kind::Pods, "ml", "Not_A_Name").is_err());
    // Callers that handle kube-rs errors see the same code and reason.
    match kube::Error::from(e) {
        kube::Error::Api(s) => assert_eq!((s.code, s.reason.as_str()), (422, "Invalid")),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[test]
fn a_kind_the_server_does_not_serve_is_not_found() {
    // No custom resources: NodePools are not served, Nodes are.
    let loader = Loader::new(Arc::new(Store::new(100, &[])));
    let node = Node {
        metadata: ObjectMeta {
            name: Some("n-0".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(loader.create(&node).unwrap().is_some());
    let e = loader
        .create(&spotboard_core::nodepool::NodePool::new(
            "a",
            Default::default(),
        ))
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.code, 404);
}
