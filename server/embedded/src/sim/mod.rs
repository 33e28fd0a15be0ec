//! The CoreWeave behaviour model of one embedded zone: what makes an empty API server look and
//! act like a CKS cluster with Spot node pools.
//!
//! It talks to the API server only through kube-rs, as CoreWeave's controllers and the
//! kubelet talk to a real one: it watches NodePools, Nodes and Pods, and writes back status,
//! Nodes, Pods and Events.
//!
//! # Parts
//! - [`scenario`], `random`: the seeded starting state (pools, nodes at start, capacity,
//!   quota, names).
//! - `seed`: writes the scenario through the API, concurrently.
//! - `controller`, `status`, `boot`: the NodePool operator: requests within quota,
//!   capacity assignment, node boot, the five conditions and the CW* events (CoreWeave: Node
//!   Pool reference); capacity drift and random Spot preemptions.
//! - [`preemption`]: the Spot preemption timeline of CoreWeave: Spot Node Pools.
//! - [`demo`]: the demo's first preemptions and "Play a preemption" (the annotation, by request).
//! - [`notice`]: every provider's notice window (CKS, GKE, AWS), the one place its timings
//!   are written.
//! - [`admission`]: the controller's own check of a NodePool spec (the `Validated`
//!   condition), written from CoreWeave's reference, not taken from the product.
//! - `scaledown`: node removal for a lower `targetNodes` (IdleOnly / PreferIdle; CoreWeave:
//!   Node Pool reference, CoreWeave: Workload scheduling on CKS).
//! - `pods`, `scheduler`, `workloads`, `podspec`: pods on the nodes, the kubelet's
//!   termination, ReplicaSet/Job/StatefulSet/DaemonSet replacements and their scheduling.
//! - `watch`: the Node and NodePool watches feeding the shared caches.
//! - [`repair`]: a node sent to triage (its lifecycle state leaves `production`) and removed.
//! - [`kueue`]: Kueue's queues and workloads, and its admission by quota (CKS zones).
//! - [`capacity`], [`conditions`], [`clock`], [`nodes`]: the pure models underneath.
//!
//! # Timings (simulated; divide by `speed` for real time)
//! - Node boot: 15–45 s to assign a queued node when capacity is free, then 4–8 min until the
//!   Node registers (`controller::BOOT_TIME`).
//! - Spot preemption: drain at T+2 min, removal when drained or at T+7 min (CoreWeave: Spot
//!   Node Pools); random preemptions with a mean of a day per Spot node
//!   ([`preemption::MEAN_TIME_TO_PREEMPTION`]).
//! - Scale-down drain timeout: 3 min (CoreWeave: Workload scheduling on CKS, "Drain time
//!   differences"). Capacity drift: one step per 10 min.
//!
//! Shutdown: dropping the [`SimHandle`] aborts every task of the zone.

pub mod admission;
mod boot;
pub mod capacity;
pub mod clock;
pub mod conditions;
mod controller;
pub mod crds;
pub mod dcgm;
pub mod demo;
mod events;
mod eviction;
pub mod fleet;
pub mod kueue;
pub mod nodes;
pub mod notice;
mod placement;
mod pods;
mod podspec;
pub mod preemption;
mod random;
pub mod repair;
mod scaledown;
pub mod scenario;
mod scheduler;
mod seed;
pub use seed::BLOCKING_BUDGET;
mod status;
mod watch;
mod workloads;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::runtime::reflector::{ObjectRef, Store};
use rand::rngs::SmallRng;
use spotboard_core::nodepool::NodePool;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::{Error, Result};

pub use capacity::CapacitySnapshot;

/// How to run the behaviour model (see `EmbeddedOptions` for the flags behind them).
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Seed of every random choice; the same seed plays the same scenario.
    pub seed: u64,
    /// Simulated seconds per real second (60 plays a 7-minute preemption in 7 s).
    pub speed: f64,
    /// Scale-test nodes across all zones; this zone makes its share.
    pub extra_nodes: usize,
    /// At most this many scale-test nodes per pool.
    pub nodes_per_pool: usize,
    /// Pods on each scale-test node.
    pub pods_per_node: usize,
    /// Number of zones the extra nodes and scenario groups are spread over.
    pub zone_count: usize,
}

/// The behaviour model's clients, both the administrator's.
#[derive(Clone)]
pub struct Clients {
    /// Every read and write but evictions.
    pub main: Client,
    /// Evictions: without kube-rs's retries of 429 (see [`crate::evicting_client_for`]).
    pub evictions: Client,
    /// Seeding's nodes and pods, written into the zone's store without HTTP.
    pub loader: crate::api::Loader,
}

