//! The fleet's run (`--clusters N`, N > 1): many clusters watched by one dashboard, as a
//! CoreWeave customer with one CKS cluster per zone has them.
//!
//! The embedded cluster serves N CKS zones from one process (one API server each), with the
//! `--nodes` spread over them in NodePools of at most `--nodes-per-pool`; the dashboard
//! watches every zone's context. Then, in order:
//! - **S1, listing:** the dashboard's RSS once a second from its start until it has listed
//!   every cluster (`/readyz`): the peak while listing and the settled RSS after (MiB); then
//!   its CPU use over 30 s with no change sent (% of a core) and its peak RSS in them;
//! - **S2/S3, a flooded cluster:** node changes (cordon/uncordon patches) at `OBSERVED_RATE`
//!   per second to the nodes of some pools of one cluster, whose pool pages' streams are open,
//!   first alone, then with `--flood-rate` changes per second sent to another cluster at the
//!   same time, `--flood-seconds` each: the observed pools' node change → stream latency in both (p50/p99/max, ms),
//!   the flood's achieved rate, and the dashboard's CPU time per change (µs, from
//!   `/proc/PID/stat`; the dashboard is on one core with `--one-core`);
//! - **S1, churn:** `--rate` changes per second over every cluster's nodes for `--seconds`,
//!   the dashboard's RSS sampled throughout, and its RSS after.

