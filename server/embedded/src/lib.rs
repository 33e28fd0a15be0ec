//! The embedded cluster: one in-process Kubernetes API server per simulated CKS zone, and the
//! CoreWeave behaviour model that drives them.
//!
//! # Layout
//! - [`api`]: the API server (storage with resourceVersions; list/watch/get/create/patch/
//!   delete; discovery, OpenAPI and tables for kubectl). It knows nothing of CoreWeave.
//! - [`sim`]: the behaviour model (NodePool controller, node boot, Spot preemption, workloads)
//!   and the seeded scenario. It talks to [`api`] only through kube-rs, as a real controller
//!   talks to a real API server.
//! - `kubeconfig`: the kubeconfig written for kubectl, one context per zone.
//!
//! Access: each API server accepts two bearer tokens made at start. The admin token (in the
//! written kubeconfig, and used by the behaviour model) may do everything; the reader token,
//! used by spotboard's own watchers, may only get, list and watch, like the read-only
//! ClusterRole shipped for real clusters.

pub mod api;
mod error;
mod kubeconfig;
pub mod sim;
#[cfg(feature = "testing")]
pub mod testing;

use std::path::PathBuf;

use kube::Client;

pub use error::{Error, Result};

pub use api::Tokens;

/// How to start the embedded cluster.
#[derive(Clone, Debug)]
pub struct EmbeddedOptions {
    /// Zones to simulate, one API server each (names from `coreweave-zones.txt`).
    pub zones: Vec<String>,
    /// GKE- and Karpenter-style zones, one API server each (`sim::fleet`).
    pub fleets: Vec<(sim::fleet::Flavor, String)>,
    /// Seed of the scenario's random choices; the same seed plays the same run.
    pub seed: u64,
    /// Time scale: 60 plays a 7-minute preemption in 7 seconds.
    pub speed: f64,
    /// Extra nodes to create across the zones for scale tests (`--nodes`), on top of the
    /// scenario's own.
    pub extra_nodes: usize,
    /// At most this many extra nodes per `bulk-spot-*` NodePool (`--nodes-per-pool`).
    pub nodes_per_pool: usize,
    /// Pods per extra node (`--pods-per-node`).
    pub pods_per_node: usize,
    /// Whether to seed the scenario and run the behaviour model. Off for tests that want an
    /// empty API server.
    pub simulate: bool,
    /// Where to write the kubeconfig.
    pub kubeconfig_path: PathBuf,
    /// Whether to play [`sim::demo::SCHEDULE`]: a spot preemption in the first minute, so a
    /// newcomer sees one. Off for tests that count preemptions.
    pub demo_preemptions: bool,
}

impl EmbeddedOptions {
    /// One CKS zone's API server with nothing in it and no behaviour model: for tests that
    /// make their own objects and want no other writer.
    pub fn empty(zone: &str, kubeconfig_path: PathBuf) -> Self {
        Self {
            zones: vec![zone.into()],
            fleets: vec![],
            seed: 1,
            speed: 1.0,
            extra_nodes: 0,
            nodes_per_pool: 2_500,
            pods_per_node: 0,
            simulate: false,
            kubeconfig_path,
            demo_preemptions: false,
        }
    }
}

/// One zone's API server.
#[derive(Clone, Debug)]
pub struct Zone {
    /// Zone name, e.g. `US-EAST-04A`.
    pub zone: String,
    /// Context name in the written kubeconfig, e.g. `spotboard-us-east-04a`.
    pub context: String,
    /// Base URL, `http://127.0.0.1:<port>`.
    pub url: String,
    /// Set for a GKE or Karpenter zone; `None` for a CKS zone.
    pub fleet: Option<sim::fleet::Flavor>,
}

/// A running embedded cluster. Dropping it stops its API servers and behaviour model.
pub struct EmbeddedCluster {
    pub zones: Vec<Zone>,
    pub kubeconfig_path: PathBuf,
    tokens: Tokens,
    _servers: Vec<api::ApiServer>,
    _sim: Vec<sim::SimHandle>,
    _fleets: Vec<sim::fleet::FleetHandle>,
    _demo: Option<AbortOnDrop>,
    /// The DCGM exporter's `/metrics` URL ([`sim::dcgm`]), for a Prometheus to scrape.
    pub dcgm_url: String,
    _dcgm: AbortOnDrop,
}

