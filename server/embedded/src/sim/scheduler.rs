//! A small kube-scheduler: binds pending pods to a node of their pool with room (GPUs and
//! CPU), skips cordoned and leaving nodes and nodes whose `NoSchedule`/`NoExecute` taints
//! the pod does not tolerate, holds pods to their node selector and required node affinity,
//! and reports `PodScheduled=False/Unschedulable` with the scheduler's kind of message when
//! none fits, with a `FailedScheduling` Warning event on the pod as kube-scheduler writes it
//! (through `events.k8s.io`: `reportingController` and `eventTime`, no `source` or `count`). Each node is judged by the first filter it fails, in the default profile's
//! order (NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit), so a message's
//! counts add up to its node total as kube-scheduler's do. The kubelet part then starts the
//! containers and reports the pod Running.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use rand::Rng;
use serde_json::json;

use super::Ctx;
use super::clock::{rfc3339, secs};
use super::placement::Placement;
use super::pods::{PodInfo, PodKey, millicores};
use super::podspec::running_status;

/// Why a node cannot take a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Misfit {
    Selector,
    Unschedulable,
    /// An untolerated taint's key and value.
    Taint(String, String),
    Gpu,
    Cpu,
}

impl Misfit {
    /// The reason as kube-scheduler's filters word it.
    fn reason(&self) -> String {
        match self {
            Misfit::Selector => "node(s) didn't match Pod's node affinity/selector".into(),
            Misfit::Unschedulable => "node(s) were unschedulable".into(),
            Misfit::Taint(k, v) => format!("node(s) had untolerated taint {{{k}: {v}}}"),
            Misfit::Gpu => "Insufficient nvidia.com/gpu".into(),
            Misfit::Cpu => "Insufficient cpu".into(),
        }
    }
}

/// One node as a scheduling pass reads it: what the filters ask of it, read once a pass.
///
/// Why: a pass judges every pending pod against every node. Asking each node's name, whether
/// it is leaving (a lock) and what its pods use (an index walk) once per pod made a pass at
/// 100,000 nodes take seconds while holding the pod index's lock, and the zone's other tasks
/// stalled behind it.
struct Candidate<'a> {
    node: &'a Arc<Node>,
    unschedulable: bool,
    /// GPUs and CPU millicores requested by the pods bound to it, this pass's bindings
    /// included.
    used: (u32, u32),
    /// `status.allocatable`: GPUs and CPU millicores.
    gpus: u32,
    cpu_m: u32,
}

impl<'a> Candidate<'a> {
    fn of(node: &'a Arc<Node>, leaving: bool) -> Self {
        let cordoned = node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        let alloc = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
        let get = |k: &str| alloc.and_then(|a| a.get(k)).map_or("", |q| q.0.as_str());
        Self {
            node,
            unschedulable: cordoned || leaving,
            used: (0, 0),
            gpus: get("nvidia.com/gpu").parse().unwrap_or(0),
            cpu_m: millicores(get("cpu")),
        }
    }

    fn name(&self) -> &'a str {
        self.node.metadata.name.as_deref().unwrap_or_default()
    }

    /// The first filter the node fails for `pod`, in the default profile's order.
    fn fits(&self, pod: &PodInfo) -> Result<(), Fail<'a>> {
        if self.unschedulable {
            return Err(Fail::Unschedulable);
        }
        let spec = self.node.spec.as_ref();
        let taints = spec.and_then(|s| s.taints.as_deref()).unwrap_or_default();
        if let Some(t) = Placement::untolerated(pod.placement.as_deref(), taints) {
            return Err(Fail::Taint(&t.key, t.value.as_deref().unwrap_or_default()));
        }
        let labels = self.node.labels();
        if !pod
            .node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            || !Placement::affinity_holds(pod.placement.as_deref(), labels)
        {
            return Err(Fail::Selector);
        }
        if self.used.0 + pod.gpus > self.gpus {
            return Err(Fail::Gpu);
        }
        if self.used.1 + pod.cpu_m > self.cpu_m {
            return Err(Fail::Cpu);
        }
        Ok(())
    }
}

/// A [`Misfit`] borrowing the taint from the node, so that judging a node allocates nothing.
enum Fail<'a> {
    Selector,
    Unschedulable,
    Taint(&'a str, &'a str),
    Gpu,
    Cpu,
}

