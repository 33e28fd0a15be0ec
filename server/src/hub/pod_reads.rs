//! What the hub's pod records answer without asking the API server: every pod's workload
//! facts and node (the readiness audit), and the pods past their grace period.

use chrono::{DateTime, Utc};

use app::domain::preemption::readiness::PodFacts;

use super::{Hub, WatchedKind};

impl Hub {
    /// Hands each pod of `cluster` to `visit`, its workload's shared facts and its node, under
    /// one read of the hub (a fold over 50,000 pods holds the watches back for milliseconds).
    ///
    /// Errors: the cluster is not watched, or its pods have not been listed yet.
    pub fn each_pod(
        &self,
        cluster: &str,
        visit: impl FnMut(&PodFacts, Option<&str>),
    ) -> Result<(), String> {
        self.read(|s| match s.clusters.get(cluster) {
            None => Err("not a watched cluster".to_string()),
            Some(c) if c.synced & WatchedKind::Pod as u8 == 0 => {
                Err("its pods have not been listed yet".to_string())
            }
            Some(c) => {
                c.each_pod(visit);
                Ok(())
            }
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
