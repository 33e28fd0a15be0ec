//! Kubernetes events as CoreWeave's controllers write them: core `v1` `Event` objects, in
//! namespace `default` for cluster-scoped objects (Nodes, NodePools), as Kubernetes does, so
//! `kubectl events` and `kubectl describe nodepool` show them.
//!
//! Reasons: the CW* events of the "Events" table of CoreWeave: Node Pool reference from the
//! `nodepool-operator`, and the three preemption reasons of CoreWeave: Spot Node Pools
//! (`Preemption pending`, `Preemption in progress`, `Deleted for preemption`) from the
//! `preemption-controller`. A repeat of the same reason and message for
//! the same object bumps `count` and `lastTimestamp` instead of making a new object, like the
//! client-go recorder.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::Utc;
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;

use super::clock::{rfc3339, to_time};

/// Distinct events remembered for aggregation.
const MAX_REMEMBERED: usize = 4096;

/// Namespace of events about cluster-scoped objects.
pub const EVENT_NAMESPACE: &str = "default";

/// The controller an event comes from (`source.component` and `reportingComponent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    /// CoreWeave's NodePool operator (CW* events; CoreWeave: Node Pool reference).
    NodePoolOperator,
    /// CoreWeave's Spot preemption (CoreWeave: Spot Node Pools).
    PreemptionController,
    /// Karpenter's interruption handling (Karpenter: Disruption), in the embedded Karpenter
    /// zones.
    Karpenter,
}

impl Component {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NodePoolOperator => "nodepool-operator",
            Self::PreemptionController => "preemption-controller",
            Self::Karpenter => "karpenter",
        }
    }
}

/// `Normal` or `Warning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    Normal,
    Warning,
}

/// The object an event is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Involved {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
}

impl Involved {
    /// A reference to any object with its type's apiVersion and kind.
    pub fn of<K: Resource<DynamicType = ()>>(obj: &K) -> Self {
        Self {
            api_version: K::api_version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            name: obj.name_any(),
            uid: obj.uid().unwrap_or_default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    uid: String,
    name: String,
    reason: String,
    message: String,
}

/// Writes events through the API, aggregating repeats.
pub struct Recorder {
    api: Api<Event>,
    host: String,
    seen: Mutex<HashMap<Key, (String, i32)>>,
}

impl Recorder {
    /// A recorder for one zone; `host` is `source.host`/`reportingInstance` (the zone).
    pub fn new(client: Client, host: &str) -> Self {
        Self {
            api: Api::namespaced(client, EVENT_NAMESPACE),
            host: host.to_string(),
            seen: Mutex::new(HashMap::new()),
        }
    }

    /// Records one event. Failures are logged, never returned: a lost event must not stop
    /// the behaviour it describes.
    pub async fn record(
        &self,
        about: &Involved,
        severity: Severity,
        reason: &str,
        message: &str,
        from: Component,
    ) {
        let key = Key {
            uid: about.uid.clone(),
            name: about.name.clone(),
            reason: reason.to_string(),
            message: message.to_string(),
        };
        let repeat = {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            seen.get_mut(&key).map(|(name, count)| {
                *count += 1;
                (name.clone(), *count)
            })
        };
        let result = match repeat {
            Some((name, count)) => {
                let patch = json!({"count": count, "lastTimestamp": rfc3339(Utc::now())});
                self.api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ())
            }
            None => {
                let event = self.event(about, severity, reason, message, from);
                let name = event.metadata.name.clone().unwrap_or_default();
                let created = self.api.create(&PostParams::default(), &event).await;
                if created.is_ok() {
                    let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
                    // Most messages name a node or a time and never repeat; forgetting them
                    // all now and then keeps a long run's memory flat.
                    if seen.len() >= MAX_REMEMBERED {
                        seen.clear();
                    }
                    seen.insert(key, (name, 1));
                }
                created.map(|_| ())
            }
        };
        if let Err(e) = result {
            tracing::warn!(reason, object = %about.name, "recording event: {e}");
        }
    }

    fn event(
        &self,
        about: &Involved,
        severity: Severity,
        reason: &str,
        message: &str,
        from: Component,
    ) -> Event {
        let now = Utc::now();
        // client-go names events `<object>.<hex nanoseconds>`; unique enough per object.
        let name = format!(
            "{}.{:x}",
            about.name,
            now.timestamp_nanos_opt().unwrap_or_default() as u64
        );
        Event {
            metadata: kube::api::ObjectMeta {
                name: Some(name),
                namespace: Some(EVENT_NAMESPACE.into()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some(about.api_version.clone()),
                kind: Some(about.kind.clone()),
                name: Some(about.name.clone()),
                uid: Some(about.uid.clone()),
                ..Default::default()
            },
            reason: Some(reason.into()),
            message: Some(message.into()),
            type_: Some(
                match severity {
                    Severity::Normal => "Normal",
                    Severity::Warning => "Warning",
                }
                .into(),
            ),
            count: Some(1),
            first_timestamp: Some(to_time(now)),
            last_timestamp: Some(to_time(now)),
            source: Some(EventSource {
                component: Some(from.as_str().into()),
                host: Some(self.host.clone()),
            }),
            reporting_component: Some(from.as_str().into()),
            reporting_instance: Some(self.host.clone()),
            ..Default::default()
        }
    }
}
