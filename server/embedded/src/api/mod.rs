//! The embedded Kubernetes API server: one per simulated zone, on 127.0.0.1 with an
//! ephemeral port, plain HTTP and bearer tokens (in the `Authorization` header, or for
//! kubectl in the server URL's path: see [`auth::TOKEN_PATH`]). kube-rs and real kubectl
//! talk to it with no extra flags. It knows nothing of CoreWeave; the behaviour model drives it through
//! kube-rs like any controller, and registers what a vendor adds at start: custom resources
//! from their CRDs ([`ApiServer::start_with`]) and read-only JSON routes
//! ([`ApiServer::serve_json`]).
//!
//! Served: core v1 `namespaces`, `nodes`, `pods`, `events`; `policy/v1`
//! `poddisruptionbudgets`; `coordination.k8s.io/v1` `leases` (leader election, with 409 on a
//! stale resourceVersion); `apiextensions.k8s.io/v1` `customresourcedefinitions` (read-only,
//! the CRDs registered at start); each registered custom resource (with `/status` when its
//! CRD declares it). Verbs: get, list (paged, label and field selectors),
//! watch (resumable, bookmarks, `410 Gone`), create (`dryRun`, `generateName`), update,
//! patch (JSON, merge, strategic-as-merge, apply-as-merge), delete (graceful for bound
//! pods, finalizers), deletecollection; pods' `eviction` (PodDisruptionBudgets enforced). Discovery, OpenAPI and `Table` output for kubectl.
//!
//! # Layout
//! - [`resources`]: the served kinds and what discovery and storage know of each.
//! - [`store`]: objects per kind, the resourceVersion counter, reads and writes; [`stored`]
//!   how one object is kept (JSON bytes and an index); [`packing`] the per-kind compression
//!   of that JSON; [`history`] the bounded change log
//!   watches replay; [`object`] metadata rules on create and update; [`deletion`] graceful
//!   deletion and finalizers; [`patch`] the patch formats; [`paging`] `limit`/`continue`;
//!   [`selectors`] label and field selectors; [`loader`] seeding's writes that skip HTTP.
//! - [`watch`]: watch streams.
//! - [`table`], [`printers`], [`pod_printer`], [`age`], [`jsonpath`]: `Table` output for
//!   `kubectl get`.
//! - [`discovery`], [`openapi`], [`validation`]: what kubectl reads before it acts.
//! - [`routes`], [`auth`], [`request`], [`handlers`], [`responses`], [`status`]: HTTP.

mod access_review;
mod age;
mod auth;
mod deletion;
mod discovery;
mod eviction;
mod handlers;
mod history;
mod jsonpath;
mod loader;
mod object;
mod openapi;
mod packing;
mod paging;
mod patch;
mod pod_printer;
mod printers;
mod request;
mod resources;
mod responses;
mod routes;
mod selectors;
mod status;
mod store;
mod stored;
mod table;
mod validation;
mod watch;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::{Error, Result};

pub use auth::url_with_token;
pub use history::DEFAULT_HISTORY;
pub use loader::Loader;
pub(crate) use status::ApiError;
pub use watch::ReaderFault;

/// The two bearer tokens an API server accepts.
#[derive(Clone, Debug)]
pub struct Tokens {
    /// May do everything.
    pub admin: String,
    /// May get, list and watch (and read discovery and OpenAPI), and write Leases: the
    /// read-only ClusterRole plus the leader-election Role spotboard ships.
    pub reader: String,
}

impl Tokens {
    /// Two random 128-bit tokens, hex-encoded.
    pub fn generate() -> Self {
        let mut rng = rand::rng();
        let mut hex = || {
            let bytes: [u8; 16] = rng.random();
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        };
        Self {
            admin: hex(),
            reader: hex(),
        }
    }
}

