//! The storage of one API server: objects per kind, one resourceVersion counter, and the
//! change history that watches read.
//!
//! Concurrency: one `RwLock` per kind. A write allocates its resourceVersion while holding
//! its kind's lock, so within a kind the history is in resourceVersion order, and a reader
//! holding the lock sees every write of that kind up to the counter's current value: that
//! value is then a consistent resourceVersion for a list of the kind. A `tokio::sync::watch`
//! per kind wakes watchers after each write; they read the history themselves.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::history::{Change, EventType, History};
use super::object;
use super::packing::{self, Dictionary};
use super::paging::{self, ContinueToken, ObjectKey};
use super::resources::Kind;
use super::selectors::{FieldSelector, LabelSelector};
use super::status::ApiError;
use super::stored::{Obj, Stored};

/// Namespaces every cluster starts with.
const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// What to list.
#[derive(Debug, Default)]
pub struct ListQuery<'a> {
    /// `None` lists across all namespaces (and is the only choice for cluster-scoped kinds).
    pub namespace: Option<&'a str>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// Page size; `None` for everything.
    pub limit: Option<usize>,
    pub continue_token: Option<ContinueToken>,
}

/// One page of a list.
#[derive(Debug)]
pub struct Listing {
    pub items: Vec<Obj>,
    /// resourceVersion the list is consistent with: watch from here to follow it.
    pub resource_version: u64,
    /// Token for the next page, when there is one.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`: objects after this page, for a cut page of a list
    /// without selectors (as the real API server counts them).
    pub remaining: Option<usize>,
}

/// DELETE options (query parameters or a `DeleteOptions` body).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// Seconds; see [`deletion::plan`].
    pub grace_period: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    pub dry_run: bool,
}

/// The result of a DELETE.
#[derive(Debug)]
pub enum Deleted {
    /// Removed; the object as it was, with the deletion's resourceVersion.
    Gone(Obj),
    /// Still there, terminating (grace period or finalizers).
    Pending(Obj),
}

struct Collection {
    objects: BTreeMap<ObjectKey, Obj>,
    history: History,
    /// The kind's compression dictionary, once trained ([`packing::TRAIN_AT`]).
    dictionary: Option<Arc<Dictionary>>,
    /// Whether training was tried (it is tried once; a kind it fails for stays plain).
    trained: bool,
}

impl Collection {
    /// Trains the kind's dictionary from the objects it holds now. Runs once per kind, under
    /// its write lock: 47–51 ms for the first thousand Pods or Nodes (release build).
    fn train(&mut self, kind: Kind) {
        self.trained = true;
        let samples: Vec<Bytes> = self.objects.values().map(|o| o.json()).collect();
        let started = std::time::Instant::now();
        match Dictionary::train(&samples) {
            Ok(d) => {
                tracing::debug!(kind = kind.info().plural, took = ?started.elapsed(), "compression dictionary trained");
                self.dictionary = Some(d);
            }
            Err(e) => tracing::warn!(
                kind = kind.info().plural,
                "no compression dictionary ({e}): the kind's objects stay uncompressed"
            ),
        }
    }
}

/// One served kind's objects and the notifier its watchers wait on.
struct Slot {
    kind: Kind,
    collection: RwLock<Collection>,
    /// The last resourceVersion written of this kind.
    notifier: watch::Sender<u64>,
}

/// All objects of one API server.
pub struct Store {
    /// The etcd-like revision counter; only advanced under a kind's write lock.
    rv: AtomicU64,
    /// One per served kind: the built-in kinds, then the custom resources, in that order.
    slots: Vec<Slot>,
}

impl Store {
    /// An empty cluster serving the built-in kinds and `custom` (each custom resource's CRD is
    /// listed under `customresourcedefinitions`), with the default namespaces; each kind keeps
    /// `history_limit` changes for watches.
    pub fn new(history_limit: usize, custom: &[Kind]) -> Self {
        let mut kinds: Vec<Kind> = Kind::BUILT_IN.to_vec();
        for k in custom {
            if !kinds.contains(k) {
                kinds.push(*k);
            }
        }
        let store = Self {
            rv: AtomicU64::new(0),
            slots: kinds
                .into_iter()
                .map(|kind| Slot {
                    kind,
                    collection: RwLock::new(Collection {
                        objects: BTreeMap::new(),
                        history: History::new(history_limit),
                        dictionary: None,
                        trained: false,
                    }),
                    notifier: watch::channel(0).0,
                })
                .collect(),
        };
        for ns in DEFAULT_NAMESPACES {
            store
                .create(
                    Kind::Namespaces,
                    "",
                    json!({"metadata": {"name": ns}}),
                    false,
                )
                .expect("default namespaces are valid");
        }
        for k in custom {
            if let Some(crd) = &k.info().crd {
                store
                    .create(Kind::Crds, "", crd.object.clone(), false)
                    .expect("a registered CRD has a name");
            }
        }
        store
    }

    /// The kinds this store serves: what discovery lists and request paths may name.
    pub fn kinds(&self) -> Vec<Kind> {
        self.slots.iter().map(|s| s.kind).collect()
    }

