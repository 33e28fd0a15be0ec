//! The embedded API server through real kubectl, as a person uses it.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::objects::{api_code, node, pod, pool};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use spotboard_core::nodepool::NodePool;
use spotboard_embedded::{EmbeddedCluster, EmbeddedOptions};

pub(crate) struct Kubectl {
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    cache: PathBuf,
    cluster: EmbeddedCluster,
}

impl Kubectl {
    pub(crate) async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let cluster =
            EmbeddedCluster::start(EmbeddedOptions::empty("US-EAST-04A", kubeconfig.clone()))
                .await
                .unwrap();
        let cache = dir.path().join("cache");
        Self {
            _dir: dir,
            kubeconfig,
            cache,
            cluster,
        }
    }

    pub(crate) fn admin(&self) -> Client {
        self.cluster.admin_client("US-EAST-04A").unwrap()
    }

    pub(crate) fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .kill_on_drop(true);
        cmd
    }

    /// Runs kubectl; returns stdout and stderr, asserting success.
    pub(crate) async fn run(&self, args: &[&str]) -> (String, String) {
        let out = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .expect("kubectl finishes")
            .expect("kubectl runs");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        );
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\n{stdout}\n{stderr}"
        );
        (stdout, stderr)
    }

    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.kubeconfig.parent().unwrap().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

fn pool_yaml(target: u32, extra: &str) -> String {
    format!(
        "apiVersion: compute.coreweave.com/v1alpha1\nkind: NodePool\nmetadata:\n  name: cli-pool\n\
         spec:\n  computeClass: spot\n  instanceType: gd-8xh100ib-i128\n  targetNodes: {target}\n{extra}"
    )
}

