use chrono::{TimeZone, Utc};

use super::pools::*;
use super::scheduler_message::parse;
use crate::domain::selector::{Requirement, Selector};
use crate::model::{ConditionView, PoolRow, Toleration, WaitKind, WaitingPod};
use crate::nodepool::ConditionType;
use crate::{CapacityType, Provider};

fn pool(provider: Provider, name: &str, instance: &str, spot: bool) -> PoolRow {
    PoolRow {
        provider,
        cluster: "c".into(),
        name: name.into(),
        instance_type: instance.into(),
        zone: Some("US-EAST-04A".into()),
        capacity_type: if spot {
            CapacityType::Spot
        } else {
            CapacityType::OnDemand
        },
        ..Default::default()
    }
}

fn pod(selector: &[(&str, &str)]) -> WaitingPod {
    WaitingPod {
        cluster: "c".into(),
        name: "train-0".into(),
        gpus: 8,
        node_selector: selector
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    }
}

fn tol(key: &str, exists: bool, value: &str, effect: &str) -> Toleration {
    Toleration {
        key: key.into(),
        exists,
        value: value.into(),
        effect: effect.into(),
    }
}

#[test]
fn a_selector_matches_the_labels_each_provider_gives_its_nodes() {
    let cks = pool(Provider::Cks, "h100-spot", "gd-8xh100ib-i128", true);
    let gke = pool(Provider::Gke, "spot-l4", "g2-standard-24", true);
    let karp = pool(
        Provider::Karpenter,
        "gpu-spot",
        "g5.2xlarge, g5.4xlarge",
        true,
    );
    let ok = |w: &WaitingPod, p: &PoolRow| fit(w, p).is_ok();
    assert!(ok(
        &pod(&[("node.kubernetes.io/instance-type", "gd-8xh100ib-i128")]),
        &cks
    ));
    assert!(ok(
        &pod(&[("compute.coreweave.com/node-pool", "h100-spot")]),
        &cks
    ));
    assert!(!ok(
        &pod(&[("compute.coreweave.com/node-pool", "other")]),
        &cks
    ));
    assert!(ok(
        &pod(&[
            ("cloud.google.com/gke-spot", "true"),
            ("cloud.google.com/gke-nodepool", "spot-l4")
        ]),
        &gke
    ));
    assert!(!ok(
        &pod(&[("cloud.google.com/gke-spot", "true")]),
        &pool(Provider::Gke, "std", "n2-standard-8", false)
    ));
    assert!(ok(
        &pod(&[
            ("node.kubernetes.io/instance-type", "g5.4xlarge"),
            ("karpenter.sh/capacity-type", "spot")
        ]),
        &karp
    ));
    assert!(!ok(
        &pod(&[("karpenter.sh/capacity-type", "on-demand")]),
        &karp
    ));
    // Labels every node has are not judged; a key the pool never gives excludes it.
    assert!(ok(&pod(&[("kubernetes.io/arch", "amd64")]), &cks));
    assert_eq!(
        fit(&pod(&[("team", "ml")]), &cks),
        Err(Misfit::Selector {
            key: "team".into(),
            value: "ml".into()
        })
    );
    // A CKS pool's nodeLabels count.
    let mut labelled = cks.clone();
    labelled
        .detail
        .node_labels
        .insert("team".into(), "ml".into());
    assert!(ok(&pod(&[("team", "ml")]), &labelled));
}

fn term(exprs: &[(&str, &str, &[&str])]) -> Selector {
    Selector(
        exprs
            .iter()
            .map(|(k, op, vs)| {
                Requirement::from_node_selector(k, op, vs.iter().map(|v| v.to_string()).collect())
                    .expect("a requirement")
            })
            .collect(),
    )
}

fn with_affinity(terms: Vec<Selector>) -> WaitingPod {
    WaitingPod {
        node_affinity: terms,
        ..pod(&[])
    }
}

