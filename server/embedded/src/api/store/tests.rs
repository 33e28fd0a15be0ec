use crate::api::resources::test_nodepools;
use serde_json::json;

use super::*;
use crate::api::object::Target;
use crate::api::patch::PatchKind;

fn store() -> Store {
    Store::new(100, &[test_nodepools()])
}

fn pool(name: &str, target: i64) -> Value {
    json!({"apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
           "metadata": {"name": name, "labels": {"tier": "gpu"}},
           "spec": {"instanceType": "gd-8xh100ib-i128", "targetNodes": target}})
}

/// A store holding NodePools `p0`..`p{n-1}`.
fn store_with_pools(n: i64) -> Store {
    let s = store();
    for i in 0..n {
        s.create(test_nodepools(), "", pool(&format!("p{i}"), i), false)
            .unwrap();
    }
    s
}

fn query<'a>() -> ListQuery<'a> {
    ListQuery::default()
}

#[test]
fn starts_with_default_namespaces_and_the_crd() {
    let s = store();
    let ns = s.list(Kind::Namespaces, &query());
    assert_eq!(ns.items.len(), 4);
    assert_eq!(ns.items[0].value()["status"]["phase"], "Active");
    let crd = s
        .get(Kind::Crds, "", "nodepools.compute.coreweave.com")
        .unwrap();
    assert_eq!(crd.value()["spec"]["names"]["kind"], "NodePool");
    assert_eq!(ns.resource_version, s.current_rv());
}

#[test]
fn create_get_and_already_exists() {
    let s = store();
    let rv0 = s.current_rv();
    let created = s.create(test_nodepools(), "", pool("a", 1), false).unwrap();
    assert_eq!(created.resource_version(), (rv0 + 1).to_string());
    assert_eq!(created.value()["metadata"]["generation"], 1);
    assert_eq!(
        s.get(test_nodepools(), "", "a").unwrap().value(),
        created.value()
    );
    let e = s
        .create(test_nodepools(), "", pool("a", 1), false)
        .unwrap_err();
    assert_eq!((e.code, e.reason), (409, "AlreadyExists"));
    assert_eq!(s.get(test_nodepools(), "", "b").unwrap_err().code, 404);
}

#[test]
fn dry_run_and_generate_name_and_invalid_names() {
    let s = store();
    let rv0 = s.current_rv();
    let out = s
        .create(test_nodepools(), "", pool("dry", 1), true)
        .unwrap();
    assert_eq!(out.name(), "dry");
    assert_eq!(s.current_rv(), rv0);
    assert!(s.get(test_nodepools(), "", "dry").is_err());
    let generated = json!({"metadata": {"generateName": "np-"}, "spec": {}});
    let out = s.create(test_nodepools(), "", generated, false).unwrap();
    assert!(out.name().starts_with("np-") && out.name().len() == 8);
    let e = s
        .create(test_nodepools(), "", pool("Bad_Name", 1), false)
        .unwrap_err();
    assert_eq!((e.code, e.reason), (422, "Invalid"));
    let e = s
        .create(test_nodepools(), "", json!({"metadata": {}}), false)
        .unwrap_err();
    assert_eq!(e.code, 422);
}

#[test]
fn namespaced_create_makes_the_namespace() {
    let s = store();
    let pod = json!({"metadata": {"name": "p"}, "spec": {}});
    let out = s.create(Kind::Pods, "team-a", pod, false).unwrap();
    assert_eq!(out.value()["status"]["phase"], "Pending");
    assert!(s.get(Kind::Namespaces, "", "team-a").is_ok());
    // Deleting the namespace removes what is in it.
    s.delete(Kind::Namespaces, "", "team-a", &DeleteOptions::default())
        .unwrap();
    assert!(s.get(Kind::Pods, "team-a", "p").is_err());
}

#[test]
fn update_checks_resource_version() {
    let s = store();
    let created = s.create(test_nodepools(), "", pool("a", 1), false).unwrap();
    let mut stale = created.value();
    stale["metadata"]["resourceVersion"] = json!("1");
    stale["spec"]["targetNodes"] = json!(2);
    let e = s
        .update(test_nodepools(), "", "a", stale, Target::Main, false)
        .unwrap_err();
    assert_eq!((e.code, e.reason), (409, "Conflict"));
    let mut fresh = created.value();
    fresh["spec"]["targetNodes"] = json!(2);
    let out = s
        .update(test_nodepools(), "", "a", fresh, Target::Main, false)
        .unwrap();
    assert_eq!(out.value()["metadata"]["generation"], 2);
    assert!(
        s.update(
            test_nodepools(),
            "",
            "zz",
            pool("zz", 1),
            Target::Main,
            false
        )
        .is_err()
    );
}

