//! Which pools a waiting pod could land on, and why it waits, in the user's terms.
//!
//! A pool is judged by what it gives its nodes, so a pool with no node yet is judged too:
//!
//! - labels: the pool's own name label (CKS `compute.coreweave.com/node-pool`, GKE
//!   `cloud.google.com/gke-nodepool`, Karpenter `karpenter.sh/nodepool`), its instance
//!   type(s) (`node.kubernetes.io/instance-type`), its zone, its capacity type where the
//!   provider labels it (GKE `cloud.google.com/gke-spot=true`, Karpenter
//!   `karpenter.sh/capacity-type`), a CKS NodePool's `nodeLabels`, and the values a GKE or
//!   Karpenter pool's nodes are seen or required to carry (`PoolDetail::node_label_values`:
//!   GPU model labels, a Karpenter NodePool's other `In` requirements);
//! - taints: a CKS NodePool's `nodeTaints` (`NoSchedule` and `NoExecute` keep out a pod that
//!   does not tolerate them; `PreferNoSchedule` does not), and on a GKE pool of GPU machines
//!   the `nvidia.com/gpu=present:NoSchedule` GKE puts on every GPU node (GKE: "Run GPUs in
//!   Standard node pools"; GKE gives pods that request GPUs the toleration, so it keeps out
//!   only pods that request none).
//!
//! A selector key a node has but no pool spells out (`kubernetes.io/hostname`,
//! `kubernetes.io/os`, `kubernetes.io/arch`, the region) is not judged: it neither matches nor
//! excludes. Any other key a pool does not give its nodes excludes the pool.
//!
//! Required node affinity is judged the same way, term by term (the terms are ORed): `In` and
//! `Exists` need a key the pool gives its nodes (with one of the values); `NotIn` and
//! `DoesNotExist` exclude a pool only when every node of it would carry an excluded value or
//! the key; `Gt` and `Lt` compare the pool's integer values. A key not judged satisfies any
//! requirement.

use std::collections::{BTreeMap, HashMap};

use crate::CapacityType;
use crate::Provider;
use crate::domain::selector::{Requirement, Selector};
use crate::labels;
use crate::model::{PoolRow, Toleration, WaitKind, WaitingPod, WaitingPool};
use crate::nodepool::ConditionType;

/// kube-scheduler's reason for a node whose labels do not match the pod's selector or
/// required affinity.
pub const SELECTOR_REASON: &str = "didn't match Pod's node affinity/selector";

/// The start of kube-scheduler's reason for a node with a taint the pod does not tolerate
/// (`node(s) had untolerated taint {key: value}`).
pub const TAINT_REASON: &str = "node(s) had untolerated taint";

/// The taint GKE gives its GPU nodes, as a pool row writes taints.
pub const GKE_GPU_TAINT: &str = "nvidia.com/gpu=present:NoSchedule";

/// Whether a scheduler reason is an untolerated taint other than one a node gets in its
/// life: Kubernetes' `node.kubernetes.io/*` (not-ready, unreachable, pressure, unschedulable)
/// and the providers' preemption notices (GKE `cloud.google.com/impending-node-termination`,
/// Karpenter `karpenter.sh/disrupted`).
fn other_pools_taint(reason: &str) -> bool {
    let Some(rest) = reason.strip_prefix(TAINT_REASON) else {
        return false;
    };
    let key = rest
        .trim_start()
        .trim_start_matches('{')
        .split(':')
        .next()
        .unwrap_or_default();
    !(key.starts_with("node.kubernetes.io/")
        || key == labels::GKE_TERMINATION_TAINT
        || key == labels::KARPENTER_DISRUPTED_TAINT)
}

/// Labels every node carries that a pool does not spell out: not judged.
const NOT_JUDGED: [&str; 6] = [
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    labels::REGION,
];

