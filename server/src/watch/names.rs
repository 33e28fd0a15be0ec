//! One shared copy of the values many objects repeat: a NodePool's name on each of its nodes,
//! a zone, an instance type, a node state, and the facts the replicas of one workload share
//! ([`PodFacts::template`]). At 10,000 nodes in 2,000 pools each name is repeated five to ten
//! thousand times; stored per node they were four small allocations per node record. At
//! 50,000 pods, most of them replicas, a pod's labels and owner are one copy per workload.
//!
//! A table keeps only values some record still holds: once it has doubled since it was last
//! pruned, values nobody else holds are dropped (so pools created and deleted all day do not
//! pile up).

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::{Arc, LazyLock, Mutex};

use spotboard_core::domain::preemption::readiness::PodFacts;

/// A table is not pruned below this many values.
const PRUNE_FROM: usize = 1024;

struct Table<T: ?Sized> {
    values: HashSet<Arc<T>>,
    prune_at: usize,
}

impl<T: ?Sized + Hash + Eq> Table<T> {
    fn new() -> Self {
        Self {
            values: HashSet::new(),
            prune_at: PRUNE_FROM,
        }
    }

    /// The shared copy of `value`, if the table has one.
    fn get(&self, value: &T) -> Option<Arc<T>> {
        self.values.get(value).cloned()
    }

    /// Makes `value` the shared copy (the table had none).
    fn insert(&mut self, value: Arc<T>) -> Arc<T> {
        if self.values.len() >= self.prune_at {
            self.values.retain(|v| Arc::strong_count(v) > 1);
            self.prune_at = (self.values.len() * 2).max(PRUNE_FROM);
        }
        self.values.insert(value.clone());
        value
    }
}

fn lock<T: ?Sized>(table: &Mutex<Table<T>>) -> std::sync::MutexGuard<'_, Table<T>> {
    // A poisoned lock only means another thread panicked mid-insert; the set is still whole.
    table.lock().unwrap_or_else(|p| p.into_inner())
}

static TABLE: LazyLock<Mutex<Table<str>>> = LazyLock::new(|| Mutex::new(Table::new()));
static TEMPLATES: LazyLock<Mutex<Table<PodFacts>>> = LazyLock::new(|| Mutex::new(Table::new()));

/// The shared copy of `value`.
pub fn shared(value: &str) -> Arc<str> {
    let mut t = lock(&TABLE);
    t.get(value).unwrap_or_else(|| t.insert(Arc::from(value)))
}

/// The shared copy of a pod's facts, made with [`PodFacts::template`].
pub fn pod_template(facts: PodFacts) -> Arc<PodFacts> {
    let facts = facts.template();
    let mut t = lock(&TEMPLATES);
    t.get(&facts).unwrap_or_else(|| t.insert(Arc::new(facts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_allocation() {
        let a = shared("names-test-pool-a");
        let b = shared(&String::from("names-test-pool-a"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, "names-test-pool-a");
        assert!(!Arc::ptr_eq(&a, &shared("names-test-pool-b")));
    }

    #[test]
    fn values_nobody_holds_are_pruned_and_held_ones_kept() {
        let kept = shared("names-test-kept");
        for i in 0..(3 * PRUNE_FROM) {
            drop(shared(&format!("names-test-dropped-{i}")));
        }
        let t = TABLE.lock().unwrap();
        assert!(
            t.values.len() < 2 * PRUNE_FROM + 64,
            "pruned: {}",
            t.values.len()
        );
        assert!(t.values.contains("names-test-kept"));
        drop(t);
        assert!(Arc::ptr_eq(&kept, &shared("names-test-kept")));
    }

    #[test]
    fn replicas_share_one_template_and_a_bare_pod_has_its_own() {
        let replica = |name: &str, node: &str| PodFacts {
            namespace: "names-test".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            owner_kind: Some("ReplicaSet".into()),
            owner_name: Some("api-7c9".into()),
            node: Some(node.into()),
            active: true,
            ..Default::default()
        };
        let a = pod_template(replica("api-7c9-aaaaa", "n1"));
        let b = pod_template(replica("api-7c9-bbbbb", "n2"));
        assert!(Arc::ptr_eq(&a, &b), "one copy for the workload's replicas");
        assert!(a.uid.is_empty() && a.name.is_empty() && a.node.is_none());
        let bare = PodFacts {
            owner_kind: None,
            owner_name: None,
            ..replica("solo", "n1")
        };
        let solo = pod_template(bare);
        assert_eq!(solo.workload(), "Pod/solo");
        assert!(!Arc::ptr_eq(&a, &solo));
        let finished = PodFacts {
            active: false,
            ..replica("api-7c9-ccccc", "n1")
        };
        assert!(
            !Arc::ptr_eq(&a, &pod_template(finished)),
            "a finished replica is not counted as one"
        );
    }
}
