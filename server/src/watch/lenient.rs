//! Objects that may not decode. A typed watch fails as a whole when one object in a list does
//! not decode (a Node whose `spec.unschedulable` is `"yes"`, a Pod with a string where an
//! integer belongs): every other Node or Pod of the cluster would vanish behind it and the
//! cluster would look stale forever. [`Lenient`] decodes each object on its own, so a
//! malformed one is skipped with one log line and the rest keep updating.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::{Deserialize, Deserializer, de::DeserializeOwned};
use serde_json::Value;

/// A `K` if the object decodes as one, or its metadata and why it does not.
#[derive(Clone, Debug)]
pub enum Lenient<K> {
    Decoded(K),
    Malformed {
        /// Whatever of `metadata` decodes (name and uid for the log line).
        meta: Box<ObjectMeta>,
        /// The decoder's message, with the JSON path where it failed.
        error: String,
    },
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Lenient<K> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Only input that is not JSON at all fails here; a JSON object of the wrong shape
        // becomes `Malformed`.
        let value = Value::deserialize(d)?;
        match serde_path_to_error::deserialize::<_, K>(&value) {
            Ok(k) => Ok(Lenient::Decoded(k)),
            Err(e) => {
                let meta = value
                    .get("metadata")
                    .and_then(|m| ObjectMeta::deserialize(m).ok())
                    .unwrap_or_default();
                Ok(Lenient::Malformed {
                    meta: Box::new(meta),
                    error: format!("{}: {}", e.path(), e.inner()),
                })
            }
        }
    }
}

impl<K: Resource<DynamicType = ()>> Resource for Lenient<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &()) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        match self {
            Lenient::Decoded(k) => k.meta(),
            Lenient::Malformed { meta, .. } => meta,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Lenient::Decoded(k) => k.meta_mut(),
            Lenient::Malformed { meta, .. } => meta,
        }
    }
}

/// What the watch loop asks of any watched object: the object to trim, or why there is
/// none.
pub trait Watched {
    /// What the trim functions read.
    type Object;
    /// The object, or why it could not be decoded.
    fn object(&self) -> Result<&Self::Object, &str>;
}

impl<K> Watched for Lenient<K> {
    type Object = K;
    fn object(&self) -> Result<&K, &str> {
        match self {
            Lenient::Decoded(k) => Ok(k),
            Lenient::Malformed { error, .. } => Err(error),
        }
    }
}

/// Untyped objects always decode; their trim functions say in the record what is wrong.
impl Watched for kube::api::DynamicObject {
    type Object = Self;
    fn object(&self) -> Result<&Self, &str> {
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use kube::core::ObjectList;
    use serde_json::json;

    #[test]
    fn one_malformed_object_does_not_spoil_the_list() {
        let list = json!({
            "apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "7"},
            "items": [
                {"metadata": {"name": "good", "uid": "u1"}, "spec": {"unschedulable": true}},
                {"metadata": {"name": "bad", "uid": "u2"}, "spec": {"unschedulable": "yes"}},
            ]
        });
        let typed: Result<ObjectList<Node>, _> = serde_json::from_value(list.clone());
        assert!(typed.is_err(), "a typed list fails as a whole");
        let lenient: ObjectList<Lenient<Node>> = serde_json::from_value(list).unwrap();
        assert_eq!(lenient.items.len(), 2);
        assert!(lenient.items[0].object().is_ok());
        let bad = &lenient.items[1];
        assert_eq!(bad.meta().name.as_deref(), Some("bad"));
        assert_eq!(bad.meta().uid.as_deref(), Some("u2"));
        let why = bad.object().unwrap_err();
        assert!(why.contains("spec.unschedulable"), "{why}");
    }

    #[test]
    fn wrong_types_anywhere_become_malformed() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [],
            "terminationGracePeriodSeconds": "thirty"}});
        let p: Lenient<Pod> = serde_json::from_value(pod).unwrap();
        assert!(
            p.object()
                .unwrap_err()
                .contains("terminationGracePeriodSeconds")
        );
        assert_eq!(Lenient::<Pod>::plural(&()), "pods");
    }
}