/// The labels `p` gives its nodes: key → the values its nodes may have.
pub fn node_labels(p: &PoolRow) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut put = |k: &str, v: &str| out.entry(k.to_string()).or_default().push(v.to_string());
    match p.provider {
        Provider::Gke => {
            put(labels::GKE_NODEPOOL, &p.name);
            if p.capacity_type == CapacityType::Spot {
                put(labels::GKE_SPOT, "true");
            }
        }
        Provider::Karpenter => {
            put(labels::KARPENTER_NODEPOOL, &p.name);
            put(labels::KARPENTER_CAPACITY_TYPE, p.capacity_type.as_str());
        }
        _ => put(labels::NODE_POOL, &p.name),
    }
    for t in p.instance_type.split(", ").filter(|t| !t.is_empty()) {
        put(labels::INSTANCE_TYPE, t);
    }
    if let Some(z) = &p.zone {
        put(labels::ZONE, z);
    }
    for (k, v) in &p.detail.node_labels {
        put(k, v);
    }
    for (k, vs) in &p.detail.node_label_values {
        for v in vs {
            put(k, v);
        }
    }
    out
}

/// A pool's taint as the row writes it (`key=value:Effect`, `key:Effect`): `(key, value,
/// effect)`.
fn taint(text: &str) -> (&str, &str, &str) {
    let (kv, effect) = text.rsplit_once(':').unwrap_or((text, ""));
    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
    (key, value, effect)
}

/// Whether `tolerations` tolerate a taint (Kubernetes' rule: an empty key with `Exists`
/// tolerates all; an empty effect matches every effect; `Exists` ignores the value).
pub fn tolerated(tolerations: &[Toleration], key: &str, value: &str, effect: &str) -> bool {
    tolerations.iter().any(|t| {
        let key_ok = (t.key.is_empty() && t.exists) || t.key == key;
        let effect_ok = t.effect.is_empty() || t.effect == effect;
        let value_ok = t.exists || t.value == value;
        key_ok && effect_ok && value_ok
    })
}

/// Why a pool cannot take a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Misfit {
    /// The selector asks `key=value`, which the pool's nodes do not have.
    Selector { key: String, value: String },
    /// No term of the pod's required node affinity holds on the pool's nodes: the first
    /// requirement that failed in the first term, as `kubectl` writes it.
    Affinity(String),
    /// The pool's nodes carry this taint (as the row writes it), untolerated.
    Taint(String),
}

/// Whether requirement `r` holds on the nodes of a pool that gives them `have`.
fn holds(r: &Requirement, have: &BTreeMap<String, Vec<String>>) -> bool {
    let key = r.key();
    if NOT_JUDGED.contains(&key) && !have.contains_key(key) {
        return true;
    }
    let values = have.get(key);
    let ints = || {
        values
            .into_iter()
            .flatten()
            .filter_map(|v| v.parse::<i64>().ok())
    };
    match r {
        Requirement::Exists(_) => values.is_some(),
        Requirement::DoesNotExist(_) => values.is_none(),
        Requirement::In(_, vs) => values.is_some_and(|have| have.iter().any(|v| vs.contains(v))),
        Requirement::NotIn(_, vs) => values.is_none_or(|have| have.iter().any(|v| !vs.contains(v))),
        Requirement::Gt(_, n) => ints().any(|v| v > *n),
        Requirement::Lt(_, n) => ints().any(|v| v < *n),
    }
}

/// The first requirement of `term` that does not hold on the pool's nodes.
fn failing<'a>(
    term: &'a Selector,
    have: &BTreeMap<String, Vec<String>>,
) -> Option<&'a Requirement> {
    term.0.iter().find(|r| !holds(r, have))
}

/// Whether pod `w` could land on `p`'s nodes.
pub fn fit(w: &WaitingPod, p: &PoolRow) -> Result<(), Misfit> {
    fit_labelled(w, p, &node_labels(p))
}

/// [`fit`] with the pool's [`node_labels`] worked out once by the caller.
fn fit_labelled(
    w: &WaitingPod,
    p: &PoolRow,
    have: &BTreeMap<String, Vec<String>>,
) -> Result<(), Misfit> {
    for (k, v) in &w.node_selector {
        let ok = match have.get(k) {
            Some(values) => values.contains(v),
            None => NOT_JUDGED.contains(&k.as_str()),
        };
        if !ok {
            return Err(Misfit::Selector {
                key: k.clone(),
                value: v.clone(),
            });
        }
    }
    if !w.node_affinity.is_empty()
        && w.node_affinity
            .iter()
            .all(|term| failing(term, have).is_some())
    {
        let first = failing(&w.node_affinity[0], have)
            .map(ToString::to_string)
            .unwrap_or_default();
        return Err(Misfit::Affinity(first));
    }
    let gke_gpu = (p.provider == Provider::Gke && p.gpus_per_node.is_some_and(|g| g > 0))
        .then_some(GKE_GPU_TAINT);
    for t in p
        .detail
        .node_taints
        .iter()
        .map(String::as_str)
        .chain(gke_gpu)
    {
        let (key, value, effect) = taint(t);
        if matches!(effect, "NoSchedule" | "NoExecute")
            && !tolerated(&w.tolerations, key, value, effect)
        {
            return Err(Misfit::Taint(t.to_string()));
        }
    }
    Ok(())
}

