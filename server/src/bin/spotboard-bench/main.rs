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
//! Usage: `./tasks.sh bench [--nodes 10000] [--pods-per-node 5] [--rate 1000] [--seconds 10]`.

mod churn;
mod procs;
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
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
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
    println!(
        "embedded cluster seeded in {:.1} s; its RSS {:.1} MB (a separate process, not the dashboard)",
        t.elapsed().as_secs_f64(),
        procs::rss_kib(cluster.pid())? as f64 / 1024.0
    );

    let t = Instant::now();
    let dash = procs::start_dashboard(&kubeconfig, args.streams + 10).await?;
    println!(
        "dashboard listed everything in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss = procs::rss_kib(dash.pid())?;
    println!(
        "RSS dashboard: {:.1} MB with {} nodes and {} pods watched ({:.1} MB per 10k nodes; target ≤ 60)",
        rss as f64 / 1024.0,
        args.nodes,
        args.nodes * args.pods_per_node,
        rss as f64 / 1024.0 / (args.nodes as f64 / 10_000.0)
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
        Ok(w) => println!(
            "watches open on the API server with {} streams: {w}",
            args.streams + 2
        ),
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
    Ok(())
}

fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("spotboard-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
