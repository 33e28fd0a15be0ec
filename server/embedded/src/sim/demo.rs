//! The demo that shows itself: a newcomer's first minute on the embedded cluster has a spot
//! preemption in it (a CKS node, then a GKE and a Karpenter one), so `/preemptions` shows a
//! live countdown, its blast radius and its eviction errors without anyone knowing the
//! `kubectl annotate` below; after those, only the random rate (a mean of a day per node) plays.
//!
//! Both the schedule and the "Play a preemption" action do what a person would: annotate a
//! spot node `sim.spotboard.dev/preempt=now` through the zone's API server with the
//! administrator's token. The behaviour model picks the annotation up and plays the provider's
//! own timeline ([`super::preemption`], [`super::fleet`]).
//!
//! Which node is spot is this module's own reading of the cluster (a CKS node of a
//! `computeClass: spot` NodePool, a GKE or Karpenter node by its provider's spot label), not
//! spotboard's projection.

use std::collections::HashSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use spotboard_core::labels;
use spotboard_core::nodepool::{ComputeClass, NodePool};

use super::fleet::{Flavor, objects};
use super::nodes::PREEMPT_ANNOTATION;

/// When, after the embedded cluster started, each provider's first demo preemption starts (real
/// time, whatever `--speed`): the CKS one inside the first minute, the others two minutes
/// apart so each timeline can be watched on its own (CKS's notice window is 7 minutes at
/// speed 1, GKE's 30 s, Karpenter's 2 minutes).
pub const SCHEDULE: [(Duration, Option<Flavor>); 3] = [
    (Duration::from_secs(20), None),
    (Duration::from_secs(140), Some(Flavor::Gke)),
    (Duration::from_secs(260), Some(Flavor::Karpenter)),
];

/// The CKS pool the first demo preemption prefers: its inference pods' budget
/// (`maxUnavailable: 1` over four pods a node) refuses most of the drain's evictions, so the
/// eviction errors show as well as the countdown and the blast radius.
pub const SHOWCASE_POOL: &str = "l40s-spot-inference";

/// Why a node could not be preempted on request.
#[derive(Debug, thiserror::Error)]
pub enum PreemptError {
    #[error("no embedded cluster {0}")]
    NoCluster(String),
    #[error("no node {node} in {cluster}")]
    NoNode { cluster: String, node: String },
    #[error("{0} is not a spot node: only spot capacity is preempted")]
    NotSpot(String),
    #[error("{0} is already being preempted")]
    Already(String),
    #[error("{0}")]
    Kube(#[from] kube::Error),
}

/// One zone's API server as the administrator (the local user of a loopback spotboard).
#[derive(Clone)]
pub struct DemoZone {
    /// The kubeconfig context, which is also the cluster's name in spotboard.
    pub context: String,
    /// `None` for a CKS zone.
    pub fleet: Option<Flavor>,
    pub client: Client,
}

/// Preempts spot nodes on request, in any zone of the embedded cluster.
#[derive(Clone)]
pub struct Preempter {
    zones: Vec<DemoZone>,
}

impl Preempter {
    pub fn new(zones: Vec<DemoZone>) -> Self {
        Self { zones }
    }

    fn zone(&self, cluster: &str) -> Result<&DemoZone, PreemptError> {
        self.zones
            .iter()
            .find(|z| z.context == cluster)
            .ok_or_else(|| PreemptError::NoCluster(cluster.to_string()))
    }

    /// Starts the preemption of `node` in `cluster` (a context name).
    ///
    /// Errors: an unknown cluster or node, a node that is not spot or is already under
    /// notice, or the API server's refusal.
    pub async fn preempt(&self, cluster: &str, node: &str) -> Result<(), PreemptError> {
        let zone = self.zone(cluster)?;
        let nodes: Api<Node> = Api::all(zone.client.clone());
        let Some(n) = nodes.get_opt(node).await? else {
            return Err(PreemptError::NoNode {
                cluster: cluster.to_string(),
                node: node.to_string(),
            });
        };
        if !Spot::of(zone).await?.holds(&n) {
            return Err(PreemptError::NotSpot(node.to_string()));
        }
        if leaving(&n) {
            return Err(PreemptError::Already(node.to_string()));
        }
        annotate(&nodes, node).await
    }

