//! The `spotboard` binary as an operator runs it: a second process on the same SQLite ledger
//! refuses to start and says why; SIGTERM with tabs streaming ends the process promptly,
//! closes the streams and writes the ledger's last heartbeat.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::StreamExt;
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
        .env_remove("SPOTBOARD_DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Reads the child's log until it names the address it serves on.
pub(crate) async fn served_address(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let Ok(Ok(Some(line))) =
            tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await
        else {
            break;
        };
        if let Some(at) = line.find("serving the dashboard on http://") {
            let rest = &line[at + "serving the dashboard on http://".len()..];
            let addr: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                .collect();
            // Keep draining the log so the child never blocks on a full pipe.
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return addr;
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
    let addr = served_address(&mut first).await;
    // The process that serves is the one spawned, run again with the allocator's setting.
    let environ = std::fs::read(format!("/proc/{}/environ", first.id().unwrap())).unwrap();
    assert!(
        environ
            .split(|b| *b == 0)
            .any(|v| v == b"MIMALLOC_PURGE_DELAY=0"),
        "{}",
        String::from_utf8_lossy(&environ)
    );

    // A second process on the same file stops before it starts anything, and says why.
    let second = spotboard(dir.path(), &ledger, "b.kubeconfig")
        .output()
        .await
        .unwrap();
    assert!(!second.status.success());
    let why = String::from_utf8_lossy(&second.stderr);
    assert!(
        why.contains("in use by another spotboard") && why.contains("--ledger"),
        "{why}"
    );

    // Twenty tabs streaming.
    let mut streams = Vec::new();
    for _ in 0..20 {
        let r = reqwest::get(format!("http://{addr}/api/v1/stream"))
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
    for (i, mut s) in streams.into_iter().enumerate() {
        // Whatever was still buffered, then the end: a clean end of the body, not a reset.
        let mut ended = false;
        while let Ok(next) = tokio::time::timeout(Duration::from_secs(5), s.next()).await {
            match next {
                Some(Ok(_)) => continue,
                Some(Err(e)) => panic!("stream {i} broke instead of ending: {e}"),
                None => {
                    ended = true;
                    break;
                }
            }
        }
        assert!(ended, "stream {i} ended");
    }
    let beat = heartbeat(&ledger).await.expect("a heartbeat in the ledger");
    println!(
        "FAULT|R8|SIGTERM with 20 streams open|1|1|{exit_ms}|{exit_ms}|0|0|0|–|20/20 streams ended cleanly, heartbeat written"
    );
    println!(
        "FAULT|R10|a second process on the same SQLite ledger|1|1|0|0|0|0|0|–|refused: {}",
        why.lines()
            .last()
            .unwrap_or_default()
            .chars()
            .take(60)
            .collect::<String>()
    );
    assert!(
        beat >= asked - 1,
        "heartbeat {beat} written at exit (asked at {asked})"
    );
}

/// `spotboard embedded` started by a script that reads nothing of its stdout (or stops reading
/// after the first line) keeps serving: a closed stdout used to panic it at its first print.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_cluster_outlives_a_closed_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("embedded.kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_spotboard"))
        .arg("embedded")
        .args(["--zones", "US-EAST-04A,US-WEST-01A"])
        .args(["--gke-zones", "", "--karpenter-zones", ""])
        .arg("--embedded-kubeconfig")
        .arg(&kubeconfig)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Closed before the cluster can have printed anything.
    drop(child.stdout.take());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !kubeconfig.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        kubeconfig.exists(),
        "the embedded cluster wrote its kubeconfig"
    );
    // The addresses are printed right after the kubeconfig is written.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let exited = child.try_wait().unwrap();
    let mut stderr = String::new();
    if exited.is_some()
        && let Some(mut e) = child.stderr.take()
    {
        let _ = e.read_to_string(&mut stderr).await;
    }
    assert!(exited.is_none(), "exited with {exited:?}: {stderr}");

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
}
