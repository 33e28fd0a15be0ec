//! The embedded API server through kube-rs clients, as spotboard and the behaviour model use
//! it: CRUD, status, dry run, paging, selectors, authorization, outages. Watches are in
//! `watch.rs`, real kubectl in `kubectl.rs`.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use spotboard_core::nodepool::NodePool;
use spotboard_embedded::client_for;

use crate::common;

use common::api::{event_name, fixture, get_json, next_event};
use common::objects::{api_code, count, node, pod, pool};
#[tokio::test]
async fn nodepool_crud_status_and_generation() {
    let f = fixture().await;
    let api: Api<NodePool> = Api::all(f.admin.clone());
    let created = api
        .create(&PostParams::default(), &pool("np-a", 2))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    assert_eq!(
        api_code(
            api.create(&PostParams::default(), &pool("np-a", 2))
                .await
                .unwrap_err()
        ),
        409
    );

    // Status through the subresource: spec untouched, no new generation.
    let status = json!({"status": {"currentNodes": 1, "conditions": [
        {"type": "Capacity", "status": "False", "reason": "QueuedAwaitingCapacity"}]}});
    let patched = api
        .patch_status("np-a", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(patched.status.as_ref().unwrap().current_nodes, Some(1));
    assert_eq!(patched.metadata.generation, Some(1));

    // The main resource ignores status and bumps the generation on spec changes.
    let mut change = patched.clone();
    change.spec.target_nodes = 5;
    change.status.as_mut().unwrap().current_nodes = Some(99);
    let replaced = api
        .replace("np-a", &PostParams::default(), &change)
        .await
        .unwrap();
    assert_eq!(replaced.spec.target_nodes, 5);
    assert_eq!(replaced.status.as_ref().unwrap().current_nodes, Some(1));
    assert_eq!(replaced.metadata.generation, Some(2));
    let stale = api
        .replace("np-a", &PostParams::default(), &change)
        .await
        .unwrap_err();
    assert_eq!(api_code(stale), 409, "the old resourceVersion conflicts");

    let fetched = api.get("np-a").await.unwrap();
    assert_eq!(fetched.resource_version(), replaced.resource_version());
    let deleted = api.delete("np-a", &DeleteParams::default()).await.unwrap();
    assert!(
        deleted.is_right(),
        "a NodePool without finalizers is gone at once"
    );
    assert_eq!(api_code(api.get("np-a").await.unwrap_err()), 404);
}

#[tokio::test]
async fn dry_run_stores_nothing() {
    let f = fixture().await;
    let api: Api<NodePool> = Api::all(f.admin.clone());
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let out = api.create(&pp, &pool("dry", 1)).await.unwrap();
    assert_eq!(out.name_any(), "dry");
    assert_eq!(api_code(api.get("dry").await.unwrap_err()), 404);
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn core_kinds_and_graceful_pod_delete() {
    let f = fixture().await;
    let nodes: Api<Node> = Api::all(f.admin.clone());
    nodes
        .create(&PostParams::default(), &node("g1", json!({})))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(f.admin.clone(), "jobs");
    pods.create(&PostParams::default(), &pod("train-0", "g1", "Running"))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("pending-0", "", "Pending"))
        .await
        .unwrap();
    let events: Api<Event> = Api::namespaced(f.admin.clone(), "default");
    let ev: Event = serde_json::from_value(json!({"metadata": {"name": "e1"},
        "involvedObject": {"kind": "Node", "name": "g1"}, "reason": "Preempting", "type": "Warning"}))
    .unwrap();
    events.create(&PostParams::default(), &ev).await.unwrap();
    assert_eq!(
        events.get("e1").await.unwrap().reason.as_deref(),
        Some("Preempting")
    );

    let all_pods: Api<Pod> = Api::all(f.admin.clone());
    assert_eq!(count(&all_pods).await, 2);
    let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(f.admin.clone());
    assert!(
        ns.get("jobs").await.is_ok(),
        "the namespace was created with its first pod"
    );

    // A bound, running pod terminates gracefully; an unbound one goes at once.
    let first = pods
        .delete("train-0", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = first.left().expect("the pod is still there");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
    assert!(pods.get("train-0").await.is_ok());
    pods.delete("train-0", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    assert_eq!(api_code(pods.get("train-0").await.unwrap_err()), 404);
    pods.delete("pending-0", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(api_code(pods.get("pending-0").await.unwrap_err()), 404);
}

#[tokio::test]
async fn paging_and_selectors() {
    let f = fixture().await;
    let nodes: Api<Node> = Api::all(f.admin.clone());
    for i in 0..7 {
        let labels = json!({"pool": if i % 2 == 0 { "a" } else { "b" }, "idx": i.to_string()});
        nodes
            .create(&PostParams::default(), &node(&format!("n{i}"), labels))
            .await
            .unwrap();
    }
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(3);
    let mut pages = 0;
    let mut list_rv = None;
    loop {
        let page = nodes.list(&lp).await.unwrap();
        pages += 1;
        names.extend(page.items.iter().map(|n| n.name_any()));
        // 7 nodes in pages of 3: 4 remain after the first, 1 after the second.
        let remaining = [Some(4), Some(1), None][pages - 1];
        assert_eq!(page.metadata.remaining_item_count, remaining);
        list_rv.get_or_insert(page.metadata.resource_version.clone());
        assert_eq!(page.metadata.resource_version, list_rv.clone().unwrap());
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => {
                lp = ListParams::default().limit(3).continue_token(&token)
            }
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..7).map(|i| format!("n{i}")).collect::<Vec<_>>());

    let count = |sel: &'static str| {
        let nodes = nodes.clone();
        async move {
            nodes
                .list(&ListParams::default().labels(sel))
                .await
                .unwrap()
                .items
                .len()
        }
    };
    // Metadata-only lists, as kube-rs metadata watchers read them.
    let meta = nodes
        .list_metadata(&ListParams::default().labels("pool=b"))
        .await
        .unwrap();
    let meta_names: Vec<String> = meta.items.iter().map(|m| m.name_any()).collect();
    assert_eq!(meta_names, ["n1", "n3", "n5"]);
    assert_eq!(meta.items[0].labels()["pool"], "b");

    assert_eq!(count("pool=a").await, 4);
    assert_eq!(count("pool!=a").await, 3);
    assert_eq!(count("pool in (a,b),idx notin (0,1)").await, 5);
    assert_eq!(count("idx>4").await, 2);
    assert_eq!(count("!pool").await, 0);

    let pods: Api<Pod> = Api::namespaced(f.admin.clone(), "default");
    pods.create(&PostParams::default(), &pod("p1", "n1", "Running"))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("p2", "n1", "Succeeded"))
        .await
        .unwrap();
    pods.create(&PostParams::default(), &pod("p3", "n2", "Running"))
        .await
        .unwrap();
    let all: Api<Pod> = Api::all(f.admin.clone());
    let on_n1 = all
        .list(&ListParams::default().fields("spec.nodeName=n1,status.phase!=Succeeded"))
        .await
        .unwrap();
    assert_eq!(
        on_n1.items.iter().map(|p| p.name_any()).collect::<Vec<_>>(),
        ["p1"]
    );
    let bad = all
        .list(&ListParams::default().labels("a in b"))
        .await
        .unwrap_err();
    assert_eq!(api_code(bad), 400);
}

#[tokio::test]
async fn reader_reads_but_cannot_write() {
    let f = fixture().await;
    let admin: Api<NodePool> = Api::all(f.admin.clone());
    admin
        .create(&PostParams::default(), &pool("r", 1))
        .await
        .unwrap();
    let reader: Api<NodePool> = Api::all(f.reader.clone());
    assert_eq!(count(&reader).await, 1);
    assert!(reader.get("r").await.is_ok());
    let mut w = reader
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert_eq!(event_name(&next_event(&mut w).await), ("ADDED", "r".into()));

    let denied = reader
        .create(&PostParams::default(), &pool("s", 1))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = denied else {
        panic!()
    };
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert!(
        status
            .message
            .contains("cannot create resource \"nodepools\""),
        "{}",
        status.message
    );
    let change = Patch::Merge(json!({"spec": {"targetNodes": 2}}));
    let denied = reader
        .patch("r", &PatchParams::default(), &change)
        .await
        .unwrap_err();
    assert_eq!(api_code(denied), 403);
    assert_eq!(
        api_code(
            reader
                .delete("r", &DeleteParams::default())
                .await
                .unwrap_err()
        ),
        403
    );

    let stranger = client_for(&f.server.url(), "not-a-token", "test").unwrap();
    let none: Api<NodePool> = Api::all(stranger);
    assert_eq!(
        api_code(none.list(&ListParams::default()).await.unwrap_err()),
        401
    );
}

#[tokio::test]
async fn token_in_header_or_path_prefix() {
    let f = fixture().await;
    let http = reqwest::Client::new();
    let get = |path: String| http.get(format!("{}{path}", f.server.url())).send();
    assert_eq!(get("/version".into()).await.unwrap().status().as_u16(), 200);
    assert_eq!(
        get("/api/v1/nodes".into()).await.unwrap().status().as_u16(),
        401
    );
    assert_eq!(
        get("/token/wrong/api/v1/nodes".into())
            .await
            .unwrap()
            .status()
            .as_u16(),
        401
    );
    let listed = get(format!("/token/{}/api/v1/nodes?limit=1", f.tokens.reader))
        .await
        .unwrap();
    assert_eq!(listed.status().as_u16(), 200);
    let list: Value = listed.json().await.unwrap();
    assert_eq!(list["kind"], "NodeList");
    // The prefix carries the reader's role, not more.
    let post = http
        .post(format!(
            "{}/token/{}/api/v1/nodes",
            f.server.url(),
            f.tokens.reader
        ))
        .json(&json!({"metadata": {"name": "n"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status().as_u16(), 403);
    // The OpenAPI index keeps the prefix in the URLs kubectl follows.
    let index: Value = get(format!("/token/{}/openapi/v3", f.tokens.admin))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    assert!(
        url.starts_with(&format!("/token/{}/openapi/v3/api/v1", f.tokens.admin)),
        "{url}"
    );
    let table = get_json(
        &format!("{}/api/v1/namespaces", f.server.url()),
        &f.tokens.reader,
        Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
    )
    .await;
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["rows"][0]["cells"][0], "default");
}

#[tokio::test]
async fn outage_answers_503_and_ends_watches() {
    let f = fixture().await;
    let api: Api<NodePool> = Api::all(f.reader.clone());
    let mut w = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    f.server.set_outage(true);
    let end = tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .unwrap();
    assert!(end.is_none());
    // Raw HTTP: kube-rs' client would retry a 503 with backoff for a long while.
    let resp = reqwest::Client::new()
        .get(format!(
            "{}/apis/compute.coreweave.com/v1alpha1/nodepools",
            f.server.url()
        ))
        .bearer_auth(&f.tokens.reader)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    let status: Value = resp.json().await.unwrap();
    assert_eq!(
        (status["kind"].as_str(), status["code"].as_u64()),
        (Some("Status"), Some(503))
    );
    f.server.set_outage(false);
    assert!(api.list(&ListParams::default()).await.is_ok());
}

/// Leader election as client-go and kube-rs lease managers do it: create the Lease, then renew
/// it with the resourceVersion read; a replica renewing from a stale read gets 409 and must
/// read again, so two replicas never both believe they hold it.
#[tokio::test]
async fn leases_conflict_on_a_stale_resource_version() {
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    let f = fixture().await;
    let leases: Api<Lease> = Api::namespaced(f.admin.clone(), "default");
    let lease = Lease {
        metadata: kube::api::ObjectMeta {
            name: Some("spotboard-recorder".into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("replica-a".into()),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }),
    };
    let created = leases.create(&PostParams::default(), &lease).await.unwrap();
    // Both replicas read the same version; the first renewal wins.
    let mut a = created.clone();
    let mut b = created.clone();
    a.spec.as_mut().unwrap().lease_transitions = Some(0);
    leases
        .replace("spotboard-recorder", &PostParams::default(), &a)
        .await
        .unwrap();
    b.spec.as_mut().unwrap().holder_identity = Some("replica-b".into());
    let stale = leases
        .replace("spotboard-recorder", &PostParams::default(), &b)
        .await;
    assert_eq!(api_code(stale.unwrap_err()), 409);
    let held = leases.get("spotboard-recorder").await.unwrap();
    assert_eq!(
        held.spec.unwrap().holder_identity.as_deref(),
        Some("replica-a")
    );
    // The reader (spotboard's own account) may take a lease with a fresh read, as the
    // shipped leader-election Role allows, but may not delete it or write anything else.
    let reader: Api<Lease> = Api::namespaced(f.reader.clone(), "default");
    let mut c = reader.get("spotboard-recorder").await.unwrap();
    c.spec.as_mut().unwrap().holder_identity = Some("reader".into());
    let taken = reader
        .replace("spotboard-recorder", &PostParams::default(), &c)
        .await
        .unwrap();
    assert_eq!(
        taken.spec.unwrap().holder_identity.as_deref(),
        Some("reader")
    );
    let deleted = reader
        .delete("spotboard-recorder", &DeleteParams::default())
        .await;
    assert_eq!(api_code(deleted.unwrap_err()), 403);
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(f.reader.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": "taken-by-reader"}})).unwrap();
    let written = namespaces.create(&PostParams::default(), &ns).await;
    assert_eq!(api_code(written.unwrap_err()), 403);
}
