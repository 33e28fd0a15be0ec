//! Which node each pod is bound to, and how many pods each node has: all the hub keeps of a
//! pod.
//!
//! Pods outnumber nodes five to thirty times, so their entry is kept small: the uid as a
//! 128-bit number (the API server's uids are UUIDs; another text is kept as it is) and the
//! node's name shared by every pod on the node. At 50,000 pods that is 2 MB of table and
//! no string per pod, against 7 MB when each pod held its uid and node name as strings.

use std::collections::HashMap;
use std::sync::Arc;

/// A node's name, shared by its pods and its count.
pub type NodeName = Arc<str>;

#[derive(Default)]
pub struct PodNodes {
    by_uuid: HashMap<u128, Option<NodeName>>,
    // Uids that are not canonical UUID text (lower-case, hyphenated): kept as given, so a
    // uid listed again reads back exactly as the watch sent it.
    by_text: HashMap<Box<str>, Option<NodeName>>,
    per_node: HashMap<NodeName, u32>,
}

/// `uid` as a number when it is a UUID written the canonical way.
fn number(uid: &str) -> Option<u128> {
    let n = uuid::Uuid::try_parse(uid).ok()?;
    let mut buf = uuid::Uuid::encode_buffer();
    (n.hyphenated().encode_lower(&mut buf) == uid).then_some(n.as_u128())
}

impl PodNodes {
    /// Binds pod `uid` to `node` (`None`: not scheduled yet). Returns the nodes whose pod
    /// count changed, (was on, is on), or `None` when the pod was already there.
    pub fn bind(
        &mut self,
        uid: &str,
        node: Option<&str>,
    ) -> Option<(Option<NodeName>, Option<NodeName>)> {
        let node = node.map(|n| self.shared(n));
        let old = match number(uid) {
            Some(n) => self.by_uuid.insert(n, node.clone()),
            None => self.by_text.insert(uid.into(), node.clone()),
        };
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
        }
        .flatten()?;
        self.uncount(&was);
        Some(was)
    }

    /// Pods bound to `node`.
    pub fn on_node(&self, node: &str) -> u32 {
        self.per_node.get(node).copied().unwrap_or(0)
    }

    /// Every pod's uid, as the watch wrote it.
    pub fn uids(&self) -> Vec<String> {
        let numbers = self
            .by_uuid
            .keys()
            .map(|n| uuid::Uuid::from_u128(*n).hyphenated().to_string());
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

    #[test]
    fn counts_follow_binds_moves_and_unbinds() {
        let mut p = PodNodes::default();
        assert_eq!(p.bind(A, None), Some((None, None)), "new, not scheduled");
        let (was, is) = p.bind(A, Some("n1")).unwrap();
        assert_eq!((was, is.as_deref()), (None, Some("n1")));
        assert_eq!(p.bind(A, Some("n1")), None, "unchanged: no node to redraw");
        p.bind(B, Some("n1"));
        assert_eq!(p.on_node("n1"), 2);
        let (was, is) = p.bind(B, Some("n2")).unwrap();
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
        let (_, one) = p.bind(A, Some("n1")).unwrap();
        let (_, two) = p.bind(B, Some("n1")).unwrap();
        assert!(Arc::ptr_eq(&one.unwrap(), &two.unwrap()));
    }

    #[test]
    fn uids_read_back_as_the_watch_wrote_them() {
        let mut p = PodNodes::default();
        let upper = A.to_uppercase();
        for uid in [A, upper.as_str(), "not-a-uuid", ""] {
            p.bind(uid, Some("n1"));
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
}
