//! Creating NodePools through spotboard against the embedded cluster: the shared validation
//! table in all three places, dry run and create as the user, identity modes, read-only,
//! confirmation, rate limit, Origin, and random payloads.

mod common;

use std::time::Duration;

use app::domain::{manifest, validation::cases::CASES};
use app::nodepool::{ConditionType, NodePool};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use common::sim::{eventually, reason};

const ZONE: &str = "US-EAST-04A";
const CLUSTER: &str = "spotboard-us-east-04a";

async fn submit(base: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .post(format!("{base}/api/submit_pool"))
        .json(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.expect("submit reaches the server");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn draft(name: &str, instance: &str, target: i32) -> Value {
    json!({
        "cluster": CLUSTER,
        "name": name,
        "spec": {"computeClass": "spot", "instanceType": instance, "targetNodes": target},
    })
}

fn body(draft: Value, mode: &str) -> Value {
    json!({"draft": draft, "mode": mode, "confirm": null})
}

fn error_fields(outcome: &Value) -> Vec<String> {
    outcome["errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["field"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

async fn exists(d: &common::Dashboard, name: &str) -> bool {
    let client = d.admin(ZONE);
    Api::<NodePool>::all(client)
        .get_opt(name)
        .await
        .unwrap()
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_user_dry_runs_then_creates_and_the_pool_appears_validated() {
    let d = common::start(&[ZONE], 60.0).await;
    let (status, out) = submit(
        &d.base,
        &body(draft("new-h100", "gd-8xh100ib-i128", 1), "dryRun"),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["accepted"], true, "{out}");
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("dry run accepted"),
        "{out}"
    );
    assert!(!exists(&d, "new-h100").await, "a dry run creates nothing");

    let (_, out) = submit(
        &d.base,
        &body(draft("new-h100", "gd-8xh100ib-i128", 1), "create"),
        &[],
    )
    .await;
    assert_eq!(out["accepted"], true, "{out}");
    assert_eq!(out["identity"], "local user");
    let client = d.admin(ZONE);
    let pool = eventually(Duration::from_secs(10), "Validated=True", || async {
        let p = common::sim::pool(&client, "new-h100").await?;
        (reason(&p, ConditionType::Validated) == "True/Valid").then_some(p)
    })
    .await;
    assert_eq!(pool.spec.instance_type, "gd-8xh100ib-i128");
    common::wait_for(Duration::from_secs(10), || {
        d.running
            .hub
            .pool_rows()
            .iter()
            .any(|p| p.name == "new-h100")
    })
    .await;

    // The name is now taken: the shared validation says so before the API server would.
    let (_, out) = submit(
        &d.base,
        &body(draft("new-h100", "gd-8xh100ib-i128", 1), "dryRun"),
        &[],
    )
    .await;
    assert_eq!(out["accepted"], false);
    assert_eq!(error_fields(&out), ["metadata.name"], "{out}");
    assert!(
        out["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("already exists")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_table_gives_the_same_verdict_in_the_api_the_server_function_and_the_controller()
{
    let d = common::start(&[ZONE], 60.0).await;
    let http = reqwest::Client::new();
    let admin = d.admin(ZONE);
    for case in CASES {
        // 1. POST /api/v1/pools/validate
        let r = http
            .post(format!(
                "{}/api/v1/pools/validate?cluster={CLUSTER}",
                d.base
            ))
            .header("content-type", "application/yaml")
            .body(case.manifest)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let report: Value = r.json().await.unwrap();
        assert_eq!(
            status,
            if case.fields.is_empty() { 200 } else { 422 },
            "{}: {report}",
            case.title
        );
        assert_eq!(error_fields(&report), case.fields, "{}", case.title);

        // 2. The create server function, as a dry run.
        let (name, spec) = manifest::from_text(case.manifest).unwrap();
        let draft = json!({"cluster": CLUSTER, "name": name, "spec": spec});
        let (_, out) = submit(&d.base, &body(draft, "dryRun"), &[]).await;
        assert_eq!(
            out["accepted"],
            case.fields.is_empty(),
            "{}: {out}",
            case.title
        );
        assert_eq!(error_fields(&out), case.fields, "{}", case.title);

        // 3. The embedded controller's Validated condition, for spec-level rows created
        // directly (bypassing spotboard, as kubectl would).
        if !case.spec_level {
            continue;
        }
        let pool = NodePool::new(&name, spec);
        if Api::<NodePool>::all(admin.clone())
            .create(&PostParams::default(), &pool)
            .await
            .is_err()
        {
            assert!(
                !case.fields.is_empty(),
                "{}: the API server refused a valid pool",
                case.title
            );
            continue;
        }
        let want = if case.fields.is_empty() {
            "True/Valid"
        } else {
            "False/Invalid"
        };
        eventually(Duration::from_secs(10), case.title, || async {
            let p = common::sim::pool(&admin, &name).await?;
            let got = reason(&p, ConditionType::Validated);
            (got.starts_with(want.split('/').next().unwrap()) && !got.is_empty()).then_some(())
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_pools_need_the_name_typed_and_creates_are_rate_limited() {
    let d = common::start_with(&[ZONE], 60.0, |a| a.creates_per_minute = 2).await;
    // 2 × 8 A100 = 16 GPUs: more than 8, so confirmation is required.
    let big = draft("big-a100", "gd-8xa100-i128", 2);
    let (_, out) = submit(&d.base, &body(big.clone(), "create"), &[]).await;
    assert_eq!(out["accepted"], false);
    assert_eq!(error_fields(&out), ["confirm"], "{out}");
    assert!(!exists(&d, "big-a100").await);
    let confirmed = json!({"draft": big, "mode": "create", "confirm": "big-a100"});
    let (_, out) = submit(&d.base, &confirmed, &[]).await;
    assert_eq!(out["accepted"], true, "{out}");

    let (_, out) = submit(
        &d.base,
        &body(draft("small-1", "cd-gp-a192-genoa", 1), "create"),
        &[],
    )
    .await;
    assert_eq!(
        out["accepted"], true,
        "second create within the limit: {out}"
    );
    let (_, out) = submit(
        &d.base,
        &body(draft("small-2", "cd-gp-a192-genoa", 1), "create"),
        &[],
    )
    .await;
    assert_eq!(out["accepted"], false);
    assert!(
        out["message"].as_str().unwrap().contains("rate limit"),
        "{out}"
    );
    assert!(!exists(&d, "small-2").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_proxy_creates_need_the_users_own_identity() {
    let d = common::start_with(&[ZONE], 60.0, |a| {
        a.auth_proxy_header = Some("x-forwarded-user".into());
    })
    .await;
    let user = [("x-forwarded-user", "alice")];
    let access = common::json_of(
        reqwest::Client::new()
            .post(format!("{}/api/create_access", d.base))
            .header("x-forwarded-user", "alice")
            .json(&json!({})),
    )
    .await;
    assert_eq!(access["clusters"][0]["allowed"], false, "{access}");
    assert!(
        access["clusters"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("--impersonate"),
        "{access}"
    );
    let (_, out) = submit(
        &d.base,
        &body(draft("by-proxy", "cd-gp-a192-genoa", 1), "create"),
        &user,
    )
    .await;
    assert_eq!(out["accepted"], false);
    assert!(
        !exists(&d, "by-proxy").await,
        "spotboard's read-only account must not create"
    );

    // The user's own token, forwarded by the proxy: the embedded admin may create.
    let embedded = d.running.embedded.as_ref().unwrap();
    let as_user = |user: &'static str, admin: bool, name: &'static str, mode: &'static str| {
        let bearer = format!("Bearer {}", embedded.token(admin));
        let base = d.base.clone();
        async move {
            let headers = [
                ("x-forwarded-user", user),
                ("authorization", bearer.as_str()),
            ];
            let payload = body(draft(name, "cd-gp-a192-genoa", 1), mode);
            submit(&base, &payload, &headers).await.1
        }
    };
    let out = as_user("alice", true, "by-proxy", "create").await;
    assert_eq!(out["accepted"], true, "{out}");
    // The audit and the form name the cluster's own user for the token (SelfSubjectReview).
    assert_eq!(out["identity"], "alice (bearer token of spotboard-admin)");

    // A token that may only read: the API server's own Forbidden comes back.
    let out = as_user("bob", false, "by-reader", "dryRun").await;
    assert_eq!(out["accepted"], false);
    assert_eq!(out["reason"], "Forbidden", "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation_is_sent_and_judged_by_the_cluster() {
    let d = common::start_with(&[ZONE], 60.0, |a| {
        a.auth_proxy_header = Some("x-forwarded-user".into());
        a.impersonate = true;
    })
    .await;
    let (_, out) = submit(
        &d.base,
        &body(draft("as-alice", "cd-gp-a192-genoa", 1), "dryRun"),
        &[("x-forwarded-user", "alice")],
    )
    .await;
    // spotboard's shipped account may not impersonate until granted (rbac-impersonate.yaml):
    // the cluster, not spotboard, says no, naming both users.
    assert_eq!(out["accepted"], false);
    assert_eq!(out["identity"], "alice (impersonated)");
    let message = out["message"].as_str().unwrap();
    assert!(
        message.contains("cannot impersonate") && message.contains("alice"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_origin_and_undecodable_bodies() {
    let d = common::start_with(&[ZONE], 60.0, |a| a.read_only = true).await;
    let (status, out) = submit(
        &d.base,
        &body(draft("ro", "cd-gp-a192-genoa", 1), "create"),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(out["accepted"], false);
    assert!(
        out["message"].as_str().unwrap().contains("--read-only"),
        "{out}"
    );
    let page = common::text_of(&format!("{}/pools/new", d.base)).await;
    assert!(
        page.contains("--read-only"),
        "the form is replaced by the read-only notice"
    );
    assert!(!page.contains("Dry run"));

    let (status, _) = submit(
        &d.base,
        &body(draft("x", "cd-gp-a192-genoa", 1), "dryRun"),
        &[("origin", "http://evil.example")],
    )
    .await;
    assert_eq!(status, 403, "a foreign Origin is refused");

    let r = reqwest::Client::new()
        .post(format!("{}/api/submit_pool", d.base))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        400,
        "an undecodable body is the caller's error"
    );
}

/// Random payloads to the create server function: never a 5xx, never an invalid pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_payloads_never_fail_the_server_or_create_invalid_pools() {
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let d = common::start(&[ZONE], 60.0).await;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z0-9./_=:-]{0,12}".prop_map(Value::from),
        prop::sample::select(vec![
            "spot",
            "default",
            "gb200-4x",
            "gd-8xa100-i128",
            CLUSTER,
            "dryRun",
            "create"
        ])
        .prop_map(Value::from),
    ];
    let any_json = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "draft",
                    "mode",
                    "spec",
                    "name",
                    "cluster",
                    "instanceType",
                    "targetNodes",
                    "computeClass",
                    "nodeLabels",
                    "confirm",
                    "autoscaling",
                    "maxNodes"
                ]),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    });
    // Near-valid drafts find the interesting paths (validation, confirmation, the API call).
    let near_valid = (
        "[a-z0-9-]{0,10}",
        prop::sample::select(vec!["gd-8xa100-i128", "gb200-4x", "cd-gp-a192-genoa", "nope"]),
        -2i32..4,
        prop::sample::select(vec!["spot", "default", "weird"]),
        prop::sample::select(vec!["dryRun", "create"]),
        prop::option::of("[a-zA-Z./-]{1,8}=[a-z ]{0,5}"),
    )
        .prop_map(|(name, instance, target, class, mode, label)| {
            let mut spec = json!({"computeClass": class, "instanceType": instance, "targetNodes": target});
            if let Some(l) = label {
                let (k, v) = l.split_once('=').unwrap();
                spec["nodeLabels"] = json!({k: v});
            }
            json!({"draft": {"cluster": CLUSTER, "name": name, "spec": spec}, "mode": mode, "confirm": null})
        });
    let mut runner = TestRunner::deterministic();
    let mut payloads = Vec::new();
    for _ in 0..48 {
        payloads.push(any_json.new_tree(&mut runner).unwrap().current());
        payloads.push(near_valid.new_tree(&mut runner).unwrap().current());
    }
    let (mut accepted, mut undecodable, mut refused) = (0, 0, 0);
    for p in &payloads {
        let (status, out) = submit(&d.base, p, &[]).await;
        assert!(status < 500, "payload {p} gave {status}: {out}");
        match (status, out["accepted"].as_bool()) {
            (400, _) => undecodable += 1,
            (200, Some(true)) => accepted += 1,
            _ => refused += 1,
        }
    }
    // The generators must reach every path, or the property says little.
    assert!(
        accepted > 0 && undecodable > 0 && refused > 0,
        "{accepted} accepted, {undecodable} undecodable, {refused} refused"
    );
    let admin = d.admin(ZONE);
    let created: Vec<String> = payloads
        .iter()
        .filter_map(|p| p["draft"]["name"].as_str().map(String::from))
        .collect();
    for pool in Api::<NodePool>::all(admin)
        .list(&Default::default())
        .await
        .unwrap()
    {
        let name = pool.metadata.name.clone().unwrap_or_default();
        if created.contains(&name) {
            let errs = app::domain::validation::validate(&pool.spec);
            assert!(
                errs.is_empty(),
                "{name} was created though invalid: {errs:?}"
            );
        }
    }
}

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
                    .map(|(k, v)| format!("{k}={}", urlencode(v)))
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
    println!(
        "FAULT|S4|10,000 random and mutated requests|{}|{}|0|0|0|0|{}|nothing created",
        statuses.len(),
        statuses.len() - server_errors.len(),
        server_errors.len()
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
    let pools_after = Api::<NodePool>::all(d.admin(ZONE))
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(
        pools_before, pools_after,
        "dry runs and validation create nothing"
    );
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
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
        let t = std::time::Instant::now();
        let r = reqwest::get(format!("{}/api/v1/pools", d.base))
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        slowest = slowest.max(t.elapsed());
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