impl Fail<'_> {
    fn misfit(self) -> Misfit {
        match self {
            Fail::Selector => Misfit::Selector,
            Fail::Unschedulable => Misfit::Unschedulable,
            Fail::Taint(k, v) => Misfit::Taint(k.to_string(), v.to_string()),
            Fail::Gpu => Misfit::Gpu,
            Fail::Cpu => Misfit::Cpu,
        }
    }
}

/// What the filters read of a pod: two pods of one shape fit the same nodes.
#[derive(PartialEq)]
struct Shape<'a> {
    node_selector: &'a [(String, String)],
    placement: Option<&'a Placement>,
    gpus: u32,
    cpu_m: u32,
}

impl<'a> Shape<'a> {
    fn of(pod: &'a PodInfo) -> Self {
        Self {
            node_selector: &pod.node_selector,
            placement: pod.placement.as_deref(),
            gpus: pod.gpus,
            cpu_m: pod.cpu_m,
        }
    }
}

/// Shapes a pass remembers as fitting no node; past this many it stops remembering (each
/// lookup is a walk of the list).
const NO_ROOM_SHAPES: usize = 256;

/// The scheduler's message for a pod no node fits: each reason with its node count, the
/// `count reason` texts sorted as kube-scheduler's `FitError` sorts them.
pub fn unschedulable_message(total: usize, misfits: &[Misfit]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for m in misfits {
        *counts.entry(m.reason()).or_default() += 1;
    }
    let mut parts: Vec<String> = counts
        .into_iter()
        .map(|(reason, n)| format!("{n} {reason}"))
        .collect();
    parts.sort();
    format!(
        "0/{total} nodes are available: {}. preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling.",
        parts.join(", ")
    )
}

/// A binding: the pod, its uid and the index of the node in the pass's candidates.
type Chosen = (PodKey, String, usize);
/// A pod no node fits, reported now: its key, uid and the scheduler's message.
type Unplaced = (PodKey, String, String);