/// Required node affinity, judged against what each provider's pool gives its nodes, with
/// the operators of Kubernetes' "Assigning Pods to Nodes" page.
#[test]
fn required_node_affinity_is_judged_term_by_term_for_every_provider() {
    let cks = pool(Provider::Cks, "h100-spot", "gd-8xh100ib-i128", true);
    let gke = pool(Provider::Gke, "spot-l4", "g2-standard-24", true);
    let karp = pool(
        Provider::Karpenter,
        "gpu-spot",
        "g5.2xlarge, g5.4xlarge",
        true,
    );
    let it = "node.kubernetes.io/instance-type";
    let ok = |w: &WaitingPod, p: &PoolRow| fit(w, p).is_ok();
    let any_h100 = with_affinity(vec![term(&[(
        it,
        "In",
        &["gd-8xh100ib-i128", "gd-8xh200ib-i128"],
    )])]);
    assert!(ok(&any_h100, &cks));
    assert!(!ok(&any_h100, &gke));
    assert_eq!(
        fit(&any_h100, &karp),
        Err(Misfit::Affinity(
            "node.kubernetes.io/instance-type in (gd-8xh100ib-i128,gd-8xh200ib-i128)".into()
        ))
    );
    // Terms are ORed: the second lets GKE's spot pool in.
    let or = with_affinity(vec![
        term(&[(it, "In", &["gd-8xh100ib-i128"])]),
        term(&[("cloud.google.com/gke-spot", "Exists", &[])]),
    ]);
    assert!(ok(&or, &cks) && ok(&or, &gke) && !ok(&or, &karp));
    // Requirements of one term are ANDed.
    let and = with_affinity(vec![term(&[
        ("karpenter.sh/capacity-type", "In", &["spot"]),
        (it, "NotIn", &["g5.2xlarge"]),
    ])]);
    assert!(ok(&and, &karp), "g5.4xlarge is left");
    let only_small = with_affinity(vec![term(&[(it, "NotIn", &["g5.2xlarge", "g5.4xlarge"])])]);
    assert!(!ok(&only_small, &karp), "every node would be excluded");
    assert!(ok(&only_small, &cks));
    // DoesNotExist excludes a pool whose nodes all carry the key.
    let not_spot = with_affinity(vec![term(&[(
        "cloud.google.com/gke-spot",
        "DoesNotExist",
        &[],
    )])]);
    assert!(!ok(&not_spot, &gke));
    assert!(ok(
        &not_spot,
        &pool(Provider::Gke, "std", "n2-standard-8", false)
    ));
    // Gt and Lt compare integers of the pool's labels.
    let mut generation = cks.clone();
    generation
        .detail
        .node_labels
        .insert("gpu.generation".into(), "9".into());
    assert!(ok(
        &with_affinity(vec![term(&[("gpu.generation", "Gt", &["8"])])]),
        &generation
    ));
    assert!(!ok(
        &with_affinity(vec![term(&[("gpu.generation", "Lt", &["8"])])]),
        &generation
    ));
    // Keys every node has are not judged.
    assert!(ok(
        &with_affinity(vec![term(&[("kubernetes.io/hostname", "In", &["g1"])])]),
        &cks
    ));
}

#[test]
fn an_affinity_no_pool_meets_is_the_cause() {
    let cks = pool(Provider::Cks, "h100-spot", "gd-8xh100ib-i128", true);
    let mut w = with_affinity(vec![term(&[(
        "node.kubernetes.io/instance-type",
        "In",
        &["gd-8xh100"],
    )])]);
    place(std::slice::from_mut(&mut w), &[&cks]);
    assert!(w.pools.is_empty());
    assert_eq!(
        w.cause,
        "node affinity node.kubernetes.io/instance-type=gd-8xh100 matches no pool"
    );
}

/// A GKE pool of GPU machines keeps out a pod that requests no GPU and has no toleration
/// (GKE taints its GPU nodes; a GPU pod gets the toleration from GKE); a CPU pool does not.
#[test]
fn a_gke_gpu_pool_keeps_out_pods_without_the_gpu_toleration() {
    let mut l4 = pool(Provider::Gke, "spot-l4", "g2-standard-24", true);
    l4.gpus_per_node = Some(2);
    let cpu = pool(Provider::Gke, "default-pool", "e2-standard-8", false);
    let web = pod(&[]);
    assert_eq!(fit(&web, &l4), Err(Misfit::Taint(GKE_GPU_TAINT.into())));
    assert!(fit(&web, &cpu).is_ok());
    let gpu_pod = WaitingPod {
        tolerations: vec![tol("nvidia.com/gpu", true, "", "NoSchedule")],
        ..pod(&[])
    };
    assert!(fit(&gpu_pod, &l4).is_ok());
    // A CKS pool of GPU machines has no such taint.
    let mut cks = pool(Provider::Cks, "h100", "gd-8xh100ib-i128", true);
    cks.gpus_per_node = Some(8);
    assert!(fit(&web, &cks).is_ok());
}