/// A running zone model. Dropping it stops all of the zone's tasks.
pub struct SimHandle {
    ctx: Arc<Ctx>,
}

impl SimHandle {
    /// The zone this handle runs.
    pub fn zone(&self) -> &str {
        &self.ctx.zone
    }

    /// The zone's capacity and quota now, for publishing.
    pub fn capacity(&self) -> CapacitySnapshot {
        self.ctx.capacity().snapshot()
    }

    /// A function that reads the zone's capacity as a capacity feed document, for as long as
    /// the model runs (empty afterwards). The embedded API server serves it.
    pub fn feed(&self) -> impl Fn() -> spotboard_core::model::CapacityFeed + Send + Sync + 'static {
        let ctx = Arc::downgrade(&self.ctx);
        move || match ctx.upgrade() {
            Some(ctx) => ctx.capacity().snapshot().to_feed(),
            None => spotboard_core::model::CapacityFeed {
                generated_at: chrono::Utc::now(),
                ..Default::default()
            },
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.ctx.tasks.shutdown();
    }
}

/// Seeds the scenario of zone `zone` (number `zone_index` of `opts.zone_count`) through
/// `client` and starts the behaviour tasks. Seeding is idempotent: objects that already
/// exist are left as they are.
///
/// Errors: the API server refused a write while seeding, or its watches never synced.
pub async fn start(
    zone: &str,
    zone_index: usize,
    clients: Clients,
    opts: &SimOptions,
) -> Result<SimHandle> {
    let started = std::time::Instant::now();
    let client = clients.main;
    let scenario = scenario::plan(
        opts.seed,
        zone_index,
        opts.zone_count,
        (opts.extra_nodes, opts.nodes_per_pool),
    );
    let kube_err = |source| Error::Kube {
        zone: zone.to_string(),
        source,
    };
    let (nodes, node_writer) = kube::runtime::reflector::store();
    let (pools, pool_writer) = kube::runtime::reflector::store();
    let ctx = Arc::new(Ctx {
        zone: zone.to_string(),
        zone_index,
        org_id: scenario.org_id.clone(),
        seed: opts.seed,
        client: client.clone(),
        evictions: clients.evictions,
        clock: clock::Clock::new(opts.speed),
        events: events::Recorder::new(client, zone),
        capacity: Mutex::new(capacity::CapacityModel::new(
            zone,
            scenario.capacity.clone(),
            scenario.quotas.clone(),
        )),
        pods: Mutex::new(pods::PodIndex::default()),
        nodes,
        pools,
        removing: Mutex::new(HashMap::new()),
        announced: Mutex::new(HashSet::new()),
        bulk_pools: scenario
            .pools
            .iter()
            .filter(|p| p.workload == scenario::Workload::Bulk)
            .map(|p| p.name.clone())
            .collect(),
        rng: Mutex::new(random::rng(opts.seed, zone_index, 3)),
        namer: Mutex::new(scenario.namer.clone()),
        wake: Notify::new(),
        wake_scheduler: Notify::new(),
        pods_changed: Notify::new(),
        tasks: Tasks::default(),
    });
    tracing::debug!(zone, elapsed = ?started.elapsed(), "planned");
    seed::seed(&ctx, &clients.loader, &scenario, opts.pods_per_node)
        .await
        .map_err(kube_err)?;
    kueue::seed(&ctx).await.map_err(kube_err)?;
    let pods_ready = Arc::new(Notify::new());
    ctx.spawn(watch::nodes(ctx.clone(), node_writer));
    ctx.spawn(watch::pools(ctx.clone(), pool_writer));
    ctx.spawn(pods::watch(ctx.clone(), pods_ready.clone()));
    let synced = async {
        ctx.nodes.wait_until_ready().await.ok();
        ctx.pools.wait_until_ready().await.ok();
        pods_ready.notified().await;
    };
    if tokio::time::timeout(std::time::Duration::from_secs(120), synced)
        .await
        .is_err()
    {
        ctx.tasks.shutdown();
        return Err(Error::NotSynced(zone.to_string()));
    }
    tracing::debug!(zone, elapsed = ?started.elapsed(), "behaviour model's watches synced");
    ctx.spawn(controller::run(ctx.clone()));
    ctx.spawn(scheduler::run(ctx.clone()));
    ctx.spawn(pods::node_activity(ctx.clone()));
    ctx.spawn(kueue::run(ctx.clone()));
    Ok(SimHandle { ctx })
}