    fn slot(&self, kind: Kind) -> &Slot {
        // Requests reach a kind only through `find`, and the behaviour model only writes the
        // kinds it registered, so a miss is a bug in this crate, not bad input.
        self.slots
            .iter()
            .find(|s| s.kind == kind)
            .unwrap_or_else(|| {
                panic!(
                    "{} is not served by this API server",
                    kind.info().group_resource()
                )
            })
    }

    fn read(&self, kind: Kind) -> RwLockReadGuard<'_, Collection> {
        self.slot(kind)
            .collection
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self, kind: Kind) -> RwLockWriteGuard<'_, Collection> {
        self.slot(kind)
            .collection
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The newest resourceVersion of any write.
    pub fn current_rv(&self) -> u64 {
        self.rv.load(Ordering::SeqCst)
    }

    /// One object. Errors: 404.
    pub fn get(&self, kind: Kind, ns: &str, name: &str) -> Result<Obj, ApiError> {
        self.read(kind)
            .objects
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
            .ok_or_else(|| ApiError::not_found(kind.info(), name))
    }

    /// A page of the objects that match `q`, in (namespace, name) order.
    pub fn list(&self, kind: Kind, q: &ListQuery<'_>) -> Listing {
        let coll = self.read(kind);
        let rv = self.current_rv();
        let keep = |k: &ObjectKey, v: &Obj| {
            q.namespace.is_none_or(|ns| k.0 == ns) && v.matches(&q.labels, &q.fields)
        };
        // One object by name (kubectl's `get x -w`, `delete --wait`): a lookup, not a scan.
        let scope = if kind.info().namespaced {
            q.namespace
        } else {
            Some("")
        };
        if let (Some(name), Some(ns), None) = (q.fields.pinned_name(), scope, &q.continue_token) {
            let key = (ns.to_string(), name.to_string());
            return Listing {
                items: coll
                    .objects
                    .get(&key)
                    .filter(|v| keep(&key, v))
                    .cloned()
                    .into_iter()
                    .collect(),
                resource_version: rv,
                continue_token: None,
                remaining: None,
            };
        }
        let after = q.continue_token.as_ref().map(ContinueToken::key);
        let count = match &q.continue_token {
            _ if !(q.labels.is_empty() && q.fields.is_empty()) => paging::Count::No,
            None => paging::Count::Scan,
            Some(t) => t
                .remaining
                .map_or(paging::Count::Scan, paging::Count::Known),
        };
        // A namespace's list reads that namespace's keys alone, not the whole kind.
        let range = match scope {
            Some(ns) if kind.info().namespaced => paging::namespace_range(ns),
            _ => (Bound::Unbounded, Bound::Unbounded),
        };
        let page = paging::page(&coll.objects, range, after.as_ref(), q.limit, count, keep);
        let list_rv = q.continue_token.as_ref().map_or(rv, |t| t.rv);
        Listing {
            items: page.items,
            resource_version: list_rv,
            continue_token: page.next_after.map(|(ns, name)| {
                ContinueToken {
                    rv: list_rv,
                    ns,
                    name,
                    remaining: page.remaining,
                }
                .encode()
            }),
            remaining: page.remaining,
        }
    }

    /// All objects of a kind and the resourceVersion they are consistent with, for a
    /// watch's initial `ADDED` events.
    pub fn snapshot(&self, kind: Kind) -> (Vec<Obj>, u64) {
        let coll = self.read(kind);
        (coll.objects.values().cloned().collect(), self.current_rv())
    }

    /// Open watches per kind: every watch holds one notifier receiver while it runs.
    pub fn open_watches(&self) -> Vec<(Kind, usize)> {
        self.slots
            .iter()
            .map(|s| (s.kind, s.notifier.receiver_count()))
            .collect()
    }

    /// A receiver that changes after every write of `kind`.
    pub fn subscribe(&self, kind: Kind) -> watch::Receiver<u64> {
        self.slot(kind).notifier.subscribe()
    }

    /// Changes of `kind` newer than `rv`, and the resourceVersion up to which the caller
    /// has then seen everything of this kind. Errors: 410 when history no longer reaches
    /// back to `rv`.
    pub fn changes_since(&self, kind: Kind, rv: u64) -> Result<(Vec<Arc<Change>>, u64), ApiError> {
        let coll = self.read(kind);
        let seen = self.current_rv();
        coll.history
            .since(rv)
            .map(|changes| (changes, seen))
            .map_err(|oldest| ApiError::expired(rv, oldest))
    }

    /// Writes a change with the next resourceVersion, records it and wakes watchers.
    fn commit(
        &self,
        kind: Kind,
        coll: &mut Collection,
        key: ObjectKey,
        change: EventType,
        mut obj: Value,
        prev: Option<Obj>,
    ) -> Obj {
        let rv = self.rv.fetch_add(1, Ordering::SeqCst) + 1;
        object::set_resource_version(&mut obj, rv);
        let obj = Arc::new(Stored::packed(&obj, coll.dictionary.as_ref()));
        match change {
            EventType::Deleted => coll.objects.remove(&key),
            _ => coll.objects.insert(key, obj.clone()),
        };
        if !coll.trained && coll.objects.len() >= packing::TRAIN_AT {
            coll.train(kind);
        }
        coll.history.push(Arc::new(Change {
            kind: change,
            object: obj.clone(),
            prev,
            rv,
        }));
        self.slot(kind).notifier.send_replace(rv);
        obj
    }
}

mod writes;

#[cfg(test)]
mod tests;
