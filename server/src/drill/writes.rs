//! A drill's writes to the cluster, as the user: the node's cordon, labels, taints and drill
//! annotations (JSON merge patches), Warning events on the node, evictions, and the restore
//! an abort makes. Each carries spotboard's drill annotation (`labels::DRILL`).

use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Event, EventSource, Node, ObjectReference, Pod, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use spotboard_core::Provider;
use spotboard_core::domain::preemption::drill::{self, LabelValue, Pods};
use spotboard_core::labels;
use spotboard_core::model::DrillRefusal;

use crate::create::FIELD_MANAGER;

/// A write that failed: what was being done, and the API server's answer (its HTTP status,
/// or none when it could not be reached). Not the crate's `Error`: it becomes a line of the
/// drill's log or a refusal sent to the person, never a reason to stop spotboard.
#[derive(Debug)]
pub struct WriteError {
    verb: String,
    /// The API server's status code; `None`: not reached, or an unreadable answer.
    code: Option<u16>,
    message: String,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.code {
            Some(code) => write!(f, "{}: refused ({code}): {}", self.verb, self.message),
            None => write!(f, "{}: {}", self.verb, self.message),
        }
    }
}

impl WriteError {
    fn of(verb: &str, e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) => WriteError {
                verb: verb.into(),
                code: Some(s.code),
                message: s.message.clone(),
            },
            e => WriteError {
                verb: verb.into(),
                code: None,
                message: e.to_string(),
            },
        }
    }

    /// How a request refused by this write is answered.
    pub fn refusal(&self) -> DrillRefusal {
        match self.code {
            Some(403) => DrillRefusal::Forbidden,
            Some(404) => DrillRefusal::NotFound,
            Some(409) => DrillRefusal::Conflict,
            _ => DrillRefusal::Upstream,
        }
    }

    /// Whether a PodDisruptionBudget refused an eviction (429, Kubernetes: API-initiated
    /// Eviction).
    pub fn budget_refused(&self) -> bool {
        // Not the API server's own throttling, also a 429.
        self.code == Some(429) && self.message.contains("disruption budget")
    }

    /// The API server's message alone.
    pub fn message(&self) -> &str {
        &self.message
    }
}

pub type WriteResult<T> = std::result::Result<T, WriteError>;

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    }
}

async fn merge(client: &kube::Client, node: &str, body: &Value, verb: &str) -> WriteResult<()> {
    Api::<Node>::all(client.clone())
        .patch(node, &patch_params(), &Patch::Merge(body))
        .await
        .map(|_| ())
        .map_err(|e| WriteError::of(verb, e))
}

/// Cordons the node and marks it a drill (`labels::DRILL`, `labels::DRILL_BY`).
pub async fn cordon(
    client: &kube::Client,
    node: &str,
    t0: DateTime<Utc>,
    by: &str,
) -> WriteResult<()> {
    let body = json!({
        "metadata": {"annotations": {labels::DRILL: t0.to_rfc3339(), labels::DRILL_BY: by}},
        "spec": {"unschedulable": true},
    });
    merge(client, node, &body, "cordon the node").await
}

/// Sets a node label.
pub async fn label(
    client: &kube::Client,
    node: &str,
    key: &str,
    value: LabelValue,
    now: DateTime<Utc>,
) -> WriteResult<()> {
    let value = match value {
        LabelValue::True => "true".to_string(),
        LabelValue::Now => drill::label_time(now),
    };
    let body = json!({"metadata": {"labels": {key: value}}});
    merge(client, node, &body, &format!("label the node {key}")).await
}

/// Times a taint list is read and written again when another writer changed the node in
/// between (409).
const TAINT_TRIES: u32 = 4;

/// Rewrites the node's taints with `change`, beside the merge patch `extra`: read, changed,
/// and the whole list written back (a merge patch replaces lists) with the read's
/// `resourceVersion`, so a taint another writer added meanwhile is not lost: a 409 reads
/// again, up to [`TAINT_TRIES`] times.
async fn retaint(
    client: &kube::Client,
    node: &str,
    mut extra: Value,
    change: impl Fn(&mut Vec<Taint>),
    verb: &str,
) -> WriteResult<()> {
    let api = Api::<Node>::all(client.clone());
    let mut last = None;
    for _ in 0..TAINT_TRIES {
        let n = api
            .get(node)
            .await
            .map_err(|e| WriteError::of("read the node", e))?;
        let mut ts = n.spec.and_then(|s| s.taints).unwrap_or_default();
        change(&mut ts);
        extra["metadata"]["resourceVersion"] = json!(n.metadata.resource_version);
        extra["spec"]["taints"] = json!(ts);
        match merge(client, node, &extra, verb).await {
            Err(e) if e.code == Some(409) => last = Some(e),
            done => return done,
        }
    }
    Err(last.unwrap_or_else(|| WriteError {
        verb: verb.into(),
        code: Some(409),
        message: "the node kept changing".into(),
    }))
}

