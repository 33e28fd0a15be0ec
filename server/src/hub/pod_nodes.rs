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
}

/// `uid` as a UUID when it is written the canonical way.
fn number(uid: &str) -> Option<Uuid> {
    let n = Uuid::try_parse(uid).ok()?;
    let mut buf = Uuid::encode_buffer();
    (n.hyphenated().encode_lower(&mut buf) == uid).then_some(n)
}

impl PodNodes {
    /// Binds pod `uid` to `node` (`None`: not scheduled yet) with its workload's `facts`.
    /// Returns the nodes whose pod count changed, (was on, is on), or `None` when the pod was
    /// already on `node` (its facts are replaced all the same).
    pub fn bind(
        &mut self,
        uid: &str,
        node: Option<&str>,
        facts: Arc<PodFacts>,
    ) -> Option<(Option<NodeName>, Option<NodeName>)> {
        let node = node.map(|n| self.shared(n));
        let bound = Bound {
            node: node.clone(),
            facts,
        };
        let old = match number(uid) {
            Some(n) => self.by_uuid.insert(n, bound),
            None => self.by_text.insert(uid.into(), bound),
        }
        .map(|b| b.node);
        if old.as_ref() == Some(&node) {
            return None;
        }
        let was = old.flatten();
        if let Some(w) = &was {
            self.uncount(w);
        }
        if let Some(n) = &node {
            *self.per_node.entry(n.clone()).or_default() += 1;
        }
        Some((was, node))
    }

    /// Forgets pod `uid`; returns the node it was bound to.
    pub fn unbind(&mut self, uid: &str) -> Option<NodeName> {
        let was = match number(uid) {
            Some(n) => self.by_uuid.remove(&n),
            None => self.by_text.remove(uid),
        }?
        .node?;
        self.uncount(&was);
        Some(was)
    }

    /// Pods bound to `node`.
    pub fn on_node(&self, node: &str) -> u32 {
        self.per_node.get(node).copied().unwrap_or(0)
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
            Some((None, None)),
            "new, not scheduled"
        );
        let (was, is) = p.bind(A, Some("n1"), f()).unwrap();
        assert_eq!((was, is.as_deref()), (None, Some("n1")));
        assert_eq!(
            p.bind(A, Some("n1"), f()),
            None,
            "unchanged: no node to redraw"
        );
        p.bind(B, Some("n1"), f());
        assert_eq!(p.on_node("n1"), 2);
        let (was, is) = p.bind(B, Some("n2"), f()).unwrap();
        assert_eq!((was.as_deref(), is.as_deref()), (Some("n1"), Some("n2")));
        assert_eq!((p.on_node("n1"), p.on_node("n2")), (1, 1));
        assert_eq!(p.unbind(A).as_deref(), Some("n1"));
        assert_eq!(p.on_node("n1"), 0);
        assert!(!p.per_node.contains_key("n1"), "an empty node is forgotten");
        assert_eq!(p.unbind(A), None, "already gone");
    }

    #[test]
    fn pods_on_a_node_share_its_name() {
        let mut p = PodNodes::default();
        let (_, one) = p.bind(A, Some("n1"), f()).unwrap();
        let (_, two) = p.bind(B, Some("n1"), f()).unwrap();
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
        assert_eq!(p.unbind(&upper).as_deref(), Some("n1"));
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
}
