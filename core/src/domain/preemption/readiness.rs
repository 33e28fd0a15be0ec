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
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// GPUs the pod asks for: `nvidia.com/gpu` summed over its containers, a container's
    /// limit standing for its request when only the limit is set (Kubernetes defaults an
    /// extended resource's request to its limit). Init containers are not counted: they end
    /// before the containers start.
    #[serde(default)]
    pub gpus: u32,
    /// CPU the pod requests, millicores, summed over its containers the same way (a limit
    /// standing for an absent request).
    #[serde(default)]
    pub cpu_m: u64,
    /// Memory the pod requests, bytes, summed likewise.
    #[serde(default)]
    pub memory_b: u64,
}

impl PodFacts {
    /// `Kind/name` of the owner, or `Pod/name` for a bare pod.
    pub fn workload(&self) -> String {
        crate::model::workload_name(
            self.owner_kind.as_deref(),
            self.owner_name.as_deref(),
            &self.name,
        )
    }

    /// The `(namespace, workload)` this pod is a replica of, or `None` for a finished pod.
    /// A workload's replicas are its active pods as running now (the owner's desired count
    /// is not read; a crash-looping replica still counts). The audit and the blast radius's
    /// sibling count both count with this.
    pub fn replica_of(&self) -> Option<(String, String)> {
        self.active
            .then(|| (self.namespace.clone(), self.workload()))
    }

    /// These facts without what only this pod has (its uid and node, and its name when an
    /// owner names the workload): what the replicas of one workload share, so a store of
    /// many pods can keep one copy for all of them. [`AuditFold::add_on`] takes the node
    /// beside it; [`Self::workload`] and [`Self::replica_of`] read the same.
    pub fn template(mut self) -> Self {
        self.uid = String::new();
        self.node = None;
        if self.owner_kind.is_some() && self.owner_name.is_some() {
            self.name = String::new();
        }
        self
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

/// One workload's pods on one pool's spot nodes, as far as the checks need them: the first
/// pod whole (its owner and labels pick the budget), the rest folded into counts.
struct Group<'n> {
    first: PodFacts,
    provider: Provider,
    pods: u32,
    max_grace_s: i64,
    graceful: u32,
    without_pre_stop: bool,
    /// Pods per node, by node name (a node the audit was given).
    per_node: BTreeMap<&'n str, u32>,
}

/// The audit of one cluster folded one pod at a time, so a caller reading pods a page at a
/// time holds one entry per workload and node rather than every pod: at 50,000 pods the
/// pods' facts were 27 MB of the dashboard's heap each time the audit ran.
///
/// [`audit`] is this fold over a slice; the result does not depend on how the pods arrive,
/// only on their order (the first pod of a workload on a pool picks its budget).
pub struct AuditFold<'n> {
    by_name: HashMap<&'n str, &'n NodeFacts>,
    /// Replicas per `(namespace, workload)` ([`PodFacts::replica_of`]).
    replicas: HashMap<(String, String), u32>,
    /// The zones of every workload, over all its active pods.
    zones: HashMap<(String, String), BTreeSet<&'n str>>,
    pools: BTreeMap<String, PoolReadiness>,
    groups: BTreeMap<(String, String, String), Group<'n>>,
}

impl<'n> AuditFold<'n> {
    /// A fold over `nodes`, the cluster's nodes as the hub has them; every pool with spot
    /// nodes gets a row, with or without pods.
    pub fn new(cluster: &str, nodes: &'n [NodeFacts]) -> Self {
        let mut pools = BTreeMap::new();
        for n in nodes.iter().filter(|n| n.spot) {
            let pool = n.pool.clone().unwrap_or_else(|| "(no pool)".into());
            let entry = pools.entry(pool.clone()).or_insert_with(|| PoolReadiness {
                cluster: cluster.to_string(),
                pool,
                provider: n.provider,
                ..Default::default()
            });
            entry.nodes += 1;
        }
        Self {
            by_name: nodes.iter().map(|n| (n.name.as_str(), n)).collect(),
            replicas: HashMap::new(),
            zones: HashMap::new(),
            pools,
            groups: BTreeMap::new(),
        }
    }

    /// Counts one pod. Finished pods and pods on nodes the fold was not given count nowhere;
    /// DaemonSet pods count as replicas only (one per node by design).
    pub fn add(&mut self, p: &PodFacts) {
        self.add_on(p, p.node.as_deref());
    }

