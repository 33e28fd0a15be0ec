//! Requests meant to harm: DNS rebinding, forged proxy headers, more streams than a client
//! may hold, 10,000 random and mutated payloads, and slowloris.

use crate::common;

use std::time::Duration;

use kube::api::Api;
use serde_json::json;
use spotboard_core::nodepool::NodePool;

use common::create::{ZONE, body, draft, exists, submit};

/// DNS rebinding: a foreign page re-pointed at our loopback address sends its own name as
/// Host with a matching Origin. Only the names spotboard answers to get through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_rebinding_is_refused_on_every_route() {
    let d = common::start_with(&[ZONE], 60.0, |a| {
        a.allowed_hosts = vec!["spotboard.example.test".into()];
    })
    .await;
    let port = d.running.addr.port();
    let evil_host = format!("evil.example:{port}");
    let evil_origin = format!("http://evil.example:{port}");
    let rebinding = [
        ("host", evil_host.as_str()),
        ("origin", evil_origin.as_str()),
    ];
    let (status, out) = submit(
        &d.base,
        &body(draft("rebound", "cd-gp-a192-genoa", 1), "create"),
        &rebinding,
    )
    .await;
    assert_eq!(status, 421, "{out}");
    assert!(!exists(&d, "rebound").await, "nothing created");
    let client = reqwest::Client::new();
    for path in [
        "/",
        "/pools/new",
        "/api/v1/pools",
        "/api/v1/stream",
        "/api/v1/allocation",
        "/metrics",
    ] {
        let r = client
            .get(format!("{}{path}", d.base))
            .header("host", evil_host.as_str())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 421, "{path}");
    }
    // Probes name the pod's IP; they stay open.
    let r = client
        .get(format!("{}/healthz", d.base))
        .header("host", evil_host.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The names it does answer to: loopback forms at its port, and --allowed-host.
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "spotboard.example.test".to_string(),
        format!("spotboard.example.test:{port}"),
    ] {
        let origin = format!("http://{host}");
        let (status, out) = submit(
            &d.base,
            &body(draft("allowed", "cd-gp-a192-genoa", 1), "dryRun"),
            &[("host", host.as_str()), ("origin", origin.as_str())],
        )
        .await;
        assert_eq!(status, 200, "{host}: {out}");
        assert_eq!(out["accepted"], true, "{host}: {out}");
    }
}