/// Kubernetes' toleration rules, each case from its documentation's table.
#[test]
fn tolerations_follow_kubernetes_rules() {
    let mut tainted = pool(Provider::Cks, "h100", "gd-8xh100ib-i128", true);
    tainted.detail.node_taints = vec![
        "nvidia.com/gpu=true:NoSchedule".into(),
        "soft:PreferNoSchedule".into(),
    ];
    let with = |t: Vec<Toleration>| WaitingPod {
        tolerations: t,
        ..pod(&[])
    };
    assert_eq!(
        fit(&with(vec![]), &tainted),
        Err(Misfit::Taint("nvidia.com/gpu=true:NoSchedule".into()))
    );
    assert!(
        fit(&with(vec![tol("nvidia.com/gpu", true, "", "")]), &tainted).is_ok(),
        "Exists, any effect"
    );
    assert!(
        fit(
            &with(vec![tol("nvidia.com/gpu", false, "true", "NoSchedule")]),
            &tainted
        )
        .is_ok()
    );
    assert!(
        fit(
            &with(vec![tol("nvidia.com/gpu", false, "false", "NoSchedule")]),
            &tainted
        )
        .is_err(),
        "Equal compares values"
    );
    assert!(
        fit(
            &with(vec![tol("nvidia.com/gpu", true, "", "NoExecute")]),
            &tainted
        )
        .is_err(),
        "another effect"
    );
    assert!(
        fit(&with(vec![tol("", true, "", "")]), &tainted).is_ok(),
        "an empty key with Exists tolerates all"
    );
}

#[test]
fn causes_in_the_users_terms() {
    let t0 = Utc.with_ymd_and_hms(2026, 11, 28, 9, 12, 0).unwrap();
    let mut queued = pool(Provider::Cks, "h100-spot", "gd-8xh100ib-i128", true);
    queued.queued_nodes = Some(2);
    queued.conditions = vec![ConditionView {
        type_: ConditionType::Capacity,
        status: "False".into(),
        reason: "QueuedAwaitingCapacity".into(),
        last_transition: Some(t0),
        ..Default::default()
    }];
    let mut over = pool(Provider::Cks, "b200", "gb200-4x", false);
    over.conditions = vec![ConditionView {
        type_: ConditionType::Quota,
        status: "False".into(),
        reason: "OverQuota".into(),
        ..Default::default()
    }];
    let mut tainted = pool(Provider::Cks, "a100", "gd-8xa100-i128", true);
    tainted.detail.node_taints = vec!["nvidia.com/gpu=true:NoSchedule".into()];
    let full = pool(Provider::Cks, "l40", "gd-8xl40-i128", true);
    let pools = [queued, over, tainted, full];
    let mut pods = vec![
        pod(&[("compute.coreweave.com/node-pool", "h100-spot")]),
        pod(&[("node.kubernetes.io/instance-type", "gb200-4x")]),
        pod(&[("node.kubernetes.io/instance-type", "gd-8xa100-i128")]),
        pod(&[("node.kubernetes.io/instance-type", "gd-8xh100")]),
        WaitingPod {
            // The other pools' nodes do not match the selector or have taints the pod does
            // not tolerate (kube-scheduler reports the taint first): not this pool's reason.
            reasons: parse(
                "0/25 nodes are available: 3 Insufficient nvidia.com/gpu, 12 node(s) didn't match Pod's node affinity/selector, \
                 10 node(s) had untolerated taint {is_cpu_compute: }.",
            )
            .reasons,
            ..pod(&[("compute.coreweave.com/node-pool", "l40")])
        },
        WaitingPod {
            cluster: "elsewhere".into(),
            ..pod(&[])
        },
        WaitingPod {
            kind: WaitKind::SchedulingGated,
            gates: vec!["kueue.x-k8s.io/admission".into()],
            ..pod(&[("compute.coreweave.com/node-pool", "l40")])
        },
    ];
    let pools: Vec<&PoolRow> = pools.iter().collect();
    place(&mut pods, &pools);
    let causes: Vec<&str> = pods.iter().map(|w| w.cause.as_str()).collect();
    assert_eq!(
        causes,
        [
            "waiting for spot capacity in US-EAST-04A since 09:12 (Capacity: QueuedAwaitingCapacity)",
            "over quota for gb200-4x (Quota: OverQuota)",
            "no pool tolerates taint nvidia.com/gpu=true:NoSchedule",
            "selector node.kubernetes.io/instance-type=gd-8xh100 matches no pool",
            "Insufficient nvidia.com/gpu on 3 node(s)",
            "no pool in this cluster",
            "gated by kueue.x-k8s.io/admission",
        ]
    );
    assert_eq!(pods[0].pools, ["h100-spot"]);
    assert!(pods[2].pools.is_empty() && pods[3].pools.is_empty());
    let per = per_pool(&pods, &pools);
    let names: Vec<(&str, Option<&str>, u32, u32)> = per
        .iter()
        .map(|p| (p.cluster.as_str(), p.pool.as_deref(), p.pods, p.gpus))
        .collect();
    assert_eq!(
        names,
        [
            ("c", None, 6, 48),
            ("c", Some("b200"), 1, 8),
            ("c", Some("h100-spot"), 1, 8),
            ("c", Some("l40"), 2, 16),
            ("elsewhere", None, 1, 8),
        ]
    );
    // Each pod once in its cluster's row; two of six no pool can take.
    assert_eq!(per[0].no_pool, 2);
    assert_eq!(per[0].key(), "c");
    assert_eq!(per[1].key(), "c/b200");
}

