//! NVIDIA's DCGM exporter, as it would run on each GPU node of the embedded zones: one
//! `GET /metrics` in the exporter's text format, a `DCGM_FI_DEV_GPU_UTIL` series per GPU, for
//! a Prometheus to scrape (the tests start a real one; so can a user, with the address the
//! embedded cluster logs).
//!
//! The exporter's output, as its documentation shows it (NVIDIA: DCGM Exporter, "DCGM
//! Exporter Metrics", read 2026-11-29): a `# HELP` and `# TYPE … gauge` line, then one series
//! per GPU labelled `gpu` (index), `UUID`, `device` (`nvidia0`…), `modelName`, `Hostname`
//! (the node), `DCGM_FI_DRIVER_VERSION`, and, with Kubernetes mapping on (the GPU Operator's
//! default), `container`, `namespace` and `pod` of the pod holding the GPU, empty for a free
//! GPU. One endpoint serves every node here (a real fleet has one exporter per node); the
//! series are the same.
//!
//! The model's own rule for the figures (not the product's: spotboard only averages what
//! Prometheus holds): a node's GPUs are its `status.capacity` `nvidia.com/gpu`; its running
//! pods, by name, take the GPUs their containers' `nvidia.com/gpu` limits ask for, in index
//! order; a held GPU is as busy as its pod's `sim.spotboard.dev/gpu-util` annotation says
//! (0–100), or else a steady 40–95 % drawn from the pod's name (a training job's GPUs are
//! seldom idle or saturated); a free GPU reads 0.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, ListParams};

use super::random::hash;

/// The annotation that sets how busy a pod keeps its GPUs, percent.
pub const GPU_UTIL_ANNOTATION: &str = "sim.spotboard.dev/gpu-util";

/// The NVIDIA driver the series report.
const DRIVER: &str = "550.127.05";

/// The exporter's figure for one GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSeries {
    pub node: String,
    pub gpu: u32,
    pub model: String,
    /// `(namespace, pod, container)` holding the GPU.
    pub holder: Option<(String, String, String)>,
    /// Percent, 0–100.
    pub util: u32,
}

