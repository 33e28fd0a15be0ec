//! Wiring: clusters → watchers → hub → HTTP. `main` parses flags and calls [`serve`].

use std::{future::Future, net::SocketAddr, sync::Arc};

use spotboard_core::domain::prices::PriceCatalog;

use leptos::prelude::LeptosOptions;
#[cfg(feature = "embedded")]
use spotboard_embedded::{EmbeddedCluster, EmbeddedOptions, sim::fleet::Flavor};

/// The embedded cluster, in a build with it; a build without it (`--no-default-features`)
/// never has one.
#[cfg(feature = "embedded")]
pub type Embedded = EmbeddedCluster;
#[cfg(not(feature = "embedded"))]
pub type Embedded = std::convert::Infallible;

/// What a build without the embedded cluster says when no cluster was named.
pub fn no_embedded_cluster() -> Error {
    Error::Kubeconfig(
        "this build has no embedded cluster (cargo feature `embedded`): pass --kubeconfig \
         [--context …] or --in-cluster"
            .into(),
    )
}
use tokio::{net::TcpListener, task::JoinHandle};

use crate::{
    Error, Result,
    capacity::{Capacity, FeedSource},
    cli::ServeArgs,
    create::{CreateSettings, Creator, IdentitySettings, WriteTarget},
    http::{self, AllowedHosts, AppState, Auth, GuardSettings, Proxy, Shutdown, StreamSlots},
    hub::Hub,
    leader::{Elector, LeaseConfig},
    ledger::{self, Ledger, Savings},
    preemption::{PreemptionSettings, PreemptionWatch},
    watch::{self, ClusterSource},
};

/// A running dashboard: its address, hub and (by default) embedded cluster. Dropping it
/// stops the watchers and the embedded cluster; the HTTP server stops with `shutdown`.
pub struct Running {
    pub addr: SocketAddr,
    /// Where `--metrics-listen` serves `/metrics` alone, once bound.
    pub metrics_addr: Option<SocketAddr>,
    pub hub: Hub,
    pub embedded: Option<Embedded>,
    /// The drills of this process: the same registry its HTTP route answers from.
    pub drills: Arc<crate::drill::Driller>,
    ledger: Ledger,
    /// The ledger's leader election, when replicas share a PostgreSQL ledger.
    elector: Option<Elector>,
    server: Option<JoinHandle<std::io::Result<()>>>,
    watchers: Vec<JoinHandle<()>>,
}

impl Running {
    /// Waits until the HTTP server stops (after the `shutdown` future passed to [`start`]:
    /// live streams end at once), then writes the ledger's heartbeat, so a next start ends
    /// the nodes that leave meanwhile at the time this one stopped watching.
    ///
    /// Errors: the server failed while serving.
    pub async fn wait(mut self) -> Result<()> {
        let Some(server) = self.server.take() else {
            return Ok(());
        };
        let served = server
            .await
            .map_err(|e| Error::io("server task", std::io::Error::other(e)))?
            .map_err(|e| Error::io("serving", e));
        for w in &self.watchers {
            w.abort();
        }
        // A database that is down must not hold up the exit (Kubernetes kills at the end
        // of the grace period anyway). A replica that does not write has no heartbeat.
        if self.ledger.writer().holds() {
            let now = chrono::Utc::now();
            let beat = self.ledger.beat(now);
            match tokio::time::timeout(std::time::Duration::from_secs(2), beat).await {
                Ok(Ok(())) => {
                    tracing::info!(at = now.timestamp(), "wrote the ledger's last heartbeat")
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "could not write the ledger's last heartbeat")
                }
                Err(_) => tracing::warn!("the ledger did not take the last heartbeat within 2 s"),
            }
        }
        // Last: the next replica may write as soon as the Lease is free.
        if let Some(elector) = self.elector.take() {
            elector.release().await;
        }
        served
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for w in &self.watchers {
            w.abort();
        }
    }
}

/// Stack of each runtime worker thread. Leptos' server-side rendering, inside the gzip
/// compressor, nests deeper than tokio's default 2 MiB allows in debug builds.
pub const WORKER_STACK_BYTES: usize = 8 << 20;

/// How long the start waits for the ledger's last known state before the watches start
/// without it (a database that is away must not hold the dashboard up).
const RESTORE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The multi-threaded runtime spotboard runs on (and its tests that render pages).
///
/// Errors: the operating system refused the threads.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(WORKER_STACK_BYTES)
        .build()
}

