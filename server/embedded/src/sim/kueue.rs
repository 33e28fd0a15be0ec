//! Kueue's behaviour in a CKS zone (`kueue.x-k8s.io/v1beta1`): the scenario's queues and
//! workloads, and an admission loop that reserves quota by Kueue's documented rules, written
//! here apart from the product (which only reads what this writes).
//!
//! The rules kept (Kueue: Cluster Queue, "Resource flavors" and "Queueing strategy"; Kueue:
//! Workload): a workload's LocalQueue (`spec.queueName` in its namespace) names its
//! ClusterQueue; the queue's flavors are tried in their order and the first whose unused
//! `nominalQuota` of `nvidia.com/gpu` covers the whole workload gets it; pending workloads are
//! tried by `spec.priority`, then oldest first, and one that does not fit does not hold back a later one that does
//! (`BestEffortFIFO`, the default). Quota is counted only for GPUs; borrowing within a cohort,
//! preemption and admission checks are not modelled. Messages and condition reasons are
//! Kueue's (its flavor assigner's "insufficient unused quota for {resource} in flavor
//! {flavor}, {n} more needed"). Workloads never finish by themselves: deleting one frees its
//! quota.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use super::Ctx;
use super::clock::rfc3339;

/// Kueue's group/version.
pub const GV: &str = "kueue.x-k8s.io/v1beta1";
/// The GPU resource name quota is counted in.
const GPU: &str = "nvidia.com/gpu";
/// How often (real time) the admission loop looks again.
const EVERY: Duration = Duration::from_secs(1);

/// The ApiResource of a Kueue kind.
pub fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta1".into(),
        api_version: GV.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The scenario's namespace and LocalQueue, and the ClusterQueue it points at.
pub const QUEUE: (&str, &str, &str) = ("ml-training", "team-a", "ml-training");

/// The scenario's workloads, highest `spec.priority` first (they are created in the same
/// second, and Kueue orders by priority before creation time): (name, pods, GPUs per pod). With 32 spot and 8
/// on-demand GPUs of quota, the first three fill spot, the fourth (16) fits neither and waits,
/// the fifth (4) goes on-demand.
pub const WORKLOADS: [(&str, u32, u32); 5] = [
    ("pretrain-llama-70b", 2, 8),
    ("finetune-mistral-7b", 1, 8),
    ("eval-sweep", 1, 8),
    ("pretrain-dit-xl", 2, 8),
    ("rlhf-reward-model", 1, 4),
];

/// The scenario's ResourceFlavors: (name, node label, value, GPU quota in the queue). Spot
/// first: Kueue tries flavors in order, so on-demand is the fallback.
pub const FLAVORS: [(&str, &str, &str, u32); 2] = [
    (
        "h100-spot",
        "compute.coreweave.com/node-pool",
        "h100-spot-train",
        32,
    ),
    (
        "a100-on-demand",
        "compute.coreweave.com/node-pool",
        "example-nodepool",
        8,
    ),
];

