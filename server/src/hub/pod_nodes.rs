//! Which node each pod is bound to, how many pods each node has, and what the readiness
//! audit reads of each pod: all the hub keeps of a pod.
//!
//! Pods outnumber nodes five to thirty times, so their entry is kept small: the uid as a
//! 16-byte UUID (the API server's uids are UUIDs; another text is kept as it is), the node's
//! name shared by every pod on the node, and the facts shared by every replica of the pod's
//! workload ([`PodFacts::template`], one copy per workload). At 50,000 pods the table is
//! about 2.7 MB (65,536 slots of 40 bytes) and there is no string per pod, against 7 MB when
//! each pod held its uid and node name as strings. The audit reads the pods from here
//! ([`PodNodes::bindings`]): it used to list every pod of every cluster every 15 s while
//! someone looked (500 list requests at 10k nodes and 50k pods).

use std::collections::HashMap;
use std::sync::Arc;

use spotboard_core::domain::preemption::readiness::PodFacts;
use uuid::Uuid;

/// A node's name, shared by its pods and its count.
pub type NodeName = Arc<str>;

/// A pod's workload facts (shared by its workload's replicas) and the node it is bound to.
pub type PodBinding = (Arc<PodFacts>, Option<NodeName>);

/// A pod's uid as the hub keeps it: 16 bytes when it is a UUID in canonical text (the API
/// server's are), else the text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PodUid {
    Uuid(Uuid),
    Text(Box<str>),
}

impl PodUid {
    /// The key of `uid` (canonical UUID text becomes 16 bytes).
    pub fn of(uid: &str) -> Self {
        match Uuid::parse_str(uid) {
            Ok(u) if u.hyphenated().to_string() == uid => PodUid::Uuid(u),
            _ => PodUid::Text(uid.into()),
        }
    }
}

impl std::fmt::Display for PodUid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PodUid::Uuid(u) => write!(f, "{}", u.hyphenated()),
            PodUid::Text(t) => f.write_str(t),
        }
    }
}

/// Where a pod is bound, and its workload's shared facts.
#[derive(Clone, Debug)]
struct Bound {
    node: Option<NodeName>,
    facts: Arc<PodFacts>,
}

#[derive(Default)]
pub struct PodNodes {
    // `Uuid`, not `u128`: 1-byte aligned, so an entry is 40 bytes instead of 48.
    by_uuid: HashMap<Uuid, Bound>,
    // Uids that are not canonical UUID text (lower-case, hyphenated): kept as given, so a
    // uid listed again reads back exactly as the watch sent it.
    by_text: HashMap<Box<str>, Bound>,
    per_node: HashMap<NodeName, u32>,
    /// What the active pods of each node request, for each node where they request any.
    requested: HashMap<NodeName, Requested>,
}

/// What the running pods bound to a node request: GPUs (`nvidia.com/gpu`), CPU in
/// millicores and memory in bytes (each pod's containers summed, a limit standing for an
/// absent request).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requested {
    pub gpus: u32,
    pub cpu_m: u64,
    pub memory_b: u64,
}

impl Requested {
    fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    fn add(&mut self, o: Requested) {
        self.gpus = self.gpus.saturating_add(o.gpus);
        self.cpu_m = self.cpu_m.saturating_add(o.cpu_m);
        self.memory_b = self.memory_b.saturating_add(o.memory_b);
    }

    fn sub(&mut self, o: Requested) {
        self.gpus = self.gpus.saturating_sub(o.gpus);
        self.cpu_m = self.cpu_m.saturating_sub(o.cpu_m);
        self.memory_b = self.memory_b.saturating_sub(o.memory_b);
    }
}

/// What a bind changed: the nodes whose pod count changed (was on, is on; the same node
/// twice when only its GPU requests changed), and whether a node's requested GPUs changed
/// (its pool's allocation too).
#[derive(Debug, PartialEq)]
pub struct Rebound {
    pub was: Option<NodeName>,
    pub is: Option<NodeName>,
    pub gpus_changed: bool,
}

