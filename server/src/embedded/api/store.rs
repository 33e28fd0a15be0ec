//! The storage of one API server: objects per kind, one resourceVersion counter, and the
//! change history that watches read.
//!
//! Concurrency: one `RwLock` per kind. A write allocates its resourceVersion while holding
//! its kind's lock, so within a kind the history is in resourceVersion order, and a reader
//! holding the lock sees every write of that kind up to the counter's current value: that
//! value is then a consistent resourceVersion for a list of the kind. A `tokio::sync::watch`
//! per kind wakes watchers after each write; they read the history themselves.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use chrono::Utc;
use kube::CustomResourceExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::deletion::{self, DeletePlan};
use super::history::{Change, EventType, History};
use super::object::{self, Obj, Target};
use super::paging::{self, ContinueToken, ObjectKey};
use super::patch::{self, PatchError, PatchKind};
use super::resources::Kind;
use super::selectors::{FieldSelector, LabelSelector};
use super::status::ApiError;

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
}

/// All objects of one API server.
pub struct Store {
    /// The etcd-like revision counter; only advanced under a kind's write lock.
    rv: AtomicU64,
    collections: Vec<RwLock<Collection>>,
    /// The last resourceVersion written, per kind.
    notifiers: Vec<watch::Sender<u64>>,
}

impl Store {
    /// An empty cluster with the default namespaces and the NodePool CRD; each kind keeps
    /// `history_limit` changes for watches.
    pub fn new(history_limit: usize) -> Self {
        let store = Self {
            rv: AtomicU64::new(0),
            collections: Kind::ALL
                .iter()
                .map(|_| {
                    RwLock::new(Collection {
                        objects: BTreeMap::new(),
                        history: History::new(history_limit),
                    })
                })
                .collect(),
            notifiers: Kind::ALL.iter().map(|_| watch::channel(0).0).collect(),
        };
        for ns in DEFAULT_NAMESPACES {
            store
                .create(Kind::Namespaces, "", json!({"metadata": {"name": ns}}), false)
                .expect("default namespaces are valid");
        }
        store
            .create(Kind::Crds, "", nodepool_crd(), false)
            .expect("the NodePool CRD is valid");
        store
    }

