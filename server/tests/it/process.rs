//! The `spotboard` binary as an operator runs it: a second process on the same SQLite ledger
//! refuses to start and says why; SIGTERM with tabs streaming ends the process promptly,
//! closes the streams and writes the ledger's last heartbeat.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::common::stream::Statuses;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

fn spotboard(dir: &Path, ledger: &Path, kubeconfig: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spotboard"));
    cmd.args(["--listen", "127.0.0.1:0", "--zones", "US-EAST-04A"])
        .args(["--gke-zones", "", "--karpenter-zones", "", "--speed", "60"])
        .arg("--ledger")
        .arg(ledger)
        .arg("--embedded-kubeconfig")
        .arg(dir.join(kubeconfig))
        .env("RUST_LOG", "info")
        // A quiet fleet: these tests count what the process does, not the demo.
        .env("SPOTBOARD_DEMO_PREEMPTIONS", "false")
        .env_remove("SPOTBOARD_DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Reads the child's log until it names the address it serves on.
pub(crate) async fn served_address(child: &mut Child) -> String {
    served_address_and_log(child).await.0
}

/// What a child logs on stdout, line by line, as it logs it.
struct Log {
    lines: Arc<Mutex<Vec<String>>>,
    /// Ends when the child closes its stdout (it exited).
    drained: tokio::task::JoinHandle<()>,
}

/// [`served_address`], and the child's log.
async fn served_address_and_log(child: &mut Child) -> (String, Log) {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Ok(Ok(Some(line))) =
            tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await
        else {
            break;
        };
        log.lock().unwrap().push(line.clone());
        if let Some(at) = line.find("serving the dashboard on http://") {
            let rest = &line[at + "serving the dashboard on http://".len()..];
            let addr: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                .collect();
            // Keep draining the log so the child never blocks on a full pipe.
            let l = log.clone();
            let drained = tokio::spawn(async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    l.lock().unwrap().push(line);
                }
            });
            return (
                addr,
                Log {
                    lines: log,
                    drained,
                },
            );
        }
    }
    panic!("spotboard did not say where it serves");
}

async fn heartbeat(ledger: &Path) -> Option<i64> {
    use sqlx::Row;
    sqlx::any::install_default_drivers();
    let url = format!("sqlite://{}?mode=ro", ledger.display());
    let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&url)
        .await
        .ok()?;
    // The embedded cluster's run beats under its own key (`heartbeat:<run id>`).
    let row = sqlx::query("SELECT MAX(value) FROM ledger_meta WHERE key LIKE 'heartbeat%'")
        .fetch_optional(&mut conn)
        .await
        .ok()??;
    Some(row.get::<i64, _>(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_per_ledger_and_sigterm_ends_streams_and_writes_the_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.sqlite");
    let mut first = spotboard(dir.path(), &ledger, "a.kubeconfig")
        .spawn()
        .unwrap();
    let (addr, log) = served_address_and_log(&mut first).await;
    // The process that serves is the one spawned, run again with the allocator's setting.
    let environ = std::fs::read(format!("/proc/{}/environ", first.id().unwrap())).unwrap();
    assert!(
        environ
            .split(|b| *b == 0)
            .any(|v| v == b"MIMALLOC_PURGE_DELAY=0"),
        "{}",
        String::from_utf8_lossy(&environ)
    );

    // A second process on the same file stops before it starts anything, and says why,
    // while the first keeps serving.
    let statuses = Statuses::default();
    let second_started = Instant::now();
    let second = spotboard(dir.path(), &ledger, "b.kubeconfig")
        .output()
        .await
        .unwrap();
    let refused_in = second_started.elapsed();
    let why = String::from_utf8_lossy(&second.stderr).to_string();
    let refused = !second.status.success()
        && why.contains("in use by another spotboard")
        && why.contains("--ledger");
    let first_serves = statuses
        .send(reqwest::Client::new().get(format!("http://{addr}/api/v1/pools")))
        .await
        .unwrap()
        .status()
        .is_success();
    println!(
        "FAULT|R10|a second process on the same SQLite ledger|1|{}|–|–|–|–|{}|–|refused in {} ms: {}; the first still answered /api/v1/pools",
        usize::from(refused && first_serves),
        statuses.server_errors(),
        refused_in.as_millis(),
        // "… is in use by another spotboard (pid N)", without the temporary path before it.
        why.find("in use by")
            .map_or(why.as_str(), |at| &why[at..])
            .split(". ")
            .next()
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or_default()
    );
    assert!(!second.status.success());
    assert!(refused, "{why}");
    assert!(first_serves);

    // Twenty tabs streaming.
    let mut streams = Vec::new();
    for _ in 0..20 {
        let r = statuses
            .send(reqwest::Client::new().get(format!("http://{addr}/api/v1/stream")))
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let mut body = r.bytes_stream();
        let first_event = body.next().await;
        assert!(matches!(first_event, Some(Ok(_))), "a snapshot first");
        streams.push(body);
    }

    let asked = chrono::Utc::now().timestamp();
    let signalled = Instant::now();
    let pid = first.id().expect("running").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(15), first.wait())
        .await
        .expect("spotboard exits after SIGTERM")
        .unwrap();
    let mut stderr = String::new();
    if let Some(mut e) = first.stderr.take() {
        let _ = e.read_to_string(&mut stderr).await;
    }
    let exit_ms = signalled.elapsed().as_millis();
    assert!(status.success(), "exit status {status}: {stderr}");
    let mut ended = 0;
    for (i, mut s) in streams.into_iter().enumerate() {
        // Whatever was still buffered, then the end: a clean end of the body, not a reset.
        while let Ok(next) = tokio::time::timeout(Duration::from_secs(5), s.next()).await {
            match next {
                Some(Ok(_)) => continue,
                Some(Err(e)) => panic!("stream {i} broke instead of ending: {e}"),
                None => {
                    ended += 1;
                    break;
                }
            }
        }
    }
    let beat = heartbeat(&ledger).await.expect("a heartbeat in the ledger");
    // The exit-time write says so, with the second it wrote; the recorder's once-a-second
    // beat (which would also meet `beat >= asked`) does not log.
    tokio::time::timeout(Duration::from_secs(5), log.drained)
        .await
        .expect("the log ends with the process")
        .unwrap();
    let written: Option<i64> = log.lines.lock().unwrap().iter().find_map(|l| {
        l.contains("wrote the ledger's last heartbeat")
            .then(|| {
                l.split("at=")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .flatten()
    });
    println!(
        "FAULT|R8|SIGTERM with 20 streams open|1|{}|{exit_ms}|{exit_ms}|–|–|{}|–|exit in {exit_ms} ms, {ended}/20 streams ended cleanly, heartbeat {} at exit",
        usize::from(status.success() && ended == 20 && written.is_some_and(|w| w >= asked)),
        statuses.server_errors(),
        if written.is_some() {
            "written"
        } else {
            "not written"
        },
    );
    assert_eq!(ended, 20, "every stream ended cleanly");
    let written = written.unwrap_or_else(|| {
        panic!(
            "no exit-time heartbeat in the log:\n{}",
            log.lines.lock().unwrap().join("\n")
        )
    });
    assert!(
        written >= asked,
        "heartbeat written at exit at {written}, SIGTERM at {asked}"
    );
    assert!(
        beat >= written,
        "the ledger holds the exit-time heartbeat: {beat} < {written}"
    );
}

/// Whether a thread of process `pid` is in `write(2)` on its descriptor `fd`, from
/// `/proc/PID/task/*/syscall` (Linux; the number of `write` is the architecture's).
fn writing_to(pid: u32, fd: i32) -> bool {
    let write = match std::env::consts::ARCH {
        "x86_64" => "1",
        "aarch64" | "riscv64" | "loongarch64" => "64",
        other => panic!("the number of write(2) on {other}"),
    };
    let fd = format!("{fd:#x}");
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        std::fs::read_to_string(t.path().join("syscall")).is_ok_and(|s| {
            let mut fields = s.split_whitespace();
            fields.next() == Some(write) && fields.next() == Some(fd.as_str())
        })
    })
}

