//! List paging: `limit` and opaque `continue` tokens.
//!
//! A token holds the resourceVersion of the first page and the key of the last item sent;
//! the next page resumes after that key in the *current* state. A real API server serves
//! every page from the first page's snapshot (etcd MVCC). Pages of the current state are
//! eventually consistent instead: an object changed between pages shows its newer version,
//! and the watch a client starts from the list's resourceVersion then replays that change,
//! which reflectors apply idempotently. Keeping snapshots would cost a copy of the map per
//! paged list for no difference a watcher can see.
//!
//! `remainingItemCount` is counted once per list, on its first page, and carried in the token:
//! each later page subtracts what it sent. Counting the rest of the map on every page made a
//! paged list of N objects cost N²/limit steps (a million Pods in pages of 500: a billion, and
//! the behaviour model's own pod watch never synced at 100,000 nodes × 10 pods). The real API
//! server counts at the first page's snapshot too, so later pages' figures are that count
//! less what was sent, as here.

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
    /// Matching objects after the last item sent, as counted for the first page (lists
    /// without selectors only); absent in tokens of lists that are not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<usize>,
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

/// Whether and how a cut page reports the matches after it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Count {
    /// Not counted (a list with selectors, as the real API server).
    No,
    /// Counted by scanning the rest of the range: a list's first page.
    Scan,
    /// Known: this many matched after the page's start when the list's first page counted
    /// them (the token carries it); the page's figure is that less what it sends.
    Known(usize),
}

/// The keys of one namespace, for a namespaced list: `(ns, "")` up to, not including,
/// `(ns + "\0", "")` (no namespace name holds a NUL, so no other namespace sorts between).
pub fn namespace_range(ns: &str) -> (Bound<ObjectKey>, Bound<ObjectKey>) {
    (
        Bound::Included((ns.to_string(), String::new())),
        Bound::Excluded((format!("{ns}\0"), String::new())),
    )
}

