//! The CoreWeave behaviour model against a real embedded API server, observed only through
//! kube-rs as a user's tools would: the seeded scenario, node boot, Spot preemption (seed 000)
//! and validation. Speeds are high so simulated minutes pass in fractions of a second; every
//! wait polls with a deadline.

use std::future::Future;
use std::time::Duration;

use app::labels;
use app::nodepool::{ConditionType, NodePool, NodePoolSpec};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use server::embedded::api::{ApiServer, Tokens};
use server::embedded::client_for;
use server::embedded::sim::{self, SimHandle, SimOptions};
use tokio::time::Instant;

struct Zone {
    _server: ApiServer,
    sim: SimHandle,
    client: Client,
}

async fn zone(zone_index: usize, zone_count: usize, speed: f64) -> Zone {
    let tokens = Tokens::generate();
    let server = ApiServer::start("US-EAST-04A", tokens.clone())
        .await
        .unwrap();
    let client = client_for(&server.url(), &tokens.admin, "test").unwrap();
    let opts = SimOptions {
        seed: 7,
        speed,
        extra_nodes: 0,
        pods_per_node: 5,
        zone_count,
    };
    let sim = sim::start("US-EAST-04A", zone_index, client.clone(), &opts)
        .await
        .unwrap();
    Zone {
        _server: server,
        sim,
        client,
    }
}

/// Polls `f` every 20 ms until it returns `Some`; panics with `what` after `limit`.
async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn pool(client: &Client, name: &str) -> Option<NodePool> {
    Api::<NodePool>::all(client.clone())
        .get_opt(name)
        .await
        .unwrap()
}

fn reason(p: &NodePool, t: ConditionType) -> String {
    let conds = p
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    conds
        .iter()
        .find(|c| c.type_ == t)
        .map(|c| format!("{}/{}", c.status, c.reason.clone().unwrap_or_default()))
        .unwrap_or_default()
}

async fn pool_nodes(client: &Client, pool: &str) -> Vec<Node> {
    let lp = ListParams::default().labels(&format!("{}={pool}", labels::NODE_POOL));
    Api::<Node>::all(client.clone())
        .list(&lp)
        .await
        .unwrap()
        .items
}

/// Events about object `name` with `reason`.
async fn events(client: &Client, name: &str, reason: &str) -> Vec<Event> {
    let all = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    all.items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(name) && e.reason.as_deref() == Some(reason)
        })
        .collect()
}