/// The series of every GPU of `nodes`, given `pods`.
pub fn series(nodes: &[Node], pods: &[Pod]) -> Vec<GpuSeries> {
    let mut on_node: BTreeMap<&str, Vec<&Pod>> = BTreeMap::new();
    for p in pods {
        let running = p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if let (true, Some(node)) = (running, node) {
            on_node.entry(node).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    for n in nodes {
        let name = n.metadata.name.clone().unwrap_or_default();
        let gpus = n
            .status
            .as_ref()
            .and_then(|s| s.capacity.as_ref())
            .and_then(|c| c.get("nvidia.com/gpu"))
            .and_then(|q| q.0.parse::<u32>().ok())
            .unwrap_or(0);
        if gpus == 0 {
            continue;
        }
        let model = model_name(n);
        let mut held = Vec::new();
        let mut pods = on_node.get(name.as_str()).cloned().unwrap_or_default();
        pods.sort_by_key(|p| p.metadata.name.clone());
        for p in pods {
            let pod = p.metadata.name.clone().unwrap_or_default();
            let util = p
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(GPU_UTIL_ANNOTATION))
                .and_then(|v| v.parse::<u32>().ok())
                .map(|v| v.min(100))
                .unwrap_or_else(|| 40 + (hash(&pod) % 56) as u32);
            for c in p.spec.iter().flat_map(|s| &s.containers) {
                let asked = c
                    .resources
                    .as_ref()
                    .and_then(|r| r.limits.as_ref().or(r.requests.as_ref()))
                    .and_then(|l| l.get("nvidia.com/gpu"))
                    .and_then(|q| q.0.parse::<u32>().ok())
                    .unwrap_or(0);
                for _ in 0..asked {
                    let ns = p.metadata.namespace.clone().unwrap_or_default();
                    held.push((Some((ns, pod.clone(), c.name.clone())), util));
                }
            }
        }
        for gpu in 0..gpus {
            let (holder, util) = held.get(gpu as usize).cloned().unwrap_or((None, 0));
            out.push(GpuSeries {
                node: name.clone(),
                gpu,
                model: model.clone(),
                holder,
                util,
            });
        }
    }
    out
}

/// The GPU's name as NVML gives it (`NVIDIA H100 80GB HBM3`), from the node's GPU labels.
fn model_name(n: &Node) -> String {
    let labels = n.metadata.labels.clone().unwrap_or_default();
    if let Some(p) = labels.get("nvidia.com/gpu.product") {
        return p.replace('-', " ");
    }
    let short = labels
        .get("cloud.google.com/gke-accelerator")
        .map(|a| a.trim_start_matches("nvidia-").to_string())
        .or_else(|| labels.get("karpenter.k8s.aws/instance-gpu-name").cloned())
        .unwrap_or_default();
    format!("NVIDIA {}", short.to_ascii_uppercase())
}

/// The text format of `series`.
pub fn text(series: &[GpuSeries]) -> String {
    let mut out = String::from(
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n",
    );
    for s in series {
        let (ns, pod, container) = s.holder.clone().unwrap_or_default();
        // A GPU's UUID is fixed by its node and index, as a physical GPU's is.
        let id = super::random::mix(hash(&s.node), u64::from(s.gpu));
        let _ = writeln!(
            out,
            "DCGM_FI_DEV_GPU_UTIL{{gpu=\"{gpu}\",UUID=\"GPU-{a:08x}-{b:04x}-{c:04x}-{d:04x}-{e:012x}\",device=\"nvidia{gpu}\",modelName=\"{model}\",Hostname=\"{node}\",DCGM_FI_DRIVER_VERSION=\"{DRIVER}\",container=\"{container}\",namespace=\"{ns}\",pod=\"{pod}\"}} {util}",
            gpu = s.gpu,
            a = id >> 32,
            b = (id >> 16) & 0xffff,
            c = id & 0xffff,
            d = (id >> 48) & 0xffff,
            e = id & 0xffff_ffff_ffff,
            model = s.model,
            node = s.node,
            util = s.util,
        );
    }
    out
}

/// The exporter's clients: one administrator per zone.
#[derive(Clone)]
struct Zones(Vec<Client>);

async fn metrics(State(zones): State<Zones>) -> Response {
    let mut all = Vec::new();
    for client in &zones.0 {
        let lp = ListParams::default();
        let nodes = Api::<Node>::all(client.clone()).list(&lp).await;
        let pods = Api::<Pod>::all(client.clone()).list(&lp).await;
        match (nodes, pods) {
            (Ok(nodes), Ok(pods)) => all.extend(series(&nodes.items, &pods.items)),
            // As a node's exporter that cannot reach DCGM: the scrape fails, Prometheus
            // marks the target down.
            (Err(e), _) | (_, Err(e)) => {
                return (StatusCode::SERVICE_UNAVAILABLE, e.to_string()).into_response();
            }
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text(&all),
    )
        .into_response()
}

/// Serves the exporter on 127.0.0.1 (an ephemeral port) for `clients`' zones until the task
/// is aborted; returns its `/metrics` URL.
///
/// Errors: the port could not be bound.
pub async fn start(clients: Vec<Client>) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/metrics", listener.local_addr()?);
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(Zones(clients));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, task))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use serde_json::json;

    use super::*;

    fn node(name: &str, gpus: u32) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": {"cloud.google.com/gke-accelerator": "nvidia-l4"}},
            "status": {"capacity": {"nvidia.com/gpu": gpus.to_string(), "cpu": "24"}}
        }))
        .unwrap()
    }

    fn pod(name: &str, node: &str, gpus: u32, util: Option<&str>, phase: &str) -> Pod {
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"nodeName": node, "containers": [{"name": "train"}]},
            "status": {"phase": phase}
        }))
        .unwrap();
        if let Some(u) = util {
            p.metadata.annotations =
                Some([(GPU_UTIL_ANNOTATION.to_string(), u.to_string())].into());
        }
        let limits = [("nvidia.com/gpu".to_string(), Quantity(gpus.to_string()))].into();
        p.spec.as_mut().unwrap().containers[0].resources =
            Some(k8s_openapi::api::core::v1::ResourceRequirements {
                limits: Some(limits),
                ..Default::default()
            });
        p
    }

    #[test]
    fn pods_hold_gpus_in_order_and_free_gpus_read_zero() {
        let nodes = [node("gke-a", 2), node("cpu-node", 0)];
        let pods = [
            pod("b-job", "gke-a", 1, Some("70"), "Running"),
            pod("a-job", "gke-a", 1, Some("250"), "Running"),
            pod("done", "gke-a", 1, Some("10"), "Succeeded"),
        ];
        let s = series(&nodes, &pods);
        assert_eq!(s.len(), 2, "one series per GPU, none for a CPU node");
        assert_eq!(
            (s[0].holder.as_ref().unwrap().1.as_str(), s[0].util),
            ("a-job", 100)
        );
        assert_eq!(
            (s[1].holder.as_ref().unwrap().1.as_str(), s[1].util),
            ("b-job", 70)
        );
        assert_eq!(s[0].model, "NVIDIA L4");
        let free = series(
            &[node("gke-b", 2)],
            &[pod("x", "gke-b", 1, None, "Running")],
        );
        assert!((40..=95).contains(&free[0].util));
        assert_eq!((free[1].holder.clone(), free[1].util), (None, 0));
        let body = text(&free);
        assert!(body.starts_with("# HELP DCGM_FI_DEV_GPU_UTIL"));
        assert!(
            body.contains("Hostname=\"gke-b\"") && body.contains("pod=\"\"} 0\n"),
            "{body}"
        );
    }
}
