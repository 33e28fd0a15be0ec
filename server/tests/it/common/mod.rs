//! Starting the whole dashboard against the embedded cluster, for integration tests.

#![allow(dead_code)] // some helpers serve only the ad-hoc runs in ./tasks.sh faults

use std::time::{Duration, Instant};

use server::{cli::ServeArgs, run};

pub mod create;
pub mod prometheus;
pub mod python;
pub mod stream;

/// Polling a cluster through kube-rs, shared with the embedded cluster's own tests.
pub use spotboard_embedded::testing as sim;

pub struct Dashboard {
    pub running: run::Running,
    pub base: String,
    pub kubeconfig: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// Starts the dashboard on an ephemeral port with an embedded cluster of `zones`, at `speed`,
/// and waits until every watch has listed.
pub async fn start(zones: &[&str], speed: f64) -> Dashboard {
    start_with(zones, speed, |_| {}).await
}

/// [`start`] with flags changed by `customize` (e.g. `--read-only`, a proxy header).
pub async fn start_with(
    zones: &[&str],
    speed: f64,
    customize: impl FnOnce(&mut ServeArgs),
) -> Dashboard {
    use clap::Parser;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut args = server::cli::Cli::parse_from(["spotboard"]).serve;
    args.listen = "127.0.0.1:0".parse().unwrap();
    args.embedded_kubeconfig = Some(kubeconfig.clone());
    args.zones = zones.iter().map(|z| z.to_string()).collect();
    // The GKE and Karpenter zones join only the tests that ask for them.
    args.gke_zones = Vec::new();
    args.karpenter_zones = Vec::new();
    args.seed = 7;
    args.speed = speed;
    args.nodes = 0;
    args.pods_per_node = 5;
    args.ledger = dir.path().join("ledger.sqlite");
    // A quiet fleet: tests count preemptions and pick nodes to preempt themselves.
    args.demo_preemptions = false;
    customize(&mut args);
    let running = run::start(&args, std::future::pending())
        .await
        .expect("dashboard starts");
    let base = format!("http://{}", running.addr);
    wait_for(Duration::from_secs(30), || running.hub.ready()).await;
    Dashboard {
        running,
        base,
        kubeconfig,
        _dir: dir,
    }
}

impl Dashboard {
    /// A kube-rs client with the embedded cluster's admin token for `zone` (kubectl's identity).
    pub fn admin(&self, zone: &str) -> kube::Client {
        self.running
            .embedded
            .as_ref()
            .expect("embedded cluster")
            .admin_client(zone)
            .expect("admin client")
    }
}

/// `GET /api/v1/preemptions` as JSON; panics when spotboard does not answer.
/// A webhook receiver on loopback for `--alert-webhook`: its URL, and every body POSTed to
/// it, in order.
pub async fn webhook_sink() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    let received: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>> = Default::default();
    let sink = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(v): axum::Json<serde_json::Value>| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push(v);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (hook, received)
}

pub async fn preemptions(base: &str) -> serde_json::Value {
    reqwest::get(format!("{base}/api/v1/preemptions"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The card of `node` in a `GET /api/v1/preemptions` answer, if there is one.
pub fn preemption_card<'a>(p: &'a serde_json::Value, node: &str) -> Option<&'a serde_json::Value> {
    p["nodes"].as_array()?.iter().find(|n| n["node"] == node)
}

/// Sends `req` and reads a JSON body, whatever the status; panics when unreachable or not JSON.
/// The `name` of each element of a JSON array (phases, score parts, ...).
pub fn names(v: &serde_json::Value) -> Vec<&str> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|p| p["name"].as_str().expect("a name"))
        .collect()
}

pub async fn json_of(req: reqwest::RequestBuilder) -> serde_json::Value {
    req.send()
        .await
        .expect("reachable")
        .json()
        .await
        .expect("a JSON body")
}

/// The body of `GET url` as text; panics when unreachable.
pub async fn text_of(url: &str) -> String {
    reqwest::get(url)
        .await
        .expect("reachable")
        .text()
        .await
        .expect("a text body")
}

/// Polls `f` every 50 ms until it is true; panics after `limit`.
pub async fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < limit,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Reads Server-Sent Events from `url` until `pred` accepts one (event name, data), or the
/// deadline passes. Returns the accepted event's data.
pub async fn sse_until(
    url: &str,
    limit: Duration,
    mut pred: impl FnMut(&str, &str) -> bool,
) -> Option<String> {
    use futures::StreamExt;
    let resp = reqwest::get(url).await.ok()?;
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .ok()??
            .ok()?;
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let mut event = "message";
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event:") {
                    event = if e.trim() == "snapshot" {
                        "snapshot"
                    } else if e.trim() == "delta" {
                        "delta"
                    } else {
                        "other"
                    };
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            if pred(event, &data) {
                return Some(data);
            }
        }
    }
}

/// A node of `selector`, none of `skip`, that nothing has touched yet: not cordoned, under
/// no notice (a random preemption's would make it ignore what a test asks of it).
pub async fn untouched_node(
    nodes: &kube::Api<k8s_openapi::api::core::v1::Node>,
    selector: &str,
    skip: &[String],
) -> String {
    nodes
        .list(&kube::api::ListParams::default().labels(selector))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|n| {
            let spec = n.spec.as_ref();
            !spec.and_then(|s| s.unschedulable).unwrap_or(false)
                && !spec.and_then(|s| s.taints.as_ref()).is_some_and(|t| {
                    t.iter().any(|t| {
                        t.key.contains("preempt")
                            || t.key.contains("disrupt")
                            || t.key.contains("termination")
                    })
                })
        })
        .map(|n| kube::ResourceExt::name_any(&n))
        .find(|n| !skip.contains(n))
        .expect("an untouched node")
}

/// A spot node of `selector` not yet under notice, preempted through the behaviour model.
pub async fn preempt_one(
    nodes: &kube::Api<k8s_openapi::api::core::v1::Node>,
    selector: &str,
) -> String {
    let victim = untouched_node(nodes, selector, &[]).await;
    let patch =
        serde_json::json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
    nodes
        .patch(
            &victim,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    victim
}