#[test]
fn no_op_writes_keep_the_resource_version() {
    let s = store();
    let created = s.create(test_nodepools(), "", pool("a", 1), false).unwrap();
    let rv = s.current_rv();
    let out = s
        .patch(
            test_nodepools(),
            "",
            "a",
            PatchKind::Merge,
            br#"{"spec":{"targetNodes":1}}"#,
            Target::Main,
            false,
        )
        .unwrap()
        .0;
    assert_eq!(s.current_rv(), rv);
    assert_eq!(out.value(), created.value());
}

#[test]
fn status_patch_and_main_patch_are_separate() {
    let s = store();
    s.create(test_nodepools(), "", pool("a", 1), false).unwrap();
    let body = br#"{"status":{"currentNodes":1},"spec":{"targetNodes":5}}"#;
    let (out, created) = s
        .patch(
            test_nodepools(),
            "",
            "a",
            PatchKind::Merge,
            body,
            Target::Status,
            false,
        )
        .unwrap();
    assert!(!created);
    assert_eq!(out.value()["status"]["currentNodes"], 1);
    assert_eq!(out.value()["spec"]["targetNodes"], 1);
    assert_eq!(out.value()["metadata"]["generation"], 1);
    let (out, _) = s
        .patch(
            test_nodepools(),
            "",
            "a",
            PatchKind::Merge,
            body,
            Target::Main,
            false,
        )
        .unwrap();
    assert_eq!(out.value()["status"]["currentNodes"], 1);
    assert_eq!(out.value()["spec"]["targetNodes"], 5);
    assert_eq!(out.value()["metadata"]["generation"], 2);
    let stale = br#"{"metadata":{"resourceVersion":"1"},"spec":{"targetNodes":6}}"#;
    let e = s
        .patch(
            test_nodepools(),
            "",
            "a",
            PatchKind::Merge,
            stale,
            Target::Main,
            false,
        )
        .unwrap_err();
    assert_eq!(e.code, 409);
    let e = s
        .patch(
            test_nodepools(),
            "",
            "zz",
            PatchKind::Merge,
            body,
            Target::Main,
            false,
        )
        .unwrap_err();
    assert_eq!(e.code, 404);
}

#[test]
fn apply_creates_missing_objects() {
    let s = store();
    let body = serde_json::to_vec(&pool("applied", 3)).unwrap();
    let (out, created) = s
        .patch(
            test_nodepools(),
            "",
            "applied",
            PatchKind::Apply,
            &body,
            Target::Main,
            false,
        )
        .unwrap();
    assert!(created);
    assert_eq!(out.value()["spec"]["targetNodes"], 3);
}

#[test]
fn list_pages_with_selectors_and_namespace() {
    let s = store();
    for i in 0..5 {
        let mut p = pool(&format!("p{i}"), i);
        if i % 2 == 1 {
            p["metadata"]["labels"]["tier"] = json!("cpu");
        }
        s.create(test_nodepools(), "", p, false).unwrap();
    }
    let q = ListQuery {
        labels: LabelSelector::parse("tier=gpu").unwrap(),
        limit: Some(2),
        ..query()
    };
    let first = s.list(test_nodepools(), &q);
    assert_eq!(first.items.len(), 2);
    let token = ContinueToken::decode(first.continue_token.as_deref().unwrap()).unwrap();
    // A write between pages does not change the list's resourceVersion.
    s.create(test_nodepools(), "", pool("zz", 9), false)
        .unwrap();
    let q2 = ListQuery {
        labels: LabelSelector::parse("tier=gpu").unwrap(),
        limit: Some(2),
        continue_token: Some(token),
        ..query()
    };
    let second = s.list(test_nodepools(), &q2);
    assert_eq!(second.resource_version, first.resource_version);
    let names: Vec<&str> = first
        .items
        .iter()
        .chain(&second.items)
        .map(|o| o.name())
        .collect();
    assert_eq!(names, vec!["p0", "p2", "p4", "zz"]);
    assert!(second.continue_token.is_none());

    for ns in ["a", "b"] {
        s.create(
            Kind::Pods,
            ns,
            json!({"metadata": {"name": "x"}, "spec": {"nodeName": ns}}),
            false,
        )
        .unwrap();
    }
    let q = ListQuery {
        namespace: Some("b"),
        ..query()
    };
    assert_eq!(s.list(Kind::Pods, &q).items.len(), 1);
    let q = ListQuery {
        fields: FieldSelector::parse("spec.nodeName=a").unwrap(),
        ..query()
    };
    let found = s.list(Kind::Pods, &q);
    assert_eq!(found.items.len(), 1);
    assert_eq!(found.items[0].namespace(), "a");
}

