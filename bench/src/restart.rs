//! S5: a restarted dashboard's first paint. The running dashboard is killed (no shutdown, as
//! a crash or an OOM kill), and a new one started on the same ledger: how long until
//! `/api/v1/pools` answers with every pool (its last known state, marked stale), and until it
//! has listed the cluster again (`/readyz`); beside the same run's cold start, which shows
//! nothing until it has listed.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::procs::{self, Dashboard, LAST_KNOWN_SECONDS};
use crate::report::Report;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// `/api/v1/pools`' pool count and the GPUs of their nodes (each pool's
/// `gpus_allocatable`, summed from its nodes: 0 until the nodes are there).
async fn fleet(base: &str) -> Option<(usize, u64)> {
    let pools = crate::churn::pools(base).await.ok()?;
    let gpus = pools
        .iter()
        .filter_map(|p| p["gpus_allocatable"].as_u64())
        .sum();
    Some((pools.len(), gpus))
}

/// Restarts `dash` on `ledger` and reports the restart's first paint and listing; `cold_s`
/// is this run's cold start to listed; with `without_last_known` the new dashboard neither
/// restores nor keeps a last known state (the control). Returns the new dashboard.
pub async fn run(
    dash: Dashboard,
    (kubeconfig, ledger): (&Path, &Path),
    streams: usize,
    (cold_s, without_last_known): (f64, bool),
    report: &mut Report,
) -> Res<Dashboard> {
    let (pools, gpus) = fleet(&dash.base).await.ok_or("no pools to restart with")?;
    // At least one keep after everything the run changed.
    tokio::time::sleep(Duration::from_secs(LAST_KNOWN_SECONDS + 2)).await;
    dash.kill().await?;
    let t = Instant::now();
    let keep = if without_last_known {
        0
    } else {
        LAST_KNOWN_SECONDS
    };
    let fresh = procs::spawn_dashboard((kubeconfig, &[]), ledger, streams, false, keep)?;
    // The first answer with the fleet: every pool with (nearly) all its nodes' GPUs. Pools
    // alone come as soon as the NodePools are listed, long before the nodes.
    let (first_paint, shown) = loop {
        if let Some((n, g)) = fleet(&fresh.base)
            .await
            .filter(|(n, g)| *n >= pools && *g * 10 >= gpus * 9)
        {
            break (t.elapsed().as_secs_f64(), (n, g));
        }
        if t.elapsed() > Duration::from_secs(300) {
            return Err("the restarted dashboard showed no full fleet within 300 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    report.add("restart_first_paint_ms", first_paint * 1000.0);
    println!(
        "restart (killed, then started on the same ledger{}): {} pools and {} of {gpus} GPUs \
         shown after {first_paint:.2} s (target ≤ 1 s); this run's cold start listed after \
         {cold_s:.1} s",
        if without_last_known {
            ", without its last known state"
        } else {
            ", showing its last known state, stale"
        },
        shown.0,
        shown.1,
    );
    match procs::wait_ready(&fresh.base).await {
        Ok(()) => {
            let listed = t.elapsed().as_secs_f64();
            report.add("restart_listed_s", listed);
            println!("  the restarted dashboard listed the cluster after {listed:.1} s");
        }
        Err(e) => println!("  the restarted dashboard did not list the cluster: {e}"),
    }
    Ok(fresh)
}
