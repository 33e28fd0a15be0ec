//! Kubernetes objects for the embedded API server's tests.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::{Api, ResourceExt, api::ListParams};
use serde_json::{Value, json};
use spotboard_core::nodepool::{NodePool, NodePoolSpec};

pub fn pool(name: &str, target: i32) -> NodePool {
    let mut np = NodePool::new(
        name,
        NodePoolSpec {
            instance_type: "gd-8xh100ib-i128".into(),
            target_nodes: target,
            ..Default::default()
        },
    );
    np.labels_mut().insert("tier".into(), "gpu".into());
    np
}

pub fn node(name: &str, labels: Value) -> Node {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "nodeInfo": {"kubeletVersion": "v1.33.1", "architecture": "amd64",
                                "bootID": "", "containerRuntimeVersion": "containerd://2.0",
                                "kernelVersion": "6.8", "kubeProxyVersion": "", "machineID": "",
                                "operatingSystem": "linux", "osImage": "Ubuntu 22.04", "systemUUID": ""}}
    }))
    .unwrap()
}

pub fn pod(name: &str, node: &str, phase: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": phase}
    }))
    .unwrap()
}

pub fn api_code(e: kube::Error) -> u16 {
    match e {
        kube::Error::Api(s) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// How many objects a list returns.
pub async fn count<K>(api: &Api<K>) -> usize
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default()).await.unwrap().items.len()
}
