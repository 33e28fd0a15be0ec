//! List paging: `limit` and opaque `continue` tokens.
//!
//! A token holds the resourceVersion of the first page and the key of the last item sent;
//! the next page resumes after that key in the *current* state. A real API server serves
//! every page from the first page's snapshot (etcd MVCC). Pages of the current state are
//! eventually consistent instead: an object changed between pages shows its newer version,
//! and the watch a client starts from the list's resourceVersion then replays that change,
//! which reflectors apply idempotently. Keeping snapshots would cost a copy of the map per
//! paged list for no difference a watcher can see.

use std::collections::BTreeMap;
use std::ops::Bound;

use serde::{Deserialize, Serialize};

/// Where an object lives: `(namespace, name)`, namespace `""` for cluster-scoped kinds.
/// Ordered like etcd keys, so pages come namespace by namespace.
pub type ObjectKey = (String, String);

/// The decoded `continue` token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContinueToken {
    /// resourceVersion the first page reported; later pages report it too.
    pub rv: u64,
    /// Namespace of the last item sent.
    pub ns: String,
    /// Name of the last item sent.
    pub name: String,
}

impl ContinueToken {
    /// Hex of a small JSON document: opaque to clients, URL-safe without escaping.
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).expect("token serializes");
        json.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Errors (a message for a 400) when the text is not a token this server made.
    pub fn decode(text: &str) -> Result<Self, String> {
        let bad = || "continue key is not valid: not a token from this server".to_string();
        if !text.len().is_multiple_of(2) || !text.is_ascii() {
            return Err(bad());
        }
        let bytes = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| bad())?;
        serde_json::from_slice(&bytes).map_err(|_| bad())
    }

    pub fn key(&self) -> ObjectKey {
        (self.ns.clone(), self.name.clone())
    }
}

/// One page of matching values.
#[derive(Debug, PartialEq)]
pub struct Page<V> {
    pub items: Vec<V>,
    /// Key of the last item when more matching items follow.
    pub next_after: Option<ObjectKey>,
    /// How many matching items follow the page, when counted (see [`page`]).
    pub remaining: Option<usize>,
}

/// Collects up to `limit` values (all when `None`) that pass `keep`, in key order, starting
/// after `after`. Scans one match past the page so a last page never points to an empty
/// one. With `count_rest`, a page that is cut short also counts the matches after it (a scan
/// of the rest: callers ask only when `keep` is cheap, as the real API server gives
/// `remainingItemCount` only for lists without selectors).
pub fn page<V: Clone>(
    map: &BTreeMap<ObjectKey, V>,
    after: Option<&ObjectKey>,
    limit: Option<usize>,
    count_rest: bool,
    mut keep: impl FnMut(&ObjectKey, &V) -> bool,
) -> Page<V> {
    let lower = match after {
        Some(k) => Bound::Excluded(k.clone()),
        None => Bound::Unbounded,
    };
    let mut items = Vec::new();
    let mut last_key: Option<&ObjectKey> = None;
    let mut rest = map.range((lower, Bound::Unbounded));
    while let Some((k, v)) = rest.next() {
        if !keep(k, v) {
            continue;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            let remaining = count_rest.then(|| 1 + rest.filter(|(k, v)| keep(k, v)).count());
            return Page {
                items,
                next_after: last_key.cloned(),
                remaining,
            };
        }
        items.push(v.clone());
        last_key = Some(k);
    }
    Page {
        items,
        next_after: None,
        remaining: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(n: usize) -> BTreeMap<ObjectKey, usize> {
        (0..n)
            .map(|i| ((String::new(), format!("n{i:02}")), i))
            .collect()
    }

    #[test]
    fn token_round_trips_and_rejects_garbage() {
        let t = ContinueToken {
            rv: 42,
            ns: "default".into(),
            name: "p-1".into(),
        };
        let s = t.encode();
        assert!(s.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(ContinueToken::decode(&s).unwrap(), t);
        assert!(ContinueToken::decode("zz").is_err());
        assert!(ContinueToken::decode("abc").is_err());
        assert!(ContinueToken::decode("7b7d").is_err(), "{{}} lacks fields");
    }

    #[test]
    fn pages_cover_everything_once() {
        let m = map(7);
        let mut after = None;
        let mut seen = Vec::new();
        let mut pages = 0;
        loop {
            let p = page(&m, after.as_ref(), Some(3), false, |_, _| true);
            seen.extend(p.items);
            pages += 1;
            match p.next_after {
                Some(k) => after = Some(k),
                None => break,
            }
        }
        assert_eq!(seen, (0..7).collect::<Vec<_>>());
        assert_eq!(pages, 3);
    }

    #[test]
    fn exact_multiple_has_no_empty_last_page() {
        let m = map(6);
        let p = page(&m, None, Some(3), false, |_, _| true);
        let p2 = page(&m, p.next_after.as_ref(), Some(3), false, |_, _| true);
        assert_eq!(p2.items, vec![3, 4, 5]);
        assert_eq!(p2.next_after, None);
    }

    #[test]
    fn filter_applies_before_limit() {
        let m = map(10);
        let p = page(&m, None, Some(2), false, |_, v| v % 3 == 0);
        assert_eq!(p.items, vec![0, 3]);
        let p = page(&m, p.next_after.as_ref(), Some(2), false, |_, v| v % 3 == 0);
        assert_eq!(p.items, vec![6, 9]);
        assert_eq!(p.next_after, None);
        let all = page(&m, None, None, false, |_, _| true);
        assert_eq!(all.items.len(), 10);
    }

    #[test]
    fn remaining_counts_the_matches_after_a_cut_page() {
        let m = map(10);
        let p = page(&m, None, Some(3), true, |_, _| true);
        assert_eq!((p.items.len(), p.remaining), (3, Some(7)));
        let p = page(&m, p.next_after.as_ref(), Some(3), true, |_, v| v % 2 == 0);
        assert_eq!((p.items, p.remaining), (vec![4, 6, 8], None));
        let p = page(&m, None, Some(2), true, |_, v| v % 2 == 0);
        assert_eq!(p.remaining, Some(3));
        assert_eq!(page(&m, None, Some(2), false, |_, _| true).remaining, None);
    }
}
