//! What a GKE or Karpenter zone of the embedded cluster holds: its pools, the Nodes they
//! register (with each provider's own labels: GKE: Spot VMs; Karpenter: NodePools) and the
//! workloads on them.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use spotboard_core::labels;

use super::machines;
use spotboard_core::labels::{
    GKE_NODEPOOL, GKE_PROVISIONING, GKE_SPOT, KARPENTER_CAPACITY_TYPE, KARPENTER_NODEPOOL,
};

/// Which provider a fleet zone plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// GKE: node pools of Spot VMs (GKE: Spot VMs).
    Gke,
    /// Karpenter on AWS: NodePools with `karpenter.sh/capacity-type` (Karpenter: NodePools).
    Karpenter,
}

impl Flavor {
    /// `gke` or `karpenter`, as the dashboard spells the provider on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::Gke => "gke",
            Flavor::Karpenter => "karpenter",
        }
    }
}

/// Annotation that has a Karpenter zone disrupt a node now, for the reason it names
/// (`Underutilized` or `Drifted`): how tests and the curious make Karpenter consolidate or
/// replace a drifted node.
pub const DISRUPT_ANNOTATION: &str = "sim.spotboard.dev/disrupt";

/// Why Karpenter disrupts a node of its own accord (Karpenter: Disruption). Expiry is left
/// out: Karpenter v1 expires a node by deleting its NodeClaim, with no `DisruptionTerminating`
/// event to say so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disruption {
    /// Consolidation: the node's pods fit a cheaper node.
    Underutilized,
    /// The node no longer matches its NodePool or NodeClass.
    Drifted,
}

impl Disruption {
    /// The reason as Karpenter words it in its events.
    pub fn as_str(self) -> &'static str {
        match self {
            Disruption::Underutilized => "Underutilized",
            Disruption::Drifted => "Drifted",
        }
    }

    /// The reason [`DISRUPT_ANNOTATION`]'s value names.
    pub fn parse(text: &str) -> Option<Disruption> {
        [Disruption::Underutilized, Disruption::Drifted]
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(text))
    }
}

/// One pool of a fleet zone.
#[derive(Clone, Debug)]
pub struct PoolPlan {
    pub name: &'static str,
    pub spot: bool,
    /// Instance types the pool's nodes take in turn.
    pub instance_types: &'static [&'static str],
    pub nodes: usize,
    /// The embedded EC2 has no spot capacity for this pool's types in the zone's first AZ
    /// (its own rule): Karpenter tries that AZ first for every launch, is refused with
    /// `InsufficientInstanceCapacity`, records `InsufficientCapacityError` on the NodeClaim,
    /// and the launch lands in another AZ.
    pub short_in_first_az: bool,
}

/// One workload of a fleet zone: its pods are spread over `pool`'s nodes in turn.
#[derive(Clone, Debug)]
pub struct WorkloadPlan {
    pub namespace: &'static str,
    /// `ReplicaSet`, `StatefulSet`, `Job` or `Pod` (a bare pod).
    pub kind: &'static str,
    pub name: &'static str,
    pub pool: &'static str,
    pub replicas: usize,
    pub grace_s: i64,
    pub pre_stop: bool,
    /// `minAvailable` of a PodDisruptionBudget selecting the pods, if one exists.
    pub pdb_min_available: Option<i64>,
    /// `system-cluster-critical`: GKE shuts these down in the second 15 s.
    pub system: bool,
    /// `nvidia.com/gpu` each pod requests (and is limited to).
    pub gpus: u32,
}

/// The pools of a fleet zone.
pub fn pools(flavor: Flavor) -> &'static [PoolPlan] {
    match flavor {
        Flavor::Gke => &[
            PoolPlan {
                name: "default-pool",
                spot: false,
                instance_types: &["e2-standard-8"],
                nodes: 2,
                short_in_first_az: false,
            },
            PoolPlan {
                name: "spot-l4",
                spot: true,
                instance_types: &["g2-standard-24"],
                nodes: 3,
                short_in_first_az: false,
            },
            PoolPlan {
                name: "spot-batch",
                spot: true,
                instance_types: &["n2-standard-16"],
                nodes: 2,
                short_in_first_az: false,
            },
        ],
        Flavor::Karpenter => &[
            PoolPlan {
                name: "on-demand",
                spot: false,
                instance_types: &["m6i.xlarge"],
                nodes: 1,
                short_in_first_az: false,
            },
            PoolPlan {
                name: "spot-general",
                spot: true,
                instance_types: &["m5.xlarge", "m6i.xlarge", "c6i.2xlarge"],
                nodes: 3,
                short_in_first_az: false,
            },
            PoolPlan {
                name: "gpu-spot",
                spot: true,
                instance_types: &["g5.2xlarge"],
                nodes: 2,
                short_in_first_az: true,
            },
            // Defined but idle: Karpenter launches nodes only for pending pods.
            PoolPlan {
                name: "arm-spot",
                spot: true,
                instance_types: &["m7g.xlarge", "c7g.2xlarge"],
                nodes: 0,
                short_in_first_az: false,
            },
        ],
    }
}

