//! What a DELETE does: remove at once, or mark the object terminating and keep it
//! (graceful pod deletion, finalizers), as a real API server does.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

use super::object::{has_finalizers, meta_mut, timestamp};
use super::resources::Kind;

/// The grace period of a pod whose spec does not set one (Kubernetes' default).
pub const DEFAULT_POD_GRACE_SECONDS: i64 = 30;

/// The outcome of a DELETE.
#[derive(Debug, PartialEq)]
pub enum DeletePlan {
    /// Remove the object now (`DELETED` event).
    Remove,
    /// Store this terminating version (`deletionTimestamp` set; `MODIFIED` event); someone
    /// else (the kubelet or a finalizer's owner) finishes the deletion.
    Mark(Value),
    /// Already terminating at least as soon as asked: nothing changes.
    Keep,
}

/// Decides a DELETE of `obj` with an optional requested grace period in seconds
/// (`gracePeriodSeconds`).
///
/// A pod bound to a node and not finished gets the requested grace, else its
/// `spec.terminationGracePeriodSeconds`, else 30 s: a grace above zero marks it
/// terminating with `deletionTimestamp = now + grace`, because on a real cluster the
/// kubelet must stop its containers first. Unbound or finished pods and every other kind
/// have no grace. With no grace, an object with finalizers is marked (its finalizers'
/// owners remove it by clearing them) and anything else is removed.
pub fn plan(
    kind: Kind,
    obj: &Value,
    requested_grace: Option<i64>,
    now: DateTime<Utc>,
) -> DeletePlan {
    let grace = if kind == Kind::Pods {
        pod_grace(obj, requested_grace)
    } else {
        0
    };
    let marked = obj.pointer("/metadata/deletionTimestamp").is_some();
    let marked_grace = obj
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    if grace == 0 && !has_finalizers(obj) {
        return DeletePlan::Remove;
    }
    if marked && marked_grace.is_some_and(|g| g <= grace) {
        return DeletePlan::Keep;
    }
    let mut out = obj.clone();
    let meta = meta_mut(&mut out);
    meta.insert(
        "deletionTimestamp".into(),
        Value::String(timestamp(now + Duration::seconds(grace))),
    );
    meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
    DeletePlan::Mark(out)
}

fn pod_grace(pod: &Value, requested: Option<i64>) -> i64 {
    let bound = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !bound || phase == "Succeeded" || phase == "Failed" {
        return 0;
    }
    requested
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(DEFAULT_POD_GRACE_SECONDS)
        .max(0)
}

/// Whether an update that leaves `new` in place of `old` completes a deletion: the last
/// finalizer was removed from an object deleted without grace (the API server's
/// `shouldDeleteDuringUpdate`).
pub fn completes_deletion(old: &Value, new: &Value) -> bool {
    let old_grace = old
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    has_finalizers(old)
        && !has_finalizers(new)
        && old.pointer("/metadata/deletionTimestamp").is_some()
        && old_grace.is_none_or(|g| g == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resources::test_nodepools;

    fn now() -> DateTime<Utc> {
        "2026-11-21T10:00:00Z".parse().unwrap()
    }

    fn pod(node: &str, phase: &str) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"nodeName": node}, "status": {"phase": phase}})
    }

    #[test]
    fn bound_running_pod_is_marked_with_its_grace() {
        let DeletePlan::Mark(out) = plan(Kind::Pods, &pod("n1", "Running"), None, now()) else {
            panic!("expected a mark")
        };
        assert_eq!(out["metadata"]["deletionGracePeriodSeconds"], 30);
        assert_eq!(out["metadata"]["deletionTimestamp"], "2026-11-21T10:00:30Z");
        let mut p = pod("n1", "Running");
        p["spec"]["terminationGracePeriodSeconds"] = json!(5);
        let DeletePlan::Mark(out) = plan(Kind::Pods, &p, None, now()) else {
            panic!()
        };
        assert_eq!(out["metadata"]["deletionGracePeriodSeconds"], 5);
        let DeletePlan::Mark(out) = plan(Kind::Pods, &p, Some(2), now()) else {
            panic!()
        };
        assert_eq!(out["metadata"]["deletionGracePeriodSeconds"], 2);
    }

    #[test]
    fn unbound_finished_or_zero_grace_pods_go_at_once() {
        assert_eq!(
            plan(Kind::Pods, &pod("", "Pending"), None, now()),
            DeletePlan::Remove
        );
        assert_eq!(
            plan(Kind::Pods, &pod("n1", "Succeeded"), None, now()),
            DeletePlan::Remove
        );
        assert_eq!(
            plan(Kind::Pods, &pod("n1", "Running"), Some(0), now()),
            DeletePlan::Remove
        );
    }

    #[test]
    fn second_delete_only_shortens() {
        let DeletePlan::Mark(marked) = plan(Kind::Pods, &pod("n1", "Running"), None, now()) else {
            panic!()
        };
        assert_eq!(plan(Kind::Pods, &marked, Some(60), now()), DeletePlan::Keep);
        assert!(matches!(
            plan(Kind::Pods, &marked, Some(10), now()),
            DeletePlan::Mark(_)
        ));
        assert_eq!(
            plan(Kind::Pods, &marked, Some(0), now()),
            DeletePlan::Remove
        );
    }

    #[test]
    fn finalizers_hold_other_kinds() {
        let np = json!({"metadata": {"name": "np", "finalizers": ["compute.coreweave.com/x"]}});
        let DeletePlan::Mark(out) = plan(test_nodepools(), &np, None, now()) else {
            panic!()
        };
        assert_eq!(out["metadata"]["deletionGracePeriodSeconds"], 0);
        assert_eq!(plan(test_nodepools(), &out, None, now()), DeletePlan::Keep);
        assert_eq!(
            plan(
                Kind::Nodes,
                &json!({"metadata": {"name": "n"}}),
                Some(30),
                now()
            ),
            DeletePlan::Remove
        );
        let mut cleared = out.clone();
        cleared["metadata"]["finalizers"] = json!([]);
        assert!(completes_deletion(&out, &cleared));
        assert!(!completes_deletion(&out, &out));
        assert!(
            !completes_deletion(&np, &json!({"metadata": {}})),
            "not being deleted"
        );
    }

    #[test]
    fn graceful_pod_is_not_completed_by_an_update() {
        let mut p = pod("n1", "Running");
        p["metadata"]["finalizers"] = json!(["f"]);
        let DeletePlan::Mark(marked) = plan(Kind::Pods, &p, None, now()) else {
            panic!()
        };
        let mut cleared = marked.clone();
        cleared["metadata"]["finalizers"] = json!([]);
        assert!(!completes_deletion(&marked, &cleared));
    }
}