/// Collects up to `limit` values (all when `None`) that pass `keep`, in key order, from the
/// keys in `range` after `after`. Scans one match past the page so a last page never points to
/// an empty one. A cut page reports the matches after it as `count` says (callers ask only
/// when `keep` is cheap, as the real API server gives `remainingItemCount` only for lists
/// without selectors).
pub fn page<V: Clone>(
    map: &BTreeMap<ObjectKey, V>,
    range: (Bound<ObjectKey>, Bound<ObjectKey>),
    after: Option<&ObjectKey>,
    limit: Option<usize>,
    count: Count,
    mut keep: impl FnMut(&ObjectKey, &V) -> bool,
) -> Page<V> {
    let (start, end) = range;
    let lower = match (after, start) {
        // Resume after the token's key, unless the range starts later (a token from another
        // namespace's list: the range wins, as it bounds what this list may return).
        (Some(k), Bound::Included(s)) if s > *k => Bound::Included(s),
        (Some(k), _) => Bound::Excluded(k.clone()),
        (None, start) => start,
    };
    if let (Bound::Included(l) | Bound::Excluded(l), Bound::Excluded(u)) = (&lower, &end)
        && l >= u
    {
        // An empty range: BTreeMap::range panics on a start past its end.
        return Page {
            items: Vec::new(),
            next_after: None,
            remaining: None,
        };
    }
    let mut items = Vec::new();
    let mut last_key: Option<&ObjectKey> = None;
    let mut rest = map.range((lower, end));
    while let Some((k, v)) = rest.next() {
        if !keep(k, v) {
            continue;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            let remaining = match count {
                Count::No => None,
                Count::Scan => Some(1 + rest.filter(|(k, v)| keep(k, v)).count()),
                // At least the match just found: objects made since the first page may
                // outnumber the count.
                Count::Known(n) => Some(n.saturating_sub(items.len()).max(1)),
            };
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

    fn all() -> (Bound<ObjectKey>, Bound<ObjectKey>) {
        (Bound::Unbounded, Bound::Unbounded)
    }

    /// Every value of `range` after `after`, in one page.
    fn unpaged(
        m: &BTreeMap<ObjectKey, usize>,
        range: (Bound<ObjectKey>, Bound<ObjectKey>),
        after: Option<&ObjectKey>,
    ) -> Vec<usize> {
        page(m, range, after, None, Count::No, |_, _| true).items
    }

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
            remaining: Some(7),
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
            let p = page(&m, all(), after.as_ref(), Some(3), Count::No, |_, _| true);
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
        let p = page(&m, all(), None, Some(3), Count::No, |_, _| true);
        let p2 = page(
            &m,
            all(),
            p.next_after.as_ref(),
            Some(3),
            Count::No,
            |_, _| true,
        );
        assert_eq!(p2.items, vec![3, 4, 5]);
        assert_eq!(p2.next_after, None);
    }

    #[test]
    fn filter_applies_before_limit() {
        let m = map(10);
        let p = page(&m, all(), None, Some(2), Count::No, |_, v| v % 3 == 0);
        assert_eq!(p.items, vec![0, 3]);
        let p = page(
            &m,
            all(),
            p.next_after.as_ref(),
            Some(2),
            Count::No,
            |_, v| v % 3 == 0,
        );
        assert_eq!(p.items, vec![6, 9]);
        assert_eq!(p.next_after, None);
        assert_eq!(unpaged(&m, all(), None).len(), 10);
    }

    #[test]
    fn remaining_counts_the_matches_after_a_cut_page() {
        let m = map(10);
        let p = page(&m, all(), None, Some(3), Count::Scan, |_, _| true);
        assert_eq!((p.items.len(), p.remaining), (3, Some(7)));
        let p = page(
            &m,
            all(),
            p.next_after.as_ref(),
            Some(3),
            Count::Scan,
            |_, v| v % 2 == 0,
        );
        assert_eq!((p.items, p.remaining), (vec![4, 6, 8], None));
        let p = page(&m, all(), None, Some(2), Count::Scan, |_, v| v % 2 == 0);
        assert_eq!(p.remaining, Some(3));
        assert_eq!(
            page(&m, all(), None, Some(2), Count::No, |_, _| true).remaining,
            None
        );
    }

    #[test]
    fn a_known_count_goes_down_by_what_each_page_sends() {
        let m = map(10);
        let first = page(&m, all(), None, Some(3), Count::Scan, |_, _| true);
        assert_eq!(first.remaining, Some(7));
        let second = page(
            &m,
            all(),
            first.next_after.as_ref(),
            Some(3),
            Count::Known(7),
            |_, _| true,
        );
        assert_eq!((second.items, second.remaining), (vec![3, 4, 5], Some(4)));
        // More objects than counted (made since the first page): never below the one found.
        let p = page(&m, all(), None, Some(3), Count::Known(2), |_, _| true);
        assert_eq!(p.remaining, Some(1));
        // The last page reports nothing, whatever was carried.
        let last = page(
            &m,
            all(),
            Some(&(String::new(), "n07".into())),
            Some(3),
            Count::Known(2),
            |_, _| true,
        );
        assert_eq!((last.items, last.remaining), (vec![8, 9], None));
    }

    #[test]
    fn a_namespace_range_holds_that_namespace_alone() {
        let m: BTreeMap<ObjectKey, usize> =
            [("a", "x"), ("b", "x"), ("b", "y"), ("b0", "x"), ("c", "x")]
                .into_iter()
                .enumerate()
                .map(|(i, (ns, n))| ((ns.to_string(), n.to_string()), i))
                .collect();
        assert_eq!(unpaged(&m, namespace_range("b"), None), vec![1, 2]);
        let first = page(
            &m,
            namespace_range("b"),
            None,
            Some(1),
            Count::Scan,
            |_, _| true,
        );
        assert_eq!((first.items, first.remaining), (vec![1], Some(1)));
        // A token from before the namespace resumes at its start; one past it finds nothing.
        let before = (String::from("a"), String::from("x"));
        assert_eq!(unpaged(&m, namespace_range("b"), Some(&before)), vec![1, 2]);
        let past = (String::from("c"), String::from("x"));
        assert!(unpaged(&m, namespace_range("b"), Some(&past)).is_empty());
        assert!(unpaged(&m, namespace_range("none"), None).is_empty());
    }
}
