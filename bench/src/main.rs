//! `spotboard-bench`: the scale benchmark. Prints figures; asserts nothing (targets are in
//! docs/performance.md and the issue, not in a timed test).
//!
//! It runs the embedded cluster and the dashboard (`spotboard embedded` and `spotboard`, the
//! server crate's binary) as two child processes, so the dashboard's RSS is its own, then
//! measures:
//! - dashboard RSS (MB, MiB of resident memory read from `/proc`) after listing N nodes and
//!   N×pods-per-node pods;
//! - bytes a browser stream receives per node change (bytes of SSE payload; pools scope and
//!   pool scope);
//! - node change → stream latency (ms, from the patch being sent to the delta arriving),
//!   p50/p99/max, while changes flow at the given rate;
//! - the number of watches the API server has open with 1,000 streams open, and the
//!   dashboard memory each of those streams costs (KiB per stream);
//! - node change → stream latency again with those 1,000 streams open (fan-out), with the
//!   dashboard on one core when `--one-core` (the default) and `taskset` is there;
//! - showback's query time over `--showback-days` (30) days of pod intervals, one a pod a day,
//!   beside the savings report's over the same lifetimes, and the RSS peak meanwhile;
//! - with `--pending-pods N` (default 10,000) a runaway Job's pending pods (`pending.rs`):
//!   the dashboard's RSS once it lists them, and node change → stream latency again with
//!   them waiting, beside the same run's figures without them;
//! - a restart (`restart.rs`): the dashboard killed and started again on its ledger, the
//!   seconds until it shows every pool (its last known state, stale) and until it has listed,
//!   beside the same run's cold start;
//! - the baselines (`baseline.rs`): a plain reflector's RSS over the same objects, and the
//!   embedded cluster's objects' serialized size (MB).
//!
//! Usage: `./tasks.sh bench [--quick] [--nodes 10000] [--pods-per-node 5] [--rate 1000]
//! [--seconds 10] [--fan-out-seconds 10] [--json FILE]`, which builds `spotboard` and this
//! binary in release and runs it. It finds `spotboard` next to its own executable
//! (`target/release/`), so run by hand it needs
//! `cargo build --release -p server --bin spotboard -p spotboard-bench` first. `--json` also
//! writes the figures as one JSON object, so two runs can be compared (`report.rs`).
//!
//! # Layout
//! - `main.rs`: the CLI and the run, step by step: seed, list, streams, churn, fan-out; prints
//!   each figure as it is measured.
//! - `procs.rs`: the two child processes (embedded cluster, dashboard), their readiness, RSS
//!   readings (once and sampled) and the API server's watch count.
//! - `churn.rs`: node changes (cordon/uncordon patches) at a rate through the API server, and
//!   matching them to the stream's deltas for latencies.
//! - `sse.rs`: the browser stand-in: one SSE stream, counting bytes and keeping node deltas.
//! - `baseline.rs`: what the memory figures are compared with: a plain kube-rs reflector (run
//!   as a child of this binary) and the serialized size of the embedded cluster's objects.
//! - `pending.rs`: the runaway Job's pending pods.
//! - `showback.rs`: showback's query over `--showback-days` of pod intervals, beside the
//!   savings report's.
//! - `restart.rs`: the restart's first paint from the last known state.
//! - `report.rs`: the figures as one JSON object (`--json`).
//! - `clusters.rs`: with `--clusters N` (N > 1), the fleet's run instead: N clusters in one
//!   embedded process, the dashboard's RSS listing them and through the churn (S1), and one
//!   cluster flooded while another's stream latency is measured (S2).
//!
//! `churn.rs` and `sse.rs` are also compiled into the server's integration tests
//! (`server/tests/it/main.rs`, `#[path]`), for R4's latency with a stalled viewer: they use only
//! what the server crate also depends on.

mod baseline;
mod churn;
mod clusters;
mod pending;
mod procs;
mod report;
mod restart;
mod showback;
mod sse;
mod zones;

use std::time::{Duration, Instant};