/// `HH:MM` UTC (by hand: chrono's strftime would weigh on the wasm, which shares this crate).
fn clock(t: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::Timelike;
    format!("{:02}:{:02}", t.hour(), t.minute())
}

/// Fills each pod's `pools` (of its own cluster, sorted) and `cause`.
///
/// Each pool's labels are worked out once, and pods are judged once per kind: the replicas
/// of a Job share their selector and tolerations, so a runaway Job's 10,000 pending pods
/// cost one pass over the pools, not 10,000.
pub fn place(pods: &mut [WaitingPod], pools: &[&PoolRow]) {
    let labelled: Vec<(&PoolRow, BTreeMap<String, Vec<String>>)> =
        pools.iter().map(|p| (*p, node_labels(p))).collect();
    // (cluster, selector, affinity, tolerations) → the pools that fit and the misfits of the others.
    type Judged<'a> = (Vec<&'a PoolRow>, Vec<Misfit>, bool);
    let mut judged: HashMap<String, Judged> = HashMap::new();
    for w in pods.iter_mut() {
        let kind = format!(
            "{}\u{0}{:?}\u{0}{:?}\u{0}{:?}",
            w.cluster, w.node_selector, w.node_affinity, w.tolerations
        );
        let (fits, misfits, any) = judged.entry(kind).or_insert_with(|| {
            let mut fits = Vec::new();
            let mut misfits = Vec::new();
            let mut any = false;
            for (p, have) in labelled.iter().filter(|(p, _)| p.cluster == w.cluster) {
                any = true;
                match fit_labelled(w, p, have) {
                    Ok(()) => fits.push(*p),
                    Err(m) => misfits.push(m),
                }
            }
            fits.sort_by(|a, b| a.name.cmp(&b.name));
            (fits, misfits, any)
        });
        w.pools = fits.iter().map(|p| p.name.clone()).collect();
        let cause = match fits.first() {
            // A gated pod waits for whoever holds its gate, whatever its pools say.
            Some(_) if w.kind == WaitKind::SchedulingGated => {
                format!("gated by {}", w.gates.join(", "))
            }
            Some(p) => pool_cause(p, &[&*w]),
            None if !*any => "no pool in this cluster".into(),
            None => no_pool(w, misfits),
        };
        w.cause = cause;
    }
}

/// Why no pool can take `w`: an untolerated taint when a pool's labels fit, else its
/// required node affinity when its selector fits a pool, else the selector.
fn no_pool(w: &WaitingPod, misfits: &[Misfit]) -> String {
    if let Some(Misfit::Taint(t)) = misfits.iter().find(|m| matches!(m, Misfit::Taint(_))) {
        return format!("no pool tolerates taint {t}");
    }
    if let Some(Misfit::Affinity(r)) = misfits.iter().find(|m| matches!(m, Misfit::Affinity(_))) {
        return format!("node affinity {r} matches no pool");
    }
    let selector: Vec<String> = w
        .node_selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("selector {} matches no pool", selector.join(","))
}