#[test]
fn a_cut_page_without_selectors_counts_what_remains() {
    let s = store_with_pools(5);
    let q = ListQuery {
        limit: Some(1),
        ..query()
    };
    assert_eq!(s.list(test_nodepools(), &q).remaining, Some(4));
    let all = ListQuery {
        limit: Some(5),
        ..query()
    };
    assert_eq!(s.list(test_nodepools(), &all).remaining, None);
    // As the real API server: not counted for a list with a selector.
    let selected = ListQuery {
        labels: LabelSelector::parse("tier=gpu").unwrap(),
        limit: Some(1),
        ..query()
    };
    assert_eq!(s.list(test_nodepools(), &selected).remaining, None);
}

#[test]
fn a_paged_list_counts_once_and_each_page_reports_what_is_left() {
    let s = store_with_pools(5);
    for (ns, n) in [("a", 3), ("b", 4), ("c", 2)] {
        for i in 0..n {
            s.create(
                Kind::Pods,
                ns,
                json!({"metadata": {"name": format!("x{i}")}}),
                false,
            )
            .unwrap();
        }
    }
    let mut seen = Vec::new();
    let mut remaining = Vec::new();
    let mut token = None;
    loop {
        let q = ListQuery {
            limit: Some(2),
            continue_token: token.take(),
            ..query()
        };
        let page = s.list(test_nodepools(), &q);
        seen.extend(page.items.iter().map(|o| o.name().to_string()));
        remaining.push(page.remaining);
        match page.continue_token {
            Some(t) => token = Some(ContinueToken::decode(&t).unwrap()),
            None => break,
        }
    }
    assert_eq!(seen, ["p0", "p1", "p2", "p3", "p4"]);
    assert_eq!(remaining, [Some(3), Some(1), None]);
    // A namespace's list counts its own objects, not those of the namespaces after it.
    let q = ListQuery {
        namespace: Some("b"),
        limit: Some(1),
        ..query()
    };
    let first = s.list(Kind::Pods, &q);
    assert_eq!(
        (first.items[0].namespace(), first.remaining),
        ("b", Some(3))
    );
    let q = ListQuery {
        namespace: Some("b"),
        limit: Some(2),
        continue_token: first
            .continue_token
            .map(|t| ContinueToken::decode(&t).unwrap()),
        ..query()
    };
    let second = s.list(Kind::Pods, &q);
    let names: Vec<_> = second
        .items
        .iter()
        .map(|o| (o.namespace(), o.name()))
        .collect();
    assert_eq!(names, [("b", "x1"), ("b", "x2")]);
    assert_eq!(second.remaining, Some(1));
}

#[test]
fn history_records_changes_in_order_and_expires() {
    let s = Store::new(3, &[test_nodepools()]);
    let start = s.current_rv();
    s.create(test_nodepools(), "", pool("a", 1), false).unwrap();
    s.patch(
        test_nodepools(),
        "",
        "a",
        PatchKind::Merge,
        br#"{"spec":{"targetNodes":2}}"#,
        Target::Main,
        false,
    )
    .unwrap();
    s.delete(test_nodepools(), "", "a", &DeleteOptions::default())
        .unwrap();
    let (changes, seen) = s.changes_since(test_nodepools(), start).unwrap();
    let kinds: Vec<EventType> = changes.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        vec![EventType::Added, EventType::Modified, EventType::Deleted]
    );
    assert_eq!(seen, s.current_rv());
    assert_eq!(
        changes[1].prev.as_ref().unwrap().value()["spec"]["targetNodes"],
        1
    );
    assert_eq!(
        changes[2].object.resource_version(),
        s.current_rv().to_string()
    );
    s.create(test_nodepools(), "", pool("b", 1), false).unwrap();
    let e = s.changes_since(test_nodepools(), start).unwrap_err();
    assert_eq!((e.code, e.reason), (410, "Expired"));
}