/// The embedded cluster's options from the flags.
#[cfg(feature = "embedded")]
pub fn embedded_options(args: &ServeArgs, simulate: bool) -> EmbeddedOptions {
    EmbeddedOptions {
        zones: args.zones.clone(),
        fleets: args
            .gke_zones
            .iter()
            .map(|z| (Flavor::Gke, z))
            .chain(args.karpenter_zones.iter().map(|z| (Flavor::Karpenter, z)))
            .filter(|(_, z)| !z.trim().is_empty())
            .map(|(f, z)| (f, z.trim().to_string()))
            .collect(),
        seed: args.seed,
        speed: args.speed,
        extra_nodes: args.nodes,
        nodes_per_pool: args.nodes_per_pool as usize,
        pods_per_node: args.pods_per_node,
        simulate,
        kubeconfig_path: args.embedded_kubeconfig_path(),
        demo_preemptions: args.demo_preemptions,
    }
}

/// Starts everything and returns once the server is listening.
///
/// Errors: an unsafe listen address without authentication, a kubeconfig that cannot be read
/// or lacks a named context, a port that cannot be bound, an embedded cluster that cannot start.
pub async fn start(
    args: &ServeArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Running> {
    let auth = match &args.auth_proxy_header {
        Some(h) => Auth::Proxy(Arc::new(
            Proxy::new(
                h,
                args.auth_proxy_groups_header.as_deref(),
                &args.trusted_proxies,
                args.auth_proxy_secret.clone(),
            )
            .map_err(Error::Config)?,
        )),
        None if args.listen.ip().is_loopback() => Auth::Loopback,
        None => {
            return Err(Error::Config(format!(
                "refusing to listen on {} without authentication: anyone who can reach it would see \
                 your clusters. Listen on 127.0.0.1, or put spotboard behind an authenticating proxy \
                 and pass --auth-proxy-header <header it sets>",
                args.listen
            )));
        }
    };

    // Read before anything starts: a bad price file should stop us at once.
    let prices = Arc::new(load_prices(args)?);
    // Before any cluster starts: a ledger owned by another process stops us at once.
    let ledger = Ledger::open(&args.database_url()).await?;
    tracing::info!(backend = ledger.backend, "ledger open");
    let (sources, targets, embedded) = clusters(args, matches!(auth, Auth::Loopback)).await?;
    let hub = Hub::new(
        &sources
            .iter()
            .map(|s| (s.name.clone(), s.zone.clone()))
            .collect::<Vec<_>>(),
    );
    let elector = elect(args, &ledger, &sources, embedded.is_some(), hub.epoch())?;
    let ledger = match &elector {
        Some(e) => ledger.with_writer(e.leadership.clone()),
        None => ledger,
    };
    // The last known fleet first, so the first page shows it (stale) while the watches list;
    // the embedded cluster is a new world each run, with nothing to restore.
    let keep_known = args.last_known_seconds > 0 && embedded.is_none();
    if keep_known {
        let restoring = ledger::last_known::restore(&ledger, &hub);
        if tokio::time::timeout(RESTORE_WAIT, restoring).await.is_err() {
            tracing::warn!(
                wait_s = RESTORE_WAIT.as_secs(),
                "the ledger did not give the last known state in time; the clusters start empty"
            );
        }
    }
    let clients: std::collections::HashMap<String, kube::Client> = sources
        .iter()
        .map(|s| (s.name.clone(), s.client.clone()))
        .collect();
    let mut watchers: Vec<JoinHandle<()>> = sources
        .into_iter()
        .flat_map(|s| watch::spawn_cluster(hub.clone(), s))
        .collect();
    watchers.push(hub.spawn_flusher());
    if keep_known {
        watchers.push(ledger::last_known::spawn_writer(
            ledger.clone(),
            hub.clone(),
            std::time::Duration::from_secs(args.last_known_seconds),
        ));
    }
    // The embedded cluster's clusters have the same names every run: its lifetimes carry
    // this run's id, so a later run (or another process on the same PostgreSQL) never closes
    // or prices them as its own.
    let ledger = match &embedded {
        Some(_) => ledger.with_identity(format!("embedded-{:x}", hub.epoch())),
        None => ledger,
    };
    let feeds: Vec<FeedSource> = args
        .capacity_feeds
        .iter()
        .map(|f| FeedSource::parse(f))
        .chain(embedded_feeds(&embedded))
        .collect();
    let (capacity, capacity_tasks) = Capacity::start(
        hub.clone(),
        feeds,
        std::time::Duration::from_secs(args.capacity_poll_seconds.max(1)),
        Some(ledger.clone()),
    );
    watchers.extend(capacity_tasks);
    // The recorder and the tracker follow the hub's typed changes (no copies on a timer).
    watchers.push(ledger::spawn_recorder(ledger.clone(), hub.clone()));
    watchers.push(ledger::pod_recorder::spawn(
        ledger.clone(),
        hub.clone(),
        args.team_label.clone(),
        std::time::Duration::from_secs(args.showback_sample_seconds.max(1)),
    ));
    watchers.push(crate::waiting::spawn_publisher(hub.clone()));
    watchers.push(crate::kueue::spawn_publisher(hub.clone()));
    let savings = Arc::new(
        Savings::new(ledger.clone(), prices)
            .with_hub(hub.clone())
            .with_reserved_discount(args.reserved_discount_pct)
            .with_team_label(&args.team_label)
            .with_fallback(
                capacity.clone(),
                chrono::Duration::minutes(i64::from(args.fallback_move_back_minutes)),
            ),
    );
    watchers.push(ledger::fallback::spawn_publisher(
        savings.clone(),
        hub.clone(),
        ledger::fallback::FALLBACK_EVERY,
    ));
    let dcgm = args.prometheus_url.clone().map(|url| {
        let (reader, task) = crate::dcgm::spawn(crate::dcgm::DcgmConfig {
            url,
            token: args.prometheus_token.clone(),
            range: args.dcgm_range.clone(),
            node_label: args.dcgm_node_label.clone(),
            every: std::time::Duration::from_secs(args.dcgm_poll_seconds.max(1)),
        });
        watchers.push(task);
        reader
    });
    let drill_reads = clients.clone();
    let (preemptions, preemption_task) = PreemptionWatch::start(
        hub.clone(),
        clients,
        PreemptionSettings {
            webhook: args.alert_webhook.clone(),
            rate_alert_pct: args.rate_alert_pct,
            thresholds: spotboard_core::domain::alerts::Thresholds {
                wave_gap: chrono::Duration::seconds(args.wave_gap_seconds as i64),
                wave_min_nodes: args.wave_min_nodes as usize,
                condition_after: chrono::Duration::minutes(i64::from(args.alert_condition_minutes)),
                pending_after: chrono::Duration::minutes(i64::from(args.alert_pending_minutes)),
                ..spotboard_core::domain::alerts::Thresholds::default()
            },
        },
        Some(ledger.clone()),
    );
    watchers.push(preemption_task);

    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|source| Error::Bind {
            addr: args.listen,
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("local address", e))?;
    if let Some(msg) =
        http::site::missing_wasm(std::path::Path::new(&args.site_root), "pkg", "spotboard")
    {
        tracing::error!("{msg}");
    }
    let leptos_options = LeptosOptions::builder()
        .output_name("spotboard")
        .site_root(args.site_root.as_str())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    let creator = Creator::new(
        targets,
        CreateSettings {
            identity: IdentitySettings {
                auth: auth.clone(),
                impersonate: args.impersonate,
            },
            read_only: args.read_only,
            creates_per_minute: args.creates_per_minute,
            api_calls_per_minute: args.api_calls_per_minute,
        },
        hub.clone(),
    );
    // A drill runs on the cluster's clock: the embedded cluster's speed, real time otherwise.
    let drill_speed = if embedded.is_some() { args.speed } else { 1.0 };
    let drills = crate::drill::Driller::new(creator.clone(), hub.clone(), drill_reads, drill_speed);
    // Live streams never end by themselves, so they watch for the stop as well as the server.
    // Drills still running are aborted first (their nodes restored): spotboard leaves no node
    // cordoned by a drill nobody watches.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopping_drills = drills.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopping_drills.abort_all().await;
        let _ = stop_tx.send(true);
    });
    // Every user's connections come from the proxy's addresses: those are held only to the
    // global limit.
    let proxy_networks = auth.proxy().map(|p| p.trusted.clone()).unwrap_or_default();
    let demo = demo_handle(&embedded, matches!(auth, Auth::Loopback) && !args.read_only)?;
    let state = AppState {
        hub: hub.clone(),
        leptos_options,
        guard: GuardSettings {
            auth,
            hosts: AllowedHosts::new(addr, &args.allowed_hosts),
        },
        writer: app::create_api::PoolWriterHandle(creator),
        demo,
        capacity: app::capacity_api::CapacityReaderHandle(capacity),
        savings: savings.clone(),
        preemptions,
        streams: StreamSlots::new(args.streams_per_client),
        shutdown: Shutdown(stop_rx.clone()),
        drills: drills.clone(),
        dcgm,
    };
    let router = http::router(state.clone());
    let limits = http::Limits {
        max_connections: args.max_connections,
        per_peer: args.connections_per_peer,
        unlimited_peers: proxy_networks,
        body_timeout: std::time::Duration::from_secs(args.request_body_seconds),
    };
    let metrics_addr = match args.metrics_listen {
        Some(at) => {
            let listener = TcpListener::bind(at)
                .await
                .map_err(|source| Error::Bind { addr: at, source })?;
            let bound = listener
                .local_addr()
                .map_err(|e| Error::io("metrics address", e))?;
            let (router, limits, stop) = (
                http::metrics::router(state),
                limits.clone(),
                stop_rx.clone(),
            );
            watchers.push(tokio::spawn(async move {
                if let Err(e) = http::serve(listener, router, limits, stop).await {
                    tracing::error!(error = %e, "the metrics address stopped serving");
                }
            }));
            tracing::info!(addr = %bound, "serving /metrics alone");
            Some(bound)
        }
        None => None,
    };
    let server = tokio::spawn(http::serve(listener, router, limits, stop_rx));
    Ok(Running {
        addr,
        metrics_addr,
        hub,
        embedded,
        drills,
        ledger,
        elector,
        server: Some(server),
        watchers,
    })
}

