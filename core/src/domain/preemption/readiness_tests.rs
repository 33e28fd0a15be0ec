use std::collections::BTreeMap;

use super::Provider;
use super::readiness::*;
use crate::model::Check;

fn node(name: &str, pool: &str, zone: &str, provider: Provider, spot: bool) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        pool: Some(pool.into()),
        zone: Some(zone.into()),
        provider,
        spot,
    }
}

fn pod(ns: &str, name: &str, owner: Option<(&str, &str)>, node: &str) -> PodFacts {
    PodFacts {
        namespace: ns.into(),
        name: name.into(),
        uid: format!("{ns}/{name}"),
        labels: BTreeMap::from([(
            "app".to_string(),
            name.split('-').next().unwrap().to_string(),
        )]),
        owner_kind: owner.map(|o| o.0.to_string()),
        owner_name: owner.map(|o| o.1.to_string()),
        node: Some(node.into()),
        grace_s: 30,
        pre_stop: true,
        active: true,
        system: false,
        gpus: 0,
        cpu_m: 0,
        memory_b: 0,
    }
}

fn checks(pools: &[crate::model::PoolReadiness], pool: &str, workload: &str) -> Vec<Check> {
    pools
        .iter()
        .find(|p| p.pool == pool)
        .unwrap()
        .findings
        .iter()
        .filter(|f| f.workload == workload)
        .map(|f| f.check)
        .collect()
}

fn pdb(ns: &str, name: &str, app: &str) -> PdbFacts {
    PdbFacts {
        namespace: ns.into(),
        name: name.into(),
        selector: pdb_selector(BTreeMap::from([("app".to_string(), app.to_string())]), []),
        min_available: Some("1".into()),
        max_unavailable: None,
    }
}

#[test]
fn a_well_spread_covered_deployment_has_no_findings() {
    let nodes = [
        node("a", "spot", "z1", Provider::Cks, true),
        node("b", "spot", "z2", Provider::Cks, true),
    ];
    let pods = [
        pod("web", "api-1", Some(("ReplicaSet", "api-7c9")), "a"),
        pod("web", "api-2", Some(("ReplicaSet", "api-7c9")), "b"),
    ];
    let out = audit("c", &nodes, &pods, Some(&[pdb("web", "api", "api")]));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].nodes, 2);
    assert_eq!(out[0].pods, 2);
    assert!(out[0].findings.is_empty(), "{:?}", out[0].findings);
}

/// A pool of two spot nodes and an on-demand one, and pods that each trip some checks.
fn each_case() -> ([NodeFacts; 3], Vec<PodFacts>) {
    let nodes = [
        node("a", "spot", "z1", Provider::Cks, true),
        node("b", "spot", "z1", Provider::Cks, true),
        node("od", "reserved", "z2", Provider::Cks, false),
    ];
    let mut lonely = pod("ml", "solo", None, "a");
    lonely.pre_stop = false;
    let mut slow = pod("ml", "slow-0", Some(("StatefulSet", "slow")), "a");
    slow.grace_s = 600;
    let mut graceful = pod("ml", "train-x", Some(("Job", "train")), "b");
    graceful.labels.insert(
        crate::labels::POD_GRACEFUL_INTERRUPTIBLE.into(),
        "true".into(),
    );
    let pods = [
        lonely,
        slow,
        graceful,
        pod("web", "api-1", Some(("ReplicaSet", "api-1")), "a"),
        pod("web", "api-2", Some(("ReplicaSet", "api-1")), "b"),
        pod("kube-system", "ds-a", Some(("DaemonSet", "ds")), "a"),
        pod("web", "onod-1", None, "od"),
    ];
    (nodes, pods.into())
}