/// What a pod holds on its node: its requests while it runs (a finished pod holds none).
fn held(facts: &PodFacts) -> Requested {
    if facts.active {
        Requested {
            gpus: facts.gpus,
            cpu_m: facts.cpu_m,
            memory_b: facts.memory_b,
        }
    } else {
        Requested::default()
    }
}

/// `uid` as a UUID when it is written the canonical way.
fn number(uid: &str) -> Option<Uuid> {
    let n = Uuid::try_parse(uid).ok()?;
    let mut buf = Uuid::encode_buffer();
    (n.hyphenated().encode_lower(&mut buf) == uid).then_some(n)
}

impl PodNodes {
    /// Binds pod `uid` to `node` (`None`: not scheduled yet) with its workload's `facts`.
    /// Returns what changed, or `None` when the pod was already on `node` holding the same
    /// GPUs (its facts are replaced all the same).
    pub fn bind(&mut self, uid: &str, node: Option<&str>, facts: Arc<PodFacts>) -> Option<Rebound> {
        let node = node.map(|n| self.shared(n));
        let asked = held(&facts);
        let bound = Bound {
            node: node.clone(),
            facts,
        };
        let old = match number(uid) {
            Some(n) => self.by_uuid.insert(n, bound),
            None => self.by_text.insert(uid.into(), bound),
        }
        .map(|b| (b.node, held(&b.facts)));
        // Requests held on a node only: a pod on none (pending) holds nothing anywhere.
        let old_held = match &old {
            Some((Some(_), g)) => *g,
            _ => Requested::default(),
        };
        let new_held = if node.is_some() {
            asked
        } else {
            Requested::default()
        };
        let moved = old.as_ref().map(|(n, _)| n) != Some(&node);
        let gpus_changed = if moved {
            old_held.gpus > 0 || new_held.gpus > 0
        } else {
            old_held.gpus != new_held.gpus
        };
        if let Some((Some(w), _)) = &old {
            self.release(w, old_held);
        }
        if let Some(n) = &node {
            self.hold(n, new_held);
        }
        if !moved {
            return gpus_changed.then_some(Rebound {
                was: None,
                is: node,
                gpus_changed,
            });
        }
        let was = old.and_then(|(n, _)| n);
        if let Some(w) = &was {
            self.uncount(w);
        }
        if let Some(n) = &node {
            *self.per_node.entry(n.clone()).or_default() += 1;
        }
        Some(Rebound {
            was,
            is: node,
            gpus_changed,
        })
    }

    /// Forgets pod `uid`; returns the node it was bound to and whether it held GPUs there.
    pub fn unbind(&mut self, uid: &str) -> Option<(NodeName, bool)> {
        let bound = match number(uid) {
            Some(n) => self.by_uuid.remove(&n),
            None => self.by_text.remove(uid),
        }?;
        let was = bound.node?;
        let held = held(&bound.facts);
        self.uncount(&was);
        self.release(&was, held);
        Some((was, held.gpus > 0))
    }

    /// Pods bound to `node`.
    pub fn on_node(&self, node: &str) -> u32 {
        self.per_node.get(node).copied().unwrap_or(0)
    }

    /// GPUs requested by the running pods bound to `node`.
    pub fn gpus_on_node(&self, node: &str) -> u32 {
        self.requested_on_node(node).gpus
    }

    /// What the running pods bound to `node` request.
    pub fn requested_on_node(&self, node: &str) -> Requested {
        self.requested.get(node).copied().unwrap_or_default()
    }

    fn hold(&mut self, node: &NodeName, r: Requested) {
        if !r.is_zero() {
            self.requested.entry(node.clone()).or_default().add(r);
        }
    }

    fn release(&mut self, node: &str, r: Requested) {
        if r.is_zero() {
            return;
        }
        if let Some(n) = self.requested.get_mut(node) {
            n.sub(r);
            if n.is_zero() {
                self.requested.remove(node);
            }
        }
    }