/// The ledger's leader election, for replicas sharing a PostgreSQL ledger over real clusters:
/// on the Lease `--leader-lease` of the first cluster (in-cluster: `spotboard-ledger` in the
/// pod's namespace by default), held as `<HOSTNAME>-<epoch>` (the pod name in a Deployment).
/// `None` for SQLite (its file lock admits one process), for the embedded cluster (each run
/// records its own clusters under its own id), and for a process outside a cluster given no
/// `--leader-lease` (a laptop on a shared ledger is one writer among none).
///
/// Errors: `--leader-lease` is not `NAMESPACE/NAME`.
fn elect(
    args: &ServeArgs,
    ledger: &Ledger,
    sources: &[ClusterSource],
    embedded: bool,
    epoch: u64,
) -> Result<Option<Elector>> {
    // The namespace a pod's service account token comes with.
    let pod_namespace =
        std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace").ok();
    let Some((namespace, name)) = args
        .leader_lease(pod_namespace.as_deref().map(str::trim))
        .map_err(Error::Config)?
    else {
        return Ok(None);
    };
    if ledger.backend != "postgres" || embedded {
        return Ok(None);
    }
    let Some(first) = sources.first() else {
        return Ok(None);
    };
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "spotboard".into());
    let cfg = LeaseConfig::new(
        &namespace,
        &name,
        format!("{host}-{epoch:x}"),
        std::time::Duration::from_secs(args.lease_duration_seconds.max(1)),
    );
    tracing::info!(lease = %format!("{namespace}/{name}"), cluster = %first.name, identity = %cfg.identity,
        "leader election: the replica holding this Lease writes the ledger");
    Ok(Some(Elector::spawn(first.client.clone(), cfg)))
}