    fn read(&self, kind: Kind) -> RwLockReadGuard<'_, Collection> {
        self.collections[kind.index()]
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self, kind: Kind) -> RwLockWriteGuard<'_, Collection> {
        self.collections[kind.index()]
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
            q.namespace.is_none_or(|ns| k.0 == ns) && q.labels.matches(v) && q.fields.matches(v)
        };
        // One object by name (kubectl's `get x -w`, `delete --wait`): a lookup, not a scan.
        let scope = if kind.info().namespaced { q.namespace } else { Some("") };
        if let (Some(name), Some(ns), None) = (q.fields.pinned_name(), scope, &q.continue_token) {
            let key = (ns.to_string(), name.to_string());
            return Listing {
                items: coll.objects.get(&key).filter(|v| keep(&key, v)).cloned().into_iter().collect(),
                resource_version: rv,
                continue_token: None,
            };
        }
        let after = q.continue_token.as_ref().map(ContinueToken::key);
        let page = paging::page(&coll.objects, after.as_ref(), q.limit, keep);
        let list_rv = q.continue_token.as_ref().map_or(rv, |t| t.rv);
        Listing {
            items: page.items,
            resource_version: list_rv,
            continue_token: page
                .next_after
                .map(|(ns, name)| ContinueToken { rv: list_rv, ns, name }.encode()),
        }
    }

    /// All objects of a kind and the resourceVersion they are consistent with, for a
    /// watch's initial `ADDED` events.
    pub fn snapshot(&self, kind: Kind) -> (Vec<Obj>, u64) {
        let coll = self.read(kind);
        (coll.objects.values().cloned().collect(), self.current_rv())
    }

    /// A receiver that changes after every write of `kind`.
    pub fn subscribe(&self, kind: Kind) -> watch::Receiver<u64> {
        self.notifiers[kind.index()].subscribe()
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

    /// Stores a new object; `dry_run` validates and returns it without storing.
    /// A namespaced object in a missing namespace creates the namespace (see
    /// [`Store::ensure_namespace`]). Errors: 400 (body contradicts the URL), 409
    /// AlreadyExists, 422 Invalid (name).
    pub fn create(&self, kind: Kind, ns: &str, body: Value, dry_run: bool) -> Result<Obj, ApiError> {
        let rt = kind.info();
        if rt.namespaced && !dry_run {
            self.ensure_namespace(ns)?;
        }
        let mut obj = object::prepare_create(kind, ns, body, Utc::now())?;
        set_defaults(kind, &mut obj);
        let generate = obj
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut coll = self.write(kind);
        if object::name(&obj).is_empty() && !generate.is_empty() {
            let name = loop {
                let candidate = format!("{generate}{}", object::name_suffix());
                if !coll.objects.contains_key(&(ns.to_string(), candidate.clone())) {
                    break candidate;
                }
            };
            object::meta_mut(&mut obj).insert("name".into(), Value::String(name));
        }
        let name = object::name(&obj).to_string();
        object::validate_name(&name).map_err(|why| ApiError::invalid(rt, &name, &why))?;
        let key = (ns.to_string(), name);
        if coll.objects.contains_key(&key) {
            return Err(ApiError::already_exists(rt, &key.1));
        }
        if dry_run {
            return Ok(Arc::new(obj));
        }
        Ok(self.commit(kind, &mut coll, key, EventType::Added, obj, None))
    }

    /// Replaces an object (PUT) through `target`. A non-empty `metadata.resourceVersion`
    /// in the body must be the stored one; an empty one updates unconditionally.
    /// Errors: 404, 409 Conflict, 400.
    pub fn update(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        body: Value,
        target: Target,
        dry_run: bool,
    ) -> Result<Obj, ApiError> {
        let key = (ns.to_string(), name.to_string());
        let mut coll = self.write(kind);
        let old = coll
            .objects
            .get(&key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(kind.info(), name))?;
        check_rv(kind, name, &body, &old)?;
        let new = object::prepare_update(kind, &old, body, target)?;
        Ok(self.modify(kind, &mut coll, key, old, new, dry_run))
    }

    /// Patches an object through `target`; returns it and whether it was created (a
    /// server-side apply of a missing object creates it). Errors: 404, 400 (malformed
    /// patch), 409 (resourceVersion in the patch is stale), 422 (patch does not apply).
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        patch_kind: PatchKind,
        body: &[u8],
        target: Target,
        dry_run: bool,
    ) -> Result<(Obj, bool), ApiError> {
        let rt = kind.info();
        let key = (ns.to_string(), name.to_string());
        let patch_error = |e| match e {
            PatchError::Malformed(m) => ApiError::bad_request(m),
            PatchError::NotApplicable(m) => ApiError::invalid(rt, name, &m),
        };
        {
            let mut coll = self.write(kind);
            if let Some(old) = coll.objects.get(&key).cloned() {
                let patched = patch::apply(patch_kind, &old, body).map_err(patch_error)?;
                check_rv(kind, name, &patched, &old)?;
                let new = object::prepare_update(kind, &old, patched, target)?;
                return Ok((self.modify(kind, &mut coll, key, old, new, dry_run), false));
            }
        }
        if patch_kind != PatchKind::Apply || target == Target::Status {
            return Err(ApiError::not_found(rt, name));
        }
        let mut obj = patch::parse_body(patch_kind, body).map_err(patch_error)?;
        match object::name(&obj) {
            "" => {
                object::meta_mut(&mut obj).insert("name".into(), Value::String(name.into()));
            }
            n if n != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            _ => {}
        }
        Ok((self.create(kind, ns, obj, dry_run)?, true))
    }

    /// Deletes an object, at once or by marking it terminating (see [`deletion::plan`]).
    /// Deleting a namespace removes everything in it. Errors: 404, 409 (preconditions).
    pub fn delete(&self, kind: Kind, ns: &str, name: &str, opts: &DeleteOptions) -> Result<Deleted, ApiError> {
        let rt = kind.info();
        let key = (ns.to_string(), name.to_string());
        let result = {
            let mut coll = self.write(kind);
            let old = coll
                .objects
                .get(&key)
                .cloned()
                .ok_or_else(|| ApiError::not_found(rt, name))?;
            let checks = [
                ("UID", &opts.precondition_uid, object::uid(&old)),
                ("ResourceVersion", &opts.precondition_resource_version, object::resource_version(&old)),
            ];
            for (what, want, have) in checks {
                if let Some(want) = want.as_deref().filter(|w| *w != have) {
                    return Err(ApiError::conflict(
                        rt,
                        name,
                        &format!("Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}"),
                    ));
                }
            }
            match deletion::plan(kind, &old, opts.grace_period, Utc::now()) {
                DeletePlan::Keep => Deleted::Pending(old),
                DeletePlan::Mark(new) if opts.dry_run => Deleted::Pending(Arc::new(new)),
                DeletePlan::Mark(new) => {
                    Deleted::Pending(self.commit(kind, &mut coll, key, EventType::Modified, new, Some(old)))
                }
                DeletePlan::Remove if opts.dry_run => Deleted::Gone(old),
                DeletePlan::Remove => {
                    Deleted::Gone(self.commit(kind, &mut coll, key, EventType::Deleted, (*old).clone(), None))
                }
            }
        };
        if kind == Kind::Namespaces && matches!(result, Deleted::Gone(_)) && !opts.dry_run {
            self.remove_namespace_contents(name);
        }
        Ok(result)
    }

    /// Creates namespace `ns` if it does not exist.
    ///
    /// Why auto-create rather than 404 like a real API server: the behaviour model and the
    /// tests create pods and events in namespaces named by the scenario; requiring each to
    /// create its namespace first adds ordering to every seed for no behaviour anyone
    /// observes. Errors: 422 for a name that cannot be a namespace.
    pub fn ensure_namespace(&self, ns: &str) -> Result<(), ApiError> {
        if self.read(Kind::Namespaces).objects.contains_key(&(String::new(), ns.to_string())) {
            return Ok(());
        }
        match self.create(Kind::Namespaces, "", json!({"metadata": {"name": ns}}), false) {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Removes every namespaced object in `ns` (each a `DELETED` event). Simplification:
    /// a real namespace lingers in `Terminating` while its controller does this.
    fn remove_namespace_contents(&self, ns: &str) {
        for kind in Kind::ALL.into_iter().filter(|k| k.info().namespaced) {
            let mut coll = self.write(kind);
            let doomed: Vec<(ObjectKey, Obj)> = coll
                .objects
                .range((ns.to_string(), String::new())..)
                .take_while(|(k, _)| k.0 == ns)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (key, old) in doomed {
                self.commit(kind, &mut coll, key, EventType::Deleted, (*old).clone(), None);
            }
        }
    }

    /// Stores `new` in place of `old` unless nothing changed (then no new resourceVersion
    /// and no event, as on a real server); an update that removes the last finalizer of an
    /// object being deleted removes it.
    fn modify(&self, kind: Kind, coll: &mut Collection, key: ObjectKey, old: Obj, mut new: Value, dry_run: bool) -> Obj {
        let old_rv = object::resource_version(&old).to_string();
        object::meta_mut(&mut new).insert("resourceVersion".into(), Value::String(old_rv));
        if *old == new {
            return old;
        }
        if dry_run {
            return Arc::new(new);
        }
        let change = if deletion::completes_deletion(&old, &new) {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        self.commit(kind, coll, key, change, new, Some(old))
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
        let obj = Arc::new(obj);
        match change {
            EventType::Deleted => coll.objects.remove(&key),
            _ => coll.objects.insert(key, obj.clone()),
        };
        coll.history.push(Arc::new(Change {
            kind: change,
            object: obj.clone(),
            prev,
            rv,
        }));
        self.notifiers[kind.index()].send_replace(rv);
        obj
    }
}

/// A non-empty resourceVersion in a PUT body or a patch result must be the stored one.
fn check_rv(kind: Kind, name: &str, new: &Value, old: &Value) -> Result<(), ApiError> {
    let want = object::resource_version(new);
    if want.is_empty() || want == object::resource_version(old) {
        Ok(())
    } else {
        Err(ApiError::stale(kind.info(), name))
    }
}

/// Defaults a real API server sets on create that the printers rely on.
fn set_defaults(kind: Kind, obj: &mut Value) {
    let phase = match kind {
        Kind::Namespaces => "Active",
        Kind::Pods => "Pending",
        _ => return,
    };
    if obj.pointer("/status/phase").is_none() {
        let map = obj.as_object_mut().expect("checked by prepare_create");
        let status = map.entry("status").or_insert_with(|| json!({}));
        if let Some(s) = status.as_object_mut() {
            s.insert("phase".into(), Value::String(phase.into()));
        }
    }
}

/// The NodePool CRD as served, with the status of an established CRD.
fn nodepool_crd() -> Value {
    let mut crd = serde_json::to_value(app::nodepool::NodePool::crd()).expect("CRD serializes");
    crd["status"] = json!({
        "acceptedNames": crd["spec"]["names"].clone(),
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"}
        ],
        "storedVersions": [app::nodepool::VERSION],
    });
    crd
}

#[cfg(test)]
mod tests;
