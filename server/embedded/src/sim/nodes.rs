//! Node objects as a CKS node registers them: CoreWeave's labels (CoreWeave: Workload
//! scheduling on CKS, and `spotboard_core::labels`), the pool's `nodeLabels`/`nodeAnnotations`/
//! `nodeTaints` (CoreWeave: Node Pool reference), capacity from the instance catalog, the
//! kubelet's conditions plus CoreWeave's `CWActive`, `CWRegistered` and `CWNodeRemoval`
//! (CoreWeave: Node Pool reference, "Node Conditions").

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams};
use serde_json::json;
use spotboard_core::catalog::{self, InstanceType};
use spotboard_core::labels;
use spotboard_core::nodepool::NodePoolSpec;

use super::clock::wall_time;
use super::random::{hash, mix};

/// Kubelet version every simulated node reports.
pub const KUBELET_VERSION: &str = "v1.33.1";
/// Annotation that starts a preemption at once: `kubectl annotate node X
/// sim.spotboard.dev/preempt=now`. Simulation-only; works on any node.
pub const PREEMPT_ANNOTATION: &str = "sim.spotboard.dev/preempt";
/// CoreWeave's label for the node's instance type, next to the Kubernetes one (seen on CKS
/// nodes in CoreWeave's own SUNK material).
pub const CW_TYPE_LABEL: &str = "node.coreweave.cloud/type";

/// What a new node is made from.
#[derive(Clone, Debug)]
pub struct NewNode<'a> {
    pub name: &'a str,
    pub pool: &'a str,
    pub spec: &'a NodePoolSpec,
    pub zone: &'a str,
    pub zone_index: usize,
    pub org_id: &'a str,
    /// Whether non-interruptible pods will run on it (`CWActive`).
    pub active: bool,
}

fn q(s: impl Into<String>) -> Quantity {
    Quantity(s.into())
}

/// The region of a CKS zone, for the Node's `topology.kubernetes.io/region`: the zone less its
/// trailing letter (`US-EAST-04A` → `US-EAST-04`), as CoreWeave names zones within regions
/// (CoreWeave: availability matrix,
/// <https://docs.coreweave.com/platform/instances/availability-matrix>). The cluster writes it
/// itself: the dashboard's own zone-to-region reading is tested against these labels.
fn region_of(zone: &str) -> &str {
    zone.strip_suffix(|c: char| c.is_ascii_alphabetic())
        .filter(|region| !region.is_empty())
        .unwrap_or(zone)
}