#[test]
fn graceful_pod_delete_then_force() {
    let s = store();
    let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
    s.create(Kind::Pods, "default", pod, false).unwrap();
    let Deleted::Pending(marked) = s
        .delete(Kind::Pods, "default", "p", &DeleteOptions::default())
        .unwrap()
    else {
        panic!("a bound pod terminates gracefully")
    };
    assert_eq!(marked.value()["metadata"]["deletionGracePeriodSeconds"], 30);
    assert!(
        s.get(Kind::Pods, "default", "p").unwrap().value()["metadata"]["deletionTimestamp"]
            .is_string()
    );
    let force = DeleteOptions {
        grace_period: Some(0),
        ..Default::default()
    };
    assert!(matches!(
        s.delete(Kind::Pods, "default", "p", &force).unwrap(),
        Deleted::Gone(_)
    ));
    assert!(s.get(Kind::Pods, "default", "p").is_err());
}

#[test]
fn finalizers_defer_deletion_until_cleared() {
    let s = store();
    let mut p = pool("f", 1);
    p["metadata"]["finalizers"] = json!(["compute.coreweave.com/nodes"]);
    s.create(test_nodepools(), "", p, false).unwrap();
    let d = s
        .delete(test_nodepools(), "", "f", &DeleteOptions::default())
        .unwrap();
    assert!(matches!(d, Deleted::Pending(_)));
    let start = s.current_rv();
    s.patch(
        test_nodepools(),
        "",
        "f",
        PatchKind::Merge,
        br#"{"metadata":{"finalizers":null}}"#,
        Target::Main,
        false,
    )
    .unwrap();
    assert!(s.get(test_nodepools(), "", "f").is_err());
    let (changes, _) = s.changes_since(test_nodepools(), start).unwrap();
    assert_eq!(changes[0].kind, EventType::Deleted);
}

#[test]
fn delete_preconditions_and_dry_run() {
    let s = store();
    s.create(test_nodepools(), "", pool("a", 1), false).unwrap();
    let wrong = DeleteOptions {
        precondition_uid: Some("nope".into()),
        ..Default::default()
    };
    assert_eq!(
        s.delete(test_nodepools(), "", "a", &wrong)
            .unwrap_err()
            .code,
        409
    );
    let dry = DeleteOptions {
        dry_run: true,
        ..Default::default()
    };
    assert!(matches!(
        s.delete(test_nodepools(), "", "a", &dry).unwrap(),
        Deleted::Gone(_)
    ));
    assert!(s.get(test_nodepools(), "", "a").is_ok());
    assert_eq!(
        s.delete(test_nodepools(), "", "zz", &dry).unwrap_err().code,
        404
    );
}

#[test]
fn a_kind_is_compressed_from_its_thousandth_object_and_reads_back_unchanged() {
    let s = store();
    let n = crate::api::packing::TRAIN_AT + 200;
    let created: Vec<Obj> = (0..n)
        .map(|i| {
            s.create(
                test_nodepools(),
                "",
                pool(&format!("p{i:05}"), i as i64),
                false,
            )
            .unwrap()
        })
        .collect();
    assert!(!created[0].is_compressed(), "before the dictionary");
    assert!(created[n - 1].is_compressed(), "after it");
    let got = s
        .get(test_nodepools(), "", &format!("p{:05}", n - 1))
        .unwrap();
    assert_eq!(got.value()["spec"]["targetNodes"], n as i64 - 1);
    assert_eq!(got.json(), created[n - 1].json());

    let listing = s.list(test_nodepools(), &query());
    let body = crate::api::responses::plain_list("NodePoolList", "v1", &json!({}), &listing.items);
    let list: Value = serde_json::from_slice(&body).unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), n);
    for (item, c) in items.iter().zip(&created) {
        assert_eq!(item, &c.value());
    }

    let tiered = ListQuery {
        labels: LabelSelector::parse("tier=gpu").unwrap(),
        ..query()
    };
    assert_eq!(
        s.list(test_nodepools(), &tiered).items.len(),
        n,
        "labels stay indexed"
    );

    let mut first = created[0].value();
    first["spec"]["targetNodes"] = json!(7);
    let updated = s
        .update(test_nodepools(), "", "p00000", first, Target::Main, false)
        .unwrap();
    assert!(
        updated.is_compressed(),
        "an older object is compressed when next written"
    );
    assert_eq!(updated.value()["spec"]["targetNodes"], 7);
}