    /// Preempts one spot node of a zone of `fleet` that is not already leaving: on CKS one of
    /// [`SHOWCASE_POOL`]'s where there is one, else the first by name; returns its cluster and
    /// name, or `None` when no such zone has one.
    ///
    /// Errors: the API server's.
    pub async fn preempt_any(
        &self,
        fleet: Option<Flavor>,
    ) -> Result<Option<(String, String)>, PreemptError> {
        // (not in the showcase pool, name, zone): the smallest is preempted.
        let mut best: Option<(bool, String, &DemoZone)> = None;
        for zone in self.zones.iter().filter(|z| z.fleet == fleet) {
            let nodes: Api<Node> = Api::all(zone.client.clone());
            let spot = Spot::of(zone).await?;
            let mut page = ListParams::default().limit(NODES_PER_PAGE);
            loop {
                let list = nodes.list(&page).await?;
                for n in list.items.iter().filter(|n| spot.holds(n) && !leaving(n)) {
                    let plain = n.labels().get(labels::NODE_POOL).map(String::as_str)
                        != Some(SHOWCASE_POOL);
                    let candidate = (plain, n.name_any(), zone);
                    if best
                        .as_ref()
                        .is_none_or(|b| (b.0, &b.1) > (candidate.0, &candidate.1))
                    {
                        best = Some(candidate);
                    }
                }
                match list.metadata.continue_.filter(|c| !c.is_empty()) {
                    Some(token) => page = page.continue_token(&token),
                    None => break,
                }
            }
        }
        let Some((_, name, zone)) = best else {
            return Ok(None);
        };
        annotate(&Api::all(zone.client.clone()), &name).await?;
        Ok(Some((zone.context.clone(), name)))
    }

    /// Plays [`SCHEDULE`] from now; each step that finds no spot node is skipped.
    pub async fn play_schedule(self) {
        let start = tokio::time::Instant::now();
        for (at, fleet) in SCHEDULE {
            tokio::time::sleep_until(start + at).await;
            match self.preempt_any(fleet).await {
                Ok(Some((cluster, node))) => {
                    tracing::info!(
                        cluster,
                        node,
                        "demo: preempting a spot node (--demo-preemptions false turns this off)"
                    )
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("demo preemption: {e}"),
            }
        }
    }
}

/// Under notice, cordoned or asked to go already.
fn leaving(n: &Node) -> bool {
    n.labels()
        .get(labels::PENDING_PREEMPTION)
        .is_some_and(|v| v == "true")
        || n.spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false)
        || n.annotations().contains_key(PREEMPT_ANNOTATION)
        || n.metadata.deletion_timestamp.is_some()
}

/// Nodes read at a time when looking for one to preempt. At 100,000 nodes a single list was
/// 330 MB of JSON and as much again decoded, 900 MB above the embedded cluster's RSS for the
/// two seconds it took, its peak.
const NODES_PER_PAGE: u32 = 500;

/// How to tell a zone's spot nodes.
enum Spot {
    /// CKS: the nodes of these NodePools, the `computeClass: spot` ones.
    Pools(HashSet<String>),
    /// GKE and Karpenter: the provider's spot label.
    Label(Flavor),
}

impl Spot {
    /// Errors: the API server's, listing the NodePools of a CKS zone.
    async fn of(zone: &DemoZone) -> Result<Self, PreemptError> {
        if let Some(flavor) = zone.fleet {
            return Ok(Self::Label(flavor));
        }
        let pools: Api<NodePool> = Api::all(zone.client.clone());
        Ok(Self::Pools(
            pools
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|p| p.spec.compute_class == ComputeClass::Spot)
                .map(|p| p.name_any())
                .collect(),
        ))
    }

    fn holds(&self, n: &Node) -> bool {
        match self {
            Self::Label(flavor) => objects::spot(*flavor, n.labels()),
            Self::Pools(pools) => n
                .labels()
                .get(labels::NODE_POOL)
                .is_some_and(|p| pools.contains(p)),
        }
    }
}

async fn annotate(nodes: &Api<Node>, node: &str) -> Result<(), PreemptError> {
    let patch = json!({"metadata": {"annotations": {PREEMPT_ANNOTATION: "now"}}});
    nodes
        .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}
