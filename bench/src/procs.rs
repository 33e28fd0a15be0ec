//! The two child processes and reading their figures.

use std::{
    path::Path,
    process::Stdio,
    time::{Duration, Instant},
};

use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The server binary, `spotboard`, from the same build as this one: cargo puts every binary of
/// the workspace in one directory per profile (`target/release/`), and measuring the binary
/// built alongside keeps a stale or debug server out of the figures.
fn spotboard_exe() -> Res<std::path::PathBuf> {
    let exe = std::env::current_exe()?.with_file_name("spotboard");
    if !exe.is_file() {
        return Err(format!(
            "{} not found: build it with this binary (`./tasks.sh bench`, or \
             `cargo build --release -p server --bin spotboard -p spotboard-bench`)",
            exe.display()
        )
        .into());
    }
    Ok(exe)
}

pub struct Embedded {
    child: Child,
    pub url: String,
    pub token: String,
}

/// The embedded cluster's process: one CKS API server per zone in `zones` (no GKE or
/// Karpenter zone), `nodes` extra nodes spread over them in NodePools of at most
/// `nodes_per_pool`, `pods` pods on each. Returns once every zone has printed its URL (`url`
/// and `token` are the first zone's).
///
/// Errors: the process could not start, or ended before every zone printed its URL.
pub async fn start_embedded(
    kubeconfig: &Path,
    zones: &[&str],
    nodes: usize,
    pods: usize,
    nodes_per_pool: u32,
) -> Res<Embedded> {
    let mut child = Command::new(spotboard_exe()?)
        .args(["embedded", "--zones", &zones.join(","), "--seed", "1"])
        .args(["--gke-zones", "", "--karpenter-zones", ""])
        .args([
            "--nodes",
            &nodes.to_string(),
            "--pods-per-node",
            &pods.to_string(),
            "--nodes-per-pool",
            &nodes_per_pool.to_string(),
        ])
        .arg("--embedded-kubeconfig")
        .arg(kubeconfig)
        .env("RUST_LOG", "warn,server::ledger::last_known=info")
        // The bench measures its own churn and waves, not the demo's preemptions.
        .env("SPOTBOARD_DEMO_PREEMPTIONS", "false")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    // Each zone prints `CONTEXT ZONE URL` once it serves; the zones start side by side.
    let mut urls = std::collections::HashMap::new();
    while urls.len() < zones.len() {
        let Some(line) = lines.next_line().await? else {
            break;
        };
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.len() == 3 && zones.contains(&parts[1]) {
            urls.insert(parts[1].to_string(), parts[2].to_string());
        }
    }
    let url = zones
        .first()
        .and_then(|z| urls.get(*z))
        .filter(|_| urls.len() == zones.len())
        .ok_or("embedded cluster did not print every zone's URL")?
        .clone();
    // Read whatever else it prints: a pipe closed here makes its next line a panic.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let text = std::fs::read_to_string(kubeconfig)?;
    let token = text
        .lines()
        .find_map(|l| l.split_once("/token/").map(|(_, t)| t.trim()))
        .ok_or("no token in the kubeconfig's server URL")?
        .to_string();
    Ok(Embedded { child, url, token })
}

impl Embedded {
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }
}

pub struct Dashboard {
    child: Child,
    pub base: String,
}

impl Dashboard {
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// Kills the process (as a crash or an OOM kill would: no shutdown) and waits for it.
    pub async fn kill(mut self) -> Res<()> {
        self.child.kill().await?;
        Ok(())
    }
}

/// Starts the dashboard against `kubeconfig` with a ledger of its own at `ledger`, allowing
/// `streams` live streams from the benchmark's one client address; on CPU 0 alone when
/// `one_core` (and `taskset` is there: without it, says so and runs unpinned).
///
/// The ledger is the run's own: with the default file in the working directory every run
/// added its 10,000 lifetimes to the last ones', and by the fifth run the dashboard's rates
/// read (every 15 s, on the pinned core) took 1.4–2 s over 65,000 lifetimes.
pub async fn start_dashboard(
    kubeconfig: &Path,
    ledger: &Path,
    streams: usize,
    one_core: bool,
) -> Res<Dashboard> {
    let dash = spawn_dashboard(
        (kubeconfig, &[]),
        ledger,
        streams,
        one_core,
        LAST_KNOWN_SECONDS,
    )?;
    wait_ready(&dash.base).await?;
    Ok(dash)
}

/// How often the bench's dashboard keeps its last known state (`--last-known-seconds`): the
/// product's default, so that the memory figures (P2) are the default's. Every 5 s, as a first
/// version had it, serialized the 10,000 node rows twelve times a minute through the 10
/// minutes of churn, and P2 read 73.6 MB for it; the restart step waits for one keep instead.
pub const LAST_KNOWN_SECONDS: u64 = 60;