use clap::Parser;

// The dashboard's allocator, so that the baseline reflector (this binary) is measured alike.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Length of the fan-out run (the same churn with `--streams` dashboards open), seconds:
    /// kept apart from `--seconds` so that a 10-minute memory run does not also churn for 10
    /// minutes more with 1,000 dashboards open.
    #[arg(long, default_value_t = 10)]
    fan_out_seconds: u64,
    /// Pending pods of one runaway Job created after the fan-out run (0: none): the dashboard's
    /// RSS with them and the latency run again.
    #[arg(long, default_value_t = 10_000)]
    pending_pods: usize,
    /// Browser streams opened for the watch-count and memory-per-viewer checks.
    #[arg(long, default_value_t = 1000)]
    streams: usize,
    /// A figure table in about a minute: 1,000 nodes, 5 s of churn each time, 100 streams,
    /// 1,000 pending pods, 3 days of showback (overrides `--nodes`, `--seconds`,
    /// `--fan-out-seconds`, `--streams`, `--pending-pods` and `--showback-days`).
    #[arg(long)]
    quick: bool,
    /// Days of synthetic pod intervals written into the dashboard's ledger before showback's
    /// query is timed (one interval a pod a day); 0 skips the step.
    #[arg(long, default_value_t = 30)]
    showback_days: i64,
    /// Restart the dashboard without its last known state (`--last-known-seconds 0`): the
    /// control for the restart step's figures.
    #[arg(long)]
    restart_cold: bool,
    /// Clusters (CKS zones, each its own API server in the embedded cluster's one process)
    /// the `--nodes` are spread over. Above 1 the run is the fleet's (`clusters.rs`: S1 and
    /// S2 of the scale issue) instead of the single cluster's steps.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=clusters::MAX_CLUSTERS))]
    clusters: u32,
    /// At most this many of the `--nodes` in each NodePool (`--nodes 100000 --nodes-per-pool
    /// 10`: 10,000 NodePools).
    #[arg(long, default_value_t = 2_500, value_parser = clap::value_parser!(u32).range(1..))]
    nodes_per_pool: u32,
    /// With `--clusters`: node changes per second sent to one cluster while the other
    /// clusters' stream latency is measured (S2's flood).
    #[arg(long, default_value_t = 10_000)]
    flood_rate: u32,
    /// With `--clusters`: length of each of S2's two runs (alone, then beside the flood),
    /// seconds; kept apart from `--seconds`, S1's churn, which the issue wants 10 minutes long.
    #[arg(long, default_value_t = 10)]
    flood_seconds: u64,
    /// Also write the figures to this file as JSON.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Pin the dashboard to one core (`taskset -c 0`) for the whole run.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    one_core: bool,
    /// Internal: run as the baseline reflector over this kubeconfig's cluster.
    #[arg(long, hide = true)]
    baseline_reflector: Option<std::path::PathBuf>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = Args::parse();
    if let Some(kubeconfig) = &args.baseline_reflector {
        return baseline::run_reflector(kubeconfig).await;
    }
    if args.quick {
        args.showback_days = 3;
        args.nodes = 1_000;
        args.seconds = 5;
        args.fan_out_seconds = 5;
        args.streams = 100;
        args.pending_pods = 1_000;
    }
    let mut report = report::Report::new(&args);
    let dir = tempfile_dir()?;
    if args.clusters > 1 {
        clusters::run(&args, &dir, &mut report).await?;
        return finish(&args, &report, &dir);
    }
    let kubeconfig = dir.join("kubeconfig");
    // The fleet run's first cluster, so one run's figures read beside the other's.
    let zone = clusters::ZONES[0];
    println!(
        "spotboard-bench: {} nodes × {} pods, {} changes/s for {} s",
        args.nodes, args.pods_per_node, args.rate, args.seconds
    );

    let t = Instant::now();
    let cluster = procs::start_embedded(
        &kubeconfig,
        &[zone],
        args.nodes,
        args.pods_per_node,
        args.nodes_per_pool,
    )
    .await?;
    let admin = churn::admin_client(&kubeconfig).await?;
    churn::wait_for_nodes(&admin, args.nodes).await?;
    let seeded = t.elapsed().as_secs_f64();
    let cluster_rss = procs::rss_kib(cluster.pid())? as f64 / 1024.0;
    report.add("embedded_seeded_s", seeded);
    report.add("embedded_rss_mb", cluster_rss);
    println!(
        "embedded cluster seeded in {seeded:.1} s; its RSS {cluster_rss:.1} MB (a separate process, not the dashboard)"
    );
    let mut serialized = 0;
    for path in ["/api/v1/nodes", "/api/v1/pods"] {
        serialized += baseline::list_bytes(&cluster.url, &cluster.token, path).await?;
    }
    let serialized = serialized as f64 / (1024.0 * 1024.0);
    report.add("embedded_serialized_mb", serialized);

    let t = Instant::now();
    let dash = procs::start_dashboard(
        &kubeconfig,
        &dir.join("ledger.sqlite"),
        args.streams + 10,
        args.one_core,
    )
    .await?;
    let cold_s = t.elapsed().as_secs_f64();
    report.add("dashboard_listed_s", cold_s);
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
    let reflector = baseline::Reflector::start(&kubeconfig).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let base_rss = procs::rss_kib(reflector.pid())? as f64 / 1024.0;
    report.add("baseline_reflector_rss_mb", base_rss);
    println!(
        "  baseline, a plain kube-rs reflector over the same Nodes and Pods: {base_rss:.1} MB (dashboard / baseline {:.2})",
        rss as f64 / 1024.0 / base_rss
    );
    let settled = procs::rss_kib(cluster.pid())? as f64 / 1024.0;
    report.add("embedded_rss_settled_mb", settled);
    println!(
        "RSS embedded cluster once settled: {settled:.1} MB (target ≤ 300); its Nodes and Pods serialized: {serialized:.1} MB (ratio {:.2})",
        settled / serialized
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
    let rss_streams = procs::settled_rss_kib(dash.pid()).await?;
    let mut extra = Vec::new();
    for _ in 0..args.streams {
        extra.push(sse::Counter::open(&format!("{base}/api/v1/stream")).await?);
    }
    let rss_with = procs::settled_rss_kib(dash.pid()).await?;
    report.add(
        "dashboard_rss_before_streams_mb",
        rss_streams as f64 / 1024.0,
    );
    report.add("dashboard_rss_with_streams_mb", rss_with as f64 / 1024.0);
    report.add(
        "kib_per_stream",
        (rss_with as f64 - rss_streams as f64) / args.streams as f64,
    );
    // RSS, not heap, even once settled: the allocator may still return the listing's memory
    // meanwhile, so this is a rough figure.
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

    let mut cordoned = std::collections::HashMap::new();
    let sampler = procs::RssSampler::start(dash.pid());
    let sent = churn::run(
        &admin,
        &nodes,
        &mut cordoned,
        args.rate,
        Duration::from_secs(args.seconds),
    )
    .await?;
    let during = sampler.finish().await;
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
    if let (Some(mid), Some(high), Some(max)) = (
        rtt.get(rtt.len() / 2),
        rtt.get(rtt.len() * 99 / 100),
        rtt.last(),
    ) {
        // The maximum too: a change's latency starts when its patch is sent, so a slow patch
        // shows up as a slow delta.
        report.add("patch_rtt_max_ms", max.as_secs_f64() * 1000.0);
        println!(
            "API server patch round trip (the embedded cluster, not the dashboard): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            mid.as_secs_f64() * 1000.0,
            high.as_secs_f64() * 1000.0,
            max.as_secs_f64() * 1000.0
        );
    }
    latency_figures(
        "stream_latency",
        "node change → stream latency",
        &churn::latencies(&sent, &pool_stream.deltas()),
        &mut report,
    );
    report.add("nodes_under_notice_left_out", pool_stream.noticed() as f64);
    println!(
        "  left out: the deltas of {} churned node(s) the behaviour model put under a preemption notice (it cordons them itself)",
        pool_stream.noticed()
    );
    let rss_after = procs::rss_kib(dash.pid())?;
    let base_after = procs::rss_kib(reflector.pid())? as f64 / 1024.0;
    println!(
        "RSS dashboard after the run: {:.1} MB (baseline reflector: {base_after:.1} MB, ratio {:.2})",
        rss_after as f64 / 1024.0,
        rss_after as f64 / 1024.0 / base_after
    );
    report.add("dashboard_rss_after_run_mb", rss_after as f64 / 1024.0);
    rss_during_run(&during, &mut report);
    report.add("baseline_reflector_rss_after_run_mb", base_after);
    drop(reflector);

    fan_out(
        &args,
        &admin,
        &dash,
        &nodes,
        &mut cordoned,
        (&cluster_name, &pool),
        &mut report,
    )
    .await?;
    if args.pending_pods > 0 {
        pending_pods(
            &args,
            &admin,
            &dash,
            &nodes,
            &mut cordoned,
            (&cluster_name, &pool),
            &mut report,
        )
        .await?;
    }
    if args.showback_days > 0 {
        showback::run(
            &dash,
            &dir.join("ledger.sqlite"),
            (args.nodes, args.pods_per_node, args.showback_days),
            &mut report,
        )
        .await?;
    }
    let dash = restart::run(
        dash,
        (&kubeconfig, &dir.join("ledger.sqlite")),
        args.streams + 10,
        (cold_s, args.restart_cold),
        &mut report,
    )
    .await?;
    drop(dash);
    finish(&args, &report, &dir)
}

