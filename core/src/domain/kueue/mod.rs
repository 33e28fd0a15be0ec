//! Kueue's queues in the user's terms: per ClusterQueue, the workloads waiting for quota and
//! how long, the admitted ones by the capacity type of the flavor they were given, and which
//! pools each ResourceFlavor's `nodeLabels` land on.
//!
//! The inputs are the four kinds of `kueue.x-k8s.io/v1beta1` as the watch trims them. Which
//! state a workload is in follows Kueue's conditions (Kueue: Workload): `Finished=True` is
//! done; `Admitted=True` runs (or may); `QuotaReserved=True` without `Admitted` waits for its
//! admission checks; anything else with `spec.active` not `false` is pending. A pending
//! workload belongs to the ClusterQueue its LocalQueue (`spec.queueName` in its namespace)
//! names.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use crate::CapacityType;
use crate::domain::waiting::pools::fit;
use crate::labels;
use crate::model::{
    AdmittedWorkload, PendingWorkload, PoolRow, QueueFlavor, QueueRow, Toleration, WaitingPod,
};

#[cfg(test)]
mod tests;

/// A ResourceFlavor (cluster-scoped).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceFlavor {
    pub uid: String,
    pub name: String,
    /// `spec.nodeLabels`: Kueue adds them to the node selector of the pods it admits into
    /// this flavor.
    pub node_labels: BTreeMap<String, String>,
}

/// A ClusterQueue (cluster-scoped).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterQueue {
    pub uid: String,
    pub name: String,
    pub cohort: Option<String>,
    /// Its flavors over every resource group, in order, each with its `nominalQuota` of
    /// `nvidia.com/gpu` in GPUs (`None`: the group does not cover GPUs).
    pub flavors: Vec<(String, Option<u32>)>,
    /// The `Active` condition: `Some((true, ..))` when `True`, else `(false, "reason:
    /// message")`; `None` before Kueue wrote it.
    pub active: Option<(bool, String)>,
}

/// A LocalQueue (namespaced): the name a workload's `spec.queueName` gives.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LocalQueue {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// `spec.clusterQueue`.
    pub cluster_queue: String,
}

/// Where a workload is in Kueue's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WorkloadState {
    /// No quota reserved yet.
    #[default]
    Pending,
    /// `QuotaReserved=True`, not yet `Admitted` (admission checks).
    Reserving,
    /// `Admitted=True`.
    Admitted,
    /// `Finished=True`, or `spec.active: false`: neither waits nor uses quota here.
    Done,
}

/// A Workload (namespaced), trimmed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    /// `spec.queueName`.
    pub queue: String,
    pub state: WorkloadState,
    /// Each pod set's `count` × its pod template's `nvidia.com/gpu` (requests, else limits),
    /// summed over pod sets.
    pub gpus: u32,
    /// For a pending workload: its `QuotaReserved=False` condition's `lastTransitionTime`,
    /// else its creation.
    pub since: Option<DateTime<Utc>>,
    /// The `QuotaReserved` condition's message.
    pub message: String,
    /// `status.admission.clusterQueue`, once quota is reserved.
    pub cluster_queue: Option<String>,
    /// The flavor its GPUs were assigned (else its first pod set's first resource's), once
    /// quota is reserved.
    pub flavor: Option<String>,
}

/// One cluster's Kueue objects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Objects {
    pub flavors: Vec<ResourceFlavor>,
    pub cluster_queues: Vec<ClusterQueue>,
    pub local_queues: Vec<LocalQueue>,
    pub workloads: Vec<Workload>,
}