/// The proxy's user header is believed only from the proxy: from a --trusted-proxy
/// network, or with the shared secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_headers_count_only_from_the_trusted_proxy() {
    // The proxy is elsewhere: this test's requests (from loopback) are not the proxy's.
    let d = common::start_with(&[ZONE], 60.0, |a| {
        a.auth_proxy_header = Some("x-forwarded-user".into());
        a.auth_proxy_groups_header = Some("x-forwarded-groups".into());
        a.impersonate = true;
        a.trusted_proxies = vec!["192.0.2.0/24".into()];
    })
    .await;
    let forged = [
        ("x-forwarded-user", "alice"),
        ("x-forwarded-groups", "system:masters"),
    ];
    let (status, _) = submit(
        &d.base,
        &body(draft("forged", "cd-gp-a192-genoa", 1), "create"),
        &forged,
    )
    .await;
    assert_eq!(status, 401);
    let page = reqwest::Client::new()
        .get(format!("{}/", d.base))
        .header("x-forwarded-user", "alice")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 401, "pages too");
    assert!(!exists(&d, "forged").await);
    drop(d);

    // With a shared secret, the secret decides, wherever the request comes from.
    let d = common::start_with(&[ZONE], 60.0, |a| {
        a.auth_proxy_header = Some("x-forwarded-user".into());
        a.auth_proxy_groups_header = Some("x-forwarded-groups".into());
        a.impersonate = true;
        a.auth_proxy_secret = Some("a-long-shared-secret".into());
    })
    .await;
    let (status, _) = submit(
        &d.base,
        &body(draft("no-secret", "cd-gp-a192-genoa", 1), "dryRun"),
        &[("x-forwarded-user", "alice")],
    )
    .await;
    assert_eq!(
        status, 401,
        "loopback alone is not enough once a secret is set"
    );
    let with_secret = |groups: &'static str| {
        [
            ("x-forwarded-user", "alice"),
            ("x-forwarded-groups", groups),
            (server::http::SECRET_HEADER, "a-long-shared-secret"),
        ]
    };
    let (status, out) = submit(
        &d.base,
        &body(draft("masters", "cd-gp-a192-genoa", 1), "create"),
        &with_secret("ml,system:masters"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(out["accepted"], false);
    assert!(
        out["message"].as_str().unwrap().contains("system:masters"),
        "{out}"
    );
    assert!(!exists(&d, "masters").await);
    let (status, out) = submit(
        &d.base,
        &body(draft("as-alice", "cd-gp-a192-genoa", 1), "dryRun"),
        &with_secret("ml"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(out["identity"], "alice (impersonated)", "{out}");
}

/// One client cannot hold more than --streams-per-client live streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_per_client_are_limited() {
    let d = common::start_with(&[ZONE], 60.0, |a| a.streams_per_client = 3).await;
    let url = format!("{}/api/v1/stream", d.base);
    let mut open = Vec::new();
    for _ in 0..3 {
        let r = reqwest::get(&url).await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
        open.push(r);
    }
    let refused = reqwest::get(&url).await.unwrap();
    assert_eq!(refused.status().as_u16(), 429);
    // The rest of the server still answers.
    let pools = reqwest::get(format!("{}/api/v1/pools", d.base))
        .await
        .unwrap();
    assert_eq!(pools.status().as_u16(), 200);
}

/// 10,000 random and mutated requests to every endpoint that takes input (the server
/// functions for pod lookups, savings and creates; validate; pod-hits, savings, ledger and
/// the Finder), with wrong content types among them: never a 5xx, nothing created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_payloads_never_get_a_server_error() {
    use futures::StreamExt;
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let d = common::start(&[ZONE], 60.0).await;
    let pools_before = Api::<NodePool>::all(d.admin(ZONE))
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .len();
    // Text that reaches the interesting branches: names, times, ranges, wildcards, junk.
    let text = prop_oneof![
        Just(String::new()),
        "[a-z0-9.-]{1,12}",
        "[%_*?'\";\\\\ a-zA-Z0-9:/+-]{0,16}",
        prop::sample::select(vec![
            "2026-11-01T00:00:00Z",
            "1900-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "24h",
            "7d",
            "30d",
            "1y",
            "default",
            "gpu-%",
            "gd-8xh100ib-i128",
            "b300-8x",
        ])
        .prop_map(String::from),
        "\\PC{0,8}",
    ];
    let method = prop::sample::select(vec![
        "pod_hits",
        "savings",
        "validate",
        "q_pod_hits",
        "q_savings",
        "q_ledger",
        "q_finder",
        "q_allocation",
        "submit",
    ]);
    let content_type = prop::sample::select(vec![
        "application/json",
        "application/yaml",
        "text/plain",
        "application/x-www-form-urlencoded",
        "",
    ]);
    let request = (
        method,
        text.clone(),
        text.clone(),
        text,
        content_type,
        any::<bool>(),
    );
    let mut runner = TestRunner::deterministic();
    let client = reqwest::Client::new();
    let requests: Vec<reqwest::RequestBuilder> = (0..10_000)
        .map(|_| {
            let (m, a, b, c, ct, as_json) = request.new_tree(&mut runner).unwrap().current();
            let base = &d.base;
            let q = |pairs: &[(&str, &str)]| {
                pairs
                    .iter()
                    .map(|(k, v)| format!("{k}={}", spotboard_core::model::encode_component(v)))
                    .collect::<Vec<_>>()
                    .join("&")
            };
            let body = if as_json {
                match m {
                    "pod_hits" => json!({"namespace": a, "name": b}).to_string(),
                    "savings" => json!({"range": a, "from": b, "to": c}).to_string(),
                    "submit" => json!({"draft": {"cluster": a, "name": b, "spec": {"instanceType": c}},
                                       "mode": "dryRun", "confirm": null})
                    .to_string(),
                    _ => format!("apiVersion: {a}\nkind: NodePool\nspec:\n  instanceType: {b}\n  targetNodes: {c}\n"),
                }
            } else {
                format!("{a}{b}{c}")
            };
            let post = |path: &str| {
                let r = client.post(format!("{base}{path}")).body(body.clone());
                if ct.is_empty() { r } else { r.header("content-type", ct) }
            };
            match m {
                "pod_hits" => post("/api/pod_hits"),
                "savings" => post("/api/savings"),
                "submit" => post("/api/submit_pool"),
                "validate" => post("/api/v1/pools/validate"),
                "q_pod_hits" => client.get(format!(
                    "{base}/api/v1/ledger/pod-hits?{}",
                    q(&[("namespace", &a), ("name", &b)])
                )),
                "q_savings" => client.get(format!(
                    "{base}/api/v1/savings?{}",
                    q(&[("range", &a), ("from", &b), ("to", &c)])
                )),
                "q_ledger" => client.get(format!(
                    "{base}/api/v1/ledger.csv?{}",
                    q(&[("from", &a), ("to", &b)])
                )),
                "q_allocation" => client.get(format!(
                    "{base}/api/v1/allocation?{}",
                    q(&[("cluster", &a), ("pool", &b)])
                )),
                _ => client.get(format!(
                    "{base}/api/v1/capacity-finder?{}",
                    q(&[("instanceType", &a), ("count", &b), ("region", &c)])
                )),
            }
        })
        .collect();
    let statuses: Vec<(u16, String)> = futures::stream::iter(requests)
        .map(|r| async move {
            let resp = r.send().await.expect("the server answers");
            let status = resp.status().as_u16();
            let text = if status >= 500 {
                resp.text().await.unwrap_or_default()
            } else {
                String::new()
            };
            (status, text)
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let server_errors: Vec<&(u16, String)> = statuses.iter().filter(|(s, _)| *s >= 500).collect();
    let pools_after = Api::<NodePool>::all(d.admin(ZONE))
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .len();
    println!(
        "FAULT|S4|10,000 random and mutated requests|{}|{}|–|–|–|–|{}|–|{} pools created ({pools_before} before, {pools_after} after)",
        statuses.len(),
        statuses.len() - server_errors.len(),
        server_errors.len(),
        pools_after as i64 - pools_before as i64,
    );
    assert!(
        server_errors.is_empty(),
        "{} of {} requests got a 5xx, e.g. {:?}",
        server_errors.len(),
        statuses.len(),
        server_errors.first()
    );
    let count = |f: fn(u16) -> bool| statuses.iter().filter(|(s, _)| f(*s)).count();
    // The generators must reach both the accepted and the refused paths.
    assert!(count(|s| s == 200) > 100, "few requests succeeded");
    assert!(count(|s| s == 400 || s == 422) > 100, "few were refused");
    assert_eq!(
        pools_before, pools_after,
        "dry runs and validation create nothing"
    );
}

/// Slowloris: a client that sends its request headers a byte at a time is cut off after the
/// header read timeout, and everyone else is answered meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_are_cut_off_and_others_are_served() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let d = common::start(&[ZONE], 60.0).await;
    let mut slow = Vec::new();
    for _ in 0..50 {
        slow.push(
            tokio::net::TcpStream::connect(d.running.addr)
                .await
                .unwrap(),
        );
    }
    let started = std::time::Instant::now();
    let request = b"GET /api/v1/pools HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    let mut cut_off = false;
    let mut slowest = Duration::ZERO;
    let limit = server::http::HEADER_READ_TIMEOUT + Duration::from_secs(5);
    'drip: while started.elapsed() < limit {
        for (i, s) in slow.iter_mut().enumerate() {
            let byte = request[(started.elapsed().as_secs() as usize) % request.len()];
            if s.write_all(&[byte]).await.is_err() && i == 0 {
                cut_off = true;
                break 'drip;
            }
        }
        // Others are answered while the slow clients hold their connections.
        slowest = slowest.max(pools_answered(&d.base).await);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    if !cut_off {
        // The server may have closed quietly: a read sees the end (or its 408).
        let mut buf = [0u8; 256];
        let n = tokio::time::timeout(Duration::from_secs(2), slow[0].read(&mut buf))
            .await
            .map(|r| r.unwrap_or(0))
            .unwrap_or(usize::MAX);
        cut_off = n != usize::MAX;
    }
    assert!(
        cut_off,
        "a slow client is cut off after the header read timeout"
    );
    // A figure, not a timed assertion (the target is under 1 s on an idle machine).
    println!("S5: slowest answer to others while 50 clients dripped headers: {slowest:?}");
}

thread_local! {
    /// 5xx among the answers [`pools_answered_on`] got on this thread: a test's own body runs on
    /// its thread (`block_on`), so each test counts its own.
    static POOLS_5XX: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How long `/api/v1/pools` took to answer 200.
async fn pools_answered(base: &str) -> Duration {
    let t = std::time::Instant::now();
    let r = reqwest::get(format!("{base}/api/v1/pools")).await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    t.elapsed()
}

/// How long `GET /api/v1/pools` took to answer 200 with its body on `conn`, an HTTP/1.1
/// connection kept alive (a pooling client may open a second one while the first goes back
/// to its pool; one connection keeps the count of open connections exact).
async fn pools_answered_on(conn: &mut tokio::net::TcpStream) -> Duration {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let t = std::time::Instant::now();
    let host = conn.peer_addr().unwrap();
    let request = format!("GET /api/v1/pools HTTP/1.1\r\nHost: {host}\r\n\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut r = BufReader::new(&mut *conn);
    let mut status = String::new();
    r.read_line(&mut status).await.unwrap();
    if status.starts_with("HTTP/1.1 5") {
        POOLS_5XX.set(POOLS_5XX.get() + 1);
    }
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let mut length = None;
    loop {
        let mut line = String::new();
        r.read_line(&mut line).await.unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let mut body = vec![0; length.expect("a Content-Length")];
    r.read_exact(&mut body).await.unwrap();
    t.elapsed()
}

/// `n` connections to `addr` that send nothing.
async fn connect(addr: std::net::SocketAddr, n: usize) -> Vec<tokio::net::TcpStream> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    out
}

/// Raises this process's soft limit on open files to its hard limit (at most 65,536) and
/// returns the soft limit now in force.
fn raise_open_files_limit() -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let now = getrlimit(Resource::Nofile);
    let want = now.maximum.unwrap_or(65_536).min(65_536);
    if now.current.is_some_and(|c| c < want) {
        let raised = Rlimit {
            current: Some(want),
            maximum: now.maximum,
        };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            println!("S5: the open-files limit stays at {:?}: {e}", now.current);
        }
    }
    getrlimit(Resource::Nofile).current.unwrap_or(65_536)
}

/// Whether the server closed `s` within `limit` (a read sees the end or a reset).
async fn closed_within(s: &mut tokio::net::TcpStream, limit: Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(limit, s.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

/// S5: thousands of idle connections. Others are answered meanwhile, the idle ones are
/// closed after the idle timeout, and a connection past `--max-connections` is closed at
/// once instead of taking a file descriptor the watches need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_and_capped() {
    // Both ends live in this process: two descriptors per connection.
    let limit = raise_open_files_limit();
    let n = 5_000.min(limit.saturating_sub(600) as usize / 2);
    if n < 5_000 {
        println!("S5: {n} of 5,000 idle connections tried: open files limited to {limit}");
    }
    let cap = n + 50;
    // Every connection here comes from one address: the per-peer cap is S11's.
    let d = common::start_with(&[ZONE], 60.0, |a| {
        a.max_connections = cap;
        a.connections_per_peer = cap;
    })
    .await;
    let mut idle = connect(d.running.addr, n).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // Others are answered, over one kept-alive connection: n + 1 of the cap's n + 50 slots
    // are taken while it is open.
    let mut others = tokio::net::TcpStream::connect(d.running.addr)
        .await
        .unwrap();
    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        slowest = slowest.max(pools_answered_on(&mut others).await);
    }
    // The server accepts in arrival order: of 200 more, 49 fit and 151 are closed at once.
    let mut extra = connect(d.running.addr, 200).await;
    let closed_at_once = futures::future::join_all(
        extra
            .iter_mut()
            .map(|s| closed_within(s, Duration::from_millis(500))),
    )
    .await;
    let refused = closed_at_once.iter().filter(|c| **c).count();
    drop(extra);
    drop(others);
    let started = std::time::Instant::now();
    tokio::time::sleep(server::http::HEADER_READ_TIMEOUT + Duration::from_secs(2)).await;
    let mut closed = 0;
    for s in idle.iter_mut().take(200) {
        if closed_within(s, Duration::from_millis(50)).await {
            closed += 1;
        }
    }
    let r = reqwest::get(format!("{}/api/v1/pools", d.base))
        .await
        .unwrap();
    let server_errors = POOLS_5XX.get() + usize::from(r.status().is_server_error());
    assert_eq!(r.status().as_u16(), 200, "served again after the flood");
    println!(
        "FAULT|S5|{n} idle connections, 200 more past --max-connections {cap}|1|{}|{}|{}|–|–|{server_errors}|–|others answered in {} ms at most; {refused} of 200 past the limit closed at once; {closed} of 200 idle closed after the idle timeout",
        usize::from(closed == 200),
        started.elapsed().as_millis(),
        started.elapsed().as_millis(),
        slowest.as_millis()
    );
    assert_eq!(
        refused,
        200 - (cap - n - 1),
        "connections past the limit are closed at once, the others kept: {refused} of 200"
    );
    assert_eq!(
        closed, 200,
        "idle connections are closed after the idle timeout"
    );
}

mod second_round;