/// `place` judges each kind of pod once; its answer must be what judging every pod against
/// every pool with `fit` gives.
#[test]
fn placing_by_kind_agrees_with_judging_each_pod() {
    let pools: Vec<PoolRow> = (0..20)
        .map(|i| {
            let mut p = pool(
                [Provider::Cks, Provider::Gke, Provider::Karpenter][i % 3],
                &format!("pool-{i}"),
                ["gd-8xh100ib-i128", "g2-standard-24", "g5.2xlarge"][i % 3],
                i % 2 == 0,
            );
            if i % 4 == 0 {
                p.detail.node_taints = vec!["nvidia.com/gpu=true:NoSchedule".into()];
            }
            p
        })
        .collect();
    let refs: Vec<&PoolRow> = pools.iter().collect();
    let mut pods: Vec<WaitingPod> = (0..300)
        .map(|i| WaitingPod {
            name: format!("p{i}"),
            tolerations: if i % 5 == 0 {
                vec![tol("nvidia.com/gpu", true, "", "")]
            } else {
                vec![]
            },
            ..pod(match i % 5 {
                0 => &[("node.kubernetes.io/instance-type", "gd-8xh100ib-i128")][..],
                1 => &[("cloud.google.com/gke-spot", "true")][..],
                2 => &[("karpenter.sh/capacity-type", "on-demand")][..],
                3 => &[("team", "ml")][..],
                _ => &[][..],
            })
        })
        .collect();
    place(&mut pods, &refs);
    for w in &pods {
        let mut want: Vec<String> = pools
            .iter()
            .filter(|p| fit(w, p).is_ok())
            .map(|p| p.name.clone())
            .collect();
        want.sort();
        assert_eq!(w.pools, want, "{}", w.name);
    }
    assert!(pods.iter().any(|w| w.pools.is_empty()) && pods.iter().any(|w| !w.pools.is_empty()));
}

/// A taint a node gets in its life (not ready) can be the pool's own nodes' reason and stays;
/// other pools' taints do not.
#[test]
fn a_lifecycle_taint_stays_the_pools_reason() {
    let full = pool(Provider::Cks, "l40", "gd-8xl40-i128", true);
    let mut w = WaitingPod {
        reasons: parse(
            "0/12 nodes are available: 2 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, \
             10 node(s) had untolerated taint {dedicated: inference}.",
        )
        .reasons,
        ..pod(&[("compute.coreweave.com/node-pool", "l40")])
    };
    place(std::slice::from_mut(&mut w), &[&full]);
    assert_eq!(
        w.cause,
        "node(s) had untolerated taint {node.kubernetes.io/not-ready: } on 2 node(s)"
    );
}

/// A GKE or Karpenter pool's GPU model label (seen on its nodes, or required by its NodePool)
/// is judged like any other label: a pod selecting that model fits, another model does not.
#[test]
fn a_selector_on_the_gpu_model_label_matches_the_pools_that_carry_it() {
    let mut l4 = pool(Provider::Gke, "spot-l4", "g2-standard-8", true);
    l4.detail.node_label_values.insert(
        crate::labels::GKE_ACCELERATOR.into(),
        vec!["nvidia-l4".into()],
    );
    let cpu = pool(Provider::Gke, "default-pool", "e2-standard-8", false);
    assert_eq!(
        fit(&pod(&[(crate::labels::GKE_ACCELERATOR, "nvidia-l4")]), &l4),
        Ok(())
    );
    assert!(
        fit(
            &pod(&[(crate::labels::GKE_ACCELERATOR, "nvidia-tesla-t4")]),
            &l4
        )
        .is_err()
    );
    assert!(fit(&pod(&[(crate::labels::GKE_ACCELERATOR, "nvidia-l4")]), &cpu).is_err());
    let mut gpu = pool(Provider::Karpenter, "gpu-spot", "g5.2xlarge", true);
    gpu.detail.node_label_values.insert(
        crate::labels::KARPENTER_GPU_NAME.into(),
        vec!["a10g".into(), "l4".into()],
    );
    assert_eq!(
        fit(&pod(&[(crate::labels::KARPENTER_GPU_NAME, "l4")]), &gpu),
        Ok(())
    );
}