/// Whether process `pid` catches SIGTERM (bit 15 of `SigCgt` in `/proc/PID/status`): the
/// embedded cluster installs its handler only after it printed its addresses.
fn catches_sigterm(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let mask = s.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .is_some_and(|mask| mask & (1 << (15 - 1)) != 0)
}

/// `spotboard embedded` started by a script that reads nothing of its stdout (or stops reading
/// after the first line) keeps serving: a closed stdout used to panic it at its first print.
///
/// To see that print happen, the child's stdout is a pipe this test filled to the brim and
/// never reads: the print blocks in `write(2)` on fd 1 (seen in /proc), then the test closes
/// the pipe, so the blocked write fails with EPIPE exactly as a print to a closed stdout does
/// (`println!` panicked there). Logging is off, so that print is the only write to stdout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_cluster_outlives_a_closed_stdout() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("embedded.kubeconfig");
    let (reader, writer) = std::io::pipe().unwrap();
    // Filled byte by byte until a write blocks: not even a one-byte print fits then.
    let mut filling = writer.try_clone().unwrap();
    let filling_fd = std::os::fd::AsRawFd::as_raw_fd(&filling);
    let filler = std::thread::spawn(move || {
        let mut filled = 0usize;
        while filling.write_all(b".").is_ok() {
            filled += 1;
        }
        filled
    });
    let full = Instant::now();
    while !writing_to(std::process::id(), filling_fd) {
        assert!(
            full.elapsed() < Duration::from_secs(10),
            "the pipe fills up"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_spotboard"))
        .arg("embedded")
        .args(["--zones", "US-EAST-04A,US-WEST-01A"])
        .args(["--gke-zones", "", "--karpenter-zones", ""])
        .arg("--embedded-kubeconfig")
        .arg(&kubeconfig)
        .env("RUST_LOG", "off")
        .env("SPOTBOARD_DEMO_PREEMPTIONS", "false")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    // The addresses are printed right after the kubeconfig is written: wait for the print.
    let started = Instant::now();
    while !writing_to(pid, 1) {
        let exited = child.try_wait().unwrap();
        assert!(
            exited.is_none() && started.elapsed() < Duration::from_secs(60),
            "the embedded cluster never printed to its stdout (exited: {exited:?}, kubeconfig \
             written: {})",
            kubeconfig.exists()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        kubeconfig.exists(),
        "the kubeconfig is written before the print"
    );
    assert!(
        !catches_sigterm(pid),
        "still printing, not yet waiting for a signal"
    );
    // Now the stdout closes under the print.
    drop(reader);
    assert!(
        filler.join().unwrap() >= 4096,
        "the pipe held at least a page before it was full"
    );
    // Past the print: waiting for its signal, which it installs right after printing.
    let closed = Instant::now();
    while !catches_sigterm(pid) {
        let exited = child.try_wait().unwrap();
        if exited.is_some() || closed.elapsed() > Duration::from_secs(30) {
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut stderr).await;
            }
            panic!("exited with {exited:?} after its stdout closed under the print: {stderr}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!writing_to(pid, 1), "the failed print returned");

    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
    let listed = nodes.list(&Default::default()).await.unwrap();
    assert!(!listed.items.is_empty(), "the cluster still answers");
    assert!(child.try_wait().unwrap().is_none(), "still running");
    // And it still stops cleanly when asked.
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("exits after SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
}
