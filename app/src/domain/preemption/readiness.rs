//! The spot readiness audit: which workloads on spot nodes a preemption will hurt, and why.
//!
//! Pure: the server lists pods and PodDisruptionBudgets with its read-only account and hands
//! them over as facts. Checks and their reasons are [`crate::model::Check`]; the notice
//! window per provider is [`super::window`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::{Provider, sigterm_at_s, window};
use crate::domain::selector::{Requirement, Selector};
use crate::model::{Check, Finding, PoolReadiness};

/// What the audit needs of a pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PodFacts {
    pub namespace: String,
    pub name: String,
    /// `metadata.uid`: a StatefulSet's replacement has the same name and another uid.
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    /// The controlling owner's kind and name (`ReplicaSet`, `StatefulSet`, `Job`, `DaemonSet`).
    pub owner_kind: Option<String>,
    pub owner_name: Option<String>,
    pub node: Option<String>,
    /// `terminationGracePeriodSeconds`, seconds (30 when unset).
    pub grace_s: i64,
    /// Whether any container has a `lifecycle.preStop` hook.
    pub pre_stop: bool,
    /// Whether the pod is Pending or Running (finished pods are not audited).
    pub active: bool,
    /// `priorityClassName` starts with `system-` (GKE shuts these down in the last 15 s).
    #[serde(default)]
    pub system: bool,
}

impl PodFacts {
    /// `Kind/name` of the owner, or `Pod/name` for a bare pod.
    pub fn workload(&self) -> String {
        match (&self.owner_kind, &self.owner_name) {
            (Some(k), Some(n)) => format!("{k}/{n}"),
            _ => format!("Pod/{}", self.name),
        }
    }
}

/// What the audit needs of a node (from the hub's node rows).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeFacts {
    pub name: String,
    pub pool: Option<String>,
    pub zone: Option<String>,
    pub provider: Provider,
    pub spot: bool,
}

/// A PodDisruptionBudget: its namespace, name and selector (`None`: selects nothing).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PdbFacts {
    pub namespace: String,
    pub name: String,
    /// `matchLabels` and `matchExpressions` together; `None` when the budget has no selector
    /// or one with an operator a `LabelSelector` does not have (the API server would refuse
    /// it): such a budget selects nothing.
    pub selector: Option<Selector>,
    /// `spec.minAvailable` and `spec.maxUnavailable` as text (`"2"`, `"50%"`).
    #[serde(default)]
    pub min_available: Option<String>,
    #[serde(default)]
    pub max_unavailable: Option<String>,
}

/// A budget's selector from its `matchLabels` and `matchExpressions` (`(key, operator,
/// values)`); `None` when an operator is not a `LabelSelector`'s.
pub fn pdb_selector(
    match_labels: BTreeMap<String, String>,
    expressions: impl IntoIterator<Item = (String, String, Vec<String>)>,
) -> Option<Selector> {
    let mut reqs: Vec<Requirement> = match_labels
        .into_iter()
        .map(|(k, v)| Requirement::In(k, vec![v]))
        .collect();
    for (key, op, values) in expressions {
        reqs.push(Requirement::from_expression(&key, &op, values)?);
    }
    Some(Selector(reqs))
}

impl PdbFacts {
    /// Whether the budget selects `pod`. In policy/v1 an empty selector selects every pod of
    /// the namespace; an unknown operator selects nothing, as the API server would refuse it.
    pub fn covers(&self, pod: &PodFacts) -> bool {
        if self.namespace != pod.namespace {
            return false;
        }
        self.selector
            .as_ref()
            .is_some_and(|s| s.matches(&pod.labels))
    }
}

/// The first budget covering `pod`, by name.
pub fn covering_pdb<'a>(pdbs: &'a [PdbFacts], pod: &PodFacts) -> Option<&'a PdbFacts> {
    pdbs.iter()
        .filter(|b| b.covers(pod))
        .min_by(|a, b| a.name.cmp(&b.name))
}