use std::{
    collections::HashMap,
    path::Path,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::Node;
use kube::{Api, Client, api::ListParams};

pub use crate::zones::ZONES;
use crate::{Args, churn, procs, report::Report, sse};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A cluster's nodes as (uid, name).
type Nodes = Vec<(String, String)>;

/// The most clusters a run can have: one per name in [`ZONES`].
pub const MAX_CLUSTERS: i64 = ZONES.len() as i64;

/// Node changes per second to the observed cluster in S2: about one flip a second for each
/// of its observed nodes, so that a change's delta arrives before the node's next change is
/// sent at any latency under a second.
const OBSERVED_RATE: u32 = 200;

/// How long the dashboard's CPU is read after listing, before any change is sent.
const QUIET: Duration = Duration::from_secs(30);

/// Observed pools at most (a pool page's stream each).
const OBSERVED_POOLS: usize = 20;

/// The fleet's run; see the module's documentation.
///
/// Errors: a child process that does not start, an API server or the dashboard that does not
/// answer, a cluster without nodes.
pub async fn run(args: &Args, dir: &Path, report: &mut Report) -> Res<()> {
    let zones = &ZONES[..args.clusters as usize];
    let kubeconfig = dir.join("kubeconfig");
    println!(
        "spotboard-bench: {} clusters, {} nodes × {} pods in NodePools of at most {}; {} changes/s for {} s; flood {} changes/s",
        zones.len(),
        args.nodes,
        args.pods_per_node,
        args.nodes_per_pool,
        args.rate,
        args.seconds,
        args.flood_rate,
    );

    let t = Instant::now();
    let cluster = procs::start_embedded(
        &kubeconfig,
        zones,
        args.nodes,
        args.pods_per_node,
        args.nodes_per_pool,
    )
    .await?;
    let contexts: Vec<String> = kube::config::Kubeconfig::read_from(&kubeconfig)?
        .contexts
        .into_iter()
        .map(|c| c.name)
        .collect();
    let mut clients = Vec::new();
    for context in &contexts {
        clients.push(churn::context_client(&kubeconfig, Some(context)).await?);
    }
    let per_cluster = args.nodes / zones.len();
    futures::future::try_join_all(
        clients
            .iter()
            .map(|c| churn::wait_for_nodes(c, per_cluster)),
    )
    .await?;
    let seeded = t.elapsed().as_secs_f64();
    let cluster_rss = procs::rss_kib(cluster.pid())? as f64 / 1024.0;
    report.add("embedded_seeded_s", seeded);
    report.add("embedded_rss_mb", cluster_rss);
    println!(
        "embedded cluster: {} API servers in one process, seeded in {seeded:.1} s; its RSS {cluster_rss:.1} MB (target ≤ 3,072 at 100k nodes and 1M pods)",
        contexts.len()
    );

    // S1: the first list of every cluster, RSS sampled from the start.
    let t = Instant::now();
    let dash = procs::spawn_dashboard(
        (&kubeconfig, &contexts),
        &dir.join("ledger.sqlite"),
        OBSERVED_POOLS + 10,
        args.one_core,
        procs::LAST_KNOWN_SECONDS,
    )?;
    let sampler = procs::RssSampler::start(dash.pid());
    procs::wait_ready(&dash.base).await?;
    let listed_s = t.elapsed().as_secs_f64();
    let listing = sampler.finish().await;
    let settled = procs::settled_rss_kib(dash.pid()).await? as f64 / 1024.0;
    // Sampled once a second: the settled reading, taken last, can be the highest.
    let peak = (listing.iter().max().copied().unwrap_or(0) as f64 / 1024.0).max(settled);
    let (pools, nodes) = fleet(&dash.base).await?;
    report.add("dashboard_listed_s", listed_s);
    report.add("dashboard_pools", pools as f64);
    report.add("dashboard_nodes", nodes as f64);
    report.add("dashboard_rss_listing_peak_mb", peak);
    report.add("dashboard_rss_listed_mb", settled);
    println!(
        "dashboard listed {} clusters ({pools} NodePools, {nodes} nodes) in {listed_s:.1} s{}",
        contexts.len(),
        if args.one_core { ", on one core" } else { "" }
    );

    // What the dashboard spends with no change sent by the bench (its ledger catching up
    // with the first list, the last known state kept, the behaviour model's own writes): the
    // ground the latencies below stand on. Its RSS is sampled too: the first look of the
    // ledger's pod recorder (every 15 s) comes after the list, and once raised the RSS
    // 400 MB above the settled figure for 25 s, which no reading above saw.
    let cpu = procs::cpu_seconds(dash.pid())?;
    let sampler = procs::RssSampler::start(dash.pid());
    tokio::time::sleep(QUIET).await;
    let busy = (procs::cpu_seconds(dash.pid())? - cpu) / QUIET.as_secs_f64();
    let after = sampler.finish().await.iter().max().copied().unwrap_or(0) as f64 / 1024.0;
    report.add("dashboard_rss_after_listing_peak_mb", after);
    println!(
        "S1 RSS dashboard: {settled:.1} MB once listed (target ≤ 250); peak while listing {peak:.1} MB, in the {} s after {after:.1} MB ({:.2}× the settled figure; target ≤ 1.5×)",
        QUIET.as_secs(),
        peak.max(after) / settled.max(1.0)
    );
    report.add("dashboard_quiet_cpu_percent", busy * 100.0);
    println!(
        "dashboard CPU over the next {} s with no change sent: {:.0} % of a core",
        QUIET.as_secs(),
        busy * 100.0
    );

    let mut node_lists = Vec::new();
    for client in &clients {
        node_lists.push(list_nodes(client).await?);
    }
    // Each cluster's nodes' cordon values across the runs, so each patch changes its node.
    let mut flips = vec![HashMap::new(); clients.len()];
    flood(
        args,
        &dash,
        (&contexts, &clients, &node_lists),
        &mut flips,
        report,
    )
    .await?;

    // S1 after the churn: `--rate` changes a second, shared evenly by the clusters.
    let sampler = procs::RssSampler::start(dash.pid());
    let per_rate = (args.rate / clients.len() as u32).max(1);
    let length = Duration::from_secs(args.seconds);
    let runs = clients
        .iter()
        .zip(&node_lists)
        .zip(flips.iter_mut())
        .map(|((client, nodes), flips)| churn::run(client, nodes, flips, per_rate, length));
    let sent: usize = futures::future::try_join_all(runs)
        .await?
        .iter()
        .map(Vec::len)
        .sum();
    let during = sampler.finish().await;
    let after = procs::settled_rss_kib(dash.pid()).await? as f64 / 1024.0;
    report.add("churn_changes_sent", sent as f64);
    report.add("dashboard_rss_after_run_mb", after);
    println!(
        "S1 churn: {sent} node changes over {} clusters in {} s; RSS dashboard after it {after:.1} MB (target ≤ 250)",
        clients.len(),
        args.seconds
    );
    crate::rss_during_run(&during, report);
    drop(dash);
    drop(cluster);
    Ok(())
}

/// S2 and S3: the observed cluster's pool-page latency alone, then with another cluster
/// flooded; and the dashboard's CPU time per change.
async fn flood(
    args: &Args,
    dash: &procs::Dashboard,
    (contexts, clients, node_lists): (&[String], &[Client], &[Nodes]),
    flips: &mut [HashMap<String, bool>],
    report: &mut Report,
) -> Res<()> {
    // The first cluster is flooded, the second observed.
    let (flooded, observed) = (0, 1);
    let [flood_flips, cordoned, ..] = flips else {
        return Err("S2 needs two clusters".into());
    };
    let (streams, watched) = observe(&dash.base, &contexts[observed]).await?;
    println!(
        "S2: observing {} pools ({} nodes) of {} at {OBSERVED_RATE} changes/s; flooding {} ({} nodes)",
        streams.len(),
        watched.len(),
        contexts[observed],
        contexts[flooded],
        node_lists[flooded].len()
    );
    let length = Duration::from_secs(args.flood_seconds);
    let rate = OBSERVED_RATE.min(watched.len() as u32).max(1);

    let cpu = procs::cpu_seconds(dash.pid())?;
    let alone = churn::run(&clients[observed], &watched, cordoned, rate, length).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu_alone = procs::cpu_seconds(dash.pid())? - cpu;
    let quiet = churn::latencies(&alone, &seen(&streams));
    crate::latency_figures(
        "s2_alone_latency",
        &format!(
            "  {} alone: node change → pool page latency",
            contexts[observed]
        ),
        &quiet,
        report,
    );
    cpu_per_change("s2_alone", cpu_alone, alone.len(), report);

    for s in &streams {
        s.reset();
    }
    let cpu = procs::cpu_seconds(dash.pid())?;
    let started = Instant::now();
    let (beside, flood) = tokio::join!(
        churn::run(&clients[observed], &watched, cordoned, rate, length),
        churn::run(
            &clients[flooded],
            &node_lists[flooded],
            flood_flips,
            args.flood_rate,
            length,
        ),
    );
    let (beside, flood) = (beside?, flood?);
    // The run ends with its last answer: an API server that cannot keep up stretches it.
    let took = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cpu_flooded = procs::cpu_seconds(dash.pid())? - cpu;
    let achieved = flood.len() as f64 / took;
    report.add("s2_flood_changes_per_s", achieved);
    println!(
        "  {} flooded: {} changes answered in {took:.1} s ({achieved:.0}/s of the {} asked)",
        contexts[flooded],
        flood.len(),
        args.flood_rate
    );
    crate::latency_figures(
        "s2_flooded_latency",
        &format!(
            "  {} beside the flood: node change → pool page latency (alone: above)",
            contexts[observed]
        ),
        &churn::latencies(&beside, &seen(&streams)),
        report,
    );
    cpu_per_change(
        "s3_flooded",
        cpu_flooded,
        beside.len() + flood.len(),
        report,
    );
    Ok(())
}

/// Records and prints the dashboard's CPU time per node change (µs).
fn cpu_per_change(name: &str, cpu_s: f64, changes: usize, report: &mut Report) {
    let per = cpu_s * 1e6 / changes.max(1) as f64;
    report.add(&format!("{name}_cpu_us_per_change"), per);
    println!(
        "  dashboard CPU: {cpu_s:.1} s for {changes} changes, {per:.0} µs per change ({:.0} changes per CPU-second)",
        1e6 / per.max(1.0)
    );
}

/// Pool page streams for up to [`OBSERVED_POOLS`] pools of `cluster` (the first by name that
/// have nodes), and those pools' nodes as (uid, name).
async fn observe(base: &str, cluster: &str) -> Res<(Vec<sse::Counter>, Nodes)> {
    let pools = churn::pools(base).await?;
    let mut names: Vec<&str> = pools
        .iter()
        .filter(|p| p["cluster"] == cluster && p["current_nodes"].as_i64().unwrap_or(0) > 0)
        .filter_map(|p| p["name"].as_str())
        .collect();
    names.sort_unstable();
    let mut streams = Vec::new();
    let mut nodes = Vec::new();
    for pool in names.into_iter().take(OBSERVED_POOLS) {
        let (_, _, pool_nodes) = churn::pool_nodes(base, cluster, pool).await?;
        nodes.extend(pool_nodes);
        streams.push(
            sse::Counter::open(&format!(
                "{base}/api/v1/stream?cluster={cluster}&pool={pool}"
            ))
            .await?,
        );
    }
    if nodes.is_empty() {
        return Err(format!("no pool of {cluster} has nodes").into());
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok((streams, nodes))
}

/// Every node delta the streams have seen, stream by stream (each node is in one pool, so a
/// node's deltas stay in order).
fn seen(streams: &[sse::Counter]) -> Vec<sse::Seen> {
    streams.iter().flat_map(|s| s.deltas()).collect()
}

/// Every node of a cluster as (uid, name), from its API server.
async fn list_nodes(client: &Client) -> Res<Nodes> {
    let list = Api::<Node>::all(client.clone())
        .list_metadata(&ListParams::default())
        .await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|n| Some((n.metadata.uid?, n.metadata.name?)))
        .collect())
}

/// `/api/v1/pools`' pool count and the sum of their nodes.
async fn fleet(base: &str) -> Res<(usize, i64)> {
    let pools = churn::pools(base).await?;
    let nodes = pools
        .iter()
        .filter_map(|p| p["current_nodes"].as_i64())
        .sum();
    Ok((pools.len(), nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cluster_has_a_zone_of_its_own() {
        // Two clusters of one zone would share a context name in the kubeconfig.
        let mut seen = std::collections::HashSet::new();
        assert!(ZONES.iter().all(|z| seen.insert(*z)), "a zone named twice");
    }
}
