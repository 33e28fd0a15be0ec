//! `spotboard-bench`: the scale benchmark. Prints figures; asserts nothing (targets are in
//! the README and the issue, not in a timed test).
//!
//! It runs the embedded cluster and the dashboard as two processes (so the dashboard's RSS is
//! its own), then measures:
//! - dashboard RSS after listing N nodes and N×pods-per-node pods;
//! - bytes a browser stream receives per node change (pools scope and pool scope);
//! - node change → stream latency, p50/p99, while changes flow at the given rate;
//! - the number of watches the API server has open with 1,000 streams open, and the
//!   dashboard memory each of those streams costs.
//!
//! Usage: `./tasks.sh bench [--quick] [--nodes 10000] [--pods-per-node 5] [--rate 1000]
//! [--seconds 10] [--json FILE]`. `--json` also writes the figures as one JSON object, so two
//! runs can be compared (`report.rs`).

mod churn;
mod procs;
mod report;
mod sse;

use std::time::{Duration, Instant};

use clap::Parser;

#[derive(Parser, Debug)]
struct Args {
    /// Nodes in the embedded cluster's scale pool.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// Pods on each of those nodes.
    #[arg(long, default_value_t = 5)]
    pods_per_node: usize,
    /// Node changes per second during the latency run.
    #[arg(long, default_value_t = 1000)]
    rate: u32,
    /// Length of the latency run, seconds.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Browser streams opened for the watch-count and memory-per-viewer checks.
    #[arg(long, default_value_t = 1000)]
    streams: usize,
    /// A figure table in about a minute: 1,000 nodes, 5 s of churn, 100 streams (overrides
    /// `--nodes`, `--seconds` and `--streams`).
    #[arg(long)]
    quick: bool,
    /// Also write the figures to this file as JSON.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = Args::parse();
    if args.quick {
        args.nodes = 1_000;
        args.seconds = 5;
        args.streams = 100;
    }
    let mut report = report::Report::new(&args);
    let dir = tempfile_dir()?;
    let kubeconfig = dir.join("kubeconfig");
    let zone = "US-EAST-04A";
    println!(
        "spotboard-bench: {} nodes × {} pods, {} changes/s for {} s",
        args.nodes, args.pods_per_node, args.rate, args.seconds
    );

    let t = Instant::now();
    let cluster = procs::start_embedded(&kubeconfig, zone, args.nodes, args.pods_per_node).await?;
    let admin = churn::admin_client(&kubeconfig).await?;
    churn::wait_for_nodes(&admin, args.nodes).await?;
    let seeded = t.elapsed().as_secs_f64();
    let cluster_rss = procs::rss_kib(cluster.pid())? as f64 / 1024.0;
    report.add("embedded_seeded_s", seeded);
    report.add("embedded_rss_mb", cluster_rss);
    println!(
        "embedded cluster seeded in {seeded:.1} s; its RSS {cluster_rss:.1} MB (a separate process, not the dashboard)"
    );

