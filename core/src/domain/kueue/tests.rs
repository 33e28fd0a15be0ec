use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};

use super::*;
use crate::Provider;
use crate::model::PoolDetail;

fn at(h: u32, m: u32) -> Option<DateTime<Utc>> {
    Some(Utc.with_ymd_and_hms(2026, 11, 28, h, m, 0).unwrap())
}

fn pool(provider: Provider, name: &str, spot: bool, labels: &[(&str, &str)]) -> PoolRow {
    PoolRow {
        provider,
        cluster: "c".into(),
        name: name.into(),
        instance_type: "gd-8xh100ib-i128".into(),
        capacity_type: if spot {
            CapacityType::Spot
        } else {
            CapacityType::OnDemand
        },
        detail: PoolDetail {
            node_labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn flavor(name: &str, labels: &[(&str, &str)]) -> ResourceFlavor {
    ResourceFlavor {
        uid: format!("uid-{name}"),
        name: name.into(),
        node_labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    }
}

fn workload(
    ns: &str,
    name: &str,
    queue: &str,
    state: WorkloadState,
    gpus: u32,
    admitted: Option<(&str, &str)>,
) -> Workload {
    Workload {
        uid: format!("uid-{name}"),
        namespace: ns.into(),
        name: name.into(),
        queue: queue.into(),
        state,
        gpus,
        cluster_queue: admitted.map(|(cq, _)| cq.to_string()),
        flavor: admitted.map(|(_, f)| f.to_string()),
        ..Default::default()
    }
}

fn fleet() -> Vec<PoolRow> {
    vec![
        pool(
            Provider::Cks,
            "h100-spot-a",
            true,
            &[("example.com/capacity", "spot")],
        ),
        pool(
            Provider::Cks,
            "h100-spot-b",
            true,
            &[("example.com/capacity", "spot")],
        ),
        pool(Provider::Cks, "h100-od", false, &[]),
    ]
}

#[test]
fn a_flavor_lands_on_the_pools_whose_nodes_carry_its_labels() {
    let rows = fleet();
    let pools: Vec<&PoolRow> = rows.iter().collect();
    let cases = [
        (
            flavor("h100-spot", &[("example.com/capacity", "spot")]),
            CapacityType::Spot,
            vec!["h100-spot-a", "h100-spot-b"],
        ),
        (
            flavor("h100-od", &[(labels::NODE_POOL, "h100-od")]),
            CapacityType::OnDemand,
            vec!["h100-od"],
        ),
        (
            flavor("any-h100", &[(labels::INSTANCE_TYPE, "gd-8xh100ib-i128")]),
            CapacityType::Mixed,
            vec!["h100-od", "h100-spot-a", "h100-spot-b"],
        ),
        // No pool here gives its nodes the label: the label itself says spot.
        (
            flavor("gke-spot", &[(labels::GKE_SPOT, "true")]),
            CapacityType::Spot,
            vec![],
        ),
        (
            flavor(
                "karpenter-od",
                &[(labels::KARPENTER_CAPACITY_TYPE, "on-demand")],
            ),
            CapacityType::OnDemand,
            vec![],
        ),
        (
            flavor("typo", &[(labels::NODE_POOL, "h100-spto-a")]),
            CapacityType::Unknown,
            vec![],
        ),
    ];
    for (f, want_type, want_pools) in cases {
        let (t, p) = flavor_pools(&f, &pools);
        assert_eq!(
            (t, p),
            (
                want_type,
                want_pools.iter().map(|s| s.to_string()).collect()
            ),
            "{}",
            f.name
        );
    }
}

/// Worked by hand: queue `training` (flavors h100-spot with 16 GPUs, h100-od with 8) has two
/// admitted workloads (16 GPUs on spot, 8 on on-demand) and two pending (16 GPUs since 09:00,
/// 8 since 09:30): 2 pending, 24 GPUs, oldest 09:00, 24 of 24 GPUs in use. Queue `eval`
/// (inactive) admitted 2 GPUs into a flavor that lands on spot and on-demand pools (other) and
/// reserves 1. The workload of a LocalQueue that does not exist waits in no queue, first in the
/// pending list, and a finished one counts nowhere.
#[test]
fn queues_count_pending_and_admitted_work_by_capacity_type() {
    let rows = fleet();
    let pools: Vec<&PoolRow> = rows.iter().collect();
    let mut pretrain_b = workload(
        "ml-training",
        "pretrain-b",
        "team-a",
        WorkloadState::Pending,
        16,
        None,
    );
    pretrain_b.since = at(9, 0);
    pretrain_b.message = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100-spot, 16 more needed".into();
    let mut sweep = workload(
        "ml-training",
        "sweep",
        "team-a",
        WorkloadState::Pending,
        8,
        None,
    );
    sweep.since = at(9, 30);
    let mut orphan = workload(
        "ml-training",
        "orphan",
        "nope",
        WorkloadState::Pending,
        4,
        None,
    );
    orphan.since = at(8, 0);
    let o = Objects {
        flavors: vec![
            flavor("h100-spot", &[("example.com/capacity", "spot")]),
            flavor("h100-od", &[(labels::NODE_POOL, "h100-od")]),
            flavor("any-h100", &[(labels::INSTANCE_TYPE, "gd-8xh100ib-i128")]),
        ],
        cluster_queues: vec![
            ClusterQueue {
                uid: "cq1".into(),
                name: "training".into(),
                cohort: Some("ml".into()),
                flavors: vec![("h100-spot".into(), Some(16)), ("h100-od".into(), Some(8))],
                active: Some((true, String::new())),
            },
            ClusterQueue {
                uid: "cq2".into(),
                name: "eval".into(),
                cohort: None,
                flavors: vec![("any-h100".into(), None), ("gone".into(), Some(4))],
                active: Some((
                    false,
                    "FlavorNotFound: Can't admit new workloads; some flavors are not found".into(),
                )),
            },
        ],
        local_queues: vec![
            LocalQueue {
                uid: "lq1".into(),
                namespace: "ml-training".into(),
                name: "team-a".into(),
                cluster_queue: "training".into(),
            },
            LocalQueue {
                uid: "lq2".into(),
                namespace: "ml-eval".into(),
                name: "eval".into(),
                cluster_queue: "eval".into(),
            },
        ],
        workloads: vec![
            workload(
                "ml-training",
                "pretrain-a",
                "team-a",
                WorkloadState::Admitted,
                16,
                Some(("training", "h100-spot")),
            ),
            workload(
                "ml-training",
                "finetune",
                "team-a",
                WorkloadState::Admitted,
                8,
                Some(("training", "h100-od")),
            ),
            sweep,
            pretrain_b,
            orphan,
            workload(
                "ml-training",
                "old",
                "team-a",
                WorkloadState::Done,
                64,
                Some(("training", "h100-spot")),
            ),
            workload(
                "ml-eval",
                "e1",
                "eval",
                WorkloadState::Reserving,
                1,
                Some(("eval", "any-h100")),
            ),
            workload(
                "ml-eval",
                "e2",
                "eval",
                WorkloadState::Admitted,
                2,
                Some(("eval", "any-h100")),
            ),
        ],
    };
    let Queues {
        rows,
        pending,
        admitted,
    } = queues("c", &o, &pools);
    assert_eq!(
        admitted
            .iter()
            .map(|a| (
                a.name.as_str(),
                a.flavor.as_deref(),
                a.capacity_type,
                a.reserving
            ))
            .collect::<Vec<_>>(),
        [
            ("e1", Some("any-h100"), CapacityType::Mixed, true),
            ("e2", Some("any-h100"), CapacityType::Mixed, false),
            ("finetune", Some("h100-od"), CapacityType::OnDemand, false),
            ("pretrain-a", Some("h100-spot"), CapacityType::Spot, false),
        ]
    );
    assert_eq!(
        rows.iter().map(|r| r.key()).collect::<Vec<_>>(),
        ["c/eval", "c/training"]
    );
    let training = &rows[1];
    assert!(training.active);
    assert_eq!(training.cohort.as_deref(), Some("ml"));
    assert_eq!((training.pending_workloads, training.pending_gpus), (2, 24));
    assert_eq!(training.oldest_pending_since, at(9, 0));
    assert_eq!(
        training.oldest_pending.as_deref(),
        Some("ml-training/pretrain-b")
    );
    assert!(training.pending_message.contains("16 more needed"));
    assert_eq!(
        (training.admitted_spot, training.admitted_gpus_spot),
        (1, 16)
    );
    assert_eq!(
        (
            training.admitted_on_demand,
            training.admitted_gpus_on_demand
        ),
        (1, 8)
    );
    assert_eq!(
        (training.admitted_other, training.reserving_workloads),
        (0, 0)
    );
    assert_eq!(training.admitted(), 2);
    assert_eq!(training.gpu_quota(), Some((24, 24)));
    assert_eq!(
        training
            .flavors
            .iter()
            .map(|f| (
                f.name.as_str(),
                f.capacity_type,
                f.pools.len(),
                f.gpus_admitted
            ))
            .collect::<Vec<_>>(),
        [
            ("h100-spot", CapacityType::Spot, 2, 16),
            ("h100-od", CapacityType::OnDemand, 1, 8)
        ]
    );

    let eval = &rows[0];
    assert!(!eval.active);
    assert!(
        eval.inactive_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("FlavorNotFound"))
    );
    assert_eq!((eval.admitted_other, eval.admitted_gpus_other), (1, 2));
    assert_eq!(eval.reserving_workloads, 1);
    assert_eq!(eval.pending_workloads, 0);
    assert_eq!(eval.flavors[0].gpus_admitted, 3);
    assert_eq!(eval.flavors[1].capacity_type, CapacityType::Unknown);
    assert_eq!(eval.gpu_quota(), Some((4, 3)));

    assert_eq!(
        pending
            .iter()
            .map(|p| (p.name.as_str(), p.cluster_queue.as_deref()))
            .collect::<Vec<_>>(),
        [
            ("orphan", None),
            ("pretrain-b", Some("training")),
            ("sweep", Some("training"))
        ]
    );
    assert_eq!(
        pending[0].message,
        "LocalQueue nope does not exist in namespace ml-training"
    );
}

#[test]
fn a_cluster_without_kueue_has_no_rows() {
    let rows = fleet();
    let pools: Vec<&PoolRow> = rows.iter().collect();
    assert_eq!(queues("c", &Objects::default(), &pools), Queues::default());
}

#[test]
fn a_queue_kueue_has_not_reported_on_is_not_active() {
    let o = Objects {
        cluster_queues: vec![ClusterQueue {
            name: "new".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let rows = queues("c", &o, &[]).rows;
    assert!(!rows[0].active);
    assert!(rows[0].inactive_reason.is_some());
    assert_eq!(rows[0].gpu_quota(), None);
}

#[test]
fn a_pools_sentence_says_what_kueue_admitted_there_and_what_waits() {
    let f = QueueFlavor {
        name: "h100-spot".into(),
        capacity_type: CapacityType::Spot,
        pools: vec!["h100-spot-train".into()],
        gpu_quota: Some(32),
        gpus_admitted: 32,
    };
    let mut q = QueueRow {
        name: "ml-training".into(),
        active: true,
        pending_workloads: 1,
        pending_gpus: 16,
        flavors: vec![f.clone()],
        ..Default::default()
    };
    assert_eq!(
        pool_sentence(&q, &f),
        "ClusterQueue ml-training admits into flavor h100-spot (spot) here: 32 of 32 GPUs admitted. 1 workload (16 GPUs) waits for quota in the queue."
    );
    q.pending_workloads = 0;
    q.active = false;
    assert_eq!(
        pool_sentence(
            &q,
            &QueueFlavor {
                gpu_quota: None,
                capacity_type: CapacityType::Unknown,
                ..f
            }
        ),
        "ClusterQueue ml-training admits into flavor h100-spot here: 32 GPUs admitted. Nothing waits for quota in the queue. The queue is inactive."
    );
}