/// Tunables of an API server; tests shorten them to see bookmarks and `410 Gone` quickly.
#[derive(Clone, Debug)]
pub struct ApiOptions {
    /// Changes kept per kind for resuming watches (see [`DEFAULT_HISTORY`]).
    pub history_limit: usize,
    /// Time between `BOOKMARK` events on watches that allow them.
    pub bookmark_interval: Duration,
}

impl Default for ApiOptions {
    fn default() -> Self {
        Self {
            history_limit: DEFAULT_HISTORY,
            // Often enough to keep kube-rs' idle timeout (290 s + margin) far away, rarely
            // enough to be noise.
            bookmark_interval: Duration::from_secs(30),
        }
    }
}

/// State shared by the handlers of one API server.
struct Shared {
    store: Arc<store::Store>,
    tokens: Tokens,
    /// While true every request is answered 503 and open watches end.
    outage: tokio::sync::watch::Sender<bool>,
    /// Set when the server is dropped, ending open watches.
    shutdown: tokio::sync::watch::Sender<bool>,
    /// The fault suite's switch for the reader's requests and watches.
    reader_fault: tokio::sync::watch::Sender<watch::ReaderFault>,
    /// Never changes: the administrator's requests are never faulted.
    no_fault: tokio::sync::watch::Sender<watch::ReaderFault>,
    /// Bumped to end every open watch with `410 Expired`.
    expire: tokio::sync::watch::Sender<u64>,
    /// Whether streaming lists (`sendInitialEvents=true`, the WatchList feature, on by default
    /// since Kubernetes 1.32) are served; off, they are refused as an API server with the
    /// feature gate off refuses them. For the tests of the client's fallback.
    watch_list: std::sync::atomic::AtomicBool,
    /// Streaming-list watches served so far.
    streaming_lists: std::sync::atomic::AtomicU64,
    options: ApiOptions,
    addr: SocketAddr,
    /// Read-only JSON routes the behaviour model added ([`ApiServer::serve_json`]), by path.
    extra: std::sync::RwLock<Vec<(String, JsonFn)>>,
    /// Held across an eviction's budget check and its delete, so two evictions cannot both
    /// spend a budget's last allowed disruption.
    evictions: std::sync::Mutex<()>,
    /// Built on first request: the documents cover every served kind, so they are made once.
    openapi: std::sync::OnceLock<openapi::OpenApi>,
}

/// Produces a JSON document on each request (see [`ApiServer::serve_json`]).
pub type JsonFn = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

impl Shared {
    fn openapi(&self) -> &openapi::OpenApi {
        self.openapi
            .get_or_init(|| openapi::OpenApi::new(&self.store.kinds()))
    }

    /// The extra route at `path`, if the behaviour model registered one.
    fn extra(&self, path: &str) -> Option<JsonFn> {
        self.extra
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, f)| f.clone())
    }

    fn stops(&self, user: Option<auth::User>) -> watch::Stops {
        let fault = match user {
            Some(auth::User::Reader) => &self.reader_fault,
            _ => &self.no_fault,
        };
        watch::Stops {
            outage: self.outage.subscribe(),
            shutdown: self.shutdown.subscribe(),
            fault: fault.subscribe(),
            expire: self.expire.subscribe(),
        }
    }
}

