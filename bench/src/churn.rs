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

/// A client for the kubeconfig's current context (the first zone's, as the embedded cluster
/// writes it).
pub async fn admin_client(kubeconfig: &Path) -> Res<Client> {
    context_client(kubeconfig, None).await
}

/// A client for `context` of the kubeconfig, its current context with `None`.
pub async fn context_client(kubeconfig: &Path, context: Option<&str>) -> Res<Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kc, &options).await?;
    Ok(Client::try_from(config)?)
}

/// Returns once `want` nodes exist. Polls every 100 ms for one node and the list's
/// `remainingItemCount`, so the wait neither lists 10k nodes again and again nor adds a watch's
/// delivery to the seeding it measures.
pub async fn wait_for_nodes(client: &Client, want: usize) -> Res<()> {
    let api = Api::<Node>::all(client.clone());
    let start = Instant::now();
    loop {
        let page = api.list_metadata(&ListParams::default().limit(1)).await?;
        let n = page.items.len() + page.metadata.remaining_item_count.unwrap_or(0) as usize;
        if n >= want {
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(600) {
            return Err(format!("only {n} of {want} nodes after 600 s").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The dashboard's pool rows, as `/api/v1/pools` gives them. Errors: the dashboard did not
/// answer, or answered without a `pools` array.
pub async fn pools(base: &str) -> Res<Vec<serde_json::Value>> {
    let mut v: serde_json::Value = reqwest::get(format!("{base}/api/v1/pools"))
        .await?
        .json()
        .await?;
    match v["pools"].take() {
        serde_json::Value::Array(pools) => Ok(pools),
        _ => Err("no pools".into()),
    }
}

/// The pool with the most nodes: (cluster, pool, [(node uid, node name)]).
pub async fn biggest_pool(base: &str) -> Res<(String, String, Vec<(String, String)>)> {
    let pools = pools(base).await?;
    let biggest = pools
        .iter()
        .max_by_key(|p| p["current_nodes"].as_i64().unwrap_or(0))
        .ok_or("no pools")?;
    let cluster = biggest["cluster"].as_str().ok_or("no cluster")?;
    let pool = biggest["name"].as_str().ok_or("no name")?;
    pool_nodes(base, cluster, pool).await
}

/// A pool's nodes from its page's API: (cluster, pool, [(node uid, node name)]).
pub async fn pool_nodes(
    base: &str,
    cluster: &str,
    pool: &str,
) -> Res<(String, String, Vec<(String, String)>)> {
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
    Ok((cluster.to_string(), pool.to_string(), nodes))
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

/// For each delta that flips its node's value, the time since that change was sent: the
/// latest change of that node to that value sent before the delta arrived. A delta that
/// leaves the value as the node's previous delta had it shows some other change of the node
/// (the behaviour model's own writes) and is not counted.
///
/// Why the latest and not the next unmatched one: each node flips between two values, so the
/// same (node, value) is sent again two flips later (5 s at 1,000 changes/s over 2,500 nodes).
/// Matched first-come, one delta that never came (a patch whose answer was lost but which went
/// through, say) paired every later delta of that node with the change before, and showed
/// up as a 5 s maximum.
pub fn latencies(sent: &[Sent], seen: &[Seen]) -> Vec<Duration> {
    let mut by_change: HashMap<(&str, bool), Vec<Instant>> = HashMap::new();
    for (uid, v, at, _) in sent {
        by_change.entry((uid.as_str(), *v)).or_default().push(*at);
    }
    for times in by_change.values_mut() {
        times.sort();
    }
    let mut last: HashMap<&str, bool> = HashMap::new();
    seen.iter()
        .filter(|(uid, v, _)| last.insert(uid.as_str(), *v) != Some(*v))
        .filter_map(|(uid, v, arrived)| {
            let times = by_change.get(&(uid.as_str(), *v))?;
            let before = times.partition_point(|t| t <= arrived);
            Some(arrived.saturating_duration_since(*times.get(before.checked_sub(1)?)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_delta_does_not_pair_later_ones_with_older_changes() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let sent: Vec<Sent> = [(0, true), (2_500, false), (5_000, true), (7_500, false)]
            .into_iter()
            .map(|(ms, v)| ("n1".to_string(), v, at(ms), Duration::ZERO))
            .collect();
        // The first change's delta never came; the others came 10 ms after their change, and
        // one more at 6 s showed some other change of the node.
        let seen: Vec<Seen> = [(2_510, false), (5_010, true), (6_000, true), (7_510, false)]
            .into_iter()
            .map(|(ms, v)| ("n1".to_string(), v, at(ms)))
            .collect();
        assert_eq!(latencies(&sent, &seen), vec![Duration::from_millis(10); 3]);
        let stray: Vec<Seen> = vec![("n2".to_string(), true, at(1))];
        assert!(
            latencies(&sent, &stray).is_empty(),
            "a delta of no change sent"
        );
    }
}