#[test]
fn each_check_fires_on_its_own_case() {
    let (nodes, pods) = each_case();
    let out = audit("c", &nodes, &pods, Some(&[pdb("web", "api", "api")]));
    assert_eq!(out.len(), 1, "the on-demand pool is not audited");
    assert_eq!(out[0].pods, 5, "the DaemonSet pod is skipped");
    assert_eq!(
        checks(&out, "spot", "Pod/solo"),
        [Check::SingleReplica, Check::NoPdb, Check::NoPreStop]
    );
    assert_eq!(
        checks(&out, "spot", "StatefulSet/slow"),
        [
            Check::SingleReplica,
            Check::NoPdb,
            Check::GraceExceedsNotice,
            Check::StatefulSet
        ]
    );
    // A Job is neither replicated nor behind a Service: only the graceful label counts.
    assert_eq!(
        checks(&out, "spot", "Job/train"),
        [Check::GracefulInterruptible]
    );
    assert_eq!(checks(&out, "spot", "ReplicaSet/api-1"), [Check::OneZone]);
    let grace = out[0]
        .findings
        .iter()
        .find(|f| f.check == Check::GraceExceedsNotice)
        .unwrap();
    assert_eq!(
        grace.detail,
        "terminationGracePeriodSeconds 600 s; 300 s from SIGTERM to removal on cks"
    );
}

/// A store that keeps each pod's template shared and its node apart audits the same, and
/// the replicas of one workload have one template.
#[test]
fn templates_with_their_nodes_audit_as_the_pods_do() {
    let (nodes, pods) = each_case();
    let pdbs = [pdb("web", "api", "api")];
    let mut fold = AuditFold::new("c", &nodes);
    for p in &pods {
        fold.add_on(&p.clone().template(), p.node.as_deref());
    }
    assert_eq!(
        fold.finish(Some(&pdbs)),
        audit("c", &nodes, &pods, Some(&pdbs))
    );

    let t = |p: &PodFacts| p.clone().template();
    assert_eq!(t(&pods[3]), t(&pods[4]), "two replicas of ReplicaSet/api-1");
    assert_eq!(t(&pods[3]).workload(), "ReplicaSet/api-1");
    assert!(t(&pods[3]).uid.is_empty() && t(&pods[3]).node.is_none());
    assert_eq!(
        t(&pods[0]).workload(),
        "Pod/solo",
        "a bare pod keeps its name: it is its own workload"
    );
    assert_ne!(t(&pods[0]), t(&pods[6]));
}

#[test]
fn unreadable_budgets_make_no_budget_findings() {
    let nodes = [node("a", "spot", "z1", Provider::Cks, true)];
    let pods = [pod("ml", "solo", None, "a")];
    let out = audit("c", &nodes, &pods, None);
    assert!(
        !out[0].findings.iter().any(|f| f.check == Check::NoPdb),
        "{:?}",
        out[0].findings
    );
    assert!(
        out[0]
            .findings
            .iter()
            .any(|f| f.check == Check::SingleReplica)
    );
}

#[test]
fn the_shutdown_budget_is_each_providers_window() {
    assert_eq!(shutdown_budget_s(Provider::Cks), 300);
    assert_eq!(shutdown_budget_s(Provider::Gke), 15);
    assert_eq!(shutdown_budget_s(Provider::Karpenter), 120);
    // 30 s is fine on CKS and Karpenter but not on GKE, whose kubelet grants 15 s. One zone
    // in the whole cluster is not a finding: there was nowhere else to go.
    let nodes = [node("g", "spot-l4", "us-central1-a", Provider::Gke, true)];
    let pods = [
        pod("web", "api-1", Some(("ReplicaSet", "api-1")), "g"),
        pod("web", "api-2", Some(("ReplicaSet", "api-1")), "g"),
    ];
    let out = audit("g", &nodes, &pods, Some(&[pdb("web", "api", "api")]));
    assert_eq!(
        checks(&out, "spot-l4", "ReplicaSet/api-1"),
        [Check::GraceExceedsNotice]
    );
}

