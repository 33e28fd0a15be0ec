//! For tests (feature `testing`): a zone of the embedded cluster with the behaviour model
//! running, and ways to poll any cluster through kube-rs until something holds.

use std::future::Future;
use std::time::Duration;

use crate::api::{ApiOptions, ApiServer, Tokens};
use crate::client_for;
use crate::sim::{self, SimHandle, SimOptions};
use k8s_openapi::api::core::v1::{Event, Node};
use kube::api::ListParams;
use kube::{Api, Client};
use spotboard_core::labels;
use spotboard_core::nodepool::{ConditionType, NodePool};
use tokio::time::Instant;

pub struct Zone {
    _server: ApiServer,
    pub sim: SimHandle,
    /// The administrator (everything).
    pub client: Client,
    /// spotboard's own account: reads, and writes Leases only.
    pub reader: Client,
    /// The API server's URL and the reader's token, for a kubeconfig a spotboard process reads.
    pub url: String,
    pub reader_token: String,
    /// The administrator without kube-rs's retries of 429: a refused eviction answers at once.
    pub evictions: Client,
}

pub async fn zone(zone_index: usize, zone_count: usize, speed: f64) -> Zone {
    let tokens = Tokens::generate();
    let server = ApiServer::start_with(
        "US-EAST-04A",
        tokens.clone(),
        ApiOptions::default(),
        &sim::crds::for_zone(None),
    )
    .await
    .unwrap();
    let client = client_for(&server.url(), &tokens.admin, "test").unwrap();
    let reader = client_for(&server.url(), &tokens.reader, "test").unwrap();
    let opts = SimOptions {
        seed: 7,
        speed,
        extra_nodes: 0,
        nodes_per_pool: crate::sim::scenario::BULK_POOL_MAX,
        pods_per_node: 5,
        zone_count,
    };
    let evictions = crate::evicting_client_for(&server.url(), &tokens.admin, "test").unwrap();
    let clients = sim::Clients {
        main: client.clone(),
        evictions: evictions.clone(),
        loader: server.loader(),
    };
    let sim = sim::start("US-EAST-04A", zone_index, clients, &opts)
        .await
        .unwrap();
    Zone {
        url: server.url(),
        reader_token: tokens.reader.clone(),
        _server: server,
        sim,
        client,
        reader,
        evictions,
    }
}

/// Polls `f` every 20 ms until it returns `Some`; panics with `what` after `limit`.
pub async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn pool(client: &Client, name: &str) -> Option<NodePool> {
    Api::<NodePool>::all(client.clone())
        .get_opt(name)
        .await
        .unwrap()
}

pub fn reason(p: &NodePool, t: ConditionType) -> String {
    let conds = p
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    conds
        .iter()
        .find(|c| c.type_ == t)
        .map(|c| format!("{}/{}", c.status, c.reason.clone().unwrap_or_default()))
        .unwrap_or_default()
}

pub async fn pool_nodes(client: &Client, pool: &str) -> Vec<Node> {
    let lp = ListParams::default().labels(&format!("{}={pool}", labels::NODE_POOL));
    Api::<Node>::all(client.clone())
        .list(&lp)
        .await
        .unwrap()
        .items
}

/// Events about object `name` with `reason`.
pub async fn events(client: &Client, name: &str, reason: &str) -> Vec<Event> {
    let all = Api::<Event>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    all.items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(name) && e.reason.as_deref() == Some(reason)
        })
        .collect()
}

pub fn counts(p: &NodePool) -> (i32, i32, i32) {
    let s = p.status.clone().unwrap_or_default();
    (
        s.queued_nodes.unwrap_or(-1),
        s.in_progress.unwrap_or(-1),
        s.current_nodes.unwrap_or(-1),
    )
}

/// Plays a provider preemption on `node` (the behaviour model's annotation, as a person
/// would with kubectl).
pub async fn preempt(nodes: &Api<Node>, node: &str) {
    use kube::api::{Patch, PatchParams};
    let patch =
        serde_json::json!({"metadata": {"annotations": {"sim.spotboard.dev/preempt": "now"}}});
    nodes
        .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the preemption annotation is accepted");
}

/// Waits until `node` is gone from the cluster; panics after `limit`.
pub async fn gone(nodes: &Api<Node>, node: &str, limit: Duration) {
    eventually(limit, "the node is gone", || async {
        nodes.get_opt(node).await.unwrap().is_none().then_some(())
    })
    .await
}
