//! The watch tasks of one cluster: one kube-rs watcher per kind, and a probe.

use std::{
    fmt::Debug,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Event, Namespace, Node};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ApiResource, DynamicObject},
    runtime::{WatchStreamExt, watcher},
};
use serde::de::DeserializeOwned;
use spotboard_core::{model::LinkState, nodepool::NodePool};
use tokio::task::JoinHandle;

use crate::hub::Hub;

use super::{
    lenient::{Lenient, Watched},
    records::Observed,
    slim_pod::SlimPod,
    trim,
};

/// A cluster to watch.
#[derive(Clone)]
pub struct ClusterSource {
    /// Name shown in the dashboard (the kubeconfig context).
    pub name: String,
    /// The zone, when known from configuration (embedded zones); else derived from nodes.
    pub zone: Option<String>,
    /// A client with the server's own, read-only identity.
    pub client: Client,
}

/// How often each cluster is probed for reachability.
const PROBE_EVERY: Duration = Duration::from_secs(2);
/// How long after a watch error a cluster stays stale even if it answers probes, so the
/// watchers' backoff has time to re-establish before the badge says "live".
const SETTLE_AFTER_ERROR: Duration = Duration::from_secs(3);

type LastError = Arc<Mutex<Option<Instant>>>;

/// Starts the watchers and the probe of one cluster. Dropping the handles does not stop
/// them; abort them to stop.
pub fn spawn_cluster(hub: Hub, src: ClusterSource) -> Vec<JoinHandle<()>> {
    let last_error: LastError = Arc::default();
    let c = &src.client;
    let pools = Api::<DynamicObject>::all_with(c.clone(), &ApiResource::erase::<NodePool>(&()));
    vec![
        tokio::spawn(watch_pools(
            hub.clone(),
            src.clone(),
            pools,
            last_error.clone(),
        )),
        tokio::spawn(watch(
            hub.clone(),
            src.name.clone(),
            Api::<Lenient<Node>>::all(c.clone()),
            trim::node,
            Hub::nodes,
            Some(last_error.clone()),
        )),
        tokio::spawn(watch(
            hub.clone(),
            src.name.clone(),
            Api::<Lenient<SlimPod>>::all(c.clone()),
            trim::pod,
            Hub::pods,
            Some(last_error.clone()),
        )),
        tokio::spawn(watch(
            hub.clone(),
            src.name.clone(),
            Api::<Lenient<Event>>::all(c.clone()),
            trim::event,
            Hub::events,
            Some(last_error.clone()),
        )),
        // Optional: a read-only account without `namespaces` still shows everything but the
        // teams named on namespaces.
        tokio::spawn(watch(
            hub.clone(),
            src.name.clone(),
            Api::<Lenient<Namespace>>::all(c.clone()),
            trim::namespace,
            Hub::namespaces,
            None,
        )),
        tokio::spawn(watch_karpenter(hub.clone(), src.clone())),
        tokio::spawn(watch_kueue(hub.clone(), src.clone())),
        tokio::spawn(probe(hub, src, last_error)),
    ]
}

/// Karpenter's NodePool group and version (Karpenter: NodePools).
pub const KARPENTER_GV: &str = "karpenter.sh/v1";

/// Kueue's group and version (Kueue: API reference, `kueue.x-k8s.io/v1beta1`).
pub const KUEUE_GV: &str = "kueue.x-k8s.io/v1beta1";

/// How often a cluster without an optional kind (Karpenter's, Kueue's) is asked again
/// whether it serves it now.
const OPTIONAL_RECHECK: Duration = Duration::from_secs(300);