/// A running API server. Dropping it stops serving and ends its open watches.
pub struct ApiServer {
    zone: String,
    url: String,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl ApiServer {
    /// Binds 127.0.0.1 on an ephemeral port and serves an empty cluster (default namespaces,
    /// built-in kinds only) for `zone`. Errors: binding the port.
    pub async fn start(zone: &str, tokens: Tokens) -> Result<Self> {
        Self::start_with(zone, tokens, ApiOptions::default(), &[]).await
    }

    /// [`ApiServer::start`] with explicit options, also serving the custom resources that
    /// `crds` (`apiextensions.k8s.io/v1` `CustomResourceDefinition` objects) define.
    ///
    /// Errors: binding the port; [`Error::BadCrd`] for a CRD that does not say what
    /// discovery needs (group, names, scope, a version).
    pub async fn start_with(
        zone: &str,
        tokens: Tokens,
        options: ApiOptions,
        crds: &[serde_json::Value],
    ) -> Result<Self> {
        let custom = crds
            .iter()
            .map(|crd| {
                resources::Kind::from_crd(crd).map_err(|reason| Error::BadCrd {
                    zone: zone.to_string(),
                    reason,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let bind = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let listener = TcpListener::bind(bind)
            .await
            .map_err(|source| Error::Bind { addr: bind, source })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("reading the embedded API server's address", e))?;
        let shared = Arc::new(Shared {
            store: Arc::new(store::Store::new(options.history_limit, &custom)),
            tokens,
            outage: tokio::sync::watch::channel(false).0,
            shutdown: tokio::sync::watch::channel(false).0,
            reader_fault: tokio::sync::watch::channel(watch::ReaderFault::None).0,
            no_fault: tokio::sync::watch::channel(watch::ReaderFault::None).0,
            expire: tokio::sync::watch::channel(0).0,
            watch_list: std::sync::atomic::AtomicBool::new(true),
            streaming_lists: std::sync::atomic::AtomicU64::new(0),
            options,
            addr,
            extra: std::sync::RwLock::new(Vec::new()),
            evictions: std::sync::Mutex::new(()),
            openapi: std::sync::OnceLock::new(),
        });
        let app = axum::ServiceExt::<axum::extract::Request>::into_make_service(routes::app(
            shared.clone(),
        ));
        let zone_name = zone.to_string();
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(zone = %zone_name, error = %e, "embedded API server stopped");
            }
        });
        tracing::info!(zone, %addr, "embedded API server listening");
        Ok(Self {
            zone: zone.to_string(),
            url: format!("http://{addr}"),
            shared,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The zone this server plays.
    pub fn zone(&self) -> &str {
        &self.zone
    }

    /// Writes into this server's store without HTTP, for seeding (see [`Loader`]).
    pub fn loader(&self) -> Loader {
        Loader::new(self.shared.store.clone())
    }

    /// Serves `document()` at `GET {path}` from now on, to any authenticated user (a
    /// vendor's extra endpoint, such as a zone's capacity feed). `path` must start with `/`
    /// and not be under `/api` or `/apis`; registering a path again replaces its function.
    pub fn serve_json(&self, path: &str, document: JsonFn) {
        debug_assert!(path.starts_with('/') && !path.starts_with("/api"));
        let mut extra = self.shared.extra.write().unwrap_or_else(|p| p.into_inner());
        extra.retain(|(p, _)| p != path);
        extra.push((path.to_string(), document));
    }

    /// Starts or ends a simulated outage: while on, every request gets `503` and open
    /// watches end, so clients see their data go stale.
    pub fn set_outage(&self, on: bool) {
        self.shared.outage.send_replace(on);
    }

    /// Applies `fault` to the reader's requests and watches (spotboard's own account) while
    /// the administrator keeps working. For the fault suite; no request can set it.
    pub fn set_reader_fault(&self, fault: watch::ReaderFault) {
        self.shared.reader_fault.send_replace(fault);
    }

    /// Serves streaming lists (`true`, the default) or refuses them with 422, as an API
    /// server without the WatchList feature does. For the tests of the client's fallback.
    pub fn set_watch_list(&self, on: bool) {
        self.shared
            .watch_list
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many streaming-list watches (`sendInitialEvents=true`) this server has served.
    pub fn streaming_lists_served(&self) -> u64 {
        self.shared
            .streaming_lists
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Ends every open watch with `410 Expired`, as a real API server does when its watch
    /// cache no longer reaches a watcher's resourceVersion. For the fault suite.
    pub fn expire_watches(&self) {
        self.shared.expire.send_modify(|n| *n += 1);
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shared.shutdown.send_replace(true);
        self.task.abort();
    }
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("zone", &self.zone)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}