    let t = Instant::now();
    let dash = procs::start_dashboard(&kubeconfig, args.streams + 10).await?;
    report.add("dashboard_listed_s", t.elapsed().as_secs_f64());
    println!(
        "dashboard listed everything in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss = procs::rss_kib(dash.pid())?;
    report.add("dashboard_rss_listed_mb", rss as f64 / 1024.0);
    // The target is for 10k nodes; a smaller run's RSS is mostly the process's fixed cost, so
    // it is not scaled up to a per-10k figure.
    println!(
        "RSS dashboard: {:.1} MB with {} nodes and {} pods watched (target ≤ 60 at 10k nodes)",
        rss as f64 / 1024.0,
        args.nodes,
        args.nodes * args.pods_per_node,
    );

    let base = dash.base.clone();
    let (cluster_name, pool, nodes) = churn::biggest_pool(&base).await?;
    println!(
        "churning pool {pool} ({} nodes) in {cluster_name}",
        nodes.len()
    );

    let pools_stream = sse::Counter::open(&format!("{base}/api/v1/stream")).await?;
    let pool_stream = sse::Counter::open(&format!(
        "{base}/api/v1/stream?cluster={cluster_name}&pool={pool}"
    ))
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_streams = procs::rss_kib(dash.pid())?;
    let mut extra = Vec::new();
    for _ in 0..args.streams {
        extra.push(sse::Counter::open(&format!("{base}/api/v1/stream")).await?);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_with = procs::rss_kib(dash.pid())?;
    report.add(
        "dashboard_rss_before_streams_mb",
        rss_streams as f64 / 1024.0,
    );
    report.add("dashboard_rss_with_streams_mb", rss_with as f64 / 1024.0);
    report.add(
        "kib_per_stream",
        (rss_with as f64 - rss_streams as f64) / args.streams as f64,
    );
    // RSS, not heap: the allocator may return the listing's memory meanwhile, so this is a
    // rough figure (it can even come out below zero).
    println!(
        "RSS dashboard before / with {} open streams: {:.1} / {:.1} MB ({:.1} KiB per stream; target ≤ 64)",
        args.streams,
        rss_streams as f64 / 1024.0,
        rss_with as f64 / 1024.0,
        (rss_with as f64 - rss_streams as f64) / args.streams as f64
    );
    match procs::watch_count(&cluster.url, &cluster.token).await {
        Ok(w) => {
            let per_kind: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&w).unwrap_or_default();
            for (plural, n) in per_kind {
                report.add(
                    &format!("watches_open_{plural}"),
                    n.as_f64().unwrap_or(-1.0),
                );
            }
            println!(
                "watches open on the API server with {} streams: {w} (one of each of nodes, pods \
                 and nodepools is the behaviour model's own, in the embedded cluster's process)",
                args.streams + 2
            )
        }
        Err(e) => println!("watches open on the API server: unavailable ({e})"),
    }
    // The latency and bytes runs measure one dashboard tab and one pool page; the extra
    // streams only showed that they do not add watches.
    drop(extra);
    pools_stream.reset();
    pool_stream.reset();

    let sent = churn::run(
        &admin,
        &nodes,
        &mut Default::default(),
        args.rate,
        Duration::from_secs(args.seconds),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let changes = sent.len() as f64;
    println!("node changes sent: {} in {} s", sent.len(), args.seconds);
    report.add("node_changes_sent", changes);
    report.add(
        "bytes_per_change_pools",
        pools_stream.bytes() as f64 / changes,
    );
    report.add(
        "bytes_per_change_pool",
        pool_stream.bytes() as f64 / changes,
    );
    println!(
        "bytes per node change: {:.0} (pools scope: the dashboard), {:.0} (pool scope: the pool page); target ≤ 200",
        pools_stream.bytes() as f64 / changes,
        pool_stream.bytes() as f64 / changes
    );
    let mut rtt: Vec<Duration> = sent.iter().map(|s| s.3).collect();
    rtt.sort();
    if let (Some(mid), Some(high)) = (rtt.get(rtt.len() / 2), rtt.get(rtt.len() * 99 / 100)) {
        println!(
            "API server patch round trip (the embedded cluster, not the dashboard): p50 {:.1} ms, p99 {:.1} ms",
            mid.as_secs_f64() * 1000.0,
            high.as_secs_f64() * 1000.0
        );
    }
    let mut lat = churn::latencies(&sent, &pool_stream.deltas());
    lat.sort();
    if lat.is_empty() {
        println!("latency: no node deltas matched");
    } else {
        let p =
            |q: f64| lat[((lat.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1000.0;
        report.add("stream_latency_p50_ms", p(0.5));
        report.add("stream_latency_p99_ms", p(0.99));
        report.add("stream_latency_max_ms", p(1.0));
        println!(
            "node change → stream latency over {} deltas: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 ≤ 250)",
            lat.len(),
            p(0.5),
            p(0.99),
            p(1.0)
        );
    }
    let rss_after = procs::rss_kib(dash.pid())?;
    println!(
        "RSS dashboard after the run: {:.1} MB",
        rss_after as f64 / 1024.0
    );
    report.add("dashboard_rss_after_run_mb", rss_after as f64 / 1024.0);
    if let Some(path) = &args.json {
        report.write(path)?;
        println!("figures written to {}", path.display());
    }
    Ok(())
}

fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("spotboard-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