/// Why the pods `waiting` for `p` wait, in one sentence: the pool's Quota, then its Capacity
/// (or queued nodes), then the gates, then the scheduler's commonest reason.
pub fn pool_cause(p: &PoolRow, waiting: &[&WaitingPod]) -> String {
    let condition = |t: ConditionType| p.conditions.iter().find(|c| c.type_ == t);
    if let Some(q) = condition(ConditionType::Quota).filter(|c| c.status == "False") {
        return format!("over quota for {} (Quota: {})", p.instance_type, q.reason);
    }
    let capacity = condition(ConditionType::Capacity);
    let short = capacity.is_some_and(|c| c.status == "False" || c.status == "Unknown")
        || p.queued_nodes.is_some_and(|q| q > 0);
    if short {
        let since = capacity
            .and_then(|c| c.last_transition)
            .or_else(|| waiting.iter().filter_map(|w| w.since).min());
        let mut s = format!(
            "waiting for {} capacity in {}",
            p.capacity_type,
            p.zone.as_deref().unwrap_or("its zone")
        );
        if let Some(t) = since {
            s.push_str(&format!(" since {}", clock(t)));
        }
        if let Some(c) = capacity.filter(|c| !c.reason.is_empty()) {
            s.push_str(&format!(" (Capacity: {})", c.reason));
        }
        return s;
    }
    if let Some(g) = waiting.iter().find(|w| w.kind == WaitKind::SchedulingGated) {
        return format!("gated by {}", g.gates.join(", "));
    }
    // The nodes that did not match the selector, or whose pool-given taints the pod does not
    // tolerate, are other pools' nodes (this pool's taints are tolerated, or it would not be
    // placed here): not this pool's reason. Taints a node gets in its life (not ready, a
    // preemption notice) may be this pool's own nodes', and stay.
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for r in waiting
        .iter()
        .flat_map(|w| w.reasons.iter())
        .filter(|r| !r.reason.contains(SELECTOR_REASON) && !other_pools_taint(&r.reason))
    {
        *counts.entry(r.reason.as_str()).or_default() += r.nodes.max(1);
    }
    match counts
        .into_iter()
        .max_by_key(|(reason, n)| (*n, std::cmp::Reverse(*reason)))
    {
        Some((reason, n)) => format!("{reason} on {n} node(s)"),
        None => "waiting for the scheduler".into(),
    }
}

/// The work waiting for each pool (pods already [`place`]d), by cluster and pool.
pub fn per_pool(pods: &[WaitingPod], pools: &[&PoolRow]) -> Vec<WaitingPool> {
    let mut by_pool: HashMap<(&str, &str), Vec<&WaitingPod>> = HashMap::new();
    for w in pods {
        for p in &w.pools {
            by_pool.entry((&w.cluster, p)).or_default().push(w);
        }
    }
    let mut out: Vec<WaitingPool> = pools
        .iter()
        .filter_map(|p| {
            let mine = by_pool.get(&(p.cluster.as_str(), p.name.as_str()))?;
            Some(WaitingPool {
                cluster: p.cluster.clone(),
                pool: Some(p.name.clone()),
                pods: mine.len() as u32,
                gpus: mine.iter().map(|w| w.gpus).sum(),
                oldest_since: mine.iter().filter_map(|w| w.since).min(),
                oldest_gpu_since: oldest_gpu_since(mine),
                cause: pool_cause(p, mine),
                no_pool: 0,
            })
        })
        .collect();
    out.extend(per_cluster(pods));
    // A cluster's row (`None`) sorts before its pools'.
    out.sort_by(|a, b| (&a.cluster, &a.pool).cmp(&(&b.cluster, &b.pool)));
    out
}

/// The longest wait's start among `pods` requesting GPUs.
fn oldest_gpu_since(pods: &[&WaitingPod]) -> Option<chrono::DateTime<chrono::Utc>> {
    pods.iter()
        .filter(|w| w.gpus > 0)
        .filter_map(|w| w.since)
        .min()
}

/// Each cluster's waiting work, each pod once: its commonest cause, and how many pods no
/// pool can take.
fn per_cluster(pods: &[WaitingPod]) -> Vec<WaitingPool> {
    let mut by_cluster: BTreeMap<&str, Vec<&WaitingPod>> = BTreeMap::new();
    for w in pods {
        by_cluster.entry(&w.cluster).or_default().push(w);
    }
    by_cluster
        .into_iter()
        .map(|(cluster, mine)| {
            let mut causes: BTreeMap<&str, u32> = BTreeMap::new();
            for w in &mine {
                *causes.entry(w.cause.as_str()).or_default() += 1;
            }
            WaitingPool {
                cluster: cluster.to_string(),
                pool: None,
                pods: mine.len() as u32,
                gpus: mine.iter().map(|w| w.gpus).sum(),
                oldest_since: mine.iter().filter_map(|w| w.since).min(),
                oldest_gpu_since: oldest_gpu_since(&mine),
                cause: causes
                    .into_iter()
                    .max_by_key(|(c, n)| (*n, std::cmp::Reverse(*c)))
                    .map(|(c, _)| c.to_string())
                    .unwrap_or_default(),
                no_pool: mine.iter().filter(|w| w.pools.is_empty()).count() as u32,
            }
        })
        .collect()
}
