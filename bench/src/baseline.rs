//! The baselines the bench's memory figures are compared with, measured in the same run:
//! - for the dashboard, a plain `kube::runtime::reflector` over the same Nodes and Pods, as
//!   untrimmed `k8s-openapi` objects: what a dashboard that keeps what it watches holds. It
//!   runs as a child of the bench (`spotboard-bench --baseline-reflector KUBECONFIG`), so its
//!   RSS is its own;
//! - for the embedded cluster, the serialized size of its Nodes and Pods (the bytes of a
//!   full list of each).

use std::{path::Path, process::Stdio};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::{
    Api, Client,
    runtime::{WatchStreamExt, reflector, watcher},
};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The line the child prints once both reflectors have listed.
const LISTED: &str = "baseline listed";

/// The child's side: reflects every Node and Pod until killed.
pub async fn run_reflector(kubeconfig: &Path) -> Res<()> {
    let client = crate::churn::admin_client(kubeconfig).await?;
    let (nodes, node_writer) = reflector::store::<Node>();
    let (pods, pod_writer) = reflector::store::<Pod>();
    tokio::spawn(reflect(client.clone(), node_writer));
    tokio::spawn(reflect(client, pod_writer));
    nodes.wait_until_ready().await?;
    pods.wait_until_ready().await?;
    println!("{LISTED} {} nodes {} pods", nodes.len(), pods.len());
    futures::future::pending::<()>().await;
    Ok(())
}

async fn reflect<K>(client: Client, writer: reflector::store::Writer<K>)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    reflector(
        writer,
        watcher(Api::<K>::all(client), watcher::Config::default()).default_backoff(),
    )
    .for_each(|_| futures::future::ready(()))
    .await;
}

/// The reflector child, started and listed.
pub struct Reflector {
    child: Child,
}

impl Reflector {
    /// Starts the child and waits until it has listed everything.
    pub async fn start(kubeconfig: &Path) -> Res<Self> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg("--baseline-reflector")
            .arg(kubeconfig)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        while let Some(line) = lines.next_line().await? {
            if line.starts_with(LISTED) {
                return Ok(Self { child });
            }
        }
        Err("the baseline reflector ended before listing".into())
    }

    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }
}

/// Bytes of a full list of `path` (e.g. `/api/v1/pods`) from the API server at `url`.
pub async fn list_bytes(url: &str, token: &str, path: &str) -> Res<u64> {
    let body = reqwest::Client::new()
        .get(format!("{url}{path}"))
        .bearer_auth(token)
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await?;
    Ok(body.len() as u64)
}
