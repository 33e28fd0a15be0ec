//! Driving node changes through the API server, and matching them to stream deltas.

use std::{
    collections::HashMap,
    path::Path,
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams},
};

use super::sse::Seen;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A change sent: (node uid, cordoned value, when the request was sent, how long the API
/// server took to answer it).
pub type Sent = (String, bool, Instant, Duration);

pub async fn admin_client(kubeconfig: &Path) -> Res<Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    Ok(Client::try_from(config)?)
}

pub async fn wait_for_nodes(client: &Client, want: usize) -> Res<()> {
    let api = Api::<Node>::all(client.clone());
    let start = Instant::now();
    loop {
        let n = api.list_metadata(&ListParams::default()).await?.items.len();
        if n >= want {
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(600) {
            return Err(format!("only {n} of {want} nodes after 600 s").into());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The pool with the most nodes: (cluster, pool, [(node uid, node name)]).
pub async fn biggest_pool(base: &str) -> Res<(String, String, Vec<(String, String)>)> {
    let pools: serde_json::Value = reqwest::get(format!("{base}/api/v1/pools"))
        .await?
        .json()
        .await?;
    let biggest = pools["pools"]
        .as_array()
        .ok_or("no pools")?
        .iter()
        .max_by_key(|p| p["current_nodes"].as_i64().unwrap_or(0))
        .ok_or("no pools")?;
    let cluster = biggest["cluster"].as_str().ok_or("no cluster")?.to_string();
    let pool = biggest["name"].as_str().ok_or("no name")?.to_string();
    let detail: serde_json::Value = reqwest::get(format!("{base}/api/v1/pools/{cluster}/{pool}"))
        .await?
        .json()
        .await?;
    let nodes = detail["nodes"]
        .as_array()
        .ok_or("no nodes")?
        .iter()
        .filter_map(|n| {
            Some((
                n["key"].as_str()?.to_string(),
                n["name"].as_str()?.to_string(),
            ))
        })
        .collect();
    Ok((cluster, pool, nodes))
}

/// Cordons and uncordons nodes round-robin at `rate` per second for `length`. `cordoned`
/// holds each node's value by uid across runs (empty: every node starts schedulable), so each
/// patch really changes the node.
pub async fn run(
    client: &Client,
    nodes: &[(String, String)],
    cordoned: &mut HashMap<String, bool>,
    rate: u32,
    length: Duration,
) -> Res<Vec<Sent>> {
    let api = Api::<Node>::all(client.clone());
    let total = (rate as u64 * length.as_secs()) as usize;
    let start = Instant::now();
    let period = Duration::from_secs_f64(1.0 / rate as f64);
    let mut plan = Vec::with_capacity(total);
    for i in 0..total {
        let (uid, name) = &nodes[i % nodes.len()];
        let next = !cordoned.get(uid).copied().unwrap_or(false);
        cordoned.insert(uid.clone(), next);
        plan.push((i, uid.clone(), name.clone(), next));
    }
    let sent: Vec<Option<Sent>> = futures::stream::iter(plan)
        .map(|(i, uid, name, value)| {
            let api = api.clone();
            async move {
                let due = start + period * i as u32;
                tokio::time::sleep_until(due.into()).await;
                let at = Instant::now();
                let patch = Patch::Merge(serde_json::json!({"spec": {"unschedulable": value}}));
                api.patch(&name, &PatchParams::default(), &patch)
                    .await
                    .ok()
                    .map(|_| (uid, value, at, at.elapsed()))
            }
        })
        .buffer_unordered(256)
        .collect()
        .await;
    Ok(sent.into_iter().flatten().collect())
}

/// For each delta, the time since the matching change was sent.
pub fn latencies(sent: &[Sent], seen: &[Seen]) -> Vec<Duration> {
    let mut pending: HashMap<(&str, bool), Vec<Instant>> = HashMap::new();
    for (uid, v, at, _) in sent {
        pending.entry((uid.as_str(), *v)).or_default().push(*at);
    }
    let mut out = Vec::new();
    for (uid, v, arrived) in seen {
        if let Some(times) = pending.get_mut(&(uid.as_str(), *v))
            && !times.is_empty()
        {
            let t = times.remove(0);
            out.push(arrived.saturating_duration_since(t));
        }
    }
    out
}