/// One pass's decisions: each pending pod to the first candidate it fits (the candidate's
/// `used` grows by it), or, when none fits and it was not reported yet, the scheduler's
/// message. `reported` holds the uids already reported; a pod placed leaves it.
fn assign(
    candidates: &mut [Candidate<'_>],
    pending: &[(PodKey, PodInfo)],
    reported: &mut HashSet<String>,
) -> (Vec<Chosen>, Vec<Unplaced>) {
    let total = candidates.len();
    let (mut bound, mut stuck) = (Vec::new(), Vec::new());
    // The candidates by their value of a selector's first label key, in pass order, made in
    // one walk of the nodes per key on first use: a node without the pod's value fails the
    // pod whatever else it has, so the search for a fit reads those alone (a pool's nodes,
    // not the fleet's) and still picks the node a full scan would.
    let mut by_label: HashMap<&str, HashMap<&str, Vec<usize>>> = HashMap::new();
    // Shapes no node had room for in this pass, with the message when one was made: nodes
    // only fill up during a pass, so a later pod of the same shape fits nowhere either.
    let mut no_room: Vec<(Shape<'_>, Option<String>)> = Vec::new();
    for (key, info) in pending {
        let shape = Shape::of(info);
        let needs_message = !reported.contains(&info.uid);
        let known = no_room.iter().position(|(s, _)| *s == shape);
        if let Some(i) = known
            && (!needs_message || no_room[i].1.is_some())
        {
            if let Some(message) = no_room[i].1.clone().filter(|_| needs_message) {
                reported.insert(info.uid.clone());
                stuck.push((key.clone(), info.uid.clone(), message));
            }
            continue;
        }
        let chosen = match info.node_selector.first() {
            Some((k, v)) => by_label
                .entry(k.as_str())
                .or_insert_with(|| {
                    let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
                    for (i, c) in candidates.iter().enumerate() {
                        if let Some(value) = c.node.labels().get(k) {
                            groups.entry(value.as_str()).or_default().push(i);
                        }
                    }
                    groups
                })
                .get(v.as_str())
                .into_iter()
                .flatten()
                .copied()
                .find(|&i| candidates[i].fits(info).is_ok()),
            None => (0..total).find(|&i| candidates[i].fits(info).is_ok()),
        };
        // Only a pod not yet reported, and placed nowhere, needs every node's reason.
        let misfits: Vec<Misfit> = if chosen.is_none() && needs_message {
            candidates
                .iter()
                .filter_map(|c| c.fits(info).err().map(Fail::misfit))
                .collect()
        } else {
            Vec::new()
        };
        match chosen {
            Some(i) => {
                let c = &mut candidates[i];
                c.used = (c.used.0 + info.gpus, c.used.1 + info.cpu_m);
                reported.remove(&info.uid);
                bound.push((key.clone(), info.uid.clone(), i));
            }
            None => {
                let message = needs_message.then(|| unschedulable_message(total, &misfits));
                match known {
                    Some(i) => no_room[i].1.clone_from(&message),
                    None if no_room.len() < NO_ROOM_SHAPES => {
                        no_room.push((shape, message.clone()));
                    }
                    None => {}
                }
                if let Some(message) = message {
                    reported.insert(info.uid.clone());
                    stuck.push((key.clone(), info.uid.clone(), message));
                }
            }
        }
    }
    (bound, stuck)
}

/// Runs the scheduler until the zone shuts down.
pub async fn run(ctx: Arc<Ctx>) {
    // Pod uids already reported unschedulable: once per pod, as the scheduler's event.
    let mut reported: HashSet<String> = HashSet::new();
    let binding = Arc::new(AtomicBool::new(true));
    loop {
        tokio::select! {
            _ = ctx.wake_scheduler.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        // Let a burst of changes (a drain, a node joining) land before one pass.
        tokio::time::sleep(Duration::from_millis(100)).await;
        pass(&ctx, &mut reported, &binding).await;
    }
}

async fn pass(ctx: &Arc<Ctx>, reported: &mut HashSet<String>, binding: &Arc<AtomicBool>) {
    let pending = ctx.pods().pending();
    if pending.is_empty() {
        reported.clear();
        return;
    }
    let nodes = ctx.nodes.state();
    let leaving: Vec<bool> = nodes
        .iter()
        .map(|n| {
            ctx.removal(n.metadata.name.as_deref().unwrap_or_default())
                .is_some()
        })
        .collect();
    let (bound, stuck) = {
        let mut index = ctx.pods();
        let mut candidates: Vec<Candidate<'_>> = nodes
            .iter()
            .zip(leaving)
            .map(|(n, leaving)| {
                let mut c = Candidate::of(n, leaving);
                c.used = index.used(c.name());
                c
            })
            .collect();
        let (chosen, unplaced) = assign(&mut candidates, &pending, reported);
        let bound: Vec<_> = chosen
            .into_iter()
            .map(|(key, uid, i)| {
                index.bind(&key, candidates[i].name());
                (key, uid, candidates[i].node.clone())
            })
            .collect();
        (bound, unplaced)
    };
    let bind_all = futures::stream::iter(bound).for_each_concurrent(16, |(key, uid, node)| {
        bind(ctx.clone(), key, uid, node, binding.clone())
    });
    let report_all = futures::stream::iter(stuck)
        .for_each_concurrent(16, |(key, uid, msg)| report(ctx.clone(), key, uid, msg));
    futures::join!(bind_all, report_all);
}

async fn report(ctx: Arc<Ctx>, (ns, name): PodKey, uid: String, message: String) {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let now = chrono::Utc::now();
    let patch = json!({"status": {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": message, "lastTransitionTime": rfc3339(now),
    }]}});
    if let Err(e) = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::debug!(pod = %name, "unschedulable: {e}");
    }
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(ctx.client.clone(), &ns);
    let event: k8s_openapi::api::core::v1::Event = match serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{name}.{:x}", now.timestamp_nanos_opt().unwrap_or_default()),
                     "namespace": ns},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name,
                           "uid": uid},
        "type": "Warning", "reason": "FailedScheduling", "action": "Scheduling",
        "message": message,
        "eventTime": now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "reportingComponent": "default-scheduler",
        "reportingInstance": format!("default-scheduler-{}", ctx.zone.to_lowercase()),
    })) {
        Ok(e) => e,
        Err(e) => return tracing::debug!(pod = %name, "FailedScheduling event: {e}"),
    };
    if let Err(e) = events.create(&PostParams::default(), &event).await {
        tracing::debug!(pod = %name, "FailedScheduling event: {e}");
    }
}

/// Binds the pod (the `binding` subresource where the API server has it, else a patch of
/// `spec.nodeName`, which the embedded server accepts), then leaves the kubelet to start it.
async fn bind(ctx: Arc<Ctx>, key: PodKey, uid: String, node: Arc<Node>, binding: Arc<AtomicBool>) {
    let (ns, name) = key.clone();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let node_name = node.name_any();
    let mut done = false;
    if binding.load(Ordering::Relaxed) {
        let body = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                          "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}});
        match api
            .create_subresource::<_, serde_json::Value>(
                "binding",
                &name,
                &PostParams::default(),
                &body,
            )
            .await
        {
            Ok(_) => done = true,
            Err(kube::Error::Api(e)) if matches!(e.code, 404 | 405) => {
                binding.store(false, Ordering::Relaxed)
            }
            Err(e) => tracing::debug!(pod = %name, "binding: {e}"),
        }
    }
    if !done {
        let patch = json!({"spec": {"nodeName": node_name}});
        if let Err(e) = api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(pod = %name, "binding: {e}");
            ctx.pods().unbind(&key, &uid, &node_name);
            return;
        }
    }
    ctx.spawn(start(ctx.clone(), key, uid, node));
}