/// The shipped prices, with the user's price file in front when given.
///
/// Errors: the file cannot be read, or a line is not a valid price row (the message names it).
fn load_prices(args: &ServeArgs) -> Result<PriceCatalog> {
    let shipped = PriceCatalog::shipped();
    let Some(path) = &args.prices else {
        return Ok(shipped);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Prices(format!("{}: {e}", path.display())))?;
    let rows = PriceCatalog::parse_csv(&text)
        .map_err(|e| Error::Prices(format!("{}: {e}", path.display())))?;
    tracing::info!(rows = rows.len(), file = %path.display(), "price file read");
    Ok(shipped.with_user(rows))
}

/// The watched clusters, the clusters creates can go to, and the embedded cluster if used.
type Clusters = (Vec<ClusterSource>, Vec<WriteTarget>, Option<Embedded>);

/// `local_user`: spotboard is bound to loopback for the person at this machine, whose own
/// credentials (kubeconfig user, embedded administrator) may create.
async fn clusters(args: &ServeArgs, local_user: bool) -> Result<Clusters> {
    if args.in_cluster {
        let config = kube::Config::incluster()
            .map_err(|e| Error::Kubeconfig(format!("in-cluster config: {e}")))?;
        let name = "in-cluster".to_string();
        let source = source(&name, None, config.clone())?;
        let target = WriteTarget {
            cluster: name,
            zone: None,
            base: config,
            local: None,
            nodepools: true,
        };
        return Ok((vec![source], vec![target], None));
    }
    if let Some(path) = &args.kubeconfig {
        let kubeconfig = kube::config::Kubeconfig::read_from(path)
            .map_err(|e| Error::Kubeconfig(format!("{}: {e}", path.display())))?;
        let contexts = if args.contexts.is_empty() {
            vec![kubeconfig.current_context.clone().ok_or_else(|| {
                Error::Kubeconfig(format!(
                    "{} has no current-context; pass --context",
                    path.display()
                ))
            })?]
        } else {
            args.contexts.clone()
        };
        let (mut sources, mut targets) = (Vec::new(), Vec::new());
        for name in contexts {
            let options = kube::config::KubeConfigOptions {
                context: Some(name.clone()),
                ..Default::default()
            };
            let config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
                .await
                .map_err(|e| Error::Kubeconfig(format!("context {name}: {e}")))?;
            sources.push(source(&name, None, config.clone())?);
            targets.push(WriteTarget {
                cluster: name,
                zone: None,
                local: local_user.then(|| config.clone()),
                base: config,
                nodepools: true,
            });
        }
        return Ok((sources, targets, None));
    }
    embedded_clusters(args, local_user).await
}