/// What flavor `f`'s nodes are, and the pools (of `pools`, one cluster's) whose nodes carry
/// every label it names. A pool is judged by the labels it gives its nodes, as a waiting pod's
/// node selector is ([`crate::domain::waiting::pools`]); taints are not judged (they keep out
/// pods, not flavors).
pub fn flavor_pools(f: &ResourceFlavor, pools: &[&PoolRow]) -> (CapacityType, Vec<String>) {
    let probe = WaitingPod {
        node_selector: f.node_labels.clone(),
        // Tolerates every taint: see above.
        tolerations: vec![Toleration {
            exists: true,
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut matched: Vec<&PoolRow> = pools
        .iter()
        .copied()
        .filter(|p| fit(&probe, p).is_ok())
        .collect();
    matched.sort_by(|a, b| a.name.cmp(&b.name));
    let mut types: Vec<CapacityType> = matched.iter().map(|p| p.capacity_type).collect();
    types.dedup();
    let by_labels = || {
        let label = |k: &str| f.node_labels.get(k).map(String::as_str);
        match (
            label(labels::KARPENTER_CAPACITY_TYPE),
            label(labels::GKE_SPOT),
        ) {
            (Some(t), _) => CapacityType::parse(t),
            (None, Some("true")) => CapacityType::Spot,
            _ => CapacityType::Unknown,
        }
    };
    let capacity_type = match types.as_slice() {
        [] => by_labels(),
        [one] => *one,
        _ if types.iter().all(|t| *t == types[0]) => types[0],
        _ => CapacityType::Mixed,
    };
    (
        capacity_type,
        matched.into_iter().map(|p| p.name.clone()).collect(),
    )
}

/// One sentence for the page of a pool that flavor `f` of queue `q` lands on: what Kueue
/// admitted into it and what the queue holds back. E.g. "ClusterQueue ml-training admits
/// into flavor h100-spot (spot) here: 32 of 32 GPUs admitted. 1 workload (16 GPUs) waits
/// for quota in the queue."
pub fn pool_sentence(q: &QueueRow, f: &QueueFlavor) -> String {
    let kind = f.kind_suffix();
    let admitted = match f.gpu_quota {
        Some(quota) => format!("{} of {quota} GPUs admitted", f.gpus_admitted),
        None => format!("{} GPUs admitted", f.gpus_admitted),
    };
    let waiting = match (q.pending_workloads, q.pending_gpus) {
        (0, _) => "Nothing waits for quota in the queue.".to_string(),
        (n, 0) => format!(
            "{n} workload{} wait{} for quota in the queue.",
            plural(n),
            verb(n)
        ),
        (n, g) => format!(
            "{n} workload{} ({g} GPUs) wait{} for quota in the queue.",
            plural(n),
            verb(n)
        ),
    };
    let inactive = if q.active {
        ""
    } else {
        " The queue is inactive."
    };
    format!(
        "ClusterQueue {} admits into flavor {}{kind} here: {admitted}. {waiting}{inactive}",
        q.name, f.name
    )
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn verb(n: u32) -> &'static str {
    if n == 1 { "s" } else { "" }
}

/// The ClusterQueue a workload waits in or was admitted to.
fn queue_of<'a>(w: &'a Workload, local: &'a HashMap<(&str, &str), &str>) -> Option<&'a str> {
    w.cluster_queue.as_deref().or_else(|| {
        local
            .get(&(w.namespace.as_str(), w.queue.as_str()))
            .copied()
    })
}

/// What [`queues`] finds in one cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Queues {
    /// Every ClusterQueue, sorted by name.
    pub rows: Vec<QueueRow>,
    /// The pending workloads, longest waiting first (those whose LocalQueue does not exist
    /// included, with no ClusterQueue).
    pub pending: Vec<PendingWorkload>,
    /// The workloads with quota reserved, by namespace and name.
    pub admitted: Vec<AdmittedWorkload>,
}

/// Every ClusterQueue of `cluster` as a row, and its pending and admitted workloads. `pools`
/// are the cluster's pool rows.
pub fn queues(cluster: &str, o: &Objects, pools: &[&PoolRow]) -> Queues {
    let local: HashMap<(&str, &str), &str> = o
        .local_queues
        .iter()
        .map(|l| {
            (
                (l.namespace.as_str(), l.name.as_str()),
                l.cluster_queue.as_str(),
            )
        })
        .collect();
    let flavors: HashMap<&str, (CapacityType, Vec<String>)> = o
        .flavors
        .iter()
        .map(|f| (f.name.as_str(), flavor_pools(f, pools)))
        .collect();
    let type_of = |flavor: Option<&str>| {
        flavor
            .and_then(|f| flavors.get(f))
            .map_or(CapacityType::Unknown, |(t, _)| *t)
    };

    let mut pending: Vec<PendingWorkload> = o
        .workloads
        .iter()
        .filter(|w| w.state == WorkloadState::Pending)
        .map(|w| {
            let cq = queue_of(w, &local).map(String::from);
            let message = if cq.is_none() && w.message.is_empty() {
                format!(
                    "LocalQueue {} does not exist in namespace {}",
                    w.queue, w.namespace
                )
            } else {
                w.message.clone()
            };
            PendingWorkload {
                cluster: cluster.to_string(),
                namespace: w.namespace.clone(),
                name: w.name.clone(),
                queue: w.queue.clone(),
                cluster_queue: cq,
                gpus: w.gpus,
                since: w.since,
                message,
            }
        })
        .collect();
    pending.sort_by(|a, b| {
        (a.since.is_none(), a.since, &a.namespace, &a.name).cmp(&(
            b.since.is_none(),
            b.since,
            &b.namespace,
            &b.name,
        ))
    });

    let mut rows: Vec<QueueRow> = o
        .cluster_queues
        .iter()
        .map(|cq| {
            let (active, inactive_reason) = match &cq.active {
                Some((true, _)) => (true, None),
                Some((false, why)) => (false, Some(why.clone())),
                None => (
                    false,
                    Some("Kueue has not reported the queue Active yet".into()),
                ),
            };
            QueueRow {
                cluster: cluster.to_string(),
                name: cq.name.clone(),
                cohort: cq.cohort.clone(),
                active,
                inactive_reason,
                flavors: cq
                    .flavors
                    .iter()
                    .map(|(name, gpu_quota)| {
                        let (capacity_type, pools) =
                            flavors.get(name.as_str()).cloned().unwrap_or_default();
                        QueueFlavor {
                            name: name.clone(),
                            capacity_type,
                            pools,
                            gpu_quota: *gpu_quota,
                            gpus_admitted: 0,
                        }
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    let mut admitted: Vec<AdmittedWorkload> = o
        .workloads
        .iter()
        .filter(|w| matches!(w.state, WorkloadState::Admitted | WorkloadState::Reserving))
        .map(|w| AdmittedWorkload {
            cluster: cluster.to_string(),
            namespace: w.namespace.clone(),
            name: w.name.clone(),
            cluster_queue: queue_of(w, &local).unwrap_or_default().to_string(),
            flavor: w.flavor.clone(),
            capacity_type: type_of(w.flavor.as_deref()),
            gpus: w.gpus,
            reserving: w.state == WorkloadState::Reserving,
        })
        .collect();
    admitted.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));

    // Each workload is summed into its queue's row once.
    let index: HashMap<String, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.clone(), i))
        .collect();
    // The first pending workload of a queue is its longest waiting (sorted above).
    for p in &pending {
        let Some(row) = p
            .cluster_queue
            .as_ref()
            .and_then(|q| index.get(q))
            .map(|&i| &mut rows[i])
        else {
            continue;
        };
        if row.pending_workloads == 0 {
            row.oldest_pending_since = p.since;
            row.oldest_pending = Some(format!("{}/{}", p.namespace, p.name));
            row.pending_message = p.message.clone();
        }
        row.pending_workloads += 1;
        row.pending_gpus += p.gpus;
    }
    for a in &admitted {
        let Some(&i) = index.get(&a.cluster_queue) else {
            continue;
        };
        let row = &mut rows[i];
        if let Some(f) = row
            .flavors
            .iter_mut()
            .find(|f| a.flavor.as_deref() == Some(f.name.as_str()))
        {
            f.gpus_admitted += a.gpus;
        }
        if a.reserving {
            row.reserving_workloads += 1;
            continue;
        }
        let (count, gpus) = match a.capacity_type {
            CapacityType::Spot => (&mut row.admitted_spot, &mut row.admitted_gpus_spot),
            CapacityType::OnDemand => (
                &mut row.admitted_on_demand,
                &mut row.admitted_gpus_on_demand,
            ),
            _ => (&mut row.admitted_other, &mut row.admitted_gpus_other),
        };
        *count += 1;
        *gpus += a.gpus;
    }
    Queues {
        rows,
        pending,
        admitted,
    }
}
