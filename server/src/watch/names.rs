//! One shared copy of the values many objects repeat: a NodePool's name on each of its nodes,
//! a zone, an instance type, a node state. At 10,000 nodes in 2,000 pools each value is
//! repeated five to ten thousand times; stored per node they were four small allocations per
//! node record.
//!
//! The table keeps only values some record still holds: once it has doubled since it was last
//! pruned, values nobody else holds are dropped (so pools created and deleted all day do not
//! pile up).

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex};

/// The table is not pruned below this many values.
const PRUNE_FROM: usize = 1024;

struct Table {
    values: HashSet<Arc<str>>,
    prune_at: usize,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| {
    Mutex::new(Table {
        values: HashSet::new(),
        prune_at: PRUNE_FROM,
    })
});

/// The shared copy of `value`.
pub fn shared(value: &str) -> Arc<str> {
    // A poisoned lock only means another thread panicked mid-insert; the set is still whole.
    let mut t = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = t.values.get(value) {
        return v.clone();
    }
    if t.values.len() >= t.prune_at {
        t.values.retain(|v| Arc::strong_count(v) > 1);
        t.prune_at = (t.values.len() * 2).max(PRUNE_FROM);
    }
    let v: Arc<str> = Arc::from(value);
    t.values.insert(v.clone());
    v
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
}