/// Writes the scenario's Kueue objects (zone 0 only; the other CKS zones serve Kueue with no
/// queues). Objects that exist are left alone.
pub(crate) async fn seed(ctx: &Ctx) -> kube::Result<()> {
    if ctx.zone_index != 0 {
        return Ok(());
    }
    let c = &ctx.client;
    let (ns, lq, cq) = QUEUE;
    let create = |api: Api<DynamicObject>, v: Value| async move {
        let obj: DynamicObject = serde_json::from_value(v).expect("a Kueue object");
        match api.create(&PostParams::default(), &obj).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    };
    for (name, key, value, _) in FLAVORS {
        create(
            Api::all_with(c.clone(), &resource("ResourceFlavor", "resourceflavors")),
            json!({"apiVersion": GV, "kind": "ResourceFlavor", "metadata": {"name": name},
                   "spec": {"nodeLabels": {key: value}}}),
        )
        .await?;
    }
    let flavors: Vec<Value> = FLAVORS
        .iter()
        .map(|(name, _, _, gpus)| {
            json!({"name": name, "resources": [
                {"name": "cpu", "nominalQuota": gpus * 16},
                {"name": "memory", "nominalQuota": format!("{}Gi", gpus * 128)},
                {"name": GPU, "nominalQuota": gpus}]})
        })
        .collect();
    create(
        Api::all_with(c.clone(), &resource("ClusterQueue", "clusterqueues")),
        json!({"apiVersion": GV, "kind": "ClusterQueue", "metadata": {"name": cq},
               "spec": {"cohort": "ml", "namespaceSelector": {},
                        "queueingStrategy": "BestEffortFIFO",
                        "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU],
                                            "flavors": flavors}]}}),
    )
    .await?;
    create(
        Api::namespaced_with(c.clone(), ns, &resource("LocalQueue", "localqueues")),
        json!({"apiVersion": GV, "kind": "LocalQueue",
               "metadata": {"name": lq, "namespace": ns}, "spec": {"clusterQueue": cq}}),
    )
    .await?;
    let workloads = Api::namespaced_with(c.clone(), ns, &resource("Workload", "workloads"));
    for (i, (name, pods, gpus)) in WORKLOADS.into_iter().enumerate() {
        create(
            workloads.clone(),
            json!({"apiVersion": GV, "kind": "Workload",
                   "metadata": {"name": name, "namespace": ns,
                                "labels": {"kueue.x-k8s.io/job-uid": name}},
                   "spec": {"queueName": lq, "priority": 100 - 10 * i as i64, "podSets": [{"name": "main", "count": pods,
                       "template": {"spec": {"restartPolicy": "Never", "containers": [{
                           "name": "train", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                           "resources": {"requests": {"cpu": "16", GPU: gpus.to_string()},
                                         "limits": {GPU: gpus.to_string()}}}]}}}]}}),
        )
        .await?;
    }
    Ok(())
}

/// One workload as the admission loop reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Wl {
    pub namespace: String,
    pub name: String,
    pub queue: String,
    pub created: String,
    /// `spec.priority` (higher first).
    pub priority: i64,
    /// Pod set name and its GPUs (count × per pod).
    pub pod_sets: Vec<(String, u32)>,
    /// `Some((cluster queue, flavor))` once quota is reserved.
    pub admitted: Option<(String, String)>,
    pub finished: bool,
}

impl Wl {
    fn gpus(&self) -> u32 {
        self.pod_sets.iter().map(|(_, g)| g).sum()
    }
}

/// Local queue (namespace, name) → its ClusterQueue.
pub type LocalQueues = HashMap<(String, String), String>;
/// ClusterQueue → its flavors in order, each with its GPU `nominalQuota`.
pub type Quotas = HashMap<String, Vec<(String, u32)>>;

/// What the loop decides for a pending workload.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Reserve quota in this ClusterQueue and flavor.
    Admit {
        cluster_queue: String,
        flavor: String,
    },
    /// Leave it pending with this reason and message.
    Pending {
        reason: &'static str,
        message: String,
    },
}