pub(crate) fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_version_apply_get_describe_delete() {
    let k = Kubectl::start().await;
    let (version, _) = k.run(&["version", "-o", "json"]).await;
    let v: Value = serde_json::from_str(&version).unwrap();
    assert_eq!(v["serverVersion"]["gitVersion"], "v1.33.1");

    let file = k.write("pool.yaml", &pool_yaml(2, ""));
    let (out, _) = k.run(&["apply", "-f", path_str(&file)]).await;
    assert!(
        out.contains("nodepool.compute.coreweave.com/cli-pool created"),
        "{out}"
    );
    let file = k.write("pool.yaml", &pool_yaml(4, ""));
    let (out, _) = k.run(&["apply", "-f", path_str(&file)]).await;
    assert!(
        out.contains("nodepool.compute.coreweave.com/cli-pool configured"),
        "{out}"
    );
    let api: Api<NodePool> = Api::all(k.admin());
    let stored = api.get("cli-pool").await.unwrap();
    assert_eq!(stored.spec.target_nodes, 4);
    assert_eq!(stored.metadata.generation, Some(2));

    // Unknown fields: a warning, and the object is stored anyway.
    let file = k.write("pool.yaml", &pool_yaml(4, "  placement:\n    rack: r12\n"));
    let (_, err) = k.run(&["apply", "-f", path_str(&file)]).await;
    assert!(err.contains("unknown field \"spec.placement\""), "{err}");
    assert_eq!(
        api.get("cli-pool").await.unwrap().spec.extra["placement"]["rack"],
        "r12"
    );

    let status = json!({"status": {"currentNodes": 3, "queuedNodes": 1, "conditions": [
        {"type": "Validated", "status": "True", "reason": "Valid"},
        {"type": "Capacity", "status": "False", "reason": "QueuedAwaitingCapacity"},
        {"type": "Quota", "status": "True", "reason": "Under"}]}});
    api.patch_status("cli-pool", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let (table, _) = k.run(&["get", "nodepools"]).await;
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap()
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "INSTANCE TYPE",
            "TARGET",
            "QUEUED",
            "INPROGRESS",
            "CURRENT",
            "VALIDATED",
            "CAPACITY",
            "QUOTA",
            "AGE"
        ]
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[..4], ["cli-pool", "gd-8xh100ib-i128", "4", "1"]);
    assert!(
        row.contains(&"QueuedAwaitingCapacity") && row.contains(&"Valid") && row.contains(&"Under"),
        "{row:?}"
    );
    assert!(
        row.last().unwrap().ends_with('s'),
        "an age like 3s: {row:?}"
    );

    let events: Api<Event> = Api::namespaced(k.admin(), "default");
    let ev: Event = serde_json::from_value(json!({"metadata": {"name": "cli-pool.1"},
        "involvedObject": {"kind": "NodePool", "name": "cli-pool", "uid": stored.metadata.uid,
                           "apiVersion": "compute.coreweave.com/v1alpha1"},
        "reason": "QueuedAwaitingCapacity", "message": "waiting for H100 capacity", "type": "Warning",
        "count": 1, "source": {"component": "nodepool-controller"}}))
    .unwrap();
    events.create(&PostParams::default(), &ev).await.unwrap();
    let (described, _) = k.run(&["describe", "nodepool", "cli-pool"]).await;
    assert!(
        described.contains("Name:") && described.contains("cli-pool"),
        "{described}"
    );
    assert!(
        described.contains("Instance Type:") && described.contains("gd-8xh100ib-i128"),
        "{described}"
    );
    assert!(
        described.contains("waiting for H100 capacity"),
        "events are listed:\n{described}"
    );

    let (events_table, _) = k.run(&["get", "events", "-A"]).await;
    let header: Vec<&str> = events_table
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAMESPACE",
            "LAST",
            "SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "MESSAGE"
        ]
    );
    assert!(
        events_table.contains("nodepool/cli-pool") && events_table.contains("Warning"),
        "{events_table}"
    );

    let (out, _) = k.run(&["delete", "nodepool", "cli-pool"]).await;
    assert!(out.contains("deleted"), "{out}");
    assert_eq!(api_code(api.get("cli-pool").await.unwrap_err()), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_nodes_cordon_label_annotate_describe() {
    let k = Kubectl::start().await;
    let nodes: Api<Node> = Api::all(k.admin());
    nodes
        .create(
            &PostParams::default(),
            &node("gpu-1", json!({"node-role.kubernetes.io/worker": ""})),
        )
        .await
        .unwrap();
    nodes
        .create(&PostParams::default(), &node("gpu-2", json!({})))
        .await
        .unwrap();

    let (table, _) = k.run(&["get", "nodes"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("gpu-1") && l.contains(" Ready ") && l.contains("worker")),
        "{table}"
    );

    let (out, _) = k.run(&["cordon", "gpu-1"]).await;
    assert!(out.contains("node/gpu-1 cordoned"), "{out}");
    assert_eq!(
        nodes
            .get("gpu-1")
            .await
            .unwrap()
            .spec
            .unwrap()
            .unschedulable,
        Some(true)
    );
    let (table, _) = k.run(&["get", "nodes"]).await;
    assert!(table.contains("Ready,SchedulingDisabled"), "{table}");

    k.run(&["label", "node", "gpu-2", "pool=spot-a"]).await;
    k.run(&["annotate", "node", "gpu-2", "spotboard.dev/note=hi"])
        .await;
    let n2 = nodes.get("gpu-2").await.unwrap();
    assert_eq!(n2.labels()["pool"], "spot-a");
    assert_eq!(n2.annotations()["spotboard.dev/note"], "hi");
    let (selected, _) = k
        .run(&["get", "nodes", "-l", "pool=spot-a", "-o", "name"])
        .await;
    assert_eq!(selected.trim(), "node/gpu-2");

    let pods: Api<Pod> = Api::namespaced(k.admin(), "default");
    pods.create(&PostParams::default(), &pod("on-gpu-2", "gpu-2", "Running"))
        .await
        .unwrap();
    let (described, _) = k.run(&["describe", "node", "gpu-2"]).await;
    assert!(
        described.contains("gpu-2") && described.contains("on-gpu-2"),
        "{described}"
    );
    let (pods_table, _) = k.run(&["get", "pods", "-A"]).await;
    let header: Vec<&str> = pods_table
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    assert!(
        pods_table.contains("on-gpu-2") && pods_table.contains("Running"),
        "{pods_table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_watch_prints_new_rows() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let k = Kubectl::start().await;
    let api: Api<NodePool> = Api::all(k.admin());
    // A pool from before kubectl starts: its row comes from kubectl's initial list, so once it
    // is printed kubectl has listed and watches from the list's resourceVersion.
    api.create(&PostParams::default(), &pool("listed", 1))
        .await
        .unwrap();
    let mut child = k
        .command(&["get", "nodepools", "-w"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_row = async |name: &str| {
        tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.starts_with(name) {
                    return line;
                }
            }
            String::new()
        })
        .await
        .unwrap_or_else(|_| panic!("kubectl prints {name}"))
    };
    let listed = next_row("listed").await;
    assert!(listed.contains("gd-8xh100ib-i128"), "{listed}");
    // Created after the list: only the watch can bring its row.
    api.create(&PostParams::default(), &pool("watched", 3))
        .await
        .unwrap();
    let found = next_row("watched").await;
    assert!(found.contains("gd-8xh100ib-i128"), "{found}");
    child.kill().await.unwrap();
}

/// Clients nobody here wrote: the official Python client and kr8s read the embedded cluster
/// through the kubeconfig it writes (both ask for `/version/` and `/apis/` with a trailing
/// slash, as a real API server allows). The interpreter with both installed comes from
/// `SPOTBOARD_TEST_PYTHON`, which `./tasks.sh test` sets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_clients_read_the_embedded_cluster() {
    let python = std::env::var("SPOTBOARD_TEST_PYTHON").expect(
        "SPOTBOARD_TEST_PYTHON is not set: run the tests through ./tasks.sh test, which \
         installs the kubernetes and kr8s Python packages",
    );
    let k = Kubectl::start().await;
    let api: Api<NodePool> = Api::all(k.admin());
    let pool: NodePool = serde_json::from_value(py_pool()).unwrap();
    api.create(&PostParams::default(), &pool).await.unwrap();
    let nodes: Api<Node> = Api::all(k.admin());
    nodes
        .create(&PostParams::default(), &node("py-node", json!({})))
        .await
        .unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/it/clients/foreign_clients.py"
    );
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(&python)
            .arg(script)
            .arg(&k.kubeconfig)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Python clients finish")
    .expect("python runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(text.trim()).expect("one JSON line");
    for client in ["kubernetes", "kr8s"] {
        let c = &seen[client];
        assert!(c.get("error").is_none(), "{client}: {}", c["error"]);
        assert_eq!(c["git_version"], "v1.33.1", "{client}");
        assert!(
            c["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n == "py-node"),
            "{client}: {c}"
        );
        assert!(
            c["nodepools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n == "py-pool"),
            "{client}: {c}"
        );
    }
    let groups = seen["kubernetes"]["groups"].as_array().unwrap();
    assert!(
        groups.iter().any(|g| g == "compute.coreweave.com"),
        "{groups:?}"
    );
}

fn py_pool() -> Value {
    json!({
        "apiVersion": "compute.coreweave.com/v1alpha1", "kind": "NodePool",
        "metadata": {"name": "py-pool"},
        "spec": {"computeClass": "spot", "instanceType": "gd-8xh100ib-i128", "targetNodes": 1}
    })
}
