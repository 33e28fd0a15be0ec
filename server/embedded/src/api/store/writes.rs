//! Writes: create, update, patch, delete, with the rules of a real API server
//! (resourceVersion preconditions, status subresource, no-op updates, graceful deletion,
//! finalizers, namespaces created on first use).

use std::sync::Arc;

use chrono::Utc;
use serde_json::{Value, json};

use super::{Collection, DeleteOptions, Deleted, Store};
use crate::api::deletion::{self, DeletePlan};
use crate::api::history::EventType;
use crate::api::object::{self, Target};
use crate::api::paging::ObjectKey;
use crate::api::patch::{self, PatchError, PatchKind};
use crate::api::resources::Kind;
use crate::api::status::ApiError;
use crate::api::stored::{Obj, Stored};

impl Store {
    /// Stores a new object; `dry_run` validates and returns it without storing.
    /// A namespaced object in a missing namespace creates the namespace (see
    /// [`Store::ensure_namespace`]). Errors: 400 (body contradicts the URL), 409
    /// AlreadyExists, 422 Invalid (name).
    pub fn create(
        &self,
        kind: Kind,
        ns: &str,
        body: Value,
        dry_run: bool,
    ) -> Result<Obj, ApiError> {
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
                if !coll
                    .objects
                    .contains_key(&(ns.to_string(), candidate.clone()))
                {
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
            return Ok(Arc::new(Stored::new(&obj)));
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
        let old_value = old.value();
        check_rv(kind, name, &body, &old_value)?;
        let new = object::prepare_update(kind, &old_value, body, target)?;
        Ok(self.modify(kind, &mut coll, key, (old, &old_value), new, dry_run))
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
                let old_value = old.value();
                let patched = patch::apply(patch_kind, &old_value, body).map_err(patch_error)?;
                check_rv(kind, name, &patched, &old_value)?;
                let new = object::prepare_update(kind, &old_value, patched, target)?;
                let stored = self.modify(kind, &mut coll, key, (old, &old_value), new, dry_run);
                return Ok((stored, false));
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
    pub fn delete(
        &self,
        kind: Kind,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
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
                ("UID", &opts.precondition_uid, old.uid()),
                (
                    "ResourceVersion",
                    &opts.precondition_resource_version,
                    old.resource_version(),
                ),
            ];
            for (what, want, have) in checks {
                if let Some(want) = want.as_deref().filter(|w| *w != have) {
                    return Err(ApiError::conflict(
                        rt,
                        name,
                        &format!(
                            "Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}"
                        ),
                    ));
                }
            }
            let old_value = old.value();
            match deletion::plan(kind, &old_value, opts.grace_period, Utc::now()) {
                DeletePlan::Keep => Deleted::Pending(old),
                DeletePlan::Mark(new) if opts.dry_run => {
                    Deleted::Pending(Arc::new(Stored::new(&new)))
                }
                DeletePlan::Mark(new) => Deleted::Pending(self.commit(
                    kind,
                    &mut coll,
                    key,
                    EventType::Modified,
                    new,
                    Some(old),
                )),
                DeletePlan::Remove if opts.dry_run => Deleted::Gone(old),
                DeletePlan::Remove => Deleted::Gone(self.commit(
                    kind,
                    &mut coll,
                    key,
                    EventType::Deleted,
                    old_value,
                    None,
                )),
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
        if self
            .read(Kind::Namespaces)
            .objects
            .contains_key(&(String::new(), ns.to_string()))
        {
            return Ok(());
        }
        match self.create(
            Kind::Namespaces,
            "",
            json!({"metadata": {"name": ns}}),
            false,
        ) {
            Ok(_) => Ok(()),
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Removes every namespaced object in `ns` (each a `DELETED` event). Simplification:
    /// a real namespace lingers in `Terminating` while its controller does this.
    fn remove_namespace_contents(&self, ns: &str) {
        for kind in self.kinds().into_iter().filter(|k| k.info().namespaced) {
            let mut coll = self.write(kind);
            let doomed: Vec<(ObjectKey, Obj)> = coll
                .objects
                .range((ns.to_string(), String::new())..)
                .take_while(|(k, _)| k.0 == ns)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (key, old) in doomed {
                self.commit(kind, &mut coll, key, EventType::Deleted, old.value(), None);
            }
        }
    }

    /// Stores `new` in place of `old` (given stored and parsed) unless nothing changed (then
    /// no new resourceVersion and no event, as on a real server); an update that removes
    /// the last finalizer of an object being deleted removes it.
    fn modify(
        &self,
        kind: Kind,
        coll: &mut Collection,
        key: ObjectKey,
        (old, old_value): (Obj, &Value),
        mut new: Value,
        dry_run: bool,
    ) -> Obj {
        let old_rv = old.resource_version().to_string();
        object::meta_mut(&mut new).insert("resourceVersion".into(), Value::String(old_rv));
        if *old_value == new {
            return old;
        }
        if dry_run {
            return Arc::new(Stored::new(&new));
        }
        let change = if deletion::completes_deletion(old_value, &new) {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        self.commit(kind, coll, key, change, new, Some(old))
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