#[test]
fn selectors_follow_policy_v1() {
    let p = pod("web", "api-1", None, "a");
    let everything = PdbFacts {
        namespace: "web".into(),
        name: "all".into(),
        selector: pdb_selector(BTreeMap::new(), []),
        ..PdbFacts::default()
    };
    assert!(
        everything.covers(&p),
        "an empty selector selects the namespace"
    );
    let nothing = PdbFacts {
        selector: None,
        ..everything.clone()
    };
    assert!(!nothing.covers(&p));
    let other_ns = PdbFacts {
        namespace: "ml".into(),
        ..everything.clone()
    };
    assert!(!other_ns.covers(&p));
    let req = |op: &str, values: &[&str]| PdbFacts {
        selector: pdb_selector(
            BTreeMap::new(),
            [(
                "app".to_string(),
                op.to_string(),
                values.iter().map(|v| v.to_string()).collect(),
            )],
        ),
        ..everything.clone()
    };
    assert!(req("In", &["api", "x"]).covers(&p));
    assert!(!req("NotIn", &["api"]).covers(&p));
    assert!(req("Exists", &[]).covers(&p));
    assert!(!req("DoesNotExist", &[]).covers(&p));
    assert!(!req("Bogus", &[]).covers(&p));
    assert_eq!(
        covering_pdb(&[req("Exists", &[]), everything.clone()], &p).map(|b| b.name.as_str()),
        Some("all")
    );
}

#[test]
fn pod_lookups_take_kubernetes_names_only() {
    assert!(pod_lookup("serving", "inference-7c9d").is_ok());
    assert!(pod_lookup("", "x").unwrap_err().starts_with("namespace"));
    // `%` and `_` would be SQL LIKE wildcards; they are not in Kubernetes names either.
    assert!(pod_lookup("web", "api%").unwrap_err().starts_with("name"));
    assert!(pod_lookup("web", "a_b").is_err());
    assert!(pod_lookup("Web", "a").is_err());
}

#[test]
fn a_replica_is_an_active_pod_of_its_owner_in_its_namespace() {
    let mut done = pod("web", "api-3", Some(("ReplicaSet", "api-1")), "a");
    done.active = false;
    let pods = [
        pod("web", "api-1", Some(("ReplicaSet", "api-1")), "a"),
        pod("web", "api-2", Some(("ReplicaSet", "api-1")), "b"),
        done,
        pod("ml", "api-1", Some(("ReplicaSet", "api-1")), "a"),
    ];
    let count = |ns: &str| {
        let key = (ns.to_string(), "ReplicaSet/api-1".to_string());
        pods.iter()
            .filter(|p| p.replica_of().as_ref() == Some(&key))
            .count()
    };
    assert_eq!(count("web"), 2, "the finished pod is not a replica");
    assert_eq!(count("ml"), 1, "nor is a namesake in another namespace");
    let bare = pod("web", "one-off", None, "a");
    assert_eq!(
        bare.replica_of(),
        Some(("web".into(), "Pod/one-off".into()))
    );
}

#[test]
fn a_budget_that_allows_fewer_disruptions_than_pods_on_one_node_blocks_its_drain() {
    let nodes = [
        node("a", "spot", "z1", Provider::Cks, true),
        node("b", "spot", "z1", Provider::Cks, true),
    ];
    let mut pods: Vec<PodFacts> = ["a", "a", "a", "b"]
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut p = pod("web", &format!("api-{i}"), Some(("ReplicaSet", "api-1")), n);
            p.labels.insert("app".into(), "api".into());
            p.pre_stop = true;
            p
        })
        .collect();
    let budget = |max: &str| PdbFacts {
        max_unavailable: Some(max.into()),
        min_available: None,
        ..pdb("web", "api", "api")
    };
    // maxUnavailable 1 of 4 replicas, 3 on node a: its drain is refused for 2.
    let pools = audit("c1", &nodes, &pods, Some(&[budget("1")]));
    let f = pools[0]
        .findings
        .iter()
        .find(|f| f.check == Check::PdbBlocksDrain)
        .expect("a finding");
    assert_eq!(
        f.detail,
        "PodDisruptionBudget api allows 1 disruption(s) of 4 replicas; 3 pods share node a: its drain is refused for 2"
    );
    // maxUnavailable 75 % (3 of 4): every node's pods may go.
    let pools = audit("c1", &nodes, &pods, Some(&[budget("75%")]));
    assert!(!checks(&pools, "spot", "ReplicaSet/api-1").contains(&Check::PdbBlocksDrain));
    // One pod per node with maxUnavailable 1: fine.
    pods.truncate(1);
    pods[0].node = Some("a".into());
    let pools = audit("c1", &nodes, &pods, Some(&[budget("1")]));
    assert!(!checks(&pools, "spot", "ReplicaSet/api-1").contains(&Check::PdbBlocksDrain));
}