/// Stops a task when dropped (the demo's schedule stops with the cluster).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl EmbeddedCluster {
    /// Binds one API server per zone on 127.0.0.1 (ephemeral ports), writes the kubeconfig,
    /// seeds the scenario and starts the behaviour model.
    ///
    /// Errors: binding a port, writing the kubeconfig, or seeding through the API.
    pub async fn start(opts: EmbeddedOptions) -> Result<Self> {
        let tokens = Tokens::generate();
        let mut zones = Vec::new();
        let mut servers = Vec::new();
        let all = opts
            .zones
            .iter()
            .map(|z| (None, z))
            .chain(opts.fleets.iter().map(|(f, z)| (Some(*f), z)));
        for (fleet, zone) in all {
            let server = api::ApiServer::start_with(
                zone,
                tokens.clone(),
                api::ApiOptions::default(),
                &sim::crds::for_zone(fleet),
            )
            .await?;
            let context = match fleet {
                None => context_name(zone),
                Some(f) => context_name(&format!("{}-{zone}", f.as_str())),
            };
            zones.push(Zone {
                zone: zone.clone(),
                context,
                url: server.url(),
                fleet,
            });
            servers.push(server);
        }
        kubeconfig::write(&opts.kubeconfig_path, &zones, &tokens.admin)?;
        let exporter_clients = zones
            .iter()
            .map(|z| client_for(&z.url, &tokens.admin, &z.context))
            .collect::<Result<Vec<_>>>()?;
        let (dcgm_url, dcgm) =
            sim::dcgm::start(exporter_clients)
                .await
                .map_err(|source| Error::Io {
                    context: "the embedded DCGM exporter's listener".into(),
                    source,
                })?;
        let mut cluster = Self {
            zones,
            kubeconfig_path: opts.kubeconfig_path.clone(),
            tokens,
            _servers: servers,
            _sim: Vec::new(),
            _fleets: Vec::new(),
            _demo: None,
            dcgm_url,
            _dcgm: AbortOnDrop(dcgm),
        };
        if opts.simulate {
            let sim_opts = sim::SimOptions {
                seed: opts.seed,
                speed: opts.speed,
                extra_nodes: opts.extra_nodes,
                nodes_per_pool: opts.nodes_per_pool,
                pods_per_node: opts.pods_per_node,
                zone_count: opts.zones.len(),
            };
            let mut zone_starts = Vec::new();
            let mut fleet_starts = Vec::new();
            for (index, zone) in cluster.zones.iter().enumerate() {
                let clients = sim::Clients {
                    main: cluster.admin_client(&zone.zone)?,
                    evictions: cluster.evicting_client(&zone.zone)?,
                    loader: cluster._servers[index].loader(),
                };
                match zone.fleet {
                    Some(flavor) => fleet_starts.push(sim::fleet::start(
                        &zone.zone, flavor, clients, opts.seed, opts.speed,
                    )),
                    None => zone_starts.push(sim::start(&zone.zone, index, clients, &sim_opts)),
                }
            }
            // Side by side: a zone's seeding and its model's first lists leave the other core
            // to the rest (the GKE and Karpenter fleets took 0.5 s after the CKS zone's 4 s).
            let (sims, fleets) = futures::future::try_join(
                futures::future::try_join_all(zone_starts),
                futures::future::try_join_all(fleet_starts),
            )
            .await?;
            // CKS zones are the first `opts.zones.len()` servers, in order.
            for (index, handle) in sims.into_iter().enumerate() {
                let feed = handle.feed();
                cluster._servers[index].serve_json(
                    sim::crds::CAPACITY_FEED_PATH,
                    std::sync::Arc::new(move || serde_json::to_value(feed()).unwrap_or_default()),
                );
                cluster._sim.push(handle);
            }
            cluster._fleets = fleets;
            if opts.demo_preemptions {
                let schedule = cluster.preempter()?.play_schedule();
                cluster._demo = Some(AbortOnDrop(tokio::spawn(schedule)));
            }
        }
        Ok(cluster)
    }

    /// Preempts spot nodes on request in every zone, as the administrator: the demo's
    /// schedule and its "Play a preemption" action.
    ///
    /// Errors: a client that cannot be built.
    pub fn preempter(&self) -> Result<sim::demo::Preempter> {
        let zones = self
            .zones
            .iter()
            .map(|z| {
                Ok(sim::demo::DemoZone {
                    context: z.context.clone(),
                    fleet: z.fleet,
                    client: self.admin_client(&z.zone)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(sim::demo::Preempter::new(zones))
    }

    /// A client with the read-only token, as spotboard's watchers use.
    pub fn reader_client(&self, zone: &str) -> Result<Client> {
        self.client(zone, &self.tokens.reader)
    }

    /// Writes a kubeconfig for every zone with the reader's token: what a spotboard replica
    /// deployed with the shipped RBAC holds (reads, and Leases for leader election).
    ///
    /// Errors: the file cannot be written.
    pub fn write_reader_kubeconfig(&self, path: &std::path::Path) -> Result<()> {
        kubeconfig::write(path, &self.zones, &self.tokens.reader)
    }

    /// A client with the admin token, as kubectl and the behaviour model use.
    pub fn admin_client(&self, zone: &str) -> Result<Client> {
        self.client(zone, &self.tokens.admin)
    }

    /// Simulates an API outage of one zone: while on, its API server answers 503 and ends
    /// open watches (see [`api::ApiServer::set_outage`]). For "stale since" tests and demos.
    pub fn set_outage(&self, zone: &str, on: bool) {
        for (z, server) in self.zones.iter().zip(&self._servers) {
            if z.zone == zone {
                server.set_outage(on);
            }
        }
    }

    /// Applies `fault` to spotboard's own (reader) account on one zone, while the behaviour
    /// model and kubectl (the administrator) keep changing the cluster. For the fault suite.
    pub fn set_reader_fault(&self, zone: &str, fault: api::ReaderFault) {
        for (z, server) in self.zones.iter().zip(&self._servers) {
            if z.zone == zone {
                server.set_reader_fault(fault);
            }
        }
    }

    /// Serves streaming lists on one zone, or refuses them (see
    /// [`api::ApiServer::set_watch_list`]). For the tests of the client's fallback.
    pub fn set_watch_list(&self, zone: &str, on: bool) {
        for (z, server) in self.zones.iter().zip(&self._servers) {
            if z.zone == zone {
                server.set_watch_list(on);
            }
        }
    }

    /// Streaming-list watches one zone's API server has served.
    pub fn streaming_lists_served(&self, zone: &str) -> u64 {
        self.zones
            .iter()
            .zip(&self._servers)
            .filter(|(z, _)| z.zone == zone)
            .map(|(_, s)| s.streaming_lists_served())
            .sum()
    }

    /// Ends every open watch of one zone with `410 Expired` (see
    /// [`api::ApiServer::expire_watches`]). For the fault suite.
    pub fn expire_watches(&self, zone: &str) {
        for (z, server) in self.zones.iter().zip(&self._servers) {
            if z.zone == zone {
                server.expire_watches();
            }
        }
    }

    /// The reader's configuration (spotboard's own account on this zone).
    pub fn reader_config(&self, zone: &str) -> Result<kube::Config> {
        config_for(&self.zone(zone)?.url, &self.tokens.reader)
    }

    /// The administrator's configuration: the local user's, on a loopback-bound spotboard.
    pub fn admin_config(&self, zone: &str) -> Result<kube::Config> {
        config_for(&self.zone(zone)?.url, &self.tokens.admin)
    }

    /// Each CKS zone's capacity feed URL (`GET /capacity-feed` on its API server), to read with
    /// the reader token ([`EmbeddedCluster::token`]).
    pub fn feed_urls(&self) -> Vec<String> {
        self.zones
            .iter()
            .filter(|z| z.fleet.is_none())
            .map(|z| format!("{}{}", z.url, sim::crds::CAPACITY_FEED_PATH))
            .collect()
    }

    /// A token for tests and demos that act as another user: `admin` or `reader`.
    pub fn token(&self, admin: bool) -> &str {
        if admin {
            &self.tokens.admin
        } else {
            &self.tokens.reader
        }
    }

    fn zone(&self, zone: &str) -> Result<&Zone> {
        self.zones
            .iter()
            .find(|z| z.zone == zone)
            .ok_or_else(|| Error::NoZone(zone.to_string()))
    }

    fn evicting_client(&self, zone: &str) -> Result<Client> {
        let z = self.zone(zone)?;
        evicting_client_for(&z.url, &self.tokens.admin, &z.context)
    }

    fn client(&self, zone: &str, token: &str) -> Result<Client> {
        let z = self.zone(zone)?;
        client_for(&z.url, token, &z.context)
    }
}

/// The kubeconfig context name of a zone.
pub fn context_name(zone: &str) -> String {
    format!("spotboard-{}", zone.to_ascii_lowercase())
}

/// A kube-rs configuration for an http:// API server with a bearer token.
pub fn config_for(url: &str, token: &str) -> Result<kube::Config> {
    let uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| Error::BadUrl {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
    let mut config = kube::Config::new(uri);
    config.auth_info.token = Some(token.to_string().into());
    Ok(config)
}

/// [`client_for`] without kube-rs's retries of 429, 503 and 504: for evictions, whose 429
/// is a PodDisruptionBudget's answer that the drain itself retries on its own schedule (as
/// `kubectl drain` does), not a transient failure to back off from for minutes.
pub fn evicting_client_for(url: &str, token: &str, cluster: &str) -> Result<Client> {
    let mut config = config_for(url, token)?;
    config.default_retry = false;
    Client::try_from(config).map_err(|source| Error::Kube {
        zone: cluster.to_string(),
        source,
    })
}

/// A kube-rs client for an http:// API server with a bearer token.
pub fn client_for(url: &str, token: &str, cluster: &str) -> Result<Client> {
    let config = config_for(url, token)?;
    Client::try_from(config).map_err(|source| Error::Kube {
        zone: cluster.to_string(),
        source,
    })
}