/// Admission for every pending workload, by the rules in the module's doc. `queues`: local
/// queue (namespace, name) → ClusterQueue; `quotas`: ClusterQueue → its flavors in order with
/// their GPU nominal quota. Returns (namespace, name) → decision.
pub fn admit(
    workloads: &[Wl],
    queues: &LocalQueues,
    quotas: &Quotas,
) -> BTreeMap<(String, String), Decision> {
    let mut used: HashMap<(String, String), u32> = HashMap::new();
    for w in workloads.iter().filter(|w| !w.finished) {
        if let Some((cq, f)) = &w.admitted {
            *used.entry((cq.clone(), f.clone())).or_default() += w.gpus();
        }
    }
    let mut pending: Vec<&Wl> = workloads
        .iter()
        .filter(|w| !w.finished && w.admitted.is_none())
        .collect();
    pending.sort_by(|a, b| {
        (std::cmp::Reverse(a.priority), &a.created, &a.name).cmp(&(
            std::cmp::Reverse(b.priority),
            &b.created,
            &b.name,
        ))
    });
    let mut out = BTreeMap::new();
    for w in pending {
        let id = (w.namespace.clone(), w.name.clone());
        let Some(cq) = queues.get(&(w.namespace.clone(), w.queue.clone())) else {
            out.insert(
                id,
                Decision::Pending {
                    reason: "Inadmissible",
                    message: format!("LocalQueue {} doesn't exist", w.queue),
                },
            );
            continue;
        };
        let Some(flavors) = quotas.get(cq) else {
            out.insert(
                id,
                Decision::Pending {
                    reason: "Inadmissible",
                    message: format!("ClusterQueue {cq} doesn't exist"),
                },
            );
            continue;
        };
        let need = w.gpus();
        let mut reasons = Vec::new();
        let mut chosen = None;
        for (flavor, nominal) in flavors {
            let in_use = used
                .get(&(cq.clone(), flavor.clone()))
                .copied()
                .unwrap_or(0);
            if need > *nominal {
                reasons.push(format!(
                    "insufficient quota for {GPU} in flavor {flavor}, request > maximum capacity ({need} > {nominal})"
                ));
            } else if in_use + need > *nominal {
                reasons.push(format!(
                    "insufficient unused quota for {GPU} in flavor {flavor}, {} more needed",
                    in_use + need - nominal
                ));
            } else {
                chosen = Some(flavor.clone());
                break;
            }
        }
        match chosen {
            Some(flavor) => {
                *used.entry((cq.clone(), flavor.clone())).or_default() += need;
                out.insert(
                    id,
                    Decision::Admit {
                        cluster_queue: cq.clone(),
                        flavor,
                    },
                );
            }
            None => {
                let pod_set = w.pod_sets.first().map_or("main", |(n, _)| n.as_str());
                out.insert(
                    id,
                    Decision::Pending {
                        reason: "Pending",
                        message: format!(
                            "couldn't assign flavors to pod set {pod_set}: {}",
                            reasons.join(", ")
                        ),
                    },
                );
            }
        }
    }
    out
}

fn condition<'a>(obj: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    obj.data
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn per_pod_gpus(template: &Value) -> u32 {
    template
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let q = c
                .pointer(&format!("/resources/requests/{}", GPU.replace('/', "~1")))
                .or_else(|| c.pointer(&format!("/resources/limits/{}", GPU.replace('/', "~1"))));
            match q {
                Some(Value::String(s)) => s.parse().unwrap_or(0),
                Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
                _ => 0,
            }
        })
        .sum()
}

fn read(obj: &DynamicObject) -> Wl {
    let d = &obj.data;
    Wl {
        namespace: obj.namespace().unwrap_or_default(),
        name: obj.name_any(),
        queue: d["spec"]["queueName"].as_str().unwrap_or_default().into(),
        priority: d["spec"]["priority"].as_i64().unwrap_or(0),
        created: obj
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default(),
        pod_sets: d["spec"]["podSets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|ps| {
                let count = ps["count"].as_u64().unwrap_or(1) as u32;
                (
                    ps["name"].as_str().unwrap_or("main").to_string(),
                    count * per_pod_gpus(&ps["template"]),
                )
            })
            .collect(),
        admitted: d["status"]["admission"]["clusterQueue"].as_str().map(|cq| {
            let f = d
                .pointer("/status/admission/podSetAssignments/0/flavors")
                .and_then(|f| f.get(GPU))
                .and_then(Value::as_str)
                .unwrap_or_default();
            (cq.to_string(), f.to_string())
        }),
        finished: condition(obj, "Finished").is_some_and(|c| c["status"] == "True"),
    }
}

/// The admission loop of one zone: every [`EVERY`], reads the four kinds, decides, and writes
/// the workloads' and queues' status where it changed.
pub(crate) async fn run(ctx: Arc<Ctx>) {
    let c = ctx.client.clone();
    let flavors: Api<DynamicObject> =
        Api::all_with(c.clone(), &resource("ResourceFlavor", "resourceflavors"));
    let cqs: Api<DynamicObject> =
        Api::all_with(c.clone(), &resource("ClusterQueue", "clusterqueues"));
    let lqs: Api<DynamicObject> = Api::all_with(c.clone(), &resource("LocalQueue", "localqueues"));
    let wls: Api<DynamicObject> = Api::all_with(c.clone(), &resource("Workload", "workloads"));
    loop {
        tokio::time::sleep(EVERY).await;
        if let Err(e) = tick(&c, &flavors, &cqs, &lqs, &wls).await {
            tracing::debug!(zone = %ctx.zone, error = %e, "Kueue admission pass failed; trying again");
        }
    }
}