    /// Counts one pod bound to `node` (`p.node` is not read): for a store that keeps a
    /// pod's [`PodFacts::template`] shared and its node apart.
    pub fn add_on(&mut self, p: &PodFacts, node: Option<&str>) {
        let Some(key) = p.replica_of() else {
            return;
        };
        *self.replicas.entry(key.clone()).or_default() += 1;
        let Some(&node) = node.and_then(|n| self.by_name.get(n)) else {
            return;
        };
        if let Some(z) = node.zone.as_deref() {
            self.zones.entry(key.clone()).or_default().insert(z);
        }
        if p.owner_kind.as_deref() == Some("DaemonSet") || !node.spot {
            return;
        }
        let pool = node.pool.clone().unwrap_or_else(|| "(no pool)".into());
        if let Some(r) = self.pools.get_mut(&pool) {
            r.pods += 1;
        }
        let g = self
            .groups
            .entry((pool, key.0, key.1))
            .or_insert_with(|| Group {
                first: p.clone(),
                provider: node.provider,
                pods: 0,
                max_grace_s: p.grace_s,
                graceful: 0,
                without_pre_stop: false,
                per_node: BTreeMap::new(),
            });
        g.pods += 1;
        g.max_grace_s = g.max_grace_s.max(p.grace_s);
        g.graceful += u32::from(
            p.labels
                .contains_key(crate::labels::POD_GRACEFUL_INTERRUPTIBLE),
        );
        g.without_pre_stop |= !p.pre_stop;
        *g.per_node.entry(node.name.as_str()).or_default() += 1;
    }

    /// The findings, pools sorted by name and findings by check then namespace and workload.
    /// `pdbs` is `None` when the budgets could not be read: no budget finding is made then.
    pub fn finish(self, pdbs: Option<&[PdbFacts]>) -> Vec<PoolReadiness> {
        // "All in one zone" is a finding only where the cluster offers more than one (a CKS
        // cluster is zonal: everything in it shares its zone).
        let cluster_zones: BTreeSet<&str> = self
            .by_name
            .values()
            .filter_map(|n| n.zone.as_deref())
            .collect();
        let mut out = self.pools;
        for ((pool, namespace, workload), g) in self.groups {
            let Some(report) = out.get_mut(&pool) else {
                continue;
            };
            let key = (namespace, workload);
            let n = g.pods;
            let mut add = |check: Check, detail: String| {
                report.findings.push(Finding {
                    check,
                    namespace: key.0.clone(),
                    workload: key.1.clone(),
                    pods: n,
                    detail,
                });
            };
            let count = self.replicas.get(&key).copied().unwrap_or(n);
            let first = &g.first;
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
                    format!("no PodDisruptionBudget in {} selects its pods", key.0),
                );
            }
            // GKE's graceful node shutdown asks no budget (GKE: Spot VMs): nothing to refuse.
            if let Some(b) = pdbs
                .and_then(|b| covering_pdb(b, first))
                .filter(|_| g.provider != Provider::Gke)
            {
                blocks_drain(b, &g.per_node, count, &mut add);
            }
            let budget = shutdown_budget_s(g.provider);
            if g.max_grace_s > budget {
                add(
                    Check::GraceExceedsNotice,
                    format!(
                        "terminationGracePeriodSeconds {} s; {budget} s from SIGTERM to removal on {}",
                        g.max_grace_s,
                        g.provider.as_str()
                    ),
                );
            }
            if let Some(z) = self
                .zones
                .get(&key)
                .filter(|z| z.len() == 1 && count > 1 && cluster_zones.len() > 1 && !is_job)
            {
                let zone = z.iter().next().copied().unwrap_or_default();
                add(Check::OneZone, format!("{count} replicas, all in {zone}"));
            }
            if first.owner_kind.as_deref() == Some("StatefulSet") {
                add(Check::StatefulSet, format!("{n} pod(s) on spot nodes"));
            }
            if g.graceful > 0 {
                add(
                    Check::GracefulInterruptible,
                    format!(
                        "{} pod(s) labelled qos.coreweave.com/graceful-interruptible",
                        g.graceful
                    ),
                );
            }
            if !is_job && g.without_pre_stop {
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
}

/// Audits every pool with spot nodes in one cluster: [`AuditFold`] over `pods` in order.
/// Pools come sorted by name, findings by check then namespace and workload. DaemonSet pods
/// are skipped (one per node by design). `pdbs` is `None` when the budgets could not be
/// read: no budget finding is made then.
pub fn audit(
    cluster: &str,
    nodes: &[NodeFacts],
    pods: &[PodFacts],
    pdbs: Option<&[PdbFacts]>,
) -> Vec<PoolReadiness> {
    let mut fold = AuditFold::new(cluster, nodes);
    for p in pods {
        fold.add(p);
    }
    fold.finish(pdbs)
}

/// The [`Check::PdbBlocksDrain`] finding of a workload's group on a pool's spot nodes, when
/// its budget `b` allows fewer disruptions (with all `count` replicas healthy) than the pods
/// it has on one node.
fn blocks_drain(
    b: &PdbFacts,
    per_node: &BTreeMap<&str, u32>,
    count: u32,
    add: &mut impl FnMut(Check, String),
) {
    let Some((node, most)) = per_node
        .iter()
        .map(|(n, c)| (*n, *c))
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