/// Why a node is on its way out; a node is removed for one reason at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Removal {
    Preemption,
    ScaleDown,
    /// Sent to triage ([`repair`]).
    Repair,
}

/// The state one zone's tasks share. Locks are `std` mutexes, never held across an await.
pub(crate) struct Ctx {
    pub zone: String,
    pub zone_index: usize,
    pub org_id: String,
    pub seed: u64,
    pub client: Client,
    /// Evictions, without kube-rs's retries of 429 ([`Clients::evictions`]).
    pub evictions: Client,
    pub clock: clock::Clock,
    pub events: events::Recorder,
    capacity: Mutex<capacity::CapacityModel>,
    pods: Mutex<pods::PodIndex>,
    pub nodes: Store<Node>,
    pub pools: Store<NodePool>,
    removing: Mutex<HashMap<String, Removal>>,
    /// The scale-test pools, whose nodes run exactly `pods_per_node` pods.
    bulk_pools: HashSet<String>,
    /// Pools (by uid) whose `CWNodePoolCreated` was recorded.
    announced: Mutex<HashSet<String>>,
    pub rng: Mutex<SmallRng>,
    pub namer: Mutex<random::NodeNamer>,
    /// Wakes the NodePool controller (a pool or node changed, a removal finished).
    pub wake: Notify,
    /// Wakes the scheduler (a pod is pending, a node joined).
    pub wake_scheduler: Notify,
    /// Pulsed after every pod change, for tasks waiting for a node to drain.
    pub pods_changed: Notify,
    tasks: Tasks,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in another task while holding a lock leaves plain data; go on with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ctx {
    /// Records a Normal NodePool-operator event on NodePool `pool`, if it still exists (CKS
    /// reports node lifecycle events on the node and on its pool; CoreWeave: Node Pool
    /// reference, "Events").
    pub async fn record_on_pool(&self, pool: &str, reason: &str, message: &str) {
        self.record_on_pool_as(pool, events::Severity::Normal, reason, message)
            .await;
    }

    /// [`Self::record_on_pool`] with the event's type.
    pub async fn record_on_pool_as(
        &self,
        pool: &str,
        severity: events::Severity,
        reason: &str,
        message: &str,
    ) {
        if let Some(p) = self.pool(pool) {
            self.events
                .record(
                    &events::Involved::of(p.as_ref()),
                    severity,
                    reason,
                    message,
                    events::Component::NodePoolOperator,
                )
                .await;
        }
    }

    pub fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.nodes.get(&ObjectRef::new(name))
    }

    pub fn pool(&self, name: &str) -> Option<Arc<NodePool>> {
        self.pools.get(&ObjectRef::new(name))
    }

    pub fn pods(&self) -> MutexGuard<'_, pods::PodIndex> {
        lock(&self.pods)
    }

    pub fn capacity(&self) -> MutexGuard<'_, capacity::CapacityModel> {
        lock(&self.capacity)
    }

    /// Marks `node` as being removed for `why`; false if it already is.
    pub fn claim_removal(&self, node: &str, why: Removal) -> bool {
        let mut r = lock(&self.removing);
        if r.contains_key(node) {
            return false;
        }
        r.insert(node.to_string(), why);
        true
    }

    pub fn release_removal(&self, node: &str) {
        lock(&self.removing).remove(node);
    }

    /// Why `node` is being removed, if it is.
    pub fn removal(&self, node: &str) -> Option<Removal> {
        lock(&self.removing).get(node).copied()
    }

    /// Whether `pool` is a scale-test pool.
    pub fn is_bulk(&self, pool: &str) -> bool {
        self.bulk_pools.contains(pool)
    }

    /// True the first time it is called for pool `uid`: whoever gets true records
    /// `CWNodePoolCreated`.
    pub fn announce(&self, uid: &str) -> bool {
        lock(&self.announced).insert(uid.to_string())
    }

    /// Runs `fut` until it ends or the zone shuts down.
    pub fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(fut);
    }
}

/// Every task of a zone, aborted together.
#[derive(Default)]
struct Tasks {
    inner: Mutex<(JoinSet<()>, bool)>,
}

impl Tasks {
    fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        let mut inner = lock(&self.inner);
        let (set, closed) = &mut *inner;
        if *closed {
            return;
        }
        // Reap finished tasks so a long run does not accumulate them.
        while set.try_join_next().is_some() {}
        set.spawn(fut);
    }

    fn shutdown(&self) {
        let mut inner = lock(&self.inner);
        inner.1 = true;
        inner.0.abort_all();
    }
}