fn counts(p: &NodePool) -> (i32, i32, i32) {
    let s = p.status.clone().unwrap_or_default();
    (
        s.queued_nodes.unwrap_or(-1),
        s.in_progress.unwrap_or(-1),
        s.current_nodes.unwrap_or(-1),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenario_seeds_example_nodepool_with_five_conditions_and_its_node() {
    let z = zone(0, 3, 60.0).await;
    let np = eventually(
        Duration::from_secs(10),
        "example-nodepool has five conditions",
        || async {
            pool(&z.client, "example-nodepool")
                .await
                .filter(|p| p.status.as_ref().is_some_and(|s| s.conditions.len() == 5))
        },
    )
    .await;
    assert_eq!(np.spec.instance_type, "gd-8xa100-i128");
    let want = [
        (ConditionType::Validated, "True/Valid"),
        (ConditionType::Capacity, "True/Sufficient"),
        (ConditionType::Quota, "True/Under"),
        (ConditionType::AtTarget, "True/TargetMet"),
        (
            ConditionType::NodeReconfigurationRequired,
            "False/AllNodesUpToDate",
        ),
    ];
    for (t, r) in want {
        assert_eq!(reason(&np, t.clone()), r, "{t}");
    }
    let st = np.status.clone().unwrap();
    assert_eq!(counts(&np), (0, 0, 1));
    assert!(st.node_profile.is_some());
    let c = &st.conditions[0];
    assert_eq!(
        c.message.as_deref(),
        Some("NodePool configuration is valid.")
    );
    assert_eq!(c.observed_generation, np.metadata.generation);
    assert!(c.last_transition_time.is_some());

    let nodes = pool_nodes(&z.client, "example-nodepool").await;
    assert_eq!(nodes.len(), 1, "its node exists from the start");
    let n = &nodes[0];
    let l = n.labels();
    assert_eq!(l[labels::INSTANCE_TYPE], "gd-8xa100-i128");
    assert_eq!(l[labels::NODE_STATE], "production");
    assert_eq!(l[labels::ZONE], "US-EAST-04A");
    assert!(l[labels::NODE_RESERVED].starts_with("cw"));
    let status = n.status.as_ref().unwrap();
    assert_eq!(status.capacity.as_ref().unwrap()["nvidia.com/gpu"].0, "8");
    assert_eq!(
        status.node_info.as_ref().unwrap().kubelet_version,
        "v1.33.1"
    );
    let conds: Vec<_> = status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| (c.type_.as_str(), c.status.as_str()))
        .collect();
    for want in [
        ("Ready", "True"),
        ("CWRegistered", "True"),
        ("CWActive", "True"),
    ] {
        assert!(conds.contains(&want), "{want:?} in {conds:?}");
    }
    let pods = Api::<Pod>::all(z.client.clone())
        .list(&ListParams::default().fields(&format!("spec.nodeName={}", n.name_any())))
        .await
        .unwrap();
    assert!(
        pods.items
            .iter()
            .any(|p| p.name_any() == "bert-large-finetune-0"
                && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    );
    assert!(
        !events(&z.client, "example-nodepool", "CWNodePoolCreated")
            .await
            .is_empty()
    );
    let cap = z.sim.capacity();
    assert_eq!(cap.zone, "US-EAST-04A");
    assert!(!cap.capacity.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_zone_shows_queued_capacity_and_quota_problems() {
    let z = zone(0, 1, 60.0).await;
    let check = |name: &'static str, t: ConditionType, want: &'static str| {
        let client = z.client.clone();
        async move {
            eventually(
                Duration::from_secs(10),
                &format!("{name} {t} {want}"),
                || async {
                    pool(&client, name)
                        .await
                        .filter(|p| reason(p, t.clone()) == want)
                },
            )
            .await
        }
    };
    let burst = check(
        "b200-spot-burst",
        ConditionType::Capacity,
        "False/QueuedAwaitingCapacity",
    )
    .await;
    assert_eq!(
        counts(&burst),
        (2, 0, 0),
        "both nodes queued, none assigned"
    );
    assert_eq!(reason(&burst, ConditionType::AtTarget), "False/UnderTarget");
    let over = check("rtxpro-render", ConditionType::Quota, "False/Over").await;
    assert_eq!(counts(&over).2, 2, "the quota holds the pool at 2 of 3");
    let gb = check("gb200-nvl72", ConditionType::Quota, "False/NotSet").await;
    let msg = gb
        .status
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::Quota)
        .unwrap()
        .message
        .clone();
    assert_eq!(
        msg.as_deref(),
        Some("quota limit is 0 for instance type gb200-4x")
    );
    assert!(
        !events(&z.client, "b200-spot-burst", "CWInsufficientCapacity")
            .await
            .is_empty()
    );
    assert!(
        !events(&z.client, "rtxpro-render", "CWOverQuota")
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_pool_boots_to_target_and_scales_down() {
    let z = zone(0, 3, 600.0).await;
    let api = Api::<NodePool>::all(z.client.clone());
    let spec = NodePoolSpec {
        instance_type: "turin-gp".into(),
        target_nodes: 2,
        ..Default::default()
    };
    api.create(&PostParams::default(), &NodePool::new("test-turin", spec))
        .await
        .unwrap();
    let np = eventually(
        Duration::from_secs(15),
        "test-turin reaches 2 nodes",
        || async {
            pool(&z.client, "test-turin")
                .await
                .filter(|p| counts(p) == (0, 0, 2))
        },
    )
    .await;
    assert_eq!(reason(&np, ConditionType::AtTarget), "True/TargetMet");
    let nodes = pool_nodes(&z.client, "test-turin").await;
    assert_eq!(nodes.len(), 2);
    assert!(
        nodes
            .iter()
            .all(|n| n.labels()[labels::INSTANCE_TYPE] == "turin-gp")
    );
    // The Cilium DaemonSet runs on every node that joins.
    let on_first = ListParams::default().fields(&format!("spec.nodeName={}", nodes[0].name_any()));
    let daemons = Api::<Pod>::namespaced(z.client.clone(), "kube-system")
        .list(&on_first)
        .await
        .unwrap();
    assert!(
        daemons
            .items
            .iter()
            .any(|p| p.name_any().starts_with("cilium-"))
    );
    for r in [
        "CWNodeRequestQueued",
        "CWNodeAssigned",
        "CWNodeRegistered",
        "CWNodePoolScaledUp",
    ] {
        assert!(!events(&z.client, "test-turin", r).await.is_empty(), "{r}");
    }

    let patch = json!({"spec": {"targetNodes": 1}});
    api.patch("test-turin", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually(
        Duration::from_secs(15),
        "test-turin scales down to 1",
        || async {
            let n = pool_nodes(&z.client, "test-turin").await.len();
            pool(&z.client, "test-turin").await.filter(|p| {
                n == 1
                    && counts(p) == (0, 0, 1)
                    && reason(p, ConditionType::AtTarget) == "True/TargetMet"
            })
        },
    )
    .await;
    assert!(
        !events(&z.client, "test-turin", "CWNodePoolScaledDown")
            .await
            .is_empty()
    );

    // Deleting the pool removes its nodes.
    api.delete("test-turin", &Default::default()).await.unwrap();
    eventually(
        Duration::from_secs(15),
        "test-turin's nodes removed",
        || async {
            pool_nodes(&z.client, "test-turin")
                .await
                .is_empty()
                .then_some(())
        },
    )
    .await;
    assert!(
        !events(&z.client, "test-turin", "CWNodePoolDeleted")
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotated_spot_node_is_preempted_as_seed_000_says() {
    let speed = 120.0;
    let z = zone(0, 3, speed).await;
    let before = pool_nodes(&z.client, "h100-spot-train").await;
    assert_eq!(before.len(), 4);
    let victim = before[0].name_any();
    let nodes = Api::<Node>::all(z.client.clone());
    let pods = Api::<Pod>::all(z.client.clone());
    let on_victim = ListParams::default().fields(&format!("spec.nodeName={victim}"));
    let trainer = pods
        .list(&on_victim)
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|p| p.namespace().as_deref() == Some("ml-training"))
        .unwrap();
    let pods = Api::<Pod>::namespaced(z.client.clone(), "ml-training");
    assert_eq!(
        trainer
            .spec
            .as_ref()
            .unwrap()
            .termination_grace_period_seconds,
        Some(600)
    );

    let t0 = Instant::now();
    let patch = json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
    nodes
        .patch(&victim, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();

    // T=0: cordoned, labelled, warned; pods keep running and the drain has not started.
    let n = eventually(Duration::from_secs(2), "T=0 cordon and label", || async {
        nodes.get_opt(&victim).await.unwrap().filter(|n| {
            n.labels()
                .get(labels::PENDING_PREEMPTION)
                .map(String::as_str)
                == Some("true")
        })
    })
    .await;
    assert_eq!(n.spec.as_ref().unwrap().unschedulable, Some(true));
    assert!(
        !n.labels().contains_key(labels::EVICTED_AT),
        "the drain starts only at T+2"
    );
    let pending = eventually(
        Duration::from_secs(2),
        "Preemption pending event",
        || async {
            events(&z.client, &victim, labels::REASON_PREEMPTION_PENDING)
                .await
                .pop()
        },
    )
    .await;
    assert_eq!(pending.type_.as_deref(), Some("Warning"));
    assert_eq!(
        pending.source.as_ref().unwrap().component.as_deref(),
        Some("preemption-controller")
    );
    assert_eq!(pending.involved_object.kind.as_deref(), Some("Node"));
    assert_eq!(pending.involved_object.uid, n.metadata.uid);
    let p = pods.get(&trainer.name_any()).await.unwrap();
    assert!(
        p.metadata.deletion_timestamp.is_none(),
        "running jobs continue at T=0"
    );

    // T+2 min: evicted-at label, warning, pods terminating with their grace period.
    let n = eventually(Duration::from_secs(3), "T+2 evicted-at", || async {
        nodes
            .get_opt(&victim)
            .await
            .unwrap()
            .filter(|n| n.labels().contains_key(labels::EVICTED_AT))
    })
    .await;
    let drain_after = t0.elapsed();
    let two_min = Duration::from_secs_f64(120.0 / speed);
    assert!(
        drain_after >= two_min.mul_f64(0.9),
        "drain after {drain_after:?}, want >= {two_min:?}"
    );
    let stamp = n.labels()[labels::EVICTED_AT].clone();
    assert!(
        chrono::NaiveDateTime::parse_from_str(&stamp, "%Y-%m-%dT%H-%M-%SZ").is_ok(),
        "{stamp}"
    );
    eventually(
        Duration::from_secs(2),
        "Preemption in progress event",
        || async {
            events(&z.client, &victim, labels::REASON_PREEMPTION_IN_PROGRESS)
                .await
                .pop()
        },
    )
    .await;
    let terminating = eventually(Duration::from_secs(2), "trainer terminating", || async {
        pods.get_opt(&trainer.name_any())
            .await
            .unwrap()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
    })
    .await;
    assert_eq!(
        terminating.metadata.deletion_grace_period_seconds,
        Some(600)
    );

    // Removal: the 600 s trainer outlives the window, so the node goes at T+7 min.
    eventually(Duration::from_secs(5), "node deleted", || async {
        nodes
            .get_opt(&victim)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    let removed_after = t0.elapsed();
    let seven_min = Duration::from_secs_f64(420.0 / speed);
    assert!(
        removed_after >= seven_min.mul_f64(0.9),
        "removed after {removed_after:?}, want ~{seven_min:?}"
    );
    eventually(
        Duration::from_secs(2),
        "Deleted for preemption event",
        || async {
            events(&z.client, &victim, labels::REASON_DELETED_FOR_PREEMPTION)
                .await
                .pop()
        },
    )
    .await;

    // The pool stays, drops a node, and scales back up with a new one; the StatefulSet's pod
    // comes back on it.
    let np = pool(&z.client, "h100-spot-train")
        .await
        .expect("the pool stays");
    assert!(counts(&np).2 <= 4);
    let old: Vec<String> = before.iter().map(ResourceExt::name_any).collect();
    let fresh = eventually(
        Duration::from_secs(20),
        "pool back at 4 with a new node",
        || async {
            let nodes = pool_nodes(&z.client, "h100-spot-train").await;
            let p = pool(&z.client, "h100-spot-train").await?;
            let fresh = nodes
                .iter()
                .find(|n| !old.contains(&n.name_any()))?
                .name_any();
            (counts(&p).2 == 4 && reason(&p, ConditionType::AtTarget) == "True/TargetMet")
                .then_some(fresh)
        },
    )
    .await;
    assert!(
        !events(&z.client, "h100-spot-train", "CWNodeDeleted")
            .await
            .is_empty()
    );
    eventually(
        Duration::from_secs(10),
        "trainer rescheduled on the new node",
        || async {
            let p = pods.get_opt(&trainer.name_any()).await.unwrap()?;
            let on = p.spec.as_ref()?.node_name.clone()?;
            // On a node that joined after the preemption (normally `fresh`; another random
            // preemption may have brought a second one).
            let joined = on == fresh || !old.contains(&on);
            (joined && p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(())
        },
    )
    .await;
}

/// Seed 002: CKS never picks a node hosting gracefully interruptible pods for scale-down, so
/// a pool made only of such nodes stalls, even with PreferIdle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_pods_stall_scale_down() {
    let z = zone(0, 3, 600.0).await;
    let api = Api::<NodePool>::all(z.client.clone());
    let patch = json!({"spec": {"targetNodes": 2}});
    api.patch(
        "h100-spot-train",
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .unwrap();
    let np = eventually(
        Duration::from_secs(5),
        "h100-spot-train over target",
        || async {
            pool(&z.client, "h100-spot-train")
                .await
                .filter(|p| reason(p, ConditionType::AtTarget) == "False/OverTarget")
        },
    )
    .await;
    let msg = np
        .status
        .unwrap()
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::AtTarget)
        .unwrap()
        .message
        .clone()
        .unwrap();
    assert!(
        msg.contains("PreferIdle") && msg.contains("no node is idle"),
        "{msg}"
    );
    // Ten simulated minutes later nothing was removed for the scale-down.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        events(&z.client, "h100-spot-train", "CWNodePoolRemoveNodes")
            .await
            .is_empty()
    );
    let np = pool(&z.client, "h100-spot-train").await.unwrap();
    assert_eq!(reason(&np, ConditionType::AtTarget), "False/OverTarget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spot_on_superchip_is_invalid_with_seed_000s_reason() {
    let z = zone(0, 3, 60.0).await;
    let spec = NodePoolSpec {
        instance_type: "gb200-4x".into(),
        compute_class: "spot".into(),
        target_nodes: 2,
        ..Default::default()
    };
    Api::<NodePool>::all(z.client.clone())
        .create(&PostParams::default(), &NodePool::new("gb200-spot", spec))
        .await
        .unwrap();
    let np = eventually(Duration::from_secs(10), "gb200-spot validated", || async {
        pool(&z.client, "gb200-spot")
            .await
            .filter(|p| !reason(p, ConditionType::Validated).is_empty())
    })
    .await;
    assert_eq!(reason(&np, ConditionType::Validated), "False/Invalid");
    let st = np.status.clone().unwrap();
    let msg = st
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::Validated)
        .unwrap()
        .message
        .clone()
        .unwrap();
    assert!(
        msg.contains("spec.computeClass") && msg.contains("Superchip"),
        "{msg}"
    );
    assert_eq!(st.conditions.len(), 5);
    assert_eq!(counts(&np), (0, 0, 0));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        pool_nodes(&z.client, "gb200-spot").await.is_empty(),
        "an invalid pool gets no nodes"
    );
    assert!(
        !events(&z.client, "gb200-spot", "CWInvalidInstanceType")
            .await
            .is_empty()
    );
}
