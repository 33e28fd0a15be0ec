//! GPUs on the GKE and Karpenter nodes beside CKS: each node's count from its own capacity,
//! the GPUs its running pods request, the pools' allocation and `spotboard_gpus`, and what
//! the idle spot GPUs cost, each worked again here from what the API server and the shipped
//! prices say.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

use crate::common::sim::eventually;
use crate::providers::{AWS_CLUSTER, GKE, GKE_CLUSTER, get, pool, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpu_allocation_and_the_idle_spot_gpus_cost_follow_the_nodes_and_pods() {
    let d = start().await;
    eventually(Duration::from_secs(10), "the GPU pools", || async {
        let p = get(&d.base, "/api/v1/pools").await;
        pool(&p, GKE_CLUSTER, "spot-l4")?;
        pool(&p, AWS_CLUSTER, "gpu-spot").map(|_| ())
    })
    .await;
    // Each node's GPUs: its capacity on GKE and AWS (g2-standard-24: 2 × L4, g5.2xlarge:
    // 1 × A10G, as the providers publish them), none on a CPU machine type.
    let gpus_of = |cluster: &'static str, pool: &'static str| {
        let base = d.base.clone();
        async move {
            let detail = get(&base, &format!("/api/v1/pools/{cluster}/{pool}")).await;
            let nodes = detail["nodes"].as_array().cloned().unwrap_or_default();
            assert!(!nodes.is_empty(), "{cluster}/{pool} has nodes");
            nodes
                .iter()
                .map(|n| format!("{} from {}", n["gpus"], n["gpus_from"]))
                .collect::<std::collections::BTreeSet<_>>()
        }
    };
    let all = |s: &str| std::collections::BTreeSet::from([s.to_string()]);
    assert_eq!(
        gpus_of(GKE_CLUSTER, "spot-l4").await,
        all("2 from \"capacity\"")
    );
    assert_eq!(
        gpus_of(AWS_CLUSTER, "gpu-spot").await,
        all("1 from \"capacity\"")
    );
    assert_eq!(
        gpus_of(AWS_CLUSTER, "on-demand").await,
        all("null from \"unknown\"")
    );
    // GPU allocation, counted another way: the running pods the API server lists on the
    // pool's nodes and their nvidia.com/gpu requests (the fleet's pods ask for one L4 each),
    // against the pool row and the nodes' own counts. Random preemptions may move pods
    // meanwhile, so the two are compared until they agree.
    let all_pods = Api::<Pod>::all(d.admin(GKE));
    let (asked, on_nodes) = eventually(
        Duration::from_secs(20),
        "the L4 pool's allocation",
        || async {
            let detail = get(&d.base, &format!("/api/v1/pools/{GKE_CLUSTER}/spot-l4")).await;
            let nodes = detail["nodes"].as_array()?.clone();
            let names: std::collections::HashSet<&str> =
                nodes.iter().filter_map(|n| n["name"].as_str()).collect();
            let pods = all_pods.list(&ListParams::default()).await.ok()?.items;
            let asked: u64 = pods
                .iter()
                .filter(|p| {
                    let on = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
                    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                    on.is_some_and(|n| names.contains(n))
                        && !matches!(phase, Some("Succeeded" | "Failed"))
                })
                .flat_map(|p| p.spec.iter().flat_map(|s| s.containers.iter()))
                .filter_map(|c| {
                    c.resources
                        .as_ref()?
                        .requests
                        .as_ref()?
                        .get("nvidia.com/gpu")
                })
                .filter_map(|q| q.0.parse::<u64>().ok())
                .sum();
            let on_nodes: u64 = nodes.iter().filter_map(|n| n["gpus"].as_u64()).sum();
            let by_node: u64 = nodes
                .iter()
                .filter_map(|n| n["gpus_requested"].as_u64())
                .sum();
            let pool = &detail["pool"];
            (asked > 0
                && pool["gpus_requested"].as_u64() == Some(asked)
                && by_node == asked
                && pool["gpus_allocatable"].as_u64() == Some(on_nodes))
            .then_some((asked, on_nodes))
        },
    )
    .await;
    assert!(on_nodes >= asked, "{asked} asked of {on_nodes}");
    let l4_per_node = get(&d.base, "/api/v1/pools").await;
    assert_eq!(
        pool(&l4_per_node, GKE_CLUSTER, "spot-l4").unwrap()["gpus_per_node"],
        2,
        "a GKE type's GPUs per node come from its nodes"
    );

    // What the idle spot GPUs cost, worked again here from the pool rows and the shipped
    // prices (g2-standard-24 spot in us-central1: $1.124816 an hour for 2 L4s), against the
    // savings report's figure; read in turn until a report and the pools agree.
    let prices = spotboard_core::domain::prices::PriceCatalog::shipped();
    eventually(
        Duration::from_secs(20),
        "the idle spot GPUs' cost",
        || async {
            let report = get(&d.base, "/api/v1/savings?range=24h").await;
            let pools = get(&d.base, "/api/v1/pools").await;
            let mut want = rust_decimal::Decimal::ZERO;
            let mut idle_gpus = 0;
            for p in pools["pools"].as_array()? {
                let (on, asked) = (
                    p["gpus_allocatable"].as_u64()?,
                    p["gpus_requested"].as_u64()?,
                );
                if p["capacity_type"] != "spot" || on == 0 {
                    continue;
                }
                let idle = on - asked.min(on);
                idle_gpus += idle;
                let price = prices.lookup(
                    p["cluster"].as_str()?,
                    p["zone"].as_str(),
                    p["instance_type"].as_str()?,
                    spotboard_core::CapacityType::Spot,
                );
                if let (Some(price), Some(per_node)) = (price, p["gpus_per_node"].as_u64()) {
                    want += price.usd_per_hour / rust_decimal::Decimal::from(per_node)
                        * rust_decimal::Decimal::from(idle);
                }
            }
            let got = &report["idle_spot_gpus"];
            let usd: rust_decimal::Decimal = got["usd_h"].as_str()?.parse().ok()?;
            (got["idle"].as_u64() == Some(idle_gpus) && usd == want.round_dp(2) && idle_gpus > 0)
                .then_some(())
        },
    )
    .await;
    let metrics = reqwest::get(format!("{}/metrics", d.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!(
            "spotboard_gpus{{cluster=\"{GKE_CLUSTER}\",provider=\"gke\",capacity_type=\"spot\",state=\"idle\"}}"
        )),
        "{}",
        metrics.lines().filter(|l| l.starts_with("spotboard_gpus")).collect::<Vec<_>>().join("\n")
    );
}

/// The forms the embedded cluster writes ("23870m", "500m", "24", "1Gi", "98304Ki"), read
/// here by hand as millicores or bytes: a second reading beside the product's parser.
fn by_hand(q: &str, millis: bool) -> u64 {
    let (n, unit) = match q {
        _ if q.ends_with("Ki") => (&q[..q.len() - 2], 1024),
        _ if q.ends_with("Mi") => (&q[..q.len() - 2], 1024 * 1024),
        _ if q.ends_with("Gi") => (&q[..q.len() - 2], 1024 * 1024 * 1024),
        _ if q.ends_with('m') => return q[..q.len() - 1].parse().unwrap(),
        _ => (q, 1),
    };
    let n: u64 = n
        .parse()
        .unwrap_or_else(|_| panic!("{q} is not a form this test reads"));
    if millis { n * unit * 1000 } else { n * unit }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allocation_api_matches_the_nodes_and_pods_the_api_server_lists() {
    use k8s_openapi::api::core::v1::Node;
    use rust_decimal::Decimal;

    let d = start().await;
    let nodes_api = Api::<Node>::all(d.admin(GKE));
    let pods_api = Api::<Pod>::all(d.admin(GKE));
    let prices = spotboard_core::domain::prices::PriceCatalog::shipped();
    let url = format!("/api/v1/allocation?cluster={GKE_CLUSTER}&pool=spot-l4");
    // Pods move with random preemptions: read both sides in turn until they agree.
    let got = eventually(
        Duration::from_secs(20),
        "the L4 pool's allocation",
        || async {
            let a = get(&d.base, &url).await;
            let nodes = nodes_api
                .list(&ListParams::default().labels("cloud.google.com/gke-nodepool=spot-l4"))
                .await
                .ok()?
                .items;
            let pods = pods_api.list(&ListParams::default()).await.ok()?.items;
            let rows = a["nodes"].as_array()?;
            if rows.len() != nodes.len() || nodes.is_empty() {
                return None;
            }
            for n in &nodes {
                let name = n.metadata.name.as_deref()?;
                let row = rows.iter().find(|r| r["node"] == name)?;
                let allocatable = n.status.as_ref()?.allocatable.as_ref()?;
                let running: Vec<_> = pods
                    .iter()
                    .filter(|p| {
                        p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name)
                            && !matches!(
                                p.status.as_ref().and_then(|s| s.phase.as_deref()),
                                Some("Succeeded" | "Failed")
                            )
                    })
                    .flat_map(|p| p.spec.iter().flat_map(|s| s.containers.iter()))
                    .filter_map(|c| c.resources.as_ref()?.requests.clone())
                    .collect();
                let sum = |key: &str, millis: bool| -> u64 {
                    running
                        .iter()
                        .filter_map(|r| r.get(key))
                        .map(|q| by_hand(&q.0, millis))
                        .sum()
                };
                let cores = |m: u64| Decimal::from(m) / Decimal::from(1000);
                let dec = |v: &serde_json::Value| v.as_str()?.parse::<Decimal>().ok();
                let idle = 2 - sum("nvidia.com/gpu", false).min(2);
                let price = prices
                    .lookup(
                        GKE_CLUSTER,
                        row["zone"].as_str(),
                        "g2-standard-24",
                        spotboard_core::CapacityType::Spot,
                    )?
                    .usd_per_hour;
                let want_idle_usd = (price * Decimal::from(idle) / Decimal::from(2)).round_dp(2);
                let agrees = row["gpus_allocatable"] == 2
                    && row["gpus_requested"].as_u64() == Some(sum("nvidia.com/gpu", false))
                    && row["idle_gpus"].as_u64() == Some(idle)
                    && dec(&row["cpu_allocatable"])
                        == Some(cores(by_hand(&allocatable.get("cpu")?.0, true)))
                    && dec(&row["cpu_requested"]) == Some(cores(sum("cpu", true)))
                    && row["memory_allocatable"].as_u64()
                        == Some(by_hand(&allocatable.get("memory")?.0, false))
                    && row["memory_requested"].as_u64() == Some(sum("memory", false))
                    && dec(&row["idle_usd_h"]) == Some(want_idle_usd)
                    && row["utilisation"].is_null();
                if !agrees {
                    return None;
                }
            }
            Some(a)
        },
    )
    .await;
    assert_eq!(got["source"], "requests");
    let rows = got["nodes"].as_array().unwrap();
    let pools = got["pools"].as_array().unwrap();
    assert_eq!(pools.len(), 1, "{pools:?}");
    let p = &pools[0];
    assert_eq!(
        (p["cluster"].as_str(), p["pool"].as_str()),
        (Some(GKE_CLUSTER), Some("spot-l4"))
    );
    let sum_u = |k: &str| rows.iter().filter_map(|r| r[k].as_u64()).sum::<u64>();
    for k in [
        "gpus_allocatable",
        "gpus_requested",
        "idle_gpus",
        "memory_requested",
    ] {
        assert_eq!(p[k].as_u64(), Some(sum_u(k)), "{k}");
    }
    let idle_usd: Decimal = rows
        .iter()
        .map(|r| {
            r["idle_usd_h"]
                .as_str()
                .unwrap()
                .parse::<Decimal>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        p["idle_usd_h"]
            .as_str()
            .unwrap()
            .parse::<Decimal>()
            .unwrap(),
        idle_usd
    );

    // Bad input: an unknown cluster is a 404, not an empty fleet; a pool that matches
    // nothing is an empty list.
    let missing = reqwest::get(format!("{}/api/v1/allocation?cluster=nope", d.base))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let none = get(
        &d.base,
        &format!("/api/v1/allocation?cluster={GKE_CLUSTER}&pool=nope"),
    )
    .await;
    assert_eq!(none["nodes"].as_array().map(Vec::len), Some(0));
    // The whole fleet: every cluster's nodes, CKS's H100s among them.
    let all = get(&d.base, "/api/v1/allocation").await;
    assert!(
        all["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["gpus_allocatable"] == 8),
        "CKS nodes with 8 GPUs"
    );
}
