//! The order of a submit's checks against an API server that counts what it is sent: the
//! limits come before any call, whatever token each request carries.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use app::create_api::PoolWriter;
use axum::http::{Request, request::Parts};
use spotboard_core::model::{PoolDraft, SubmitMode};
use spotboard_core::nodepool::{ComputeClass, NodePoolSpec};

use super::{CreateSettings, Creator, IdentitySettings, WriteTarget};
use crate::http::ClientKey;
use crate::hub::Hub;

/// An API server on loopback that answers every request 401 (as for a token it does not
/// know) and counts them.
async fn counting_api_server() -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let app = axum::Router::new().fallback(move || {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            (
                axum::http::StatusCode::UNAUTHORIZED,
                [("content-type", "application/json")],
                r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#,
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), calls)
}

fn creator(url: &str, read_only: bool) -> Arc<Creator> {
    let base = kube::Config::new(url.parse().unwrap());
    Creator::new(
        vec![WriteTarget {
            cluster: "c1".into(),
            zone: None,
            base,
            local: None,
            nodepools: true,
        }],
        CreateSettings {
            identity: IdentitySettings::default(),
            read_only,
            creates_per_minute: 10,
            api_calls_per_minute: 120,
        },
        Hub::new(&[("c1".into(), None)]),
    )
}

/// A request from `peer` carrying `token`, with the client key the guard would set.
fn request(peer: &str, token: &str) -> Parts {
    let (mut parts, ()) = Request::builder()
        .header("authorization", format!("Bearer {token}"))
        .body(())
        .unwrap()
        .into_parts();
    let addr = format!("{peer}:40000").parse().unwrap();
    parts.extensions.insert(ClientKey::of(None, Some(addr)));
    parts
}

fn draft(name: &str) -> PoolDraft {
    PoolDraft {
        cluster: "c1".into(),
        name: name.into(),
        spec: NodePoolSpec {
            compute_class: ComputeClass::Spot,
            instance_type: "cd-gp-a192-genoa".into(),
            target_nodes: 1,
            ..Default::default()
        },
    }
}

/// 125 dry runs with 125 new tokens from one peer: before, each new token had a fresh
/// budget and its SelfSubjectReview went out before any limit (250 calls, none limited).
#[tokio::test]
async fn new_tokens_from_one_client_share_its_limit_and_reviews_count() {
    let (url, calls) = counting_api_server().await;
    let c = creator(&url, false);
    let mut limited = 0;
    for i in 0..125 {
        let out = c
            .submit(
                &request("127.0.0.1", &format!("token-{i}")),
                draft("pool-a"),
                SubmitMode::DryRun,
                None,
            )
            .await;
        if out.message.contains("rate limit") {
            assert!(out.message.contains("per client"), "{}", out.message);
            limited += 1;
        }
    }
    let sent = calls.load(Ordering::SeqCst);
    println!("125 dry runs, 125 tokens, one peer: {limited} limited, {sent} API calls");
    // 120 calls a minute per client, two per new token (review, dry run): 60 go through,
    // and a few more as the budget refills (one call per 0.5 s) while the test runs.
    assert!(
        (120..=130).contains(&sent),
        "{sent} calls to the API server"
    );
    assert!(limited >= 60, "{limited} limited");
    // Another client is not held to the first one's limit.
    let out = c
        .submit(
            &request("127.0.0.2", "token-x"),
            draft("pool-a"),
            SubmitMode::DryRun,
            None,
        )
        .await;
    assert!(!out.message.contains("rate limit"), "{}", out.message);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        sent + 2,
        "its review and its dry run"
    );
}

#[tokio::test]
async fn read_only_and_invalid_submits_call_no_api_server() {
    let (url, calls) = counting_api_server().await;
    let c = creator(&url, true);
    let out = c
        .submit(
            &request("127.0.0.1", "t1"),
            draft("pool-a"),
            SubmitMode::Create,
            None,
        )
        .await;
    assert!(out.message.contains("--read-only"), "{}", out.message);
    let c = creator(&url, false);
    let out = c
        .submit(
            &request("127.0.0.1", "t2"),
            draft("Not A Name"),
            SubmitMode::DryRun,
            None,
        )
        .await;
    assert!(!out.errors.is_empty(), "{out:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no call for either");
}
