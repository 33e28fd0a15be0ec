//! Creating NodePools through spotboard against the embedded cluster: the shared validation
//! table in all three places, dry run and create as the user, identity modes, read-only,
//! confirmation, rate limit, Origin, and random payloads. Hostile requests are in
//! `security.rs`.

use crate::common;

use std::time::Duration;

use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use spotboard_core::domain::{manifest, validation::cases::CASES};
use spotboard_core::nodepool::{ConditionType, NodePool};

use common::create::{CLUSTER, ZONE, body, draft, error_fields, exists, submit};
use common::sim::{eventually, reason};

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

/// Random payloads to the create server function: never a 5xx, never a pool the cluster
/// finds invalid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_payloads_never_fail_the_server_or_create_invalid_pools() {
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    // Every accepted create goes through: the rate limit is tested above.
    let d = common::start_with(&[ZONE], 60.0, |a| a.creates_per_minute = 1_000).await;
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
    // Creates that pass the form's shape, small enough to need no confirmation, with labels
    // and taints near the rules' edges: the ones that reach the API server and leave a pool.
    let creates = (
        "[a-z][a-z0-9-]{0,8}[a-z0-9]",
        prop::sample::select(vec!["cd-gp-a192-genoa", "gd-8xa100-i128", "gb200-4x"]),
        0i32..2,
        prop::sample::select(vec!["spot", "default"]),
        prop::option::of((
            prop::sample::select(vec![
                "team",
                "example.com/team",
                "node.coreweave.cloud/state",
                "compute.coreweave.com/node-pool",
                "a/b/c",
                "-team",
            ]),
            prop::sample::select(vec!["ml", "", "a b", "-x", "v.1_2"]),
        )),
        prop::option::of((
            prop::sample::select(vec!["dedicated", "example.com/gpu", "bad key"]),
            prop::sample::select(vec!["NoSchedule", "NoExecute", "Sometimes"]),
        )),
    )
        .prop_map(|(name, instance, target, class, label, taint)| {
            let mut spec = json!({"computeClass": class, "instanceType": instance, "targetNodes": target});
            if let Some((k, v)) = label {
                spec["nodeLabels"] = json!({k: v});
            }
            if let Some((k, effect)) = taint {
                spec["nodeTaints"] = json!([{"key": k, "value": "x", "effect": effect}]);
            }
            json!({"draft": {"cluster": CLUSTER, "name": name, "spec": spec}, "mode": "create", "confirm": null})
        });
    let mut runner = TestRunner::deterministic();
    let mut payloads = Vec::new();
    for _ in 0..48 {
        payloads.push(any_json.new_tree(&mut runner).unwrap().current());
        payloads.push(near_valid.new_tree(&mut runner).unwrap().current());
        payloads.push(creates.new_tree(&mut runner).unwrap().current());
    }
    let before: Vec<String> = Api::<NodePool>::all(d.admin(ZONE))
        .list(&Default::default())
        .await
        .unwrap()
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
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
    // Judged by the cluster, not by the product's own `validate` (a rule missing there
    // would pass twice): every pool the payloads created must be one the embedded cluster's
    // controller marks `Validated=True`, and that its admission rules (written from CKS's
    // pages, independently of the product) find no problem in.
    let admin = d.admin(ZONE);
    let mut judged = 0;
    for pool in Api::<NodePool>::all(admin.clone())
        .list(&Default::default())
        .await
        .unwrap()
    {
        let name = pool.metadata.name.clone().unwrap_or_default();
        if before.contains(&name) {
            continue;
        }
        let problems = spotboard_embedded::sim::admission::check(&pool.spec);
        assert!(
            problems.is_empty(),
            "{name} was created though CKS would refuse it: {problems:?}"
        );
        let validated = eventually(Duration::from_secs(10), &name, || async {
            let p = common::sim::pool(&admin, &name).await?;
            Some(reason(&p, ConditionType::Validated)).filter(|r| !r.is_empty())
        })
        .await;
        assert_eq!(
            validated, "True/Valid",
            "{name} was created though the cluster's controller finds it invalid"
        );
        judged += 1;
    }
    assert!(
        judged > 0,
        "some payload created a pool, or the property says little"
    );
    println!(
        "{} payloads: {accepted} accepted, {undecodable} undecodable, {refused} refused; {judged} pools created, each Validated=True by the cluster",
        payloads.len()
    );
}
