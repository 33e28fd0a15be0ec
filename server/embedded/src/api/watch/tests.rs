use crate::api::resources::test_nodepools;
use futures::StreamExt;
use serde_json::json;

use super::*;
use crate::api::object::Target;
use crate::api::patch::PatchKind;
use crate::api::store::DeleteOptions;
use crate::api::table::IncludeObject;

fn spec(labels: &str) -> WatchSpec {
    WatchSpec {
        kind: test_nodepools(),
        namespace: None,
        labels: LabelSelector::parse(labels).unwrap(),
        fields: FieldSelector::default(),
        resource_version: None,
        send_initial_events: false,
        bookmarks: false,
        timeout: Duration::from_secs(30),
        format: Format::Plain,
    }
}

fn change(kind: EventType, prev: Option<Value>, object: Value) -> Change {
    Change {
        kind,
        object: Arc::new(Stored::new(&object)),
        prev: prev.map(|p| Arc::new(Stored::new(&p))),
        rv: 9,
    }
}

fn labelled(v: &str) -> Value {
    json!({"metadata": {"name": "a", "labels": {"tier": v}, "resourceVersion": "8"}})
}

#[test]
fn selector_transitions_become_added_and_deleted() {
    let s = spec("tier=gpu");
    let t = |c: Change| {
        s.visible(&c)
            .map(|(k, o)| (k, o.resource_version().to_string()))
    };
    let gpu = labelled("gpu");
    let cpu = labelled("cpu");
    assert_eq!(
        t(change(EventType::Added, None, gpu.clone())).unwrap().0,
        EventType::Added
    );
    assert!(t(change(EventType::Added, None, cpu.clone())).is_none());
    let m = |a: &Value, b: &Value| change(EventType::Modified, Some(a.clone()), b.clone());
    assert_eq!(t(m(&gpu, &gpu)).unwrap().0, EventType::Modified);
    assert_eq!(t(m(&cpu, &gpu)).unwrap().0, EventType::Added);
    assert_eq!(
        t(m(&gpu, &cpu)).unwrap(),
        (EventType::Deleted, "9".to_string())
    );
    assert!(t(m(&cpu, &cpu)).is_none());
    assert!(t(change(EventType::Deleted, None, cpu)).is_none());
}

#[test]
fn lines_are_typed_json() {
    let s = spec("");
    let l = s.encode(EventType::Modified, &Stored::new(&labelled("gpu")));
    assert!(l.ends_with(b"\n"));
    let v: Value = serde_json::from_slice(&l).unwrap();
    assert_eq!(v["type"], "MODIFIED");
    assert_eq!(v["object"]["metadata"]["name"], "a");
    let table = WatchSpec {
        format: Format::Table(IncludeObject::Metadata),
        ..spec("")
    };
    let v: Value =
        serde_json::from_slice(&table.encode(EventType::Added, &Stored::new(&labelled("gpu"))))
            .unwrap();
    assert_eq!(v["object"]["kind"], "Table");
    assert_eq!(v["object"]["rows"][0]["cells"][0], "a");
    let b: Value = serde_json::from_slice(&s.bookmark(12, true)).unwrap();
    assert_eq!(b["type"], "BOOKMARK");
    assert_eq!(b["object"]["kind"], "NodePool");
    assert_eq!(b["object"]["metadata"]["resourceVersion"], "12");
    assert_eq!(
        b["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

#[test]
fn resource_versions_parse() {
    assert_eq!(parse_resource_version(None).unwrap(), None);
    assert_eq!(parse_resource_version(Some("0")).unwrap(), None);
    assert_eq!(parse_resource_version(Some("42")).unwrap(), Some(42));
    assert_eq!(parse_resource_version(Some("x")).unwrap_err().code, 400);
}

fn stops() -> (watch::Sender<bool>, watch::Sender<bool>, Stops) {
    let (o, outage) = watch::channel(false);
    let (s, shutdown) = watch::channel(false);
    let fault = watch::channel(ReaderFault::None).1;
    let expire = watch::channel(0).1;
    (
        o,
        s,
        Stops {
            outage,
            shutdown,
            fault,
            expire,
        },
    )
}

async fn next(
    body: &mut (impl futures::Stream<Item = Result<Bytes, axum::Error>> + Unpin),
) -> Value {
    let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
        .await
        .expect("an event in time")
        .expect("stream open")
        .unwrap();
    serde_json::from_slice(&chunk).unwrap()
}

fn pool(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"targetNodes": 1}})
}

#[tokio::test]
async fn replays_then_follows_and_ends_on_outage() {
    let store = Arc::new(Store::new(100, &[test_nodepools()]));
    let start = store.current_rv();
    store
        .create(test_nodepools(), "", pool("a"), false)
        .unwrap();
    let (outage, _shutdown, stops) = stops();
    let s = WatchSpec {
        resource_version: Some(start),
        ..spec("")
    };
    let mut body = stream(store.clone(), s, stops, Duration::from_secs(60)).into_data_stream();
    assert_eq!(next(&mut body).await["type"], "ADDED");
    store
        .patch(
            test_nodepools(),
            "",
            "a",
            PatchKind::Merge,
            br#"{"spec":{"targetNodes":2}}"#,
            Target::Main,
            false,
        )
        .unwrap();
    let m = next(&mut body).await;
    assert_eq!(m["type"], "MODIFIED");
    assert_eq!(m["object"]["spec"]["targetNodes"], 2);
    store
        .delete(test_nodepools(), "", "a", &DeleteOptions::default())
        .unwrap();
    assert_eq!(next(&mut body).await["type"], "DELETED");
    outage.send_replace(true);
    let end = tokio::time::timeout(Duration::from_secs(5), body.next())
        .await
        .unwrap();
    assert!(end.is_none(), "the stream ends on outage");
}

#[tokio::test]
async fn too_old_resource_version_is_a_410_event() {
    let store = Arc::new(Store::new(2, &[test_nodepools()]));
    let start = store.current_rv();
    for n in ["a", "b", "c"] {
        store.create(test_nodepools(), "", pool(n), false).unwrap();
    }
    let (_o, _s, stops) = stops();
    let s = WatchSpec {
        resource_version: Some(start),
        ..spec("")
    };
    let mut body = stream(store, s, stops, Duration::from_secs(60)).into_data_stream();
    let e = next(&mut body).await;
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    assert!(body.next().await.is_none());
}

#[tokio::test]
async fn initial_events_bookmarks_and_timeout() {
    let store = Arc::new(Store::new(100, &[test_nodepools()]));
    store
        .create(test_nodepools(), "", pool("a"), false)
        .unwrap();
    let (_o, _s, stops) = stops();
    let s = WatchSpec {
        send_initial_events: true,
        bookmarks: true,
        timeout: Duration::from_millis(400),
        ..spec("")
    };
    let mut body = stream(store.clone(), s, stops, Duration::from_millis(100)).into_data_stream();
    assert_eq!(next(&mut body).await["type"], "ADDED");
    let end = next(&mut body).await;
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    let periodic = next(&mut body).await;
    assert_eq!(periodic["type"], "BOOKMARK");
    assert_eq!(
        periodic["object"]["metadata"]["resourceVersion"],
        store.current_rv().to_string()
    );
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(5), body.collect::<Vec<_>>())
        .await
        .expect("the stream ends at its timeout");
    assert!(rest.len() <= 4, "only bookmarks until the timeout");
}
