//! Driving the create server function: the embedded zone and cluster the create tests use,
//! a submit as a browser sends it, drafts, and whether a pool exists.

use kube::api::Api;
use serde_json::{Value, json};

use spotboard_core::nodepool::NodePool;

pub const ZONE: &str = "US-EAST-04A";
pub const CLUSTER: &str = "spotboard-us-east-04a";

/// POSTs `body` to the submit server function with `headers`; the status and the JSON
/// answer (or the text, as a JSON string).
pub async fn submit(base: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
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

/// A spot draft for the test cluster.
pub fn draft(name: &str, instance: &str, target: i32) -> Value {
    json!({
        "cluster": CLUSTER,
        "name": name,
        "spec": {"computeClass": "spot", "instanceType": instance, "targetNodes": target},
    })
}

/// The submit body for `draft` in `mode` (`dryRun` or `create`).
pub fn body(draft: Value, mode: &str) -> Value {
    json!({"draft": draft, "mode": mode, "confirm": null})
}

/// The fields the outcome's errors name.
pub fn error_fields(outcome: &Value) -> Vec<String> {
    outcome["errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["field"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the NodePool `name` exists in the test zone.
pub async fn exists(d: &super::Dashboard, name: &str) -> bool {
    let client = d.admin(ZONE);
    Api::<NodePool>::all(client)
        .get_opt(name)
        .await
        .unwrap()
        .is_some()
}
