//! Each cluster's Kueue objects (`kueue.x-k8s.io/v1beta1`), where the cluster serves Kueue:
//! kept as the watch trims them, by uid, for the queue rows' producer
//! ([`crate::kueue`]) to read. They make no pool, node or event row, so a change here
//! publishes nothing by itself.

use std::collections::HashMap;

use spotboard_core::domain::kueue::{ClusterQueue, LocalQueue, Objects, ResourceFlavor, Workload};

use super::Hub;
use crate::watch::records::Observed;

/// One cluster's Kueue objects by uid.
#[derive(Default)]
pub struct KueueStore {
    flavors: HashMap<String, ResourceFlavor>,
    cluster_queues: HashMap<String, ClusterQueue>,
    local_queues: HashMap<String, LocalQueue>,
    workloads: HashMap<String, Workload>,
}

/// A Kueue object kept by uid.
pub trait KueueObject: Clone {
    fn uid(&self) -> &str;
    fn map(store: &mut KueueStore) -> &mut HashMap<String, Self>;
}

macro_rules! kueue_object {
    ($t:ty, $field:ident) => {
        impl KueueObject for $t {
            fn uid(&self) -> &str {
                &self.uid
            }
            fn map(store: &mut KueueStore) -> &mut HashMap<String, Self> {
                &mut store.$field
            }
        }
    };
}
kueue_object!(ResourceFlavor, flavors);
kueue_object!(ClusterQueue, cluster_queues);
kueue_object!(LocalQueue, local_queues);
kueue_object!(Workload, workloads);

impl KueueStore {
    fn apply<R: KueueObject>(&mut self, change: Observed<R>) {
        let map = R::map(self);
        match change {
            Observed::Apply(r) => {
                map.insert(r.uid().to_string(), r);
            }
            Observed::Delete(uid) => {
                map.remove(&uid);
            }
            Observed::Resync(all) => {
                *map = all.into_iter().map(|r| (r.uid().to_string(), r)).collect();
            }
        }
    }

    /// A copy of the objects, for a producer to work on outside the hub's lock.
    fn objects(&self) -> Objects {
        Objects {
            flavors: self.flavors.values().cloned().collect(),
            cluster_queues: self.cluster_queues.values().cloned().collect(),
            local_queues: self.local_queues.values().cloned().collect(),
            workloads: self.workloads.values().cloned().collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.flavors.is_empty()
            && self.cluster_queues.is_empty()
            && self.local_queues.is_empty()
            && self.workloads.is_empty()
    }
}

impl Hub {
    /// Applies a change of one Kueue kind seen in `cluster`.
    pub fn kueue<R: KueueObject>(&self, cluster: &str, change: Observed<R>) {
        self.write(|state, _| match state.clusters.get_mut(cluster) {
            Some(data) => data.kueue.apply(change),
            None => tracing::warn!(cluster, "update for an unknown cluster ignored"),
        });
    }

    /// The Kueue objects of every cluster that has any (of `cluster` only, with `Some`).
    pub fn kueue_objects(&self, cluster: Option<&str>) -> Vec<(String, Objects)> {
        self.read(|state| {
            state
                .clusters
                .iter()
                .filter(|(name, data)| {
                    cluster.is_none_or(|c| c == name.as_str()) && !data.kueue.is_empty()
                })
                .map(|(name, data)| (name.clone(), data.kueue.objects()))
                .collect()
        })
    }
}