/// The workloads of a fleet zone: some spot-ready, some not, so the readiness audit and
/// the blast radius have something to say.
pub fn workloads(flavor: Flavor) -> &'static [WorkloadPlan] {
    const fn w(
        namespace: &'static str,
        kind: &'static str,
        name: &'static str,
        pool: &'static str,
        replicas: usize,
        grace_s: i64,
    ) -> WorkloadPlan {
        WorkloadPlan {
            namespace,
            kind,
            name,
            pool,
            replicas,
            grace_s,
            pre_stop: false,
            pdb_min_available: None,
            system: false,
            gpus: 0,
        }
    }
    const GKE: &[WorkloadPlan] = &[
        WorkloadPlan {
            system: true,
            ..w(
                "kube-system",
                "ReplicaSet",
                "kube-dns-5d8f",
                "default-pool",
                2,
                30,
            )
        },
        // One L4 per replica: 4 of the pool's 6 GPUs asked for, 2 idle.
        WorkloadPlan {
            pre_stop: true,
            pdb_min_available: Some(2),
            gpus: 1,
            ..w("serving", "ReplicaSet", "inference-7c9d", "spot-l4", 3, 10)
        },
        WorkloadPlan {
            gpus: 1,
            ..w("serving", "StatefulSet", "vector-index", "spot-l4", 1, 60)
        },
        w("batch", "Job", "etl-nightly", "spot-batch", 2, 30),
    ];
    const KARPENTER: &[WorkloadPlan] = &[
        WorkloadPlan {
            pre_stop: true,
            pdb_min_available: Some(2),
            ..w("web", "ReplicaSet", "api-6f7b", "spot-general", 3, 45)
        },
        WorkloadPlan {
            gpus: 1,
            ..w("web", "ReplicaSet", "worker-59c4", "gpu-spot", 1, 300)
        },
        w("web", "Pod", "debug-shell", "spot-general", 1, 30),
        w("web", "ReplicaSet", "billing-8d2e", "on-demand", 1, 30),
    ];
    match flavor {
        Flavor::Gke => GKE,
        Flavor::Karpenter => KARPENTER,
    }
}

/// The region of a fleet zone (`us-central1-a` → `us-central1`, `us-east-1a` → `us-east-1`).
pub fn region(flavor: Flavor, zone: &str) -> String {
    match flavor {
        Flavor::Gke => zone.rsplit_once('-').map_or(zone, |(r, _)| r).to_string(),
        Flavor::Karpenter => zone
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .to_string(),
    }
}

/// The zone node number `n` lands in: GKE node pools here are zonal; Karpenter spreads over
/// the zone and its two siblings (`us-east-1a` → `us-east-1b`, `us-east-1c`), as a NodePool
/// whose `topology.kubernetes.io/zone` requirement lists three zones does.
pub fn node_zone(flavor: Flavor, zone: &str, n: usize) -> String {
    match (flavor, zone.char_indices().last()) {
        (Flavor::Karpenter, Some((i, c))) if c.is_ascii_lowercase() => {
            let letter = (b'a' + ((c as u8 - b'a') + n as u8 % 3) % 26) as char;
            format!("{}{letter}", &zone[..i])
        }
        _ => zone.to_string(),
    }
}

/// A NodeClaim name's generated suffix from `h`: five characters of the alphabet the API
/// server's `generateName` draws from (apimachinery `util/rand`: no vowels, no 0, 1, 3).
pub fn nodeclaim_suffix(h: u64) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|i| ALPHABET[((h >> (i * 8)) % ALPHABET.len() as u64) as usize] as char)
        .collect()
}

