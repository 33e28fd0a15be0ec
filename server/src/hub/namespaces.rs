//! Each cluster's namespaces' labels, for the team a pod without the team label belongs to
//! (`crate::ledger::pod_recorder`). They make no row, so a change publishes nothing.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::Hub;
use crate::watch::records::{NamespaceRecord, Observed};

/// A namespace's labels.
pub type Labels = Arc<BTreeMap<String, String>>;

/// One cluster's namespaces: labels by name, and names by uid (deletes name the uid).
#[derive(Default)]
pub struct NamespaceStore {
    names: HashMap<String, String>,
    labels: HashMap<String, Labels>,
}

impl NamespaceStore {
    fn apply(&mut self, change: Observed<NamespaceRecord>) {
        match change {
            Observed::Apply(n) => {
                self.names.insert(n.uid, n.name.clone());
                self.labels.insert(n.name, n.labels);
            }
            Observed::Delete(uid) => {
                if let Some(name) = self.names.remove(&uid) {
                    self.labels.remove(&name);
                }
            }
            Observed::Resync(all) => {
                self.names.clear();
                self.labels.clear();
                for n in all {
                    self.apply(Observed::Apply(n));
                }
            }
        }
    }

    /// The labels of namespace `name`, if it is known.
    pub fn labels_of(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        self.labels.get(name).map(|l| &**l)
    }
}

impl Hub {
    /// Applies a change of the namespaces seen in `cluster`.
    pub fn namespaces(&self, cluster: &str, change: Observed<NamespaceRecord>) {
        self.write(|state, _| match state.clusters.get_mut(cluster) {
            Some(data) => data.namespaces.apply(change),
            None => tracing::warn!(cluster, "update for an unknown cluster ignored"),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(uid: &str, name: &str, team: &str) -> NamespaceRecord {
        NamespaceRecord {
            uid: uid.into(),
            name: name.into(),
            labels: Arc::new(BTreeMap::from([("team".to_string(), team.to_string())])),
        }
    }

    #[test]
    fn a_namespace_is_relabelled_deleted_and_resynced() {
        let mut s = NamespaceStore::default();
        s.apply(Observed::Apply(ns("u1", "ml", "research")));
        s.apply(Observed::Apply(ns("u1", "ml", "serving")));
        assert_eq!(s.labels_of("ml").unwrap()["team"], "serving");
        s.apply(Observed::Delete("u1".into()));
        assert!(s.labels_of("ml").is_none());
        s.apply(Observed::Resync(vec![ns("u2", "batch", "data")]));
        assert_eq!(s.labels_of("batch").unwrap()["team"], "data");
    }
}