/// Active pods per `(namespace, workload)` across the cluster: the workload's replicas as
/// running now (the owner's desired count is not read; a crash-looping replica still counts).
pub fn replicas(pods: &[PodFacts]) -> HashMap<(String, String), u32> {
    let mut out = HashMap::new();
    for p in pods.iter().filter(|p| p.active) {
        *out.entry((p.namespace.clone(), p.workload())).or_default() += 1;
    }
    out
}

/// Seconds a pod has from SIGTERM to the node's removal: CKS 300 (drain at T+2 min, gone by
/// T+7 min), GKE 15 (the kubelet's share for ordinary pods), Karpenter 120.
pub fn shutdown_budget_s(provider: Provider) -> i64 {
    match provider {
        Provider::Gke => 15,
        p => {
            let removed = window(p).last().map_or(0, |ph| ph.starts_at_s);
            removed - sigterm_at_s(p)
        }
    }
}

#[derive(Default)]
struct Group<'a> {
    pods: Vec<&'a PodFacts>,
}

/// Audits every pool with spot nodes in one cluster. Pools come sorted by name, findings by
/// check then namespace and workload. DaemonSet pods are skipped (one per node by design).
/// `pdbs` is `None` when the budgets could not be read: no budget finding is made then.
pub fn audit(
    cluster: &str,
    nodes: &[NodeFacts],
    pods: &[PodFacts],
    pdbs: Option<&[PdbFacts]>,
) -> Vec<PoolReadiness> {
    let by_name: HashMap<&str, &NodeFacts> = nodes.iter().map(|n| (n.name.as_str(), n)).collect();
    let replicas = replicas(pods);
    // "All in one zone" is a finding only where the cluster offers more than one (a CKS
    // cluster is zonal: everything in it shares its zone).
    let cluster_zones: BTreeSet<&str> = nodes.iter().filter_map(|n| n.zone.as_deref()).collect();
    // The zones of every workload, over all its active pods.
    let mut zones: HashMap<(String, String), BTreeSet<String>> = HashMap::new();
    for p in pods.iter().filter(|p| p.active) {
        if let Some(z) = p.node.as_deref().and_then(|n| by_name.get(n)?.zone.clone()) {
            zones
                .entry((p.namespace.clone(), p.workload()))
                .or_default()
                .insert(z);
        }
    }

    let mut out: BTreeMap<String, PoolReadiness> = BTreeMap::new();
    let mut groups: BTreeMap<(String, String, String), Group> = BTreeMap::new();
    for n in nodes.iter().filter(|n| n.spot) {
        let pool = n.pool.clone().unwrap_or_else(|| "(no pool)".into());
        let entry = out.entry(pool.clone()).or_insert_with(|| PoolReadiness {
            cluster: cluster.to_string(),
            pool,
            provider: n.provider,
            ..Default::default()
        });
        entry.nodes += 1;
    }
    for p in pods.iter().filter(|p| p.active) {
        if p.owner_kind.as_deref() == Some("DaemonSet") {
            continue;
        }
        let Some(node) = p.node.as_deref().and_then(|n| by_name.get(n)) else {
            continue;
        };
        if !node.spot {
            continue;
        }
        let pool = node.pool.clone().unwrap_or_else(|| "(no pool)".into());
        if let Some(r) = out.get_mut(&pool) {
            r.pods += 1;
        }
        groups
            .entry((pool, p.namespace.clone(), p.workload()))
            .or_default()
            .pods
            .push(p);
    }

    for ((pool, namespace, workload), g) in groups {
        let Some(report) = out.get_mut(&pool) else {
            continue;
        };
        let provider = by_name
            .get(g.pods[0].node.as_deref().unwrap_or_default())
            .map_or(Provider::Unknown, |n| n.provider);
        let key = (namespace.clone(), workload.clone());
        let n = g.pods.len() as u32;
        let mut add = |check: Check, detail: String| {
            report.findings.push(Finding {
                check,
                namespace: namespace.clone(),
                workload: workload.clone(),
                pods: n,
                detail,
            });
        };
        let count = replicas.get(&key).copied().unwrap_or(n);
        let first = g.pods[0];
        let is_job = first.owner_kind.as_deref() == Some("Job");
        if count <= 1 && !is_job {
            add(
                Check::SingleReplica,
                "1 pod of this workload runs in the cluster".into(),
            );
        }
        if !is_job && pdbs.is_some_and(|b| covering_pdb(b, first).is_none()) {
            add(
                Check::NoPdb,
                format!("no PodDisruptionBudget in {namespace} selects its pods"),
            );
        }
        // GKE's graceful node shutdown asks no budget (GKE: Spot VMs): nothing to refuse.
        if let Some(b) = pdbs
            .and_then(|b| covering_pdb(b, first))
            .filter(|_| provider != Provider::Gke)
        {
            blocks_drain(b, &g, count, &mut add);
        }
        let budget = shutdown_budget_s(provider);
        if let Some(grace) = g
            .pods
            .iter()
            .map(|p| p.grace_s)
            .max()
            .filter(|g| *g > budget)
        {
            add(
                Check::GraceExceedsNotice,
                format!(
                    "terminationGracePeriodSeconds {grace} s; {budget} s from SIGTERM to removal on {}",
                    provider.as_str()
                ),
            );
        }
        if let Some(z) = zones
            .get(&key)
            .filter(|z| z.len() == 1 && count > 1 && cluster_zones.len() > 1 && !is_job)
        {
            let zone = z.iter().next().cloned().unwrap_or_default();
            add(Check::OneZone, format!("{count} replicas, all in {zone}"));
        }
        if first.owner_kind.as_deref() == Some("StatefulSet") {
            add(Check::StatefulSet, format!("{n} pod(s) on spot nodes"));
        }
        let graceful = g
            .pods
            .iter()
            .filter(|p| {
                p.labels
                    .contains_key(crate::labels::POD_GRACEFUL_INTERRUPTIBLE)
            })
            .count();
        if graceful > 0 {
            add(
                Check::GracefulInterruptible,
                format!("{graceful} pod(s) labelled qos.coreweave.com/graceful-interruptible"),
            );
        }
        if !is_job && g.pods.iter().any(|p| !p.pre_stop) {
            add(
                Check::NoPreStop,
                "no container declares lifecycle.preStop".into(),
            );
        }
    }
    let mut pools: Vec<PoolReadiness> = out.into_values().collect();
    for p in &mut pools {
        p.findings.sort_by(|a, b| {
            (a.check, &a.namespace, &a.workload).cmp(&(b.check, &b.namespace, &b.workload))
        });
    }
    pools
}