    /// Calls `f` with every active pod bound to a node: its uid, its workload's shared facts
    /// and its node's name, in no particular order, copying nothing but a non-UUID uid.
    pub fn each_bound_active(&self, mut f: impl FnMut(PodUid, &PodFacts, &NodeName)) {
        for (u, b) in &self.by_uuid {
            if let (true, Some(node)) = (b.facts.active, &b.node) {
                f(PodUid::Uuid(*u), &b.facts, node);
            }
        }
        for (u, b) in &self.by_text {
            if let (true, Some(node)) = (b.facts.active, &b.node) {
                f(PodUid::Text(u.clone()), &b.facts, node);
            }
        }
    }

    /// Every pod's shared facts and node, copied as two reference counts each, in no
    /// particular order.
    pub fn bindings(&self) -> Vec<PodBinding> {
        self.by_uuid
            .values()
            .chain(self.by_text.values())
            .map(|b| (b.facts.clone(), b.node.clone()))
            .collect()
    }

    /// Every pod's uid, as the watch wrote it.
    pub fn uids(&self) -> Vec<String> {
        let numbers = self.by_uuid.keys().map(|n| n.hyphenated().to_string());
        numbers
            .chain(self.by_text.keys().map(|t| t.to_string()))
            .collect()
    }

    /// The name every pod on `node` shares (the one already counted, else a new one).
    fn shared(&self, node: &str) -> NodeName {
        match self.per_node.get_key_value(node) {
            Some((name, _)) => name.clone(),
            None => node.into(),
        }
    }