/// The kubelet: starts the containers of a pod bound to `node` after a short simulated image
/// pull and reports it Running.
async fn start(ctx: Arc<Ctx>, (ns, name): PodKey, uid: String, node: Arc<Node>) {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let node_name = node.name_any();
    let pull = secs(super::lock(&ctx.rng).random_range(5..20));
    ctx.clock.sleep(pull).await;
    let Ok(pod) = api.get(&name).await else {
        return;
    };
    if pod.metadata.deletion_timestamp.is_some()
        || pod.metadata.uid.as_deref() != Some(uid.as_str())
        || pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) != Some(node_name.as_str())
    {
        return;
    }
    let containers: Vec<&str> = pod
        .spec
        .as_ref()
        .map(|s| s.containers.iter().map(|c| c.name.as_str()).collect())
        .unwrap_or_default();
    let image = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let host_ip = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
        .map(|a| a.address.clone())
        .unwrap_or_default();
    let prefix = node
        .spec
        .as_ref()
        .and_then(|s| s.pod_cidr.clone())
        .unwrap_or_default();
    let pod_ip = format!(
        "{}{}",
        prefix.trim_end_matches("0/24"),
        super::lock(&ctx.rng).random_range(2..250)
    );
    let status = running_status(&containers, &image, &host_ip, &pod_ip);
    let patch = json!({"status": status});
    if let Err(e) = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::debug!(pod = %name, "starting: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::nodes::{NewNode, node_object};
    use crate::sim::pods::{Owner, Policy};

    /// Whether `node`, with `used` (GPUs, millicores) already requested, can take `pod`, as
    /// a pass judges it.
    fn fits(node: &Node, leaving: bool, used: (u32, u32), pod: &PodInfo) -> Result<(), Misfit> {
        let node = Arc::new(node.clone());
        let mut c = Candidate::of(&node, leaving);
        c.used = used;
        c.fits(pod).map_err(Fail::misfit)
    }

    fn node(pool: &str, cordoned: bool) -> Node {
        let spec = spotboard_core::nodepool::NodePoolSpec {
            instance_type: "gd-8xl40s-i128".into(),
            target_nodes: 1,
            ..Default::default()
        };
        let mut n = node_object(&NewNode {
            name: "g000001",
            pool,
            spec: &spec,
            zone: "US-EAST-04A",
            zone_index: 0,
            org_id: "cw000000",
            active: false,
        });
        n.spec.as_mut().unwrap().unschedulable = Some(cordoned);
        n
    }

    fn pod(pool: &str, gpus: u32) -> PodInfo {
        PodInfo {
            uid: "u1".into(),
            node: None,
            gpus,
            cpu_m: 8000,
            policy: Policy::Interruptible,
            daemon: false,
            deleting: false,
            finished: false,
            owner: Some(Owner::ReplicaSet),
            node_selector: Arc::from(vec![(
                spotboard_core::labels::NODE_POOL.to_string(),
                pool.to_string(),
            )]),
            gated: false,
            placement: None,
        }
    }

    #[test]
    fn fit_table() {
        let n = node("inf", false);
        let cases = [
            (pod("inf", 2), (6, 0), false, Ok(())),
            (pod("inf", 2), (7, 0), false, Err(Misfit::Gpu)),
            (pod("other", 2), (0, 0), false, Err(Misfit::Selector)),
            (pod("inf", 0), (0, 120_000), false, Err(Misfit::Cpu)),
            (pod("inf", 1), (0, 0), true, Err(Misfit::Unschedulable)),
        ];
        for (p, used, leaving, want) in cases {
            assert_eq!(
                fits(&n, leaving, used, &p),
                want,
                "{used:?} leaving={leaving}"
            );
        }
        assert_eq!(
            fits(&node("inf", true), false, (0, 0), &pod("inf", 1)),
            Err(Misfit::Unschedulable)
        );
    }

    /// A taint the pod does not tolerate is the node's reason before its labels are looked
    /// at (the default profile runs TaintToleration before NodeAffinity); a toleration lets
    /// the pod in.
    #[test]
    fn an_untolerated_taint_keeps_a_pod_out() {
        let mut n = node("inf", false);
        n.spec.as_mut().unwrap().taints = Some(vec![k8s_openapi::api::core::v1::Taint {
            key: "dedicated".into(),
            value: Some("inference".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }]);
        let want = Misfit::Taint("dedicated".into(), "inference".into());
        assert_eq!(fits(&n, false, (0, 0), &pod("inf", 1)), Err(want.clone()));
        assert_eq!(fits(&n, false, (0, 0), &pod("other", 1)), Err(want.clone()));
        let tolerating: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [], "tolerations": [{"key": "dedicated", "operator": "Exists"}],
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "node.kubernetes.io/instance-type",
                            "operator": "In", "values": ["gd-8xl40s-i128"]}]}]}}}},
        }))
        .unwrap();
        let mut p = pod("inf", 1);
        p.placement = Placement::from_spec(tolerating.spec.as_ref().unwrap());
        assert_eq!(fits(&n, false, (0, 0), &p), Ok(()));
        let elsewhere: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [], "tolerations": [{"operator": "Exists"}],
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "node.kubernetes.io/instance-type",
                            "operator": "NotIn", "values": ["gd-8xl40s-i128"]}]}]}}}},
        }))
        .unwrap();
        p.placement = Placement::from_spec(elsewhere.spec.as_ref().unwrap());
        assert_eq!(fits(&n, false, (0, 0), &p), Err(Misfit::Selector));
        let m = unschedulable_message(3, &[want.clone(), want, Misfit::Selector]);
        assert_eq!(
            m,
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
             2 node(s) had untolerated taint {dedicated: inference}. preemption: 0/3 nodes are \
             available: 3 Preemption is not helpful for scheduling."
        );
    }

    #[test]
    fn message_reads_like_kube_scheduler() {
        let m = unschedulable_message(
            5,
            &[
                Misfit::Selector,
                Misfit::Selector,
                Misfit::Selector,
                Misfit::Unschedulable,
                Misfit::Gpu,
            ],
        );
        assert_eq!(
            m,
            "0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable, \
             3 node(s) didn't match Pod's node affinity/selector. preemption: 0/5 nodes are available: \
             5 Preemption is not helpful for scheduling."
        );
    }

    /// A pass places pods first-fit and fills nodes as it goes; a second pod of a shape that
    /// fit nowhere gets the same message a scan of every node gives, and a pod already
    /// reported is not reported again.
    #[test]
    fn a_pass_places_first_fit_and_reports_each_stuck_pod_once() {
        let nodes: Vec<Arc<Node>> = [node("inf", true), node("other", false), node("inf", false)]
            .into_iter()
            .map(Arc::new)
            .collect();
        let mut candidates: Vec<Candidate<'_>> =
            nodes.iter().map(|n| Candidate::of(n, false)).collect();
        candidates[2].used = (2, 0);
        let mut pending = Vec::new();
        for (i, gpus) in [4, 4, 4, 1].into_iter().enumerate() {
            let mut p = pod("inf", gpus);
            p.uid = format!("u{i}");
            pending.push((("ns".to_string(), format!("p{i}")), p));
        }
        let mut reported: HashSet<String> = ["u2".to_string()].into();
        let (bound, stuck) = assign(&mut candidates, &pending, &mut reported);
        // 8 GPUs, 2 used: the first 4 fits, the second and third do not, the 1 does.
        let placed: Vec<(&str, usize)> = bound.iter().map(|(k, _, i)| (k.1.as_str(), *i)).collect();
        assert_eq!(placed, [("p0", 2), ("p3", 2)]);
        assert_eq!(candidates[2].used.0, 7);
        // The message is what judging every node one by one gives, after the first binding.
        let mut after = node("inf", false);
        after.metadata.name = Some("n2".into());
        let by_hand = unschedulable_message(
            3,
            &[
                fits(&nodes[0], false, (0, 0), &pending[1].1).unwrap_err(),
                fits(&nodes[1], false, (0, 0), &pending[1].1).unwrap_err(),
                fits(&after, false, (6, 0), &pending[1].1).unwrap_err(),
            ],
        );
        assert_eq!(
            stuck,
            [(
                ("ns".to_string(), "p1".to_string()),
                "u1".to_string(),
                by_hand
            )]
        );
        assert!(reported.contains("u1") && reported.contains("u2"));
        assert!(!reported.contains("u0"));
    }
}