/// [`start_dashboard`] without waiting: returned as soon as the process is spawned, keeping
/// its last known state every `keep_seconds` (0: none kept or restored). It watches the
/// kubeconfig's `contexts` (`--context` each), its current context when there are none.
pub fn spawn_dashboard(
    (kubeconfig, contexts): (&Path, &[String]),
    ledger: &Path,
    streams: usize,
    one_core: bool,
    keep_seconds: u64,
) -> Res<Dashboard> {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.local_addr()?.port()
    };
    let pinned = one_core
        && std::process::Command::new("taskset")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
    if one_core && !pinned {
        println!("taskset is not installed: the dashboard runs on every core");
    }
    let mut command = if pinned {
        let mut c = Command::new("taskset");
        c.args(["-c", "0"]).arg(spotboard_exe()?);
        c
    } else {
        Command::new(spotboard_exe()?)
    };
    let child = command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(contexts.iter().flat_map(|c| ["--context", c.as_str()]))
        .arg("--ledger")
        .arg(ledger)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--streams-per-client", &streams.to_string()])
        // Every stream of the bench comes from this one address: a connection each, plus
        // the bench's own requests.
        .args(["--connections-per-peer", &(streams + 64).to_string()])
        .args(["--last-known-seconds", &keep_seconds.to_string()])
        .env("RUST_LOG", dashboard_log(contexts))
        .kill_on_drop(true)
        .spawn()?;
    Ok(Dashboard {
        child,
        base: format!("http://127.0.0.1:{port}"),
    })
}

/// The dashboard's log filter: its warnings with one cluster; with many (`--clusters`) only
/// its errors, as each cluster's random preemptions make a wave warning a minute and bury
/// the figures.
fn dashboard_log(contexts: &[String]) -> &'static str {
    if contexts.len() > 1 {
        "error"
    } else {
        "warn,server::ledger::last_known=info"
    }
}

/// Waits until the dashboard at `base` has listed every cluster (`/readyz`), up to 300 s.
pub async fn wait_ready(base: &str) -> Res<()> {
    let start = Instant::now();
    loop {
        if let Ok(r) = reqwest::get(format!("{base}/readyz")).await
            && r.status().is_success()
        {
            break;
        }
        if start.elapsed() > Duration::from_secs(300) {
            return Err("dashboard not ready within 300 s".into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// CPU time a process has used so far (user and system), seconds, from `/proc/PID/stat`
/// (clock ticks of 1/100 s, Linux's `USER_HZ` on every architecture it runs on).
pub fn cpu_seconds(pid: u32) -> Res<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    Ok(cpu_ticks(&stat)? as f64 / 100.0)
}

/// utime + stime of a `/proc/PID/stat` line, clock ticks (proc(5)). Errors: a line that is not
/// one.
fn cpu_ticks(stat: &str) -> Res<u64> {
    // The command name (field 2) is in parentheses and may hold spaces and ')': count after
    // its last ')'.
    let rest = stat.rsplit_once(')').ok_or("bad stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, the 12th and 13th after the name.
    let field = |i: usize| -> Res<u64> { Ok(fields.get(i).ok_or("short stat")?.parse()?) };
    Ok(field(11)? + field(12)?)
}

/// Resident set size of a process, KiB, from /proc.
pub fn rss_kib(pid: u32) -> Res<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or("no VmRSS")?;
    Ok(line.split_whitespace().nth(1).ok_or("bad VmRSS")?.parse()?)
}

/// The dashboard's RSS read once a second while the churn runs. Why: one reading at the end
/// of a 10-minute run lands on whatever the process is doing at that second (the readiness
/// audit runs every 15 s while a pool page is open; it listed every pod until 2026-11-26), so
/// the end figure alone cannot tell growth from a passing peak.
pub struct RssSampler {
    task: tokio::task::JoinHandle<Vec<u64>>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl RssSampler {
    pub fn start(pid: u32) -> Self {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stopped.changed() => return samples,
                }
                match rss_kib(pid) {
                    Ok(kib) => samples.push(kib),
                    Err(_) => return samples,
                }
            }
        });
        Self { task, stop }
    }

    /// The samples, KiB, one a second in order.
    pub async fn finish(self) -> Vec<u64> {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}

/// Resident set size once it stops moving, KiB: sampled every second until two samples in a
/// row are within 1 % of each other, for at most 15 s. Why: the allocator hands a burst's memory
/// back a moment later (a snapshot sent to each new stream is one), and a single sample read
/// during one made the bench's per-stream figure come out below zero.
pub async fn settled_rss_kib(pid: u32) -> Res<u64> {
    let mut last = rss_kib(pid)?;
    for _ in 0..15 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = rss_kib(pid)?;
        if now.abs_diff(last) * 100 <= last {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

/// The embedded API server's count of open watches per kind.
pub async fn watch_count(url: &str, token: &str) -> Res<String> {
    let r = reqwest::Client::new()
        .get(format!("{url}/debug/watches"))
        .bearer_auth(token)
        .send()
        .await?;
    if !r.status().is_success() {
        return Err(format!("status {}", r.status()).into());
    }
    Ok(r.text().await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_counted_after_a_command_name_with_spaces_and_parentheses() {
        // proc(5): pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt
        // majflt cmajflt utime stime ...
        let line = "4242 (tokio rt) x) S 1 4242 4242 0 -1 4194560 900 0 3 0 1234 56 7 8 20 0 9";
        assert_eq!(cpu_ticks(line).unwrap(), 1234 + 56);
        assert!(cpu_ticks("4242 (spotboard) S 1").is_err(), "a short line");
        assert!(cpu_ticks("no name here").is_err());
    }
}