/// A Node of `pool` as the provider registers it: Ready since now when `ready`, else not
/// Ready yet (its kubelet still starting, as a freshly launched instance registers).
pub fn node(
    flavor: Flavor,
    zone: &str,
    pool: &PoolPlan,
    name: &str,
    instance_type: &str,
    ready: bool,
) -> Value {
    let now = super::super::clock::rfc3339(chrono::Utc::now());
    // A type missing from the table is a plan's typo; the unit tests walk every pool's types,
    // so the generic machine never shows in the running cluster.
    let machine = machines::machine(instance_type).unwrap_or(&machines::GENERIC);
    let mut l = json!({
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        (labels::INSTANCE_TYPE): instance_type,
        (labels::ZONE): zone,
        (labels::REGION): region(flavor, zone),
    });
    for (k, v) in machines::labels(flavor, machine) {
        l[k] = json!(v);
    }
    let (capacity, allocatable) = machines::resources(flavor, machine);
    match flavor {
        Flavor::Gke => {
            l[GKE_NODEPOOL] = json!(pool.name);
            if pool.spot {
                l[GKE_SPOT] = json!("true");
                l[GKE_PROVISIONING] = json!("spot");
            } else {
                l[GKE_PROVISIONING] = json!("standard");
            }
        }
        Flavor::Karpenter => {
            l[KARPENTER_NODEPOOL] = json!(pool.name);
            l[KARPENTER_CAPACITY_TYPE] = json!(if pool.spot { "spot" } else { "on-demand" });
            l["karpenter.sh/registered"] = json!("true");
            l["karpenter.sh/initialized"] = json!("true");
            l["karpenter.k8s.aws/instance-family"] =
                json!(instance_type.split('.').next().unwrap_or_default());
        }
    }
    // GKE taints its GPU nodes `nvidia.com/gpu=present:NoSchedule` and adds the matching
    // toleration to pods that request GPUs (GKE: "Run GPUs in Standard node pools").
    let spec = if flavor == Flavor::Gke && machine.gpus > 0 {
        json!({"taints": [{"key": GPU_TAINT_KEY, "value": "present", "effect": "NoSchedule"}]})
    } else {
        json!({})
    };
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": l},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [ready_condition(ready, &now)],
            "nodeInfo": {"kubeletVersion": super::super::nodes::KUBELET_VERSION},
        },
    })
}

/// Whether a Node of a `flavor` zone runs on Spot capacity, read back from the labels [`node`]
/// writes: a GKE pool's `cloud.google.com/gke-spot=true` or
/// `cloud.google.com/gke-provisioning=spot` (GKE: Spot VMs,
/// <https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms>), a Karpenter
/// NodePool's `karpenter.sh/capacity-type=spot` (Karpenter: NodePools,
/// <https://karpenter.sh/docs/concepts/nodepools/>).
///
/// Why the zone reads its own labels rather than asking the product how it classifies a node:
/// the dashboard is tested on that classification against this cluster, so the cluster must
/// not borrow it. A node without the flavor's pool label is not one of the zone's pools' and
/// is never Spot here.
pub fn spot(flavor: Flavor, labels: &BTreeMap<String, String>) -> bool {
    let is = |key: &str, value: &str| labels.get(key).is_some_and(|v| v == value);
    match flavor {
        Flavor::Gke => {
            labels.contains_key(GKE_NODEPOOL)
                && (is(GKE_SPOT, "true") || is(GKE_PROVISIONING, "spot"))
        }
        Flavor::Karpenter => {
            labels.contains_key(KARPENTER_NODEPOOL) && is(KARPENTER_CAPACITY_TYPE, "spot")
        }
    }
}

/// A Node's Ready condition, changed at `at` (RFC 3339), with the kubelet's reasons.
pub fn ready_condition(ready: bool, at: &str) -> Value {
    if ready {
        json!({"type": "Ready", "status": "True", "reason": "KubeletReady",
               "message": "kubelet is posting ready status", "lastTransitionTime": at})
    } else {
        json!({"type": "Ready", "status": "False", "reason": "KubeletNotReady",
               "message": "container runtime network not ready", "lastTransitionTime": at})
    }
}

/// The `app` label of `w`'s pods: a ReplicaSet's name without its hash (the Deployment's).
fn app_label(w: &WorkloadPlan) -> &'static str {
    match w.kind {
        "ReplicaSet" | "Job" => w.name.rsplit_once('-').map_or(w.name, |(a, _)| a),
        _ => w.name,
    }
}

/// The key of the taint GKE puts on GPU nodes, and of the toleration it gives GPU pods.
pub const GPU_TAINT_KEY: &str = "nvidia.com/gpu";