/// The end of a run: the figures written to `--json`, the run's directory removed (after its
/// processes, which use it, have ended).
fn finish(
    args: &Args,
    report: &report::Report,
    dir: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(path) = &args.json {
        report.write(path)?;
        println!("figures written to {}", path.display());
    }
    std::fs::remove_dir_all(dir)?;
    Ok(())
}

/// The latency run again with `--streams` dashboards open beside the pool page: the
/// dashboard's fan-out to that many viewers (P6), on one core with `--one-core`.
async fn fan_out(
    args: &Args,
    admin: &kube::Client,
    dash: &procs::Dashboard,
    nodes: &[(String, String)],
    cordoned: &mut std::collections::HashMap<String, bool>,
    (cluster, pool): (&str, &str),
    report: &mut report::Report,
) -> Result<(), Box<dyn std::error::Error>> {
    let base = &dash.base;
    let pool_stream = sse::Counter::open(&format!(
        "{base}/api/v1/stream?cluster={cluster}&pool={pool}"
    ))
    .await?;
    let mut viewers = Vec::new();
    for _ in 0..args.streams {
        viewers.push(sse::Counter::open(&format!("{base}/api/v1/stream")).await?);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    for v in &viewers {
        v.reset();
    }
    let sent = churn::run(
        admin,
        nodes,
        cordoned,
        args.rate,
        Duration::from_secs(args.fan_out_seconds),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss = procs::rss_kib(dash.pid())? as f64 / 1024.0;
    report.add("fanout_dashboard_rss_mb", rss);
    let behind = viewers.iter().filter(|v| v.bytes() == 0).count();
    // Each stream's first snapshot is expected; any more is a resync (it fell behind).
    let resynced = viewers.iter().filter(|v| v.snapshots() > 1).count();
    report.add("fanout_streams_resynced", resynced as f64);
    println!(
        "fan-out: {} dashboards open{}, RSS {rss:.1} MB; {behind} of them received no delta during the run, {resynced} were resynced",
        args.streams,
        if args.one_core {
            ", the server on one core"
        } else {
            ""
        },
    );
    latency_figures(
        "fanout_latency",
        "  node change → pool page latency meanwhile",
        &churn::latencies(&sent, &pool_stream.deltas()),
        report,
    );
    Ok(())
}

/// A runaway Job's `--pending-pods` pending pods: the dashboard's RSS before and once it
/// lists them (what the hub holds per pending pod), and the latency run again with them
/// waiting (the waiting rows are made again every second from all of them), to read beside
/// the first latency run's figures.
async fn pending_pods(
    args: &Args,
    admin: &kube::Client,
    dash: &procs::Dashboard,
    nodes: &[(String, String)],
    cordoned: &mut std::collections::HashMap<String, bool>,
    (cluster, pool): (&str, &str),
    report: &mut report::Report,
) -> Result<(), Box<dyn std::error::Error>> {
    let n = args.pending_pods;
    let before = procs::settled_rss_kib(dash.pid()).await? as f64;
    let created = pending::create(admin, n).await?;
    let listed = pending::wait_listed(&dash.base, cluster, n).await?;
    let after = procs::settled_rss_kib(dash.pid()).await? as f64;
    report.add("pending_pods", n as f64);
    report.add("pending_rss_before_mb", before / 1024.0);
    report.add("pending_rss_listed_mb", after / 1024.0);
    report.add(
        "pending_bytes_per_pod",
        (after - before) * 1024.0 / n as f64,
    );
    println!(
        "pending pods: {n} of one Job created in {:.1} s, on /api/v1/waiting {:.1} s later; RSS dashboard {:.1} → {:.1} MB ({:.0} bytes per pending pod)",
        created.as_secs_f64(),
        listed.as_secs_f64(),
        before / 1024.0,
        after / 1024.0,
        (after - before) * 1024.0 / n as f64
    );
    let pool_stream = sse::Counter::open(&format!(
        "{}/api/v1/stream?cluster={cluster}&pool={pool}",
        dash.base
    ))
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let sent = churn::run(
        admin,
        nodes,
        cordoned,
        args.rate,
        Duration::from_secs(args.seconds),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    latency_figures(
        "pending_latency",
        &format!(
            "  node change → stream latency with {n} pods pending (without: stream_latency above)"
        ),
        &churn::latencies(&sent, &pool_stream.deltas()),
        report,
    );
    Ok(())
}

/// Prints and records p50, p99 and max of `lat` as `{name}_p50_ms` and so on.
pub(crate) fn latency_figures(
    name: &str,
    label: &str,
    lat: &[Duration],
    report: &mut report::Report,
) {
    let mut lat = lat.to_vec();
    lat.sort();
    if lat.is_empty() {
        println!("{label}: no node deltas matched");
        return;
    }
    let p = |q: f64| lat[((lat.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1000.0;
    report.add(&format!("{name}_p50_ms"), p(0.5));
    report.add(&format!("{name}_p99_ms"), p(0.99));
    report.add(&format!("{name}_max_ms"), p(1.0));
    println!(
        "{label} over {} deltas: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (target p99 ≤ 250)",
        lat.len(),
        p(0.5),
        p(0.99),
        p(1.0)
    );
}

fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("spotboard-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The dashboard's RSS across the churn: its peak, and the least and most of the last minute
/// (the whole run when shorter), so a reading taken during a passing peak can be told from
/// growth.
pub(crate) fn rss_during_run(samples: &[u64], report: &mut report::Report) {
    let mb = |kib: u64| kib as f64 / 1024.0;
    let last = &samples[samples.len().saturating_sub(60)..];
    let (Some(peak), Some(low), Some(high)) =
        (samples.iter().max(), last.iter().min(), last.iter().max())
    else {
        return;
    };
    report.add("dashboard_rss_run_peak_mb", mb(*peak));
    report.add("dashboard_rss_last_minute_min_mb", mb(*low));
    report.add("dashboard_rss_last_minute_max_mb", mb(*high));
    println!(
        "RSS dashboard during the run (once a second, {} readings): peak {:.1} MB; last {} s {:.1}–{:.1} MB",
        samples.len(),
        mb(*peak),
        last.len(),
        mb(*low),
        mb(*high)
    );
}