/// The Node a CKS node of `n.pool` registers as, Ready, with capacity from the catalog.
/// An instance type missing from the catalog gets a small CPU shape (it never gets here:
/// validation refuses unknown types).
pub fn node_object(n: &NewNode<'_>) -> Node {
    let t = catalog::instance_type(&n.spec.instance_type);
    let (gpus, vcpus, ram_gb, arch) = t.map_or((0, 8, 32, "amd64"), |t| {
        (t.gpus, t.vcpus, t.ram_gb, t.arch.as_str())
    });
    let mut l: BTreeMap<String, String> = n.spec.node_labels.clone();
    for (k, v) in [
        ("kubernetes.io/hostname", n.name),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", arch),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", arch),
        (labels::INSTANCE_TYPE, &n.spec.instance_type),
        (CW_TYPE_LABEL, &n.spec.instance_type),
        (labels::NODE_POOL, n.pool),
        (labels::ZONE, n.zone),
        (labels::REGION, region_of(n.zone)),
        (labels::NODE_STATE, "production"),
        (labels::NODE_RESERVED, n.org_id),
    ] {
        l.insert(k.into(), v.into());
    }
    if let Some(t) = t.filter(|t| t.gpus > 0) {
        l.insert("nvidia.com/gpu.present".into(), "true".into());
        l.insert("nvidia.com/gpu.count".into(), t.gpus.to_string());
        l.insert("nvidia.com/gpu.product".into(), gpu_product(t));
    }
    let mut annotations = n.spec.node_annotations.clone();
    annotations.insert("node.alpha.kubernetes.io/ttl".into(), "0".into());
    annotations.insert(
        "volumes.kubernetes.io/controller-managed-attach-detach".into(),
        "true".into(),
    );

    let mut taints: Vec<Taint> = n
        .spec
        .node_taints
        .iter()
        .map(|t| Taint {
            key: t.key.clone(),
            value: t.value.clone(),
            effect: t.effect.as_str().into(),
            time_added: None,
        })
        .collect();
    // CoreWeave: Workload scheduling on CKS, "Taints and tolerations": GPU nodes repel
    // CPU-only pods softly; CPU nodes need the toleration CKS adds to pods without GPU
    // requests.
    taints.push(if gpus > 0 {
        taint("is_gpu", Some("true"), "PreferNoSchedule")
    } else {
        taint("is_cpu_compute", None, "NoSchedule")
    });

    let mem_ki = u64::from(ram_gb) * 1024 * 1024 * 985 / 1000;
    let mut capacity = BTreeMap::from([
        ("cpu".to_string(), q(vcpus.to_string())),
        ("memory".to_string(), q(format!("{mem_ki}Ki"))),
        ("ephemeral-storage".to_string(), q("7323596Mi")),
        ("pods".to_string(), q("110")),
        ("hugepages-1Gi".to_string(), q("0")),
        ("hugepages-2Mi".to_string(), q("0")),
    ]);
    let mut allocatable = capacity.clone();
    allocatable.insert(
        "cpu".into(),
        q(format!("{}m", u64::from(vcpus) * 1000 - 2000)),
    );
    allocatable.insert(
        "memory".into(),
        q(format!("{}Ki", mem_ki.saturating_sub(16 * 1024 * 1024))),
    );
    allocatable.insert("ephemeral-storage".into(), q("6751264Mi"));
    if gpus > 0 {
        capacity.insert("nvidia.com/gpu".into(), q(gpus.to_string()));
        allocatable.insert("nvidia.com/gpu".into(), q(gpus.to_string()));
    }

    let h = mix(n.zone_index as u64, hash(n.name));
    let ip = format!(
        "10.{}.{}.{}",
        64 + n.zone_index % 64,
        (h >> 8) & 0xff,
        h % 250 + 2
    );
    let mut conditions = kubelet_conditions();
    conditions.extend(cw_conditions(n.active, None));
    Node {
        metadata: ObjectMeta {
            name: Some(n.name.into()),
            labels: Some(l),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some(format!("10.{}.{}.0/24", 128 + n.zone_index % 64, h & 0xff)),
            taints: Some(taints),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            capacity: Some(capacity),
            allocatable: Some(allocatable),
            conditions: Some(conditions),
            addresses: Some(vec![
                NodeAddress {
                    type_: "InternalIP".into(),
                    address: ip,
                },
                NodeAddress {
                    type_: "Hostname".into(),
                    address: n.name.into(),
                },
            ]),
            node_info: Some(NodeSystemInfo {
                architecture: arch.into(),
                boot_id: format!("{:032x}", u128::from(h) << 64 | u128::from(mix(h, 1))),
                container_runtime_version: "containerd://1.7.27".into(),
                kernel_version: "6.8.0-60-generic".into(),
                kube_proxy_version: KUBELET_VERSION.into(),
                kubelet_version: KUBELET_VERSION.into(),
                machine_id: format!(
                    "{:032x}",
                    u128::from(mix(h, 2)) << 64 | u128::from(mix(h, 3))
                ),
                operating_system: "linux".into(),
                os_image: "Ubuntu 22.04.5 LTS".into(),
                system_uuid: format!("{:032x}", u128::from(mix(h, 4))),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

/// A taint as a node's `spec.taints` holds it.
pub(crate) fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: value.map(Into::into),
        effect: effect.into(),
        time_added: None,
    }
}

/// The `nvidia.com/gpu.product` value NVIDIA's GPU feature discovery reports for a type.
/// A node label's value, empty when the label is missing.
pub fn label(node: &Node, key: &str) -> String {
    node.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .cloned()
        .unwrap_or_default()
}

/// A node's first address and its pod CIDR (empty when not set), for the pods placed on it.
pub fn host_ip_and_cidr(node: &Node) -> (String, String) {
    let host_ip = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .and_then(|a| a.first())
        .map(|a| a.address.clone())
        .unwrap_or_default();
    let cidr = node
        .spec
        .as_ref()
        .and_then(|s| s.pod_cidr.clone())
        .unwrap_or_default();
    (host_ip, cidr)
}

pub fn gpu_product(t: &InstanceType) -> String {
    let m = t.gpu_model.as_str();
    let known = [
        ("H100", "NVIDIA-H100-80GB-HBM3"),
        ("H200", "NVIDIA-H200"),
        ("A100", "NVIDIA-A100-SXM4-80GB"),
        ("L40S", "NVIDIA-L40S"),
        ("L40", "NVIDIA-L40"),
        ("GH200", "NVIDIA-GH200-480GB"),
        ("GB200", "NVIDIA-GB200"),
        ("GB300", "NVIDIA-GB300"),
        ("B200", "NVIDIA-B200"),
        ("B300", "NVIDIA-B300-SXM6-AC"),
        (
            "RTX PRO 6000",
            "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
        ),
    ];
    known
        .iter()
        .find(|(k, _)| m.split([' ', '(']).any(|w| w == *k) || (k.contains(' ') && m.contains(k)))
        .map(|(_, v)| v.to_string())
        .unwrap_or_else(|| {
            m.replace([' ', '(', ')'], "-")
                .trim_matches('-')
                .to_string()
        })
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> NodeCondition {
    let now = wall_time();
    NodeCondition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

/// The kubelet's conditions of a healthy node.
pub fn kubelet_conditions() -> Vec<NodeCondition> {
    vec![
        condition(
            "MemoryPressure",
            false,
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        condition(
            "DiskPressure",
            false,
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        condition(
            "PIDPressure",
            false,
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        condition(
            "Ready",
            true,
            "KubeletReady",
            "kubelet is posting ready status",
        ),
    ]
}

/// CoreWeave's node conditions (CoreWeave: Node Pool reference): `CWActive` (runs
/// non-interruptible pods; CoreWeave: Workload scheduling on CKS),
/// `CWRegistered`, and `CWNodeRemoval` (True with `removal` as reason while pending removal).
pub fn cw_conditions(active: bool, removal: Option<&str>) -> Vec<NodeCondition> {
    vec![
        active_condition(active),
        condition(
            "CWRegistered",
            true,
            "NodeRegistered",
            "Node is registered in the customer cluster.",
        ),
        removal_condition(removal),
    ]
}

/// `CWActive`: true while the node runs pods that block its removal (non-interruptible or
/// gracefully interruptible; CoreWeave: Workload scheduling on CKS); false marks a scale-down
/// candidate (CoreWeave: Node Pool reference).
pub fn active_condition(active: bool) -> NodeCondition {
    if active {
        condition(
            "CWActive",
            true,
            "NodeActive",
            "Node runs pods that block its removal (non-interruptible or gracefully interruptible).",
        )
    } else {
        condition(
            "CWActive",
            false,
            "NodeIdle",
            "Node runs no non-interruptible pods and may be selected for removal.",
        )
    }
}

/// `CWNodeRemoval`: true with `reason` (`Preemption`, `ScaleDown`) while pending removal.
pub fn removal_condition(reason: Option<&str>) -> NodeCondition {
    match reason {
        Some(r) => condition(
            "CWNodeRemoval",
            true,
            r,
            "Node is pending removal from its NodePool.",
        ),
        None => condition(
            "CWNodeRemoval",
            false,
            "NotPendingRemoval",
            "Node is not pending removal.",
        ),
    }
}

/// `conditions` with `new` in place of the condition of the same type (appended if none),
/// keeping the old transition time when the status is unchanged.
pub fn replace_condition(
    conditions: &[NodeCondition],
    mut new: NodeCondition,
) -> Vec<NodeCondition> {
    let mut out: Vec<NodeCondition> = conditions.to_vec();
    match out.iter_mut().find(|c| c.type_ == new.type_) {
        Some(old) => {
            if old.status == new.status {
                new.last_transition_time = old.last_transition_time.clone();
            }
            *old = new;
        }
        None => out.push(new),
    }
    out
}

/// Sets one condition on node `name`, keeping the others: reads the node and writes its whole
/// condition list with the read `resourceVersion`, retrying on conflict, because a merge patch
/// replaces lists and two writers must not undo each other's condition.
pub async fn set_condition(api: &Api<Node>, name: &str, new: NodeCondition) -> kube::Result<()> {
    let mut attempt = 0;
    loop {
        let node = api.get(name).await?;
        let conds = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let conds = replace_condition(&conds, new.clone());
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "status": {"conditions": conds},
        });
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < 5 => attempt += 1,
            other => return other.map(|_| ()),
        }
    }
}

/// The status of condition `type_` on `node`, if set.
pub fn condition_status(node: &Node, type_: &str) -> Option<String> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

#[cfg(test)]
#[path = "nodes_tests.rs"]
mod tests;