/// Pod `index` of workload `w`, bound to `node`, Running; on GKE a pod requesting GPUs carries
/// the toleration GKE adds to such pods.
pub fn pod(flavor: Flavor, w: &WorkloadPlan, index: usize, suffix: &str, node: &str) -> Value {
    let name = match w.kind {
        "StatefulSet" => format!("{}-{index}", w.name),
        "Pod" => w.name.to_string(),
        _ => format!("{}-{suffix}", w.name),
    };
    let app = app_label(w);
    let owner = (w.kind != "Pod").then(|| {
        json!([{
            "apiVersion": if w.kind == "Job" { "batch/v1" } else { "apps/v1" },
            "kind": w.kind, "name": w.name, "uid": format!("owner-{}-{}", w.namespace, w.name),
            "controller": true, "blockOwnerDeletion": true,
        }])
    });
    let mut container = json!({
        "name": "main", "image": format!("registry.example/{app}:1"),
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
    });
    if w.gpus > 0 {
        // An extended resource is asked for in both; the request must equal the limit
        // (Kubernetes: Schedule GPUs).
        let n = json!(w.gpus.to_string());
        container["resources"]["requests"]["nvidia.com/gpu"] = n.clone();
        container["resources"]["limits"] = json!({"nvidia.com/gpu": n});
    }
    if w.pre_stop {
        container["lifecycle"] = json!({"preStop": {"exec": {"command": ["sleep", "5"]}}});
    }
    let mut spec = json!({
        "nodeName": node,
        "containers": [container],
        "terminationGracePeriodSeconds": w.grace_s,
        "restartPolicy": if w.kind == "Job" { "Never" } else { "Always" },
    });
    if w.system {
        spec["priorityClassName"] = json!("system-cluster-critical");
    }
    if flavor == Flavor::Gke && w.gpus > 0 {
        spec["tolerations"] =
            json!([{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "namespace": w.namespace,
            "labels": {"app": app},
            "ownerReferences": owner.unwrap_or(json!([])),
        },
        "spec": spec,
    })
}

/// The Karpenter NodePool object of `pool` (shape per Karpenter: NodePools), Ready, over `zones`.
pub fn karpenter_nodepool(pool: &PoolPlan, zones: &[String]) -> Value {
    let now = super::super::clock::rfc3339(chrono::Utc::now());
    json!({
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": pool.name},
        "spec": {
            "template": {"spec": {
                "requirements": [
                    {"key": KARPENTER_CAPACITY_TYPE, "operator": "In",
                     "values": [if pool.spot { "spot" } else { "on-demand" }]},
                    {"key": labels::INSTANCE_TYPE, "operator": "In", "values": pool.instance_types},
                    {"key": labels::ZONE, "operator": "In", "values": zones},
                ],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            }},
            "limits": {"cpu": "1000"},
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "budgets": [{"nodes": "20%", "schedule": "0 9 * * 1-5", "duration": "8h"}, {"nodes": "0"}],
            },
        },
        "status": {
            "resources": {"nodes": pool.nodes.to_string()},
            "conditions": [
                {"type": "ValidationSucceeded", "status": "True", "reason": "ValidationSucceeded", "message": "", "lastTransitionTime": now},
                {"type": "NodeClassReady", "status": "True", "reason": "NodeClassReady", "message": "", "lastTransitionTime": now},
                {"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": now},
            ],
        },
    })
}

