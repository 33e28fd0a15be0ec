use super::*;
use crate::api::age::human_duration;
use crate::api::resources::test_nodepools;

fn now() -> DateTime<Utc> {
    "2026-11-21T12:00:00Z".parse().unwrap()
}

fn headers(kind: Kind, max_priority: i32) -> Vec<String> {
    columns(kind)
        .into_iter()
        .filter(|c| c.priority <= max_priority)
        .map(|c| c.name.to_uppercase())
        .collect()
}

#[test]
fn human_durations_match_kubectl() {
    let cases = [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 3 * 60, "5h3m"),
        (20 * 3600, "20h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (2 * 86400, "2d"),
        (40 * 86400, "40d"),
        (2 * 365 * 86400 + 30 * 86400, "2y30d"),
        (9 * 365 * 86400, "9y"),
    ];
    for (secs, want) in cases {
        assert_eq!(human_duration(secs), want, "{secs}s");
    }
    assert_eq!(since("2026-11-21T11:57:00Z", now()), "3m");
    assert_eq!(since("", now()), "<unknown>");
}

#[test]
fn node_columns_and_status() {
    assert_eq!(
        headers(Kind::Nodes, 0),
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    );
    let node = json!({
        "metadata": {"name": "g1", "creationTimestamp": "2026-11-21T11:00:00Z",
                     "labels": {"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "gpu"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "nodeInfo": {"kubeletVersion": "v1.33.1"},
                   "addresses": [{"type": "InternalIP", "address": "10.0.0.7"}]}});
    let c = cells(Kind::Nodes, &node, now());
    assert_eq!(c.len(), columns(Kind::Nodes).len());
    assert_eq!(
        c[..5],
        [
            json!("g1"),
            json!("Ready,SchedulingDisabled"),
            json!("gpu,worker"),
            json!("60m"),
            json!("v1.33.1")
        ]
    );
    assert_eq!(c[5], "10.0.0.7");
    assert_eq!(c[6], "<none>");
    assert_eq!(c[7], "<unknown>");
    let not_ready = json!({"metadata": {"name": "g2"},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
    let c = cells(Kind::Nodes, &not_ready, now());
    assert_eq!((&c[1], &c[2]), (&json!("NotReady"), &json!("<none>")));
    let c = cells(Kind::Nodes, &json!({"metadata": {"name": "g3"}}), now());
    assert_eq!(c[1], "Unknown");
}

#[test]
fn pod_ready_status_restarts() {
    assert_eq!(
        headers(Kind::Pods, 0),
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    let pod = json!({
        "metadata": {"name": "p", "creationTimestamp": "2026-11-21T11:59:00Z"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "g1"},
        "status": {"phase": "Running", "podIP": "10.1.0.4", "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
             "lastState": {"terminated": {"finishedAt": "2026-11-21T11:55:00Z"}}},
            {"name": "b", "ready": false, "restartCount": 0,
             "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
    let c = cells(Kind::Pods, &pod, now());
    assert_eq!(c.len(), columns(Kind::Pods).len());
    assert_eq!(
        c[..5],
        [
            json!("p"),
            json!("1/2"),
            json!("CrashLoopBackOff"),
            json!("2 (5m ago)"),
            json!("60s")
        ]
    );
    assert_eq!((&c[5], &c[6]), (&json!("10.1.0.4"), &json!("g1")));

    let mut terminating = pod.clone();
    terminating["metadata"]["deletionTimestamp"] = json!("2026-11-21T12:00:30Z");
    assert_eq!(cells(Kind::Pods, &terminating, now())[2], "Terminating");
    let pending = json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "a"}]},
                         "status": {"phase": "Pending"}});
    let c = cells(Kind::Pods, &pending, now());
    assert_eq!(
        (&c[1], &c[2], &c[3]),
        (&json!("0/1"), &json!("Pending"), &json!("0"))
    );
    let init = json!({"metadata": {"name": "i"},
        "spec": {"initContainers": [{"name": "x"}, {"name": "y"}], "containers": [{"name": "a"}]},
        "status": {"phase": "Pending", "initContainerStatuses": [
            {"state": {"terminated": {"exitCode": 0}}}, {"state": {"running": {}}}]}});
    assert_eq!(cells(Kind::Pods, &init, now())[2], "Init:1/2");
}

#[test]
fn event_columns() {
    assert_eq!(
        headers(Kind::Events, 0),
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    let ev = json!({"metadata": {"name": "e1", "namespace": "default"},
        "involvedObject": {"kind": "NodePool", "name": "np-a"},
        "type": "Warning", "reason": "QueuedAwaitingCapacity", "message": " no capacity \n",
        "firstTimestamp": "2026-11-21T11:00:00Z", "lastTimestamp": "2026-11-21T11:58:00Z",
        "count": 4, "source": {"component": "nodepool-controller"}});
    let c = cells(Kind::Events, &ev, now());
    assert_eq!(c.len(), columns(Kind::Events).len());
    assert_eq!(c[0], "2m");
    assert_eq!(c[3], "nodepool/np-a");
    assert_eq!(c[5], "nodepool-controller");
    assert_eq!(c[6], "no capacity");
    assert_eq!(
        (&c[7], &c[8], &c[9]),
        (&json!("60m"), &json!(4), &json!("e1"))
    );
}

#[test]
fn nodepool_columns_come_from_the_crd() {
    let h = headers(test_nodepools(), 0);
    assert_eq!(h[0], "NAME");
    assert!(h.contains(&"INSTANCE TYPE".to_string()) && h.contains(&"CAPACITY".to_string()));
    assert_eq!(h.last().unwrap(), "AGE");
    let np = json!({"metadata": {"name": "np-a", "creationTimestamp": "2026-11-21T10:00:00Z"},
        "spec": {"instanceType": "gd-8xh100ib-i128", "targetNodes": 4},
        "status": {"currentNodes": 2, "conditions": [
            {"type": "Validated", "status": "True", "reason": "Valid"},
            {"type": "Capacity", "status": "False", "reason": "QueuedAwaitingCapacity"}]}});
    let c = cells(test_nodepools(), &np, now());
    let by_name = |n: &str| c[h.iter().position(|x| x == n).unwrap()].clone();
    assert_eq!(by_name("NAME"), "np-a");
    assert_eq!(by_name("INSTANCE TYPE"), "gd-8xh100ib-i128");
    assert_eq!(by_name("TARGET"), 4);
    assert_eq!(by_name("CURRENT"), 2);
    assert_eq!(
        by_name("QUEUED"),
        Value::Null,
        "a missing field prints empty"
    );
    assert_eq!(by_name("VALIDATED"), "Valid");
    assert_eq!(by_name("CAPACITY"), "QueuedAwaitingCapacity");
    assert_eq!(by_name("QUOTA"), Value::Null);
    assert_eq!(by_name("AGE"), "120m", "kubectl counts minutes up to 3h");
}

#[test]
fn typed_cells() {
    assert_eq!(cell_for("integer", Some(&json!(3.0)), now()), json!(3));
    assert_eq!(cell_for("integer", Some(&json!("3")), now()), Value::Null);
    assert_eq!(cell_for("string", Some(&json!(3)), now()), json!("3"));
    assert_eq!(cell_for("boolean", Some(&json!(true)), now()), json!(true));
    assert_eq!(
        cell_for("date", Some(&json!("2026-11-21T11:59:30Z")), now()),
        json!("30s")
    );
}