/// The [`Check::PdbBlocksDrain`] finding of a workload's group on a pool's spot nodes, when
/// its budget `b` allows fewer disruptions (with all `count` replicas healthy) than the pods
/// it has on one node.
fn blocks_drain(b: &PdbFacts, g: &Group, count: u32, add: &mut impl FnMut(Check, String)) {
    let mut per_node: BTreeMap<&str, u32> = BTreeMap::new();
    for p in &g.pods {
        *per_node
            .entry(p.node.as_deref().unwrap_or_default())
            .or_default() += 1;
    }
    let Some((node, most)) = per_node
        .into_iter()
        .max_by_key(|(n, c)| (*c, std::cmp::Reverse(*n)))
    else {
        return;
    };
    let count = i64::from(count);
    let allowed = super::budget::allowed(
        b.min_available.as_deref(),
        b.max_unavailable.as_deref(),
        count,
        count,
    );
    if i64::from(most) > allowed {
        add(
            Check::PdbBlocksDrain,
            format!(
                "PodDisruptionBudget {} allows {allowed} disruption(s) of {count} replicas; {most} pods share node {node}: its drain is refused for {}",
                b.name,
                i64::from(most) - allowed
            ),
        );
    }
}

/// Checks a "why did my pod stop?" lookup: a namespace and a pod name (or name prefix), both
/// lower-case letters, digits, `-` and `.`, as Kubernetes names are.
///
/// Errors: which of the two is empty or not a Kubernetes name.
pub fn pod_lookup(namespace: &str, name: &str) -> Result<(), String> {
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    };
    if !ok(namespace) {
        return Err("namespace: lower-case letters, digits, '-' and '.' only".into());
    }
    if !ok(name) {
        return Err("name: lower-case letters, digits, '-' and '.' only".into());
    }
    Ok(())
}
