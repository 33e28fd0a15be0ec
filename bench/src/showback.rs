//! Showback's query over a month of pod intervals: the dashboard's own ledger is filled with
//! `--showback-days` days of synthetic history (one lifetime per node of the run, each pod of
//! the run restarting once a day: one interval a pod a day), then `GET /api/v1/showback` is
//! timed over that range beside `GET /api/v1/savings` over the same lifetimes (the same-run
//! baseline: everything showback does but read and fold the intervals), with the dashboard's
//! RSS sampled meanwhile.
//!
//! The rows are written straight into the SQLite file the dashboard migrated (write-ahead
//! log: the dashboard keeps running), under a cluster name the dashboard does not watch, so
//! its recorder leaves them alone. The columns are those of `server/migrations`.

use std::time::{Duration, Instant};

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

use crate::procs;
use crate::report::Report;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The cluster the synthetic history belongs to (not one the dashboard watches).
const CLUSTER: &str = "bench-history";

/// Writes `days` of history for `nodes` nodes of `pods_per_node` pods into the ledger at
/// `ledger`, ending now. Returns the intervals written.
async fn fill(ledger: &std::path::Path, nodes: usize, pods_per_node: usize, days: i64) -> Res<u64> {
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(ledger)
                .busy_timeout(Duration::from_secs(30)),
        )
        .await?;
    let now = chrono::Utc::now().timestamp();
    let start = now - days * 86_400;
    let mut tx = pool.begin().await?;
    for n in 0..nodes {
        sqlx::query(
            "INSERT INTO node_lifetimes (uid, cluster, node, pool, instance_type, zone, capacity_type, gpus, started_at, ended_at, end_reason)
             VALUES ($1, $2, $3, 'history', 'gd-8xa100-i128', 'US-EAST-04A', 'spot', 8, $4, $5, 'deleted')",
        )
        .bind(format!("bench-node-{n}"))
        .bind(CLUSTER)
        .bind(format!("history-{n}"))
        .bind(start)
        .bind(now - 60)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    let mut written = 0u64;
    for day in 0..days {
        let mut tx = pool.begin().await?;
        for n in 0..nodes {
            for p in 0..pods_per_node {
                let s = start + day * 86_400;
                sqlx::query(
                    "INSERT INTO pod_intervals (pod_uid, started_at, ended_at, cluster, node_uid, namespace, workload,
                       team, gpus, cpu_m, memory_b, node_gpus, node_cpu_m, node_memory_b)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, 4000, 17179869184, 8, 128000, 1099511627776)",
                )
                .bind(format!("bench-pod-{n}-{p}-{day}"))
                .bind(s)
                .bind((s + 86_400).min(now - 60))
                .bind(CLUSTER)
                .bind(format!("bench-node-{n}"))
                .bind(format!("ns-{}", (n + p) % 20))
                .bind(format!("Job/job-{}", n % 200))
                .bind(format!("team-{}", n % 7))
                .execute(&mut *tx)
                .await?;
                written += 1;
            }
        }
        tx.commit().await?;
    }
    pool.close().await;
    Ok(written)
}

/// Median and maximum of `runs` timed GETs of `url`, seconds; errors on a non-200.
async fn timed(url: &str, runs: usize) -> Res<(f64, f64)> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()?;
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let r = client.get(url).send().await?;
        if !r.status().is_success() {
            return Err(format!("{url}: {}", r.status()).into());
        }
        r.bytes().await?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], times[times.len() - 1]))
}

/// The step: fill, then time showback and its baseline, printing the figures.
pub async fn run(
    dash: &procs::Dashboard,
    ledger: &std::path::Path,
    (nodes, pods_per_node, days): (usize, usize, i64),
    report: &mut Report,
) -> Res<()> {
    let t = Instant::now();
    let written = fill(ledger, nodes, pods_per_node, days).await?;
    println!(
        "showback: {written} pod intervals ({nodes} nodes × {pods_per_node} pods × {days} days) written in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    report.add("showback_intervals", written as f64);
    // The named ranges are 1h, 24h, 7d and 30d only: ask for the days written.
    let to = chrono::Utc::now();
    let from = to - chrono::Duration::days(days);
    let secs = chrono::SecondsFormat::Secs;
    let range = format!(
        "from={}&to={}",
        from.to_rfc3339_opts(secs, true),
        to.to_rfc3339_opts(secs, true)
    );
    let before = procs::settled_rss_kib(dash.pid()).await? as f64 / 1024.0;
    let sampler = procs::RssSampler::start(dash.pid());
    let (base_mid, base_max) = timed(&format!("{}/api/v1/savings?{range}", dash.base), 3).await?;
    let (mid, max) = timed(&format!("{}/api/v1/showback?{range}", dash.base), 3).await?;
    let peak = sampler.finish().await.into_iter().max().unwrap_or(0) as f64 / 1024.0;
    report.add("showback_query_s", mid);
    report.add("showback_query_max_s", max);
    report.add("savings_query_s", base_mid);
    report.add("showback_rss_peak_mb", peak);
    println!(
        "showback over {days} days: median {mid:.2} s, max {max:.2} s (3 runs); baseline, the savings report over the same lifetimes: median {base_mid:.2} s, max {base_max:.2} s"
    );
    println!("  RSS dashboard before / peak during the queries: {before:.1} / {peak:.1} MB");
    Ok(())
}