/// "Play a preemption": only on the embedded cluster, and only for the local user (a loopback
/// spotboard not in --read-only), who holds its administrator's token anyway.
#[cfg(feature = "embedded")]
fn demo_handle(embedded: &Option<Embedded>, local_user: bool) -> Result<app::demo_api::DemoHandle> {
    let preempter = match embedded {
        Some(cluster) if local_user => Some(cluster.preempter()?),
        _ => None,
    };
    Ok(app::demo_api::DemoHandle(preempter.map(|p| {
        std::sync::Arc::new(crate::demo::EmbeddedDemo(p))
            as std::sync::Arc<dyn app::demo_api::DemoPreempter>
    })))
}

#[cfg(not(feature = "embedded"))]
fn demo_handle(_: &Option<Embedded>, _: bool) -> Result<app::demo_api::DemoHandle> {
    Ok(app::demo_api::DemoHandle(None))
}

/// The embedded cluster's capacity feeds, read with its read-only token.
#[cfg(feature = "embedded")]
fn embedded_feeds(embedded: &Option<Embedded>) -> Vec<FeedSource> {
    embedded
        .iter()
        .flat_map(|e| {
            e.feed_urls().into_iter().map(|url| FeedSource::Url {
                url,
                token: Some(e.token(false).to_string()),
            })
        })
        .collect()
}

#[cfg(not(feature = "embedded"))]
fn embedded_feeds(_: &Option<Embedded>) -> Vec<FeedSource> {
    Vec::new()
}

#[cfg(not(feature = "embedded"))]
async fn embedded_clusters(_: &ServeArgs, _: bool) -> Result<Clusters> {
    Err(no_embedded_cluster())
}

/// The embedded cluster's zones as watched clusters and create targets.
#[cfg(feature = "embedded")]
async fn embedded_clusters(args: &ServeArgs, local_user: bool) -> Result<Clusters> {
    let cluster = EmbeddedCluster::start(embedded_options(args, true)).await?;
    let (mut sources, mut targets) = (Vec::new(), Vec::new());
    for z in &cluster.zones {
        let reader = cluster.reader_config(&z.zone)?;
        // A GKE or Karpenter zone: watched like any cluster (its zone comes from the nodes,
        // as for a kubeconfig context), and a target for drills, not for CKS NodePools.
        let cks = z.fleet.is_none();
        sources.push(source(
            &z.context,
            cks.then(|| z.zone.clone()),
            reader.clone(),
        )?);
        targets.push(WriteTarget {
            cluster: z.context.clone(),
            zone: Some(z.zone.clone()),
            base: reader,
            local: if local_user {
                Some(cluster.admin_config(&z.zone)?)
            } else {
                None
            },
            nodepools: cks,
        });
    }
    tracing::info!(
        kubeconfig = %cluster.kubeconfig_path.display(),
        "embedded cluster ready: kubectl --kubeconfig {} get nodepools",
        cluster.kubeconfig_path.display()
    );
    // For a Prometheus to scrape, then `--prometheus-url` (docs/operations.md).
    tracing::info!(url = %cluster.dcgm_url, "embedded DCGM exporter serving GPU utilisation");
    Ok((sources, targets, Some(cluster)))
}

fn source(name: &str, zone: Option<String>, config: kube::Config) -> Result<ClusterSource> {
    let client = kube::Client::try_from(config).map_err(|source| Error::Kube {
        cluster: name.to_string(),
        source,
    })?;
    Ok(ClusterSource {
        name: name.to_string(),
        zone,
        client,
    })
}