/// Adds a `NoSchedule` taint `key`.
pub async fn taint(client: &kube::Client, node: &str, key: &str) -> WriteResult<()> {
    retaint(
        client,
        node,
        json!({}),
        |ts| {
            if !ts.iter().any(|t| t.key == key) {
                ts.push(Taint {
                    key: key.into(),
                    effect: "NoSchedule".into(),
                    ..Default::default()
                });
            }
        },
        &format!("taint the node {key}"),
    )
    .await
}

/// A Warning event on the node, marked a drill.
pub async fn event(
    client: &kube::Client,
    node: &str,
    reason: &str,
    message: &str,
    now: DateTime<Utc>,
) -> WriteResult<()> {
    let stamp = k8s_openapi::jiff::Timestamp::from_second(now.timestamp())
        .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now());
    let e = Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{node}.drill-")),
            namespace: Some("default".into()),
            annotations: Some([(labels::DRILL.to_string(), now.to_rfc3339())].into()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.into()),
            ..Default::default()
        },
        reason: Some(reason.into()),
        message: Some(message.into()),
        type_: Some("Warning".into()),
        count: Some(1),
        first_timestamp: Some(Time(stamp)),
        last_timestamp: Some(Time(stamp)),
        source: Some(EventSource {
            component: Some("spotboard-drill".into()),
            host: None,
        }),
        ..Default::default()
    };
    Api::<Event>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &e)
        .await
        .map(|_| ())
        .map_err(|e| WriteError::of("create an event", e))
}

/// A pod an eviction step takes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodName {
    pub namespace: String,
    pub name: String,
}

/// The node's pods `which` takes: DaemonSet pods and mirror pods are left alone, as `kubectl
/// drain` leaves them; finished pods are not asked.
pub async fn pods_to_evict(
    client: &kube::Client,
    node: &str,
    which: Pods,
) -> WriteResult<Vec<PodName>> {
    let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let pods = Api::<Pod>::all(client.clone())
        .list(&lp)
        .await
        .map_err(|e| WriteError::of("list the node's pods", e))?;
    let mut out: Vec<PodName> = pods
        .items
        .into_iter()
        .filter(|p| {
            let daemon = p
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "DaemonSet");
            let mirror = p
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
            let finished = p
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .is_some_and(|ph| ph == "Succeeded" || ph == "Failed");
            let system = p
                .spec
                .as_ref()
                .and_then(|s| s.priority_class_name.as_deref())
                .is_some_and(|c| c.starts_with("system-"));
            let wanted = match which {
                Pods::All => true,
                Pods::Ordinary => !system,
                Pods::System => system,
            };
            !daemon && !mirror && !finished && wanted
        })
        .map(|p| PodName {
            namespace: p.metadata.namespace.unwrap_or_default(),
            name: p.metadata.name.unwrap_or_default(),
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Asks to evict `pod` (budgets respected); `dry_run` asks the API server what it would say.
pub async fn evict(client: &kube::Client, pod: &PodName, dry_run: bool) -> WriteResult<()> {
    let params = EvictParams {
        post_options: PostParams {
            dry_run,
            field_manager: None,
        },
        ..Default::default()
    };
    Api::<Pod>::namespaced(client.clone(), &pod.namespace)
        .evict(&pod.name, &params)
        .await
        .map(|_| ())
        .map_err(|e| WriteError::of(&format!("evict {}/{}", pod.namespace, pod.name), e))
}

/// The provider's notice taint, if it signals with one.
fn notice_taint(provider: Provider) -> Option<&'static str> {
    match provider {
        Provider::Gke => Some(labels::GKE_TERMINATION_TAINT),
        Provider::Karpenter => Some(labels::KARPENTER_DISRUPTED_TAINT),
        Provider::Cks | Provider::Unknown => None,
    }
}

/// Removes the drill's notice (the provider's labels or taint) and its annotations, and sets
/// `spec.unschedulable` to `cordoned` (`None` removes it: uncordoned).
async fn clear(
    client: &kube::Client,
    node: &str,
    provider: Provider,
    cordoned: Option<bool>,
    verb: &str,
) -> WriteResult<()> {
    let body = json!({
        "metadata": {
            "annotations": {labels::DRILL: null, labels::DRILL_BY: null},
            "labels": {labels::PENDING_PREEMPTION: null, labels::EVICTED_AT: null},
        },
        "spec": {"unschedulable": cordoned},
    });
    match notice_taint(provider) {
        Some(key) => retaint(client, node, body, |ts| ts.retain(|t| t.key != key), verb).await,
        None => merge(client, node, &body, verb).await,
    }
}

/// The end of a drill's window: the notice and the drill's marks come off, the cordon stays
/// for the node's owner to delete or uncordon (spotboard deletes no node).
pub async fn end_notice(client: &kube::Client, node: &str, provider: Provider) -> WriteResult<()> {
    clear(client, node, provider, Some(true), "end the drill's notice").await
}

/// Undoes a drill: uncordons the node, removes the provider's notice labels or taint and the
/// drill's annotations. Safe to repeat.
pub async fn restore(client: &kube::Client, node: &str, provider: Provider) -> WriteResult<()> {
    clear(client, node, provider, None, "restore the node").await
}