/// The PodDisruptionBudget of `w`, if it has one.
pub fn pdb(w: &WorkloadPlan) -> Option<Value> {
    let min = w.pdb_min_available?;
    let app = app_label(w);
    Some(json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": w.namespace},
        "spec": {"minAvailable": min, "selector": {"matchLabels": {"app": app}}},
    }))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use kube::core::{Selector, SelectorExt};

    use super::*;

    fn labels(v: &Value) -> BTreeMap<String, String> {
        serde_json::from_value(v["metadata"]["labels"].clone()).unwrap()
    }

    #[test]
    fn fleet_nodes_carry_their_providers_pool_and_capacity_labels() {
        for flavor in [Flavor::Gke, Flavor::Karpenter] {
            let pool_label = match flavor {
                Flavor::Gke => GKE_NODEPOOL,
                Flavor::Karpenter => KARPENTER_NODEPOOL,
            };
            for pool in pools(flavor) {
                let n = labels(&node(
                    flavor,
                    "us-east-1a",
                    pool,
                    "n1",
                    pool.instance_types[0],
                    true,
                ));
                assert_eq!(n.get(pool_label).map(String::as_str), Some(pool.name));
                assert_eq!(spot(flavor, &n), pool.spot, "{}", pool.name);
                let capacity = match flavor {
                    // GKE: Spot VMs: both labels on a Spot node; `standard` otherwise.
                    Flavor::Gke => [GKE_SPOT, GKE_PROVISIONING]
                        .map(|k| n.get(k).map(String::as_str))
                        .to_vec(),
                    Flavor::Karpenter => vec![n.get(KARPENTER_CAPACITY_TYPE).map(String::as_str)],
                };
                let want = match (flavor, pool.spot) {
                    (Flavor::Gke, true) => vec![Some("true"), Some("spot")],
                    (Flavor::Gke, false) => vec![None, Some("standard")],
                    (Flavor::Karpenter, true) => vec![Some("spot")],
                    (Flavor::Karpenter, false) => vec![Some("on-demand")],
                };
                assert_eq!(capacity, want, "{}", pool.name);
            }
        }
        // Another flavor's labels are not this zone's Spot nodes.
        let karpenter_spot = labels(&node(
            Flavor::Karpenter,
            "us-east-1a",
            pools(Flavor::Karpenter).iter().find(|p| p.spot).unwrap(),
            "n2",
            "m5.large",
            true,
        ));
        assert!(!spot(Flavor::Gke, &karpenter_spot));
    }

    /// GKE taints GPU nodes and gives GPU pods the toleration; CPU nodes and Karpenter's
    /// nodes carry no such taint.
    #[test]
    fn gke_gpu_nodes_are_tainted_and_their_gpu_pods_tolerate_it() {
        let gpu_pool = pools(Flavor::Gke)
            .iter()
            .find(|p| p.instance_types[0] == "g2-standard-24")
            .unwrap();
        let n = node(
            Flavor::Gke,
            "us-central1-a",
            gpu_pool,
            "n1",
            "g2-standard-24",
            true,
        );
        assert_eq!(
            n["spec"]["taints"],
            json!([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
        );
        let cpu = node(
            Flavor::Gke,
            "us-central1-a",
            gpu_pool,
            "n2",
            "e2-standard-8",
            true,
        );
        assert!(cpu["spec"]["taints"].is_null());
        let w = workloads(Flavor::Gke).iter().find(|w| w.gpus > 0).unwrap();
        let p = pod(Flavor::Gke, w, 0, "abcde", "n1");
        assert_eq!(p["spec"]["tolerations"][0]["key"], "nvidia.com/gpu");
        let karpenter = workloads(Flavor::Karpenter)
            .iter()
            .find(|w| w.gpus > 0)
            .unwrap();
        assert!(
            pod(Flavor::Karpenter, karpenter, 0, "abcde", "n1")["spec"]["tolerations"].is_null()
        );
    }

    #[test]
    fn karpenter_spreads_over_sibling_zones_and_gke_stays_zonal() {
        let z: Vec<String> = (0..4)
            .map(|n| node_zone(Flavor::Karpenter, "us-east-1a", n))
            .collect();
        assert_eq!(z, ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1a"]);
        assert_eq!(node_zone(Flavor::Gke, "us-central1-a", 2), "us-central1-a");
        assert_eq!(region(Flavor::Gke, "us-central1-a"), "us-central1");
        assert_eq!(region(Flavor::Karpenter, "us-east-1b"), "us-east-1");
    }

    #[test]
    fn workloads_land_on_existing_pools_and_budgets_select_their_pods() {
        for flavor in [Flavor::Gke, Flavor::Karpenter] {
            for w in workloads(flavor) {
                let pool = pools(flavor).iter().find(|p| p.name == w.pool).unwrap();
                assert!(pool.nodes > 0, "{} needs nodes in {}", w.name, w.pool);
                let p = pod(flavor, w, 0, "abcde", "n1");
                if let Some(b) = pdb(w) {
                    // The whole selector, as the API server would read it: matchLabels and
                    // matchExpressions, every key.
                    let sel: LabelSelector =
                        serde_json::from_value(b["spec"]["selector"].clone()).unwrap();
                    let sel = Selector::try_from(sel).unwrap();
                    assert!(!sel.selects_all(), "{}: a budget over every pod", w.name);
                    assert!(sel.matches(&labels(&p)), "{} misses its pods", w.name);
                    let other = pod(flavor, &workloads(flavor)[0], 0, "zzzzz", "n1");
                    if workloads(flavor)[0].name != w.name {
                        assert!(
                            !sel.matches(&labels(&other)),
                            "{} takes others' pods",
                            w.name
                        );
                    }
                }
            }
        }
    }
}