    fn uncount(&mut self, node: &str) {
        if let Some(n) = self.per_node.get_mut(node) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_node.remove(node);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0b7a3a0e-54a1-4c34-9a36-f0d0b7e1c001";
    const B: &str = "0b7a3a0e-54a1-4c34-9a36-f0d0b7e1c002";

    fn f() -> Arc<PodFacts> {
        Arc::default()
    }

    #[test]
    fn counts_follow_binds_moves_and_unbinds() {
        let mut p = PodNodes::default();
        assert_eq!(
            p.bind(A, None, f()),
            Some(Rebound {
                was: None,
                is: None,
                gpus_changed: false
            }),
            "new, not scheduled"
        );
        let Rebound { was, is, .. } = p.bind(A, Some("n1"), f()).unwrap();
        assert_eq!((was, is.as_deref()), (None, Some("n1")));
        assert_eq!(
            p.bind(A, Some("n1"), f()),
            None,
            "unchanged: no node to redraw"
        );
        p.bind(B, Some("n1"), f());
        assert_eq!(p.on_node("n1"), 2);
        let Rebound { was, is, .. } = p.bind(B, Some("n2"), f()).unwrap();
        assert_eq!((was.as_deref(), is.as_deref()), (Some("n1"), Some("n2")));
        assert_eq!((p.on_node("n1"), p.on_node("n2")), (1, 1));
        assert_eq!(p.unbind(A).map(|(n, _)| n).as_deref(), Some("n1"));
        assert_eq!(p.on_node("n1"), 0);
        assert!(!p.per_node.contains_key("n1"), "an empty node is forgotten");
        assert_eq!(p.unbind(A), None, "already gone");
    }

    #[test]
    fn pods_on_a_node_share_its_name() {
        let mut p = PodNodes::default();
        let one = p.bind(A, Some("n1"), f()).unwrap().is;
        let two = p.bind(B, Some("n1"), f()).unwrap().is;
        assert!(Arc::ptr_eq(&one.unwrap(), &two.unwrap()));
    }

    #[test]
    fn uids_read_back_as_the_watch_wrote_them() {
        let mut p = PodNodes::default();
        let upper = A.to_uppercase();
        for uid in [A, upper.as_str(), "not-a-uuid", ""] {
            p.bind(uid, Some("n1"), f());
        }
        assert_eq!(p.by_uuid.len(), 1, "only the canonical UUID is a number");
        let mut uids = p.uids();
        uids.sort();
        let mut want = vec![
            A.to_string(),
            upper.clone(),
            "not-a-uuid".into(),
            String::new(),
        ];
        want.sort();
        assert_eq!(uids, want);
        assert_eq!(p.on_node("n1"), 4);
        assert_eq!(p.unbind(&upper).map(|(n, _)| n).as_deref(), Some("n1"));
        assert_eq!(p.on_node("n1"), 3, "the upper-case uid is its own pod");
    }

    #[test]
    fn each_pod_is_visited_with_its_latest_facts_and_node() {
        let mut p = PodNodes::default();
        let web = |active| {
            Arc::new(PodFacts {
                namespace: "web".into(),
                active,
                ..Default::default()
            })
        };
        p.bind(A, Some("n1"), web(true));
        p.bind("not-a-uuid", None, web(true));
        assert_eq!(
            p.bind(A, Some("n1"), web(false)),
            None,
            "the same node: no count changes"
        );
        let mut seen: Vec<_> = p
            .bindings()
            .into_iter()
            .map(|(f, node)| (f.active, node.map(|n| n.to_string())))
            .collect();
        seen.sort();
        assert_eq!(seen, [(false, Some("n1".into())), (true, None)]);
        p.unbind(A);
        assert_eq!(p.bindings().len(), 1);
    }

    /// A node's requested GPUs follow its running pods: a bind, a move, a pod that finishes
    /// (holds none) and one that goes; each change says so, an unchanged bind does not.
    #[test]
    fn requested_gpus_follow_running_pods() {
        let mut p = PodNodes::default();
        let job = |gpus, active| {
            Arc::new(PodFacts {
                gpus,
                active,
                ..Default::default()
            })
        };
        assert!(
            p.bind(A, None, job(4, true))
                .is_some_and(|r| !r.gpus_changed),
            "pending: on no node"
        );
        assert!(p.bind(A, Some("n1"), job(4, true)).unwrap().gpus_changed);
        p.bind(B, Some("n1"), job(2, true));
        assert_eq!(p.gpus_on_node("n1"), 6);
        assert_eq!(p.bind(B, Some("n1"), job(2, true)), None, "unchanged");
        let finished = p.bind(B, Some("n1"), job(2, false)).unwrap();
        assert!(
            finished.gpus_changed && finished.was.is_none(),
            "{finished:?}"
        );
        assert_eq!(p.gpus_on_node("n1"), 4, "a finished pod holds no GPU");
        assert!(p.bind(A, Some("n2"), job(4, true)).unwrap().gpus_changed);
        assert_eq!((p.gpus_on_node("n1"), p.gpus_on_node("n2")), (0, 4));
        assert!(
            !p.requested.contains_key("n1"),
            "a node without requesting pods is forgotten"
        );
        assert_eq!(p.unbind(A).map(|(_, g)| g), Some(true));
        assert_eq!(p.gpus_on_node("n2"), 0);
    }

    /// CPU and memory requests add up per node the same way, and leave with their pod; a
    /// change of CPU alone is no GPU change (the pool's allocation row stays as it is).
    #[test]
    fn requested_cpu_and_memory_follow_running_pods() {
        let mut p = PodNodes::default();
        let pod = |cpu_m, memory_b, active| {
            Arc::new(PodFacts {
                cpu_m,
                memory_b,
                active,
                gpus: 1,
                ..Default::default()
            })
        };
        p.bind(A, Some("n1"), pod(2_000, 8 << 30, true));
        p.bind(B, Some("n1"), pod(500, 1 << 30, true));
        assert_eq!(
            p.requested_on_node("n1"),
            Requested {
                gpus: 2,
                cpu_m: 2_500,
                memory_b: 9 << 30
            }
        );
        assert_eq!(
            p.bind(B, Some("n1"), pod(750, 1 << 30, true)),
            None,
            "a CPU change alone changes no GPUs"
        );
        assert_eq!(p.requested_on_node("n1").cpu_m, 2_750);
        p.bind(B, Some("n1"), pod(750, 1 << 30, false));
        assert_eq!(
            p.requested_on_node("n1").cpu_m,
            2_000,
            "finished: holds none"
        );
        p.unbind(A);
        assert_eq!(p.requested_on_node("n1"), Requested::default());
        assert!(p.requested.is_empty());
    }
}
