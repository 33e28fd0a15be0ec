//! Live preemptions against the embedded cluster: the CKS timeline from signals, the blast
//! radius read at T=0, a hand-made label driving the same timeline, waves and metrics.

use crate::common;

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use common::sim::eventually;

const ZONE: &str = "US-EAST-04A";

use common::{preemption_card as find, preemptions};

/// Each owned pod's replica count is its owner's active pods in the cluster, give or take
/// the owner's pods on the preempted node (evicted and replaced since T=0).
async fn replicas_match_the_cluster(admin: &kube::Client, pods: &[Value]) {
    use k8s_openapi::api::core::v1::Pod;
    let mut checked = 0;
    for p in pods.iter().filter(|p| p["replicas"].is_u64()) {
        let (ns, kind, name) = (
            p["namespace"].as_str().unwrap(),
            p["owner_kind"].as_str().unwrap(),
            p["owner_name"].as_str().unwrap(),
        );
        let owned_by = |x: &Value| x["owner_kind"] == kind && x["owner_name"] == name;
        let here = pods
            .iter()
            .filter(|x| x["namespace"] == ns && owned_by(x))
            .count() as i64;
        let active = Api::<Pod>::namespaced(admin.clone(), ns)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|q| {
                let phase = q.status.as_ref().and_then(|s| s.phase.as_deref());
                let owner = q.owner_references().first().cloned();
                !matches!(phase, Some("Succeeded" | "Failed"))
                    && owner.is_some_and(|o| o.kind == kind && o.name == name)
            })
            .count() as i64;
        let counted = p["replicas"].as_i64().unwrap();
        assert!(
            (counted - active).abs() <= here && counted >= here,
            "{ns} {kind}/{name}: {counted} replicas on the card, {active} in the cluster, {here} on the node"
        );
        checked += 1;
    }
    assert!(checked > 0, "some pod of the node has an owner: {pods:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cks_preemption_plays_its_phases_with_its_blast_radius() {
    let d = common::start(&[ZONE], 120.0).await;
    let nodes = Api::<Node>::all(d.admin(ZONE));
    let spot: Vec<Node> = nodes
        .list(&ListParams::default().labels("compute.coreweave.com/node-pool=h100-spot-train"))
        .await
        .unwrap()
        .items;
    let (victim, by_hand) = (spot[0].name_any(), spot[1].name_any());
    let patch = json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
    nodes
        .patch(&victim, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();

    let first = eventually(Duration::from_secs(5), "T=0 with pods", || async {
        let p = preemptions(&d.base).await;
        find(&p, &victim).filter(|n| n["pods"].is_array()).cloned()
    })
    .await;
    assert_eq!(first["timeline"]["provider"], "cks");
    assert_eq!(first["capacity_type"], "spot");
    assert_eq!(first["pool"], "h100-spot-train");
    let pods = first["pods"].as_array().unwrap();
    assert!(!pods.is_empty(), "the blast radius lists the node's pods");
    for p in pods {
        let fit = &p["fit"];
        assert!(
            !fit["sigterm"].is_null() && !fit["grace_end"].is_null(),
            "{p}"
        );
    }
    assert!(pods.iter().any(|p| p["namespace"] == "ml-training"));
    replicas_match_the_cluster(&d.admin(ZONE), pods).await;
    // The same pods are linked to the node's lifetime in the ledger, beyond the event TTL.
    let uid = first["uid"].as_str().unwrap();
    let linked = eventually(Duration::from_secs(5), "pods in the ledger", || async {
        let v: Value = reqwest::get(format!("{}/api/v1/ledger/pods?uid={uid}", d.base))
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        v.as_array().filter(|a| !a.is_empty()).cloned()
    })
    .await;
    assert_eq!(linked.len(), pods.len());

    // At speed 120 the 7-minute window takes 3.5 s: draining, then removed.
    eventually(Duration::from_secs(10), "draining observed", || async {
        let p = preemptions(&d.base).await;
        find(&p, &victim)
            .filter(|n| n["timeline"]["phases"][1]["observed"].is_string())
            .cloned()
    })
    .await;
    let removed = eventually(Duration::from_secs(15), "removed", || async {
        let p = preemptions(&d.base).await;
        find(&p, &victim)
            .filter(|n| n["timeline"]["phases"][2]["observed"].is_string())
            .cloned()
    })
    .await;
    assert_eq!(removed["timeline"]["phases"][2]["name"], "removed");

    // A label set by hand on another node drives the same timeline (signals, not the sim),
    // and its card reaches a `/preemptions` tab on the stream, with no request of the tab's.
    let stream = format!("{}/api/v1/stream?preemptions=1", d.base);
    let want = by_hand.clone();
    let (snapshot_tx, snapshot_rx) = tokio::sync::oneshot::channel();
    let tab = tokio::spawn(async move {
        let mut snapshot_tx = Some(snapshot_tx);
        common::sse_until(&stream, Duration::from_secs(20), |event, data| {
            if event == "snapshot"
                && let Some(tx) = snapshot_tx.take()
            {
                let _ = tx.send(());
            }
            if event != "delta" {
                return false;
            }
            let d: Value = serde_json::from_str(data).unwrap_or_default();
            d["kind"] == "preemption" && d["change"]["add"]["node"] == want.as_str()
        })
        .await
    });
    // The tab holds its snapshot before the label goes on.
    tokio::time::timeout(Duration::from_secs(10), snapshot_rx)
        .await
        .expect("the tab's snapshot in time")
        .expect("the stream sends a snapshot");
    let label = json!({"metadata": {"labels": {"qos.coreweave.cloud/pending-preemption": "true"}}});
    let labelled_at = std::time::Instant::now();
    nodes
        .patch(&by_hand, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    let card = tab
        .await
        .unwrap()
        .expect("the preemption's row on the stream");
    println!(
        "label → preemption row on the stream: {} ms",
        labelled_at.elapsed().as_millis()
    );
    let card: Value = serde_json::from_str(&card).unwrap();
    assert_eq!(
        card["change"]["add"]["timeline"]["phases"][0]["name"],
        "notice"
    );
    let hand = eventually(Duration::from_secs(5), "hand-labelled node", || async {
        let p = preemptions(&d.base).await;
        find(&p, &by_hand).cloned()
    })
    .await;
    assert_eq!(hand["timeline"]["phases"][0]["name"], "notice");

    let metrics = common::text_of(&format!("{}/metrics", d.base)).await;
    assert!(
        metrics.contains("spotboard_preemptions_total{cluster=\"spotboard-us-east-04a\",pool=\"h100-spot-train\",zone=\"US-EAST-04A\",instance_type=\"gd-8xh100ib-i128\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("spotboard_preemption_waves_total"),
        "{metrics}"
    );

    // The ledger's rates: the pool had a preemption in the last 24 h.
    let rate = eventually(Duration::from_secs(10), "a rate for the pool", || async {
        let p = preemptions(&d.base).await;
        p["rates"]
            .as_array()?
            .iter()
            .find(|r| {
                r["by"] == "pool"
                    && r["key"] == "spotboard-us-east-04a/h100-spot-train"
                    && r["window"] == "24h"
                    && r["preemptions"].as_u64().is_some_and(|n| n >= 1)
            })
            .cloned()
    })
    .await;
    assert!(rate["band"].as_str().unwrap().contains('%'), "{rate}");

    // One definition: the capacity grid's cell and the Capacity Finder's score show the
    // ledger's 24 h rate of the type in the zone, the row `/preemptions` shows.
    let (zone, t) = ("US-EAST-04A", "gd-8xh100ib-i128");
    let (ledger, grid, finder) = eventually(
        Duration::from_secs(10),
        "the same rate on three pages",
        || async {
            let p = preemptions(&d.base).await;
            let row = p["rates"].as_array()?.iter().find(|r| {
                r["by"] == "zone × instance type"
                    && r["key"] == format!("{zone}/{t}").as_str()
                    && r["window"] == "24h"
            })?;
            let ledger = row["rate_pct"].as_f64()?;
            let g =
                common::json_of(reqwest::Client::new().get(format!("{}/api/v1/capacity", d.base)))
                    .await;
            let cell = g["cells"]
                .as_array()?
                .iter()
                .find(|c| c["zone"] == zone && c["instance_type"] == t)?;
            let grid = cell["preemption_rate_pct"].as_f64()?;
            let f = common::json_of(reqwest::Client::new().get(format!(
                "{}/api/v1/capacity-finder?instanceType={t}&count=1",
                d.base
            )))
            .await;
            let finder = f["ranked"].as_array()?.iter().find(|z| z["zone"] == zone)?["parts"]
                .as_array()?
                .iter()
                .find(|part| part["name"] == "preemption")?["why"]
                .as_str()?
                .to_string();
            (ledger == grid && finder.starts_with(&format!("{ledger:.1} %")))
                .then_some((ledger, grid, finder))
        },
    )
    .await;
    assert!(
        ledger > 0.0,
        "the preemption above counts: {ledger} {grid} {finder}"
    );
}

/// Two preemptions close together: one wave alert, POSTed once firing (with both nodes) and
/// once resolved when the gap passes, with the documented schema; and a NodePool waiting for
/// capacity longer than `--alert-condition-minutes` fires its condition alert.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_preemptions_raise_one_wave_alert_firing_then_resolved() {
    let (hook, received) = common::webhook_sink().await;

    let d = common::start_with(&[ZONE], 120.0, |a| {
        a.alert_webhook = Some(hook);
        a.wave_gap_seconds = 2;
        a.alert_condition_minutes = 0;
    })
    .await;
    let nodes = Api::<Node>::all(d.admin(ZONE));
    let spot: Vec<String> = nodes
        .list(&ListParams::default().labels("compute.coreweave.com/node-pool=h100-spot-train"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|n| n.name_any())
        .collect();
    let patch = json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
    for n in &spot[..2] {
        nodes
            .patch(n, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    let names_both = |w: &Value| {
        let names: Vec<&str> = w["nodes"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        names.contains(&spot[0].as_str()) && names.contains(&spot[1].as_str())
    };
    let resolved = eventually(
        Duration::from_secs(20),
        "the wave resolved with both nodes",
        || async {
            received
                .lock()
                .unwrap()
                .iter()
                .find(|w| w["kind"] == "wave" && w["status"] == "resolved" && names_both(w))
                .cloned()
        },
    )
    .await;
    let posts: Vec<Value> = received.lock().unwrap().clone();
    let about_them: Vec<&Value> = posts
        .iter()
        .filter(|w| {
            w["nodes"]
                .as_array()
                .is_some_and(|a| a.iter().any(|n| n == spot[0].as_str()))
        })
        .collect();
    assert_eq!(
        about_them.len(),
        2,
        "one firing and one resolved per wave, not one per node: {about_them:#?}"
    );
    let firing = about_them[0];
    assert_eq!(
        (&firing["status"], &firing["schema"], &firing["cluster"]),
        (
            &json!("firing"),
            &json!("spotboard.dev/alert/v1"),
            &json!("spotboard-us-east-04a")
        )
    );
    assert_eq!(firing["key"], resolved["key"], "the same episode");
    assert!(firing["resolved"].is_null() && resolved["resolved"].is_string());
    assert!(names_both(firing), "{firing}");

    // b200-spot-burst waits for capacity from the start: Capacity=False longer than 0 min.
    let condition = eventually(Duration::from_secs(10), "the condition alert", || async {
        posts_now(&received)
            .into_iter()
            .find(|a| a["kind"] == "condition" && a["pool"] == "b200-spot-burst")
    })
    .await;
    assert_eq!(condition["status"], "firing");
    assert_eq!(
        condition["key"],
        "condition/spotboard-us-east-04a/b200-spot-burst/Capacity"
    );
    assert_eq!(
        condition["path"],
        "/pools/spotboard-us-east-04a/b200-spot-burst"
    );
    // The same alert fires in the app (the header's rows), once.
    let p = preemptions(&d.base).await;
    let shown: Vec<&Value> = p["firing"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["key"] == condition["key"])
        .collect();
    assert_eq!(shown.len(), 1, "{}", p["firing"]);
    let announced = posts_now(&received)
        .iter()
        .filter(|a| a["key"] == condition["key"])
        .count();
    assert_eq!(announced, 1, "announced once while it fires");
}

fn posts_now(received: &std::sync::Arc<std::sync::Mutex<Vec<Value>>>) -> Vec<Value> {
    received.lock().unwrap().clone()
}

/// A webhook that fails: answers other than 2xx are retried with backoff; one that never
/// takes the alert leaves it on `/preemptions` with its scheme and host only (the path is the
/// webhook's secret); a webhook that fails each message twice and then takes it gets it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_webhooks_are_retried_and_undelivered_alerts_shown_without_secrets() {
    use axum::http::StatusCode;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    // Every POST to the flaky webhook: the message (its key and status) and the answer.
    type Calls = Arc<Mutex<Vec<(String, u16)>>>;
    let calls: Calls = Arc::default();
    let flaky_calls = calls.clone();
    let broken_calls = Arc::new(AtomicUsize::new(0));
    let broken_count = broken_calls.clone();
    let app = axum::Router::new()
        .route(
            "/flaky/SECRET-PATH",
            axum::routing::post(move |axum::Json(v): axum::Json<Value>| {
                let calls = flaky_calls.clone();
                async move {
                    let mut calls = calls.lock().unwrap();
                    let message = format!("{} {}", v["key"], v["status"]);
                    let before = calls.iter().filter(|(m, _)| *m == message).count();
                    // Each message: refused twice, taken the third time.
                    let answer = if before < 2 {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        StatusCode::OK
                    };
                    calls.push((message, answer.as_u16()));
                    answer
                }
            }),
        )
        .route(
            "/broken/SECRET-PATH",
            axum::routing::post(move || {
                let calls = broken_count.clone();
                async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    StatusCode::INTERNAL_SERVER_ERROR
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    for (path, delivered) in [("flaky", true), ("broken", false)] {
        let hook = format!("http://{addr}/{path}/SECRET-PATH");
        // Speed 120: the notice window (3.5 s) spans several of the tracker's once-a-second
        // looks, so the preemption is seen however loaded the machine is.
        let d = common::start_with(&[ZONE], 120.0, |a| {
            a.alert_webhook = Some(hook);
            a.wave_gap_seconds = 1;
        })
        .await;
        let nodes = Api::<Node>::all(d.admin(ZONE));
        let spot = nodes
            .list(&ListParams::default().labels("compute.coreweave.com/node-pool=h100-spot-train"))
            .await
            .unwrap()
            .items[0]
            .name_any();
        let patch = json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
        nodes
            .patch(&spot, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        if delivered {
            // The messages in the order they were first POSTed, each with its answers.
            let messages = || -> Vec<(String, Vec<u16>)> {
                let mut out: Vec<(String, Vec<u16>)> = Vec::new();
                for (m, answer) in calls.lock().unwrap().iter() {
                    match out.iter_mut().find(|(seen, _)| seen == m) {
                        Some((_, answers)) => answers.push(*answer),
                        None => out.push((m.clone(), vec![*answer])),
                    }
                }
                out
            };
            // Messages go out one at a time, in order: once the second is taken, the first
            // one's delivery is over, retries included.
            let seen = eventually(
                Duration::from_secs(40),
                "two alert messages taken",
                || async {
                    let m = messages();
                    (m.len() >= 2 && m[1].1.contains(&200)).then_some(m)
                },
            )
            .await;
            for (message, answers) in &seen {
                assert_eq!(
                    answers,
                    &[503, 503, 200],
                    "{message}: refused twice, then taken once ({seen:?})"
                );
            }
            let p = preemptions(&d.base).await;
            assert_eq!(p["undelivered"], json!([]), "{}", p["undelivered"]);
        } else {
            let shown = eventually(Duration::from_secs(40), "the undelivered alert", || async {
                let p = preemptions(&d.base).await;
                p["undelivered"].as_array()?.first().cloned()
            })
            .await;
            assert_eq!(shown["destination"], format!("http://{addr}"));
            assert_eq!(shown["attempts"], 4);
            assert!(shown["error"].as_str().unwrap().contains("500"), "{shown}");
            assert!(!shown.to_string().contains("SECRET"), "{shown}");
            assert!(broken_calls.load(Ordering::SeqCst) >= 4);
            // The page shows it too, naming the webhook by scheme and host.
            let page = common::text_of(&format!("{}/preemptions", d.base)).await;
            let shown_on_page = format!("not delivered to http://{addr}:");
            assert!(
                page.contains("data-testid=\"undelivered\"") && page.contains(&shown_on_page),
                "the undelivered alert on the page"
            );
            assert!(!page.contains("SECRET"));
        }
    }
}