/// An optional kind of `gv` (group/version) named by its `plural`, e.g. `nodepools`.
fn optional(gv: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = gv.split_once('/').unwrap_or(("", gv));
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: gv.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Waits until the cluster serves `plural` of `gv` and lets the server's account list it.
/// Most clusters do not serve Karpenter or Kueue: they are asked again every
/// [`OPTIONAL_RECHECK`], quietly (one info line when served but not readable), and nothing
/// of the kind is shown meanwhile.
async fn until_served(src: &ClusterSource, gv: &str, ar: &ApiResource, what: &str) {
    let api = Api::<DynamicObject>::all_with(src.client.clone(), ar);
    // Served and readable: discovery is open to everyone, the list needs the RBAC rule.
    loop {
        let served = match src.client.list_api_group_resources(gv).await {
            Ok(list) => list.resources.iter().any(|r| r.name == ar.plural),
            Err(kube::Error::Api(_)) => false,
            Err(_) => {
                // Unreachable: the probe reports it; try again soon.
                tokio::time::sleep(PROBE_EVERY).await;
                continue;
            }
        };
        if served {
            match api.list(&kube::api::ListParams::default().limit(1)).await {
                Ok(_) => return,
                Err(e) => tracing::info!(cluster = %src.name, error = %e, kind = %ar.plural,
                    "{what}: served but not readable"),
            }
        }
        tokio::time::sleep(OPTIONAL_RECHECK).await;
    }
}

/// The Karpenter NodePool watch, where the cluster serves `karpenter.sh/v1`; without it,
/// Karpenter pools (if any) are still shown from the nodes' `karpenter.sh/nodepool` label.
async fn watch_karpenter(hub: Hub, src: ClusterSource) {
    let ar = optional(KARPENTER_GV, "NodePool", "nodepools");
    until_served(
        &src,
        KARPENTER_GV,
        &ar,
        "Karpenter NodePools (their pools show from node labels)",
    )
    .await;
    let api = Api::<DynamicObject>::all_with(src.client.clone(), &ar);
    watch(
        hub,
        src.name,
        api,
        trim::karpenter_pool,
        Hub::karpenter_pools,
        None,
    )
    .await
}

/// The four Kueue watches (ResourceFlavors, ClusterQueues, LocalQueues, Workloads), once the
/// cluster serves Kueue's Workloads. A cluster without Kueue shows none of it and logs
/// nothing above info; Kueue's failures never make the cluster stale.
async fn watch_kueue(hub: Hub, src: ClusterSource) {
    let ar = |kind: &str, plural: &str| optional(KUEUE_GV, kind, plural);
    until_served(&src, KUEUE_GV, &ar("Workload", "workloads"), "Kueue").await;
    let api = |kind: &str, plural: &str| {
        Api::<DynamicObject>::all_with(src.client.clone(), &ar(kind, plural))
    };
    let c = || src.name.clone();
    futures::join!(
        watch(
            hub.clone(),
            c(),
            api("ResourceFlavor", "resourceflavors"),
            trim::kueue::flavor,
            Hub::kueue,
            None,
        ),
        watch(
            hub.clone(),
            c(),
            api("ClusterQueue", "clusterqueues"),
            trim::kueue::cluster_queue,
            Hub::kueue,
            None,
        ),
        watch(
            hub.clone(),
            c(),
            api("LocalQueue", "localqueues"),
            trim::kueue::local_queue,
            Hub::kueue,
            None,
        ),
        watch(
            hub.clone(),
            c(),
            api("Workload", "workloads"),
            trim::kueue::workload,
            Hub::kueue,
            None,
        ),
    );
}

/// The NodePool watch, after checking that the cluster serves the CRD at all: a cluster
/// without it gets a clear message instead of a watch failing forever.
async fn watch_pools(hub: Hub, src: ClusterSource, api: Api<DynamicObject>, last_error: LastError) {
    let gv = format!(
        "{}/{}",
        spotboard_core::nodepool::GROUP,
        spotboard_core::nodepool::VERSION
    );
    // Said once: a GKE or Karpenter cluster never has the CRD, and asking again every 30 s is
    // not news.
    let mut told = false;
    loop {
        let discovery = src.client.list_api_group_resources(&gv).await;
        match discovery {
            Ok(ref list) if list.resources.iter().any(|r| r.name == "nodepools") => {
                hub.set_note(&src.name, None);
                break;
            }
            // Only "not found" means not installed; a 5xx, a 429 or a timeout says nothing
            // about the CRD, and an empty list here would mark NodePools listed when they
            // were not.
            Ok(_) | Err(kube::Error::Api(_)) if crd_absent(&discovery) => {
                let msg = format!(
                    "no CoreWeave NodePools here: the NodePool CRD ({gv}) is not installed. GKE \
                     node pools and Karpenter NodePools are shown from their nodes' labels. To \
                     watch CKS NodePools anyway: spotboard crd | kubectl apply -f -"
                );
                if !told {
                    tracing::info!(cluster = %src.name, "{msg}");
                    told = true;
                }
                hub.pools(&src.name, Observed::Resync(Vec::new()));
                hub.set_note(&src.name, Some(msg));
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
            _ => {
                let e = discovery.err().map(|e| e.to_string()).unwrap_or_default();
                tracing::warn!(cluster = %src.name, error = %e, "NodePool discovery failed; retrying");
                *last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                hub.set_link(
                    &src.name,
                    LinkState::Stale,
                    Some(format!("NodePool discovery: {e}")),
                );
                tokio::time::sleep(PROBE_EVERY).await;
            }
        }
    }
    watch(hub, src.name, api, trim::pool, Hub::pools, Some(last_error)).await
}

/// Whether a discovery answer says the NodePool CRD is not installed: the group is served
/// without `nodepools`, or the API server answered 404 for the group.
fn crd_absent(
    discovery: &Result<
        k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList,
        kube::Error,
    >,
) -> bool {
    match discovery {
        Ok(list) => !list.resources.iter().any(|r| r.name == "nodepools"),
        Err(kube::Error::Api(status)) => status.code == 404,
        Err(_) => false,
    }
}

/// Whether a watch error is the routine end of a watch: 410 Gone (the API server's history
/// no longer reaches the watch's resourceVersion). kube-rs relists by itself; the data is
/// not stale, so the cluster's badge must not say so.
pub fn is_routine(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::WatchError(status) => status.code == 410,
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 410,
        _ => false,
    }
}

/// How long a streaming list may go without an event before its end bookmark: an API server
/// that ignores `sendInitialEvents` (older than the WatchList feature) sends the objects and
/// then nothing, and the list would never end.
const STREAMING_LIST_IDLE: Duration = Duration::from_secs(30);

/// Whether a watch error is the API server refusing a streaming list: 422 or 400 naming
/// `sendInitialEvents` (kube-apiserver with the WatchList feature gate off) or
/// `resourceVersionMatch` (before Kubernetes 1.27, which forbids it on a watch).
pub fn refuses_streaming_list(e: &watcher::Error) -> bool {
    let status = match e {
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status,
        watcher::Error::WatchError(status) => status,
        _ => return false,
    };
    matches!(status.code, 400 | 422)
        && ["sendInitialEvents", "resourceVersionMatch"]
            .iter()
            .any(|field| status.message.contains(field))
}

/// One kind's watch with kube-rs's default backoff on errors: the initial list is a streaming
/// list (`sendInitialEvents=true`: the objects arrive one by one on the watch, so no list
/// response of the whole kind is held at once) where the API server serves it (Kubernetes
/// ≥ 1.32 by default), else a paged LIST: a refusal, or no end bookmark within
/// [`STREAMING_LIST_IDLE`] of quiet, switches this watch to LIST for good, with one info line.
/// Objects are trimmed before the hub sees them; an object that does not trim is skipped,
/// and one that does not decode is skipped with one log line per object and reason.
async fn watch<K, R>(
    hub: Hub,
    cluster: String,
    api: Api<K>,
    trim: fn(&K::Object) -> Option<R>,
    apply: fn(&Hub, &str, Observed<R>),
    // `None` for an optional kind (Karpenter's, Kueue's): its failures never make the cluster
    // stale.
    last_error: Option<LastError>,
) where
    K: Resource + Watched + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let kind = std::any::type_name::<K>()
        .rsplit("::")
        .next()
        .map(|k| k.trim_end_matches('>'))
        .unwrap_or("object");
    let mut streaming = true;
    let mut malformed = Malformed::default();
    loop {
        let config = if streaming {
            watcher::Config::default().streaming_lists()
        } else {
            watcher::Config::default()
        };
        let mut stream = watcher(api.clone(), config).default_backoff().boxed();
        let mut initial: Option<Vec<R>> = None;
        // Until the first list ends, a streaming list the API server accepted (kube-rs says
        // `Init` once the watch call is answered) is watched for a server that ignores it.
        // Not before: kube-rs's backoff between failed attempts may sleep longer than the
        // idle bound, and an unreachable server is no reason to stop streaming.
        let mut listed = false;
        let mut accepted = false;
        loop {
            let next = if streaming && accepted && !listed {
                match tokio::time::timeout(STREAMING_LIST_IDLE, stream.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        tracing::info!(%cluster, kind,
                            "no end of the streaming list after 30 s of quiet; listing with LIST instead");
                        streaming = false;
                        break;
                    }
                }
            } else {
                stream.next().await
            };
            let Some(event) = next else { return };
            // A failed attempt starts again with a new watch call, accepted or not.
            accepted &= event.is_ok();
            match event {
                Ok(watcher::Event::Init) => {
                    initial = Some(Vec::new());
                    accepted = true;
                }
                Ok(watcher::Event::InitApply(obj)) => {
                    let rec = malformed.check(&cluster, kind, &obj).and_then(trim);
                    if let (Some(buf), Some(rec)) = (initial.as_mut(), rec) {
                        buf.push(rec);
                    }
                }
                Ok(watcher::Event::InitDone) => {
                    listed = true;
                    apply(
                        &hub,
                        &cluster,
                        Observed::Resync(initial.take().unwrap_or_default()),
                    );
                }
                Ok(watcher::Event::Apply(obj)) => {
                    match malformed.check(&cluster, kind, &obj).and_then(trim) {
                        Some(rec) => apply(&hub, &cluster, Observed::Apply(rec)),
                        None => tracing::trace!(%cluster, kind, name = %obj.name_any(), "skipped"),
                    }
                }
                Ok(watcher::Event::Delete(obj)) => {
                    if let Some(uid) = obj.uid() {
                        apply(&hub, &cluster, Observed::Delete(uid));
                    }
                }
                Err(e) if streaming && refuses_streaming_list(&e) => {
                    tracing::info!(%cluster, kind,
                        "the API server does not serve streaming lists (WatchList); listing with LIST instead");
                    streaming = false;
                    break;
                }
                Err(e) if is_routine(&e) => {
                    tracing::debug!(%cluster, kind, "watch expired (410 Gone); relisting");
                }
                Err(e) => {
                    tracing::warn!(%cluster, kind, error = %e, "watch failed; retrying with backoff");
                    let Some(last_error) = &last_error else {
                        continue;
                    };
                    *last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                    hub.set_link(
                        &cluster,
                        LinkState::Stale,
                        Some(format!("{kind} watch: {e}")),
                    );
                }
            }
        }
    }
}