async fn tick(
    c: &kube::Client,
    flavors: &Api<DynamicObject>,
    cqs: &Api<DynamicObject>,
    lqs: &Api<DynamicObject>,
    wls: &Api<DynamicObject>,
) -> kube::Result<()> {
    let lp = ListParams::default();
    let cq_list = cqs.list(&lp).await?.items;
    let wl_list = wls.list(&lp).await?.items;
    if cq_list.is_empty() && wl_list.is_empty() {
        return Ok(());
    }
    let known: Vec<String> = flavors
        .list(&lp)
        .await?
        .items
        .iter()
        .map(|f| f.name_any())
        .collect();
    let queues: LocalQueues = lqs
        .list(&lp)
        .await?
        .items
        .iter()
        .filter_map(|l| {
            Some((
                (l.namespace()?, l.name_any()),
                l.data["spec"]["clusterQueue"].as_str()?.to_string(),
            ))
        })
        .collect();
    let quotas: Quotas = cq_list
        .iter()
        .map(|cq| {
            let flavors = cq.data["spec"]["resourceGroups"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|g| g["flavors"].as_array().into_iter().flatten())
                .filter_map(|f| {
                    let gpus = f["resources"]
                        .as_array()?
                        .iter()
                        .find(|r| r["name"] == GPU)
                        .and_then(|r| match &r["nominalQuota"] {
                            Value::String(s) => s.parse().ok(),
                            Value::Number(n) => n.as_u64().map(|n| n as u32),
                            _ => None,
                        })
                        .unwrap_or(0);
                    Some((f["name"].as_str()?.to_string(), gpus))
                })
                .collect();
            (cq.name_any(), flavors)
        })
        .collect();
    let read_all: Vec<Wl> = wl_list.iter().map(read).collect();
    let decisions = admit(&read_all, &queues, &quotas);
    let now = rfc3339(chrono::Utc::now());
    for (obj, w) in wl_list.iter().zip(&read_all) {
        let id = (w.namespace.clone(), w.name.clone());
        let Some(decision) = decisions.get(&id) else {
            continue;
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(c.clone(), &id.0, &resource("Workload", "workloads"));
        let status = match decision {
            Decision::Admit {
                cluster_queue,
                flavor,
            } => {
                json!({"admission": {"clusterQueue": cluster_queue, "podSetAssignments":
                    w.pod_sets.iter().map(|(name, gpus)| json!({"name": name,
                        "flavors": {GPU: flavor}, "resourceUsage": {GPU: gpus.to_string()}}))
                        .collect::<Vec<_>>()},
                    "conditions": [
                        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                         "message": format!("Quota reserved in ClusterQueue {cluster_queue}"),
                         "lastTransitionTime": now},
                        {"type": "Admitted", "status": "True", "reason": "Admitted",
                         "message": "The workload is admitted", "lastTransitionTime": now}]})
            }
            Decision::Pending { reason, message } => {
                let old = condition(obj, "QuotaReserved");
                if old.is_some_and(|o| o["message"] == message.as_str() && o["status"] == "False") {
                    continue;
                }
                // The transition time stays while the status does (Kubernetes' condition rule).
                let since = old
                    .filter(|o| o["status"] == "False")
                    .and_then(|o| o["lastTransitionTime"].as_str())
                    .map_or(now.clone(), String::from);
                json!({"conditions": [{"type": "QuotaReserved", "status": "False",
                    "reason": reason, "message": message, "lastTransitionTime": since}]})
            }
        };
        api.patch_status(
            &id.1,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": status})),
        )
        .await?;
    }
    // The queues' counts and the Active condition, as Kueue reports them.
    let after = decisions;
    for cq in &cq_list {
        let name = cq.name_any();
        let mine = |w: &&Wl| {
            !w.finished
                && match &w.admitted {
                    Some((q, _)) => *q == name,
                    None => queues.get(&(w.namespace.clone(), w.queue.clone())) == Some(&name),
                }
        };
        let (mut pending, mut admitted) = (0, 0);
        let mut usage: BTreeMap<String, u32> = BTreeMap::new();
        for w in read_all.iter().filter(mine) {
            let decided = after.get(&(w.namespace.clone(), w.name.clone()));
            let flavor = match (&w.admitted, decided) {
                (Some((_, f)), _) => Some(f.clone()),
                (None, Some(Decision::Admit { flavor, .. })) => Some(flavor.clone()),
                _ => None,
            };
            match flavor {
                Some(f) => {
                    admitted += 1;
                    *usage.entry(f).or_default() += w.gpus();
                }
                None => pending += 1,
            }
        }
        let missing: Vec<&String> = quotas
            .get(&name)
            .into_iter()
            .flatten()
            .map(|(f, _)| f)
            .filter(|f| !known.contains(f))
            .collect();
        let active = if missing.is_empty() {
            json!({"type": "Active", "status": "True", "reason": "Ready",
                   "message": "Can admit new workloads"})
        } else {
            json!({"type": "Active", "status": "False", "reason": "FlavorNotFound",
                   "message": "Can't admit new workloads; some flavors are not found"})
        };
        let status = json!({
            "pendingWorkloads": pending, "reservingWorkloads": admitted,
            "admittedWorkloads": admitted,
            "flavorsUsage": quotas.get(&name).into_iter().flatten().map(|(f, _)| json!({
                "name": f, "resources": [{"name": GPU,
                    "total": usage.get(f).copied().unwrap_or(0).to_string(), "borrowed": "0"}]}))
                .collect::<Vec<_>>(),
            "conditions": [active],
        });
        let same = ["pendingWorkloads", "admittedWorkloads", "flavorsUsage"]
            .iter()
            .all(|k| cq.data["status"][k] == status[k])
            && condition(cq, "Active")
                .is_some_and(|a| a["status"] == status["conditions"][0]["status"]);
        if same {
            continue;
        }
        let mut status = status;
        status["conditions"][0]["lastTransitionTime"] = json!(now);
        cqs.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": status})),
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wl(name: &str, created: &str, gpus: u32, admitted: Option<(&str, &str)>) -> Wl {
        Wl {
            namespace: "ml".into(),
            name: name.into(),
            queue: "team-a".into(),
            created: created.into(),
            priority: 0,
            pod_sets: vec![("main".into(), gpus)],
            admitted: admitted.map(|(a, b)| (a.into(), b.into())),
            finished: false,
        }
    }

    fn setup() -> (LocalQueues, Quotas) {
        (
            HashMap::from([(("ml".into(), "team-a".into()), "cq".into())]),
            HashMap::from([("cq".into(), vec![("spot".into(), 32), ("od".into(), 8)])]),
        )
    }

    #[test]
    fn flavors_are_tried_in_order_and_a_big_workload_does_not_block_a_small_one() {
        let (queues, quotas) = setup();
        let ws = vec![
            wl("a", "1", 16, Some(("cq", "spot"))),
            wl("b", "2", 8, None),
            wl("c", "3", 8, None),
            wl("d", "4", 16, None),
            wl("e", "5", 4, None),
            wl("f", "6", 64, None),
        ];
        let d = admit(&ws, &queues, &quotas);
        let admitted = |n: &str| match &d[&("ml".to_string(), n.to_string())] {
            Decision::Admit { flavor, .. } => flavor.clone(),
            Decision::Pending { message, .. } => format!("pending: {message}"),
        };
        assert_eq!(admitted("b"), "spot");
        assert_eq!(admitted("c"), "spot");
        assert_eq!(
            admitted("d"),
            "pending: couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor spot, 16 more needed, insufficient quota for nvidia.com/gpu in flavor od, request > maximum capacity (16 > 8)"
        );
        assert_eq!(admitted("e"), "od");
        assert!(admitted("f").contains("request > maximum capacity (64 > 32)"));
        assert!(!d.contains_key(&("ml".to_string(), "a".to_string())));
    }

    #[test]
    fn a_workload_of_a_missing_local_queue_is_inadmissible() {
        let (queues, quotas) = setup();
        let mut w = wl("x", "1", 1, None);
        w.queue = "nope".into();
        let d = admit(&[w], &queues, &quotas);
        assert_eq!(
            d[&("ml".to_string(), "x".to_string())],
            Decision::Pending {
                reason: "Inadmissible",
                message: "LocalQueue nope doesn't exist".into()
            }
        );
    }
}
