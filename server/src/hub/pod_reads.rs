//! What the hub's node and pod records answer without asking the API server: every node's
//! and pod's facts (the readiness audit), and the pods past their grace period.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use spotboard_core::domain::preemption::readiness::{NodeFacts, PodFacts};

use super::{
    Hub, WatchedKind,
    pod_nodes::{PodBinding, PodUid},
};

/// An active pod on a node, for the ledger's pod intervals (`crate::ledger::pod_recorder`),
/// borrowed from the hub while its read lock is held.
#[derive(Clone, Debug)]
pub struct PodStay<'a> {
    pub pod_uid: PodUid,
    /// Its workload's shared facts: namespace, labels, owner, requests.
    pub facts: &'a PodFacts,
    /// Its namespace's labels, once the namespace watch has seen it.
    pub namespace_labels: Option<&'a BTreeMap<String, String>>,
    pub node_uid: &'a str,
    /// The node's GPUs: its capacity, else the catalog's (`projection::gpus`); 0 when neither.
    pub node_gpus: u32,
    /// `status.allocatable.cpu`, millicores.
    pub node_cpu_m: Option<u64>,
    /// `status.allocatable.memory`, bytes.
    pub node_memory_b: Option<u64>,
}

/// What the pod recorder reads: every active pod on a node, a cluster at a time.
pub trait PodStays {
    /// The clusters whose watches have all listed, by name: those a look judges.
    fn listed_clusters(&self) -> Vec<String>;

    /// Calls `f` with each active pod on a node of `cluster`, and returns `true`; returns
    /// `false`, calling nothing, when `cluster` is not watched or its watches have not all
    /// listed.
    fn each_pod_stay(&self, cluster: &str, f: &mut dyn FnMut(&PodStay<'_>)) -> bool;
}

impl PodStays for Hub {
    fn listed_clusters(&self) -> Vec<String> {
        self.read(|s| {
            s.clusters
                .iter()
                .filter(|(_, c)| c.listed())
                .map(|(name, _)| name.clone())
                .collect()
        })
    }

    /// Under one read of the hub, copying nothing per pod: at 50,000 pods the recorder's
    /// look is a hash and a map lookup each, a few milliseconds, where a copy of the pods made
    /// 5 MB every 15 s. One cluster per read, so the other clusters' watches wait for one
    /// cluster's pods at most.
    fn each_pod_stay(&self, cluster: &str, f: &mut dyn FnMut(&PodStay<'_>)) -> bool {
        self.read(|s| match s.clusters.get(cluster) {
            Some(c) if c.listed() => {
                c.each_pod_stay(|stay| f(stay));
                true
            }
            _ => false,
        })
    }
}

impl Hub {
    /// Each node as the readiness audit reads it ([`NodeFacts`]: name, pool, zone, provider,
    /// spot), by cluster, from one read.
    ///
    /// Why not [`Hub::ledger_inputs`]: that copies every node and pool row whole, about
    /// 10 MB made and dropped at 10k nodes and 2,000 pools, for an audit that reads five
    /// fields of each node every 15 s while a pool page is open.
    pub fn audit_nodes(&self) -> BTreeMap<String, Vec<NodeFacts>> {
        self.read(|s| s.views.audit_nodes())
    }

    /// Every pod of `cluster`: its workload's shared facts and its node, copied (two reference
    /// counts a pod: 1.2 MB at 50,000 pods) under one short read of the hub, for a fold
    /// outside it. Folding them in place took 140-310 ms at 50,000 pods, and every watch's
    /// changes waited that long.
    ///
    /// Errors: the cluster is not watched, or its pods have not been listed yet.
    pub fn pod_bindings(&self, cluster: &str) -> Result<Vec<PodBinding>, String> {
        self.read(|s| match s.clusters.get(cluster) {
            None => Err("not a watched cluster".to_string()),
            Some(c) if c.synced & WatchedKind::Pod as u8 == 0 => {
                Err("its pods have not been listed yet".to_string())
            }
            Some(c) => Ok(c.pod_bindings()),
        })
    }

    /// Pods still terminating after their grace period ended, by `(cluster, node)` (uids),
    /// from the one Pod watch: no list is asked of the API server.
    pub fn pods_past_grace(
        &self,
        now: DateTime<Utc>,
    ) -> std::collections::HashMap<(String, String), Vec<String>> {
        self.read(|s| {
            let mut out: std::collections::HashMap<(String, String), Vec<String>> =
                Default::default();
            for (cluster, d) in &s.clusters {
                for (node, uid) in d.past_grace(now) {
                    out.entry((cluster.clone(), node)).or_default().push(uid);
                }
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use spotboard_core::{CapacityType, Provider};

    use crate::hub::{
        Hub,
        tests::{node_rec, pool_rec},
    };
    use crate::watch::records::{NodeRecord, Observed};

    #[test]
    fn audit_nodes_are_grouped_by_cluster_and_spot_by_their_own_or_their_pools_capacity() {
        let hub = Hub::new(&[
            ("zone-a".into(), Some("US-EAST-04A".into())),
            ("zone-b".into(), None),
        ]);
        // `pool_rec` pools have computeClass spot.
        hub.pools("zone-a", Observed::Resync(vec![pool_rec("p1", "spot-a")]));
        hub.nodes(
            "zone-a",
            Observed::Resync(vec![
                node_rec("n1", "g1", "spot-a"),
                // A pool the cluster does not have, and nothing on the node says spot.
                NodeRecord {
                    zone: Some("US-EAST-04A".into()),
                    ..node_rec("n2", "g2", "gone")
                },
            ]),
        );
        hub.nodes(
            "zone-b",
            Observed::Resync(vec![NodeRecord {
                provider: Provider::Gke,
                capacity: CapacityType::Spot,
                ..node_rec("n3", "gke-1", "spot-b")
            }]),
        );
        hub.flush();
        let nodes = hub.audit_nodes();
        assert_eq!(nodes.keys().collect::<Vec<_>>(), ["zone-a", "zone-b"]);
        let mut a = nodes["zone-a"].clone();
        a.sort_by(|x, y| x.name.cmp(&y.name));
        assert_eq!(
            a.iter()
                .map(|n| (n.name.as_str(), n.spot))
                .collect::<Vec<_>>(),
            [("g1", true), ("g2", false)]
        );
        assert_eq!(a[1].zone.as_deref(), Some("US-EAST-04A"));
        assert_eq!(a[1].pool.as_deref(), Some("gone"));
        let b = &nodes["zone-b"];
        assert_eq!((b[0].name.as_str(), b[0].spot), ("gke-1", true));
        assert_eq!(b[0].provider, Provider::Gke);
    }
}