/// The malformed objects already reported, so each is logged once per reason, not at every
/// change or relist.
#[derive(Default)]
struct Malformed(std::collections::HashSet<(String, String)>);

impl Malformed {
    /// The object to trim, or `None` (logged the first time) when it does not decode.
    fn check<'a, K: Resource + Watched>(
        &mut self,
        cluster: &str,
        kind: &str,
        obj: &'a K,
    ) -> Option<&'a K::Object> {
        match obj.object() {
            Ok(o) => Some(o),
            Err(why) => {
                let id = obj.meta().uid.clone().unwrap_or_else(|| obj.name_any());
                if self.0.insert((id, why.to_string())) {
                    tracing::warn!(%cluster, kind, name = %obj.name_any(), error = why,
                        "skipped an object that does not decode; the others keep updating");
                }
                None
            }
        }
    }
}

/// Probes the API server; turns the cluster live once every kind is listed and no watch has
/// failed for a moment, and stale when the server stops answering.
async fn probe(hub: Hub, src: ClusterSource, last_error: LastError) {
    let mut tick = tokio::time::interval(PROBE_EVERY);
    loop {
        tick.tick().await;
        match tokio::time::timeout(PROBE_EVERY, src.client.apiserver_version()).await {
            Ok(Ok(_)) => {
                hub.touch(&src.name);
                let settled = last_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .is_none_or(|t| t.elapsed() >= SETTLE_AFTER_ERROR);
                if settled && hub.synced(&src.name) {
                    hub.set_link(&src.name, LinkState::Live, None);
                }
            }
            Ok(Err(e)) => {
                *last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                hub.set_link(
                    &src.name,
                    LinkState::Stale,
                    Some(format!("API server: {e}")),
                );
            }
            Err(_) => {
                *last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                hub.set_link(
                    &src.name,
                    LinkState::Stale,
                    Some("API server did not answer within 2 s".into()),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIResource, APIResourceList};

    fn status(code: u16) -> kube::core::Status {
        kube::core::Status::failure("x", "y").with_code(code)
    }

    #[test]
    fn only_410_is_routine() {
        assert!(is_routine(&watcher::Error::WatchError(status(410).boxed())));
        assert!(is_routine(&watcher::Error::WatchStartFailed(
            kube::Error::Api(status(410).boxed())
        )));
        assert!(!is_routine(&watcher::Error::WatchError(
            status(500).boxed()
        )));
        assert!(!is_routine(&watcher::Error::InitialListFailed(
            kube::Error::Api(status(410).boxed())
        )));
        assert!(!is_routine(&watcher::Error::NoResourceVersion));
    }

    #[test]
    fn only_a_refused_send_initial_events_falls_back_to_list() {
        let refused = |code: u16, message: &str| {
            kube::core::Status::failure(message, "Invalid")
                .with_code(code)
                .boxed()
        };
        let gate_off = "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: \
                        sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled";
        assert!(refuses_streaming_list(&watcher::Error::WatchStartFailed(
            kube::Error::Api(refused(422, gate_off))
        )));
        assert!(refuses_streaming_list(&watcher::Error::WatchError(
            refused(400, gate_off)
        )));
        // Before Kubernetes 1.27 a watch may not name resourceVersionMatch at all.
        assert!(refuses_streaming_list(&watcher::Error::WatchStartFailed(
            kube::Error::Api(refused(
                422,
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: \
                 resourceVersionMatch is forbidden for watch"
            ))
        )));
        // Other refusals are not about streaming lists: RBAC, an expired version, a 422 on
        // something else.
        assert!(!refuses_streaming_list(&watcher::Error::WatchStartFailed(
            kube::Error::Api(refused(403, "forbidden"))
        )));
        assert!(!refuses_streaming_list(&watcher::Error::WatchError(
            refused(410, "too old resource version")
        )));
        assert!(!refuses_streaming_list(&watcher::Error::WatchStartFailed(
            kube::Error::Api(refused(422, "fieldSelector: Invalid value"))
        )));
    }

    #[test]
    fn only_404_or_a_group_without_nodepools_means_not_installed() {
        let served = APIResourceList {
            resources: vec![APIResource {
                name: "nodepools".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(!crd_absent(&Ok(served)));
        assert!(crd_absent(&Ok(APIResourceList::default())));
        assert!(crd_absent(&Err(kube::Error::Api(status(404).boxed()))));
        for transient in [500, 503, 429, 403] {
            assert!(
                !crd_absent(&Err(kube::Error::Api(status(transient).boxed()))),
                "{transient}"
            );
        }
    }
}
