//! Wiring: clusters → watchers → hub → HTTP. `main` parses flags and calls [`serve`].

use std::{future::Future, net::SocketAddr};

use leptos::prelude::LeptosOptions;
use tokio::{net::TcpListener, task::JoinHandle};

use crate::{
    Error, Result,
    cli::ServeArgs,
    embedded::{EmbeddedCluster, EmbeddedOptions},
    http::{self, AppState, Auth},
    hub::Hub,
    watch::{self, ClusterSource},
};

/// A running dashboard: its address, hub and (by default) embedded cluster. Dropping it
/// stops the watchers and the embedded cluster; the HTTP server stops with `shutdown`.
pub struct Running {
    pub addr: SocketAddr,
    pub hub: Hub,
    pub embedded: Option<EmbeddedCluster>,
    server: Option<JoinHandle<std::io::Result<()>>>,
    watchers: Vec<JoinHandle<()>>,
}

impl Running {
    /// Waits until the HTTP server stops (after the `shutdown` future passed to [`start`]).
    ///
    /// Errors: the server failed while serving.
    pub async fn wait(mut self) -> Result<()> {
        let Some(server) = self.server.take() else {
            return Ok(());
        };
        server
            .await
            .map_err(|e| Error::io("server task", std::io::Error::other(e)))?
            .map_err(|e| Error::io("serving", e))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for w in &self.watchers {
            w.abort();
        }
    }
}

/// The embedded cluster's options from the flags.
pub fn embedded_options(args: &ServeArgs, simulate: bool) -> EmbeddedOptions {
    EmbeddedOptions {
        zones: args.zones.clone(),
        seed: args.seed,
        speed: args.speed,
        extra_nodes: args.nodes,
        pods_per_node: args.pods_per_node,
        simulate,
        kubeconfig_path: args.embedded_kubeconfig_path(),
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
        Some(h) => Auth::ProxyHeader(h.clone()),
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

    let (sources, embedded) = clusters(args).await?;
    let hub = Hub::new(
        &sources
            .iter()
            .map(|s| (s.name.clone(), s.zone.clone()))
            .collect::<Vec<_>>(),
    );
    let mut watchers: Vec<JoinHandle<()>> = sources
        .into_iter()
        .flat_map(|s| watch::spawn_cluster(hub.clone(), s))
        .collect();
    watchers.push(hub.spawn_flusher());

    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|source| Error::Bind {
            addr: args.listen,
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("local address", e))?;
    let leptos_options = LeptosOptions::builder()
        .output_name("spotboard")
        .site_root(args.site_root.as_str())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    let router = http::router(AppState {
        hub: hub.clone(),
        leptos_options,
        auth,
    });
    let server = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
    });
    Ok(Running {
        addr,
        hub,
        embedded,
        server: Some(server),
        watchers,
    })
}

async fn clusters(args: &ServeArgs) -> Result<(Vec<ClusterSource>, Option<EmbeddedCluster>)> {
    if args.in_cluster {
        let config = kube::Config::incluster()
            .map_err(|e| Error::Kubeconfig(format!("in-cluster config: {e}")))?;
        let client = kube::Client::try_from(config).map_err(|source| Error::Kube {
            cluster: "in-cluster".into(),
            source,
        })?;
        return Ok((
            vec![ClusterSource {
                name: "in-cluster".into(),
                zone: None,
                client,
            }],
            None,
        ));
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
        let mut sources = Vec::new();
        for name in contexts {
            let options = kube::config::KubeConfigOptions {
                context: Some(name.clone()),
                ..Default::default()
            };
            let config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
                .await
                .map_err(|e| Error::Kubeconfig(format!("context {name}: {e}")))?;
            let client = kube::Client::try_from(config).map_err(|source| Error::Kube {
                cluster: name.clone(),
                source,
            })?;
            sources.push(ClusterSource {
                name,
                zone: None,
                client,
            });
        }
        return Ok((sources, None));
    }
    let cluster = EmbeddedCluster::start(embedded_options(args, true)).await?;
    let mut sources = Vec::new();
    for z in &cluster.zones {
        sources.push(ClusterSource {
            name: z.context.clone(),
            zone: Some(z.zone.clone()),
            client: cluster.reader_client(&z.zone)?,
        });
    }
    tracing::info!(
        kubeconfig = %cluster.kubeconfig_path.display(),
        "embedded cluster ready: kubectl --kubeconfig {} get nodepools",
        cluster.kubeconfig_path.display()
    );
    Ok((sources, Some(cluster)))
}
