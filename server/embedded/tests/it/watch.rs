//! Watches on the embedded API server through kube-rs: order, resume, bookmarks, and 410 for
//! a resourceVersion older than the history (with kube-rs's watcher re-listing).

use crate::common;

use std::time::Duration;

use common::api::{event_name, fixture, fixture_with, next_event};
use common::objects::pool;
use futures::{StreamExt, TryStreamExt};
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::json;
use spotboard_core::nodepool::NodePool;
use spotboard_embedded::api::ApiOptions;

#[tokio::test]
async fn watch_orders_events_and_resumes() {
    let f = fixture().await;
    let api: Api<NodePool> = Api::all(f.admin.clone());
    let start = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let reader: Api<NodePool> = Api::all(f.reader.clone());
    let mut stream = reader
        .watch(&WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed();

    let created = api
        .create(&PostParams::default(), &pool("w", 1))
        .await
        .unwrap();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"targetNodes": 3}})),
    )
    .await
    .unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(event_name(&next_event(&mut stream).await));
    }
    let w = || "w".to_string();
    assert_eq!(seen, [("ADDED", w()), ("MODIFIED", w()), ("DELETED", w())]);

    // Resuming from the creation's resourceVersion replays what followed it.
    let mut resumed = reader
        .watch(
            &WatchParams::default(),
            &created.resource_version().unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    assert_eq!(event_name(&next_event(&mut resumed).await).0, "MODIFIED");
    assert_eq!(event_name(&next_event(&mut resumed).await).0, "DELETED");

    // A label-filtered watch sees an object leave its selector as DELETED.
    let now = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut gpu = reader
        .watch(&WatchParams::default().labels("tier=gpu"), &now)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &pool("x", 1))
        .await
        .unwrap();
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "cpu"}}})),
    )
    .await
    .unwrap();
    assert_eq!(
        event_name(&next_event(&mut gpu).await),
        ("ADDED", "x".into())
    );
    assert_eq!(
        event_name(&next_event(&mut gpu).await),
        ("DELETED", "x".into())
    );
}

#[tokio::test]
async fn bookmarks_arrive_when_allowed() {
    let f = fixture_with(ApiOptions {
        bookmark_interval: Duration::from_millis(200),
        ..Default::default()
    })
    .await;
    let api: Api<NodePool> = Api::all(f.reader.clone());
    let mut stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert_eq!(event_name(&next_event(&mut stream).await).0, "BOOKMARK");
    let mut short = api
        .watch(&WatchParams::default().disable_bookmarks().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    let end = tokio::time::timeout(Duration::from_secs(5), short.next())
        .await
        .unwrap();
    assert!(
        end.is_none(),
        "no bookmark, and the stream ends at timeoutSeconds"
    );
}

#[tokio::test]
async fn too_old_resource_version_gets_410_and_watcher_relists() {
    let f = fixture_with(ApiOptions {
        history_limit: 5,
        ..Default::default()
    })
    .await;
    let api: Api<NodePool> = Api::all(f.admin.clone());
    let start = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    for i in 0..8 {
        api.create(&PostParams::default(), &pool(&format!("p{i}"), 1))
            .await
            .unwrap();
    }
    let mut stream = api
        .watch(&WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed();
    match next_event(&mut stream).await {
        WatchEvent::Error(s) => assert_eq!((s.code, s.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }

    // kube-rs' watcher: writes push its resourceVersion out of the history while it holds no
    // watch; its next watch gets 410, it re-lists, and it goes on.
    let cfg = watcher::Config::default().timeout(1);
    let mut w = watcher(Api::<NodePool>::all(f.reader.clone()), cfg).boxed();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(5), w.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if matches!(ev, watcher::Event::InitDone) {
            break;
        }
    }
    // No watch of the watcher's is open now: after InitDone it holds the list's
    // resourceVersion and asks to watch from it only when next polled (a stream does nothing
    // until polled), so the writes below push that version out of the history first.
    for i in 0..8 {
        api.create(&PostParams::default(), &pool(&format!("q{i}"), 1))
            .await
            .unwrap();
    }
    let mut saw_gone = false;
    let mut relisted = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .unwrap()
            .unwrap();
        match ev {
            Err(watcher::Error::WatchError(s)) if s.code == 410 => saw_gone = true,
            Err(e) => panic!("unexpected watcher error {e:?}"),
            Ok(watcher::Event::InitApply(np)) => relisted.push(np.name_any()),
            Ok(watcher::Event::InitDone) => break,
            Ok(_) => {}
        }
    }
    assert!(saw_gone, "the watcher was told its resourceVersion expired");
    assert_eq!(
        relisted.len(),
        16,
        "the re-list has every pool: {relisted:?}"
    );
    api.create(&PostParams::default(), &pool("after", 1))
        .await
        .unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), w.try_next())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(ev, Some(watcher::Event::Apply(np)) if np.name_any() == "after"));
}
