//! The NodePool operator of one zone (CoreWeave: Node Pool reference): for every pool it queues
//! node requests (within quota), assigns queued nodes when the zone has capacity, boots them
//! (a Node joins after [`BOOT_TIME`]), removes nodes when `targetNodes` drops, and writes the
//! status with the five conditions. It also drifts the zone's capacity and starts random Spot
//! preemptions.
//!
//! It runs on every NodePool or Node change (a watch wakes it, so it reacts within
//! milliseconds at any speed) and otherwise at the next deadline it knows of, at least every
//! half a real second.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use rand::Rng;
use spotboard_core::labels;
use spotboard_core::nodepool::NodePool;
use tokio::time::Instant;

use super::capacity::CapacityClass;
use super::clock::{mins, rfc3339, secs};
use super::conditions::{PoolFacts, desired, merge};
use super::events::{Component, Involved, Severity};
use super::{Ctx, Removal, admission, boot, preemption, scaledown, status};

/// Simulated time between capacity drift steps.
pub const DRIFT_STEP: Duration = mins(10);
/// Simulated time CoreWeave takes to assign a queued node when capacity is free (seconds).
pub const ASSIGN_TIME: Range<u64> = 15..45;
/// Simulated time from assignment until the node has booted and registered (seconds): CKS
/// nodes take minutes (the reference notes "up to ~20 minutes"; the demo keeps 4–8).
pub const BOOT_TIME: Range<u64> = 240..480;
/// Longest real wait between passes.
/// How long a wake-up waits for more events before the next pass (real time; still well
/// within the ~100 ms reaction the dashboard's tests expect).
const PASS_COALESCE: Duration = Duration::from_millis(50);
const MAX_WAIT: Duration = Duration::from_millis(500);

/// A node assigned to a pool and booting.
#[derive(Debug)]
pub(crate) struct Booting {
    pub node: String,
    pub ready_at: Instant,
    /// When the Node object was asked for; it counts as booting until the watch shows it.
    pub registering_since: Option<Instant>,
}

/// What the operator remembers of a pool between passes (the cloud side of CoreWeave, which
/// the cluster does not see).
#[derive(Debug, Default)]
pub(crate) struct PoolRuntime {
    pub uid: String,
    pub name: String,
    pub instance_type: String,
    pub class: Option<CapacityClass>,
    pub queued: u32,
    pub assign_at: Option<Instant>,
    pub booting: Vec<Booting>,
    /// The last status written, so a pass before the cache catches up neither writes nor
    /// fires events twice.
    pub written: Option<status::Written>,
}

impl PoolRuntime {
    fn held(&self, current: u32) -> u32 {
        current + self.booting.len() as u32 + self.queued
    }
}

/// Runs the operator until the zone shuts down.
pub async fn run(ctx: Arc<Ctx>) {
    let mut pools: HashMap<String, PoolRuntime> = HashMap::new();
    let mut last = Instant::now();
    let mut next_drift = Instant::now() + ctx.clock.real(DRIFT_STEP);
    loop {
        let now = Instant::now();
        while now >= next_drift {
            let mut rng = super::lock(&ctx.rng);
            ctx.capacity().drift(&mut *rng);
            next_drift += ctx.clock.real(DRIFT_STEP);
        }
        preemption::random(&ctx, ctx.clock.sim(now - last));
        last = now;
        let next = reconcile_all(&ctx, &mut pools).await;
        let wait = next
            .unwrap_or(now + MAX_WAIT)
            .min(next_drift)
            .saturating_duration_since(Instant::now())
            .min(MAX_WAIT);
        tokio::select! {
            _ = ctx.wake.notified() => {
                // A pass walks every pool; under a storm of node events (a drain, a benchmark's
                // 1,000 cordons a second) one pass per event would take both cores from the API
                // server. Like a controller's work queue, let the burst land, then do one pass.
                tokio::time::sleep(PASS_COALESCE).await;
            }
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// One pass over every pool; returns the earliest deadline it is waiting for.
async fn reconcile_all(
    ctx: &Arc<Ctx>,
    runtimes: &mut HashMap<String, PoolRuntime>,
) -> Option<Instant> {
    let pools = ctx.pools.state();
    let mut nodes_by_pool: HashMap<String, Vec<Arc<Node>>> = HashMap::new();
    for node in ctx.nodes.state() {
        if let Some(p) = node.labels().get(labels::NODE_POOL) {
            nodes_by_pool.entry(p.clone()).or_default().push(node);
        }
    }
    let live: HashSet<(String, String)> = pools
        .iter()
        .map(|p| (p.name_any(), p.uid().unwrap_or_default()))
        .collect();
    // Pools that are gone: cancel their boots, give the capacity back, remove their nodes.
    let gone: Vec<String> = runtimes
        .values()
        .filter(|r| !live.contains(&(r.name.clone(), r.uid.clone())))
        .map(|r| r.uid.clone())
        .collect();
    for uid in gone {
        if let Some(rt) = runtimes.remove(&uid) {
            pool_deleted(ctx, rt).await;
        }
    }
    let names: HashSet<String> = pools.iter().map(|p| p.name_any()).collect();
    for (pool, nodes) in &nodes_by_pool {
        if !names.contains(pool) {
            for n in nodes {
                scaledown::start(ctx, &n.name_any(), true);
            }
        }
    }

    // Quota use per instance type: nodes held or requested by every pool.
    let mut usage: BTreeMap<String, u32> = BTreeMap::new();
    for p in &pools {
        let current = nodes_by_pool.get(&p.name_any()).map_or(0, Vec::len) as u32;
        let held = runtimes
            .get(&p.uid().unwrap_or_default())
            .map_or(current, |r| r.held(current));
        *usage.entry(p.spec.instance_type.clone()).or_default() += held;
    }
    let mut next: Option<Instant> = None;
    for pool in &pools {
        let uid = pool.uid().unwrap_or_default();
        let rt = runtimes.entry(uid.clone()).or_insert_with(|| PoolRuntime {
            uid,
            name: pool.name_any(),
            ..Default::default()
        });
        let nodes = nodes_by_pool
            .get(&pool.name_any())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let deadline = reconcile(ctx, pool, nodes, rt, &mut usage).await;
        next = match (next, deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    ctx.capacity().set_in_use(usage);
    next
}

async fn reconcile(
    ctx: &Arc<Ctx>,
    pool: &NodePool,
    nodes: &[Arc<Node>],
    rt: &mut PoolRuntime,
    usage: &mut BTreeMap<String, u32>,
) -> Option<Instant> {
    let now = Instant::now();
    let spec = &pool.spec;
    let errors = admission::check(spec);
    let class = CapacityClass::of(&spec.compute_class);
    rt.instance_type.clone_from(&spec.instance_type);
    rt.class = Some(class);
    let old = status::freshest(pool, &rt.written)
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    if pool.status.is_none() && ctx.announce(&pool.uid().unwrap_or_default()) {
        let msg = status::created_message(&pool.name_any(), spec);
        record(ctx, pool, Severity::Normal, "CWNodePoolCreated", &msg).await;
    }

    // Boots that became Nodes are current now; boots that are due register their Node.
    let present: HashSet<String> = nodes.iter().map(|n| n.name_any()).collect();
    rt.booting.retain(|b| !present.contains(&b.node));
    for b in rt.booting.iter_mut().filter(|b| b.ready_at <= now) {
        let stale = b
            .registering_since
            .is_some_and(|t| now - t > Duration::from_secs(10));
        if b.registering_since.is_none() || stale {
            b.registering_since = Some(now);
            ctx.spawn(boot::register(
                ctx.clone(),
                pool.name_any(),
                spec.clone(),
                b.node.clone(),
            ));
        }
    }

    let current = nodes.len() as u32;
    // A preempted node is replaced once it is gone (CoreWeave: Spot Node Pools), but a
    // scale-down need not remove another node for it: it is leaving anyway.
    let removals: Vec<Option<Removal>> = nodes.iter().map(|n| ctx.removal(&n.name_any())).collect();
    let scaling_down = removals
        .iter()
        .filter(|r| **r == Some(Removal::ScaleDown))
        .count() as u32;
    let all_leaving = removals.iter().filter(|r| r.is_some()).count() as u32;
    let target = spec.target_nodes.max(0) as u32;
    let own_before = rt.held(current);
    let limit = ctx.capacity().quota_limit(&spec.instance_type);
    let others = usage
        .get(&spec.instance_type)
        .copied()
        .unwrap_or(0)
        .saturating_sub(own_before);
    let mut stalled = false;
    if errors.is_empty() {
        let coming = rt.booting.len() as u32 + rt.queued;
        let have = current - scaling_down + coming;
        let staying = current - all_leaving + coming;
        if have < target {
            let room = limit.unwrap_or(0).saturating_sub(others + own_before);
            let add = (target - have).min(room);
            if add > 0 {
                rt.queued += add;
                rt.assign_at
                    .get_or_insert_with(|| now + ctx.clock.real(secs(rand_in(ctx, ASSIGN_TIME))));
                let msg = format!(
                    "Requested {add} node(s) of instance type {} for NodePool {}.",
                    spec.instance_type,
                    pool.name_any()
                );
                record(ctx, pool, Severity::Normal, "CWNodeRequestQueued", &msg).await;
            }
        } else if staying > target {
            stalled = scaledown::shrink(ctx, pool, nodes, rt, staying - target).await;
        }
        assign(ctx, pool, rt, class, now).await;
    } else {
        rt.queued = 0;
    }
    let own_after = rt.held(current);
    usage.insert(spec.instance_type.clone(), others + own_after);

    let (offered, free) = {
        let cap = ctx.capacity();
        (
            cap.offered(&spec.instance_type, class),
            cap.free(&spec.instance_type, class),
        )
    };
    let facts = PoolFacts {
        spec,
        zone: &ctx.zone,
        errors: &errors,
        current,
        in_progress: rt.booting.len() as u32,
        queued: rt.queued,
        offered,
        free,
        quota_limit: limit,
        quota_used_by_others: others,
        scale_down_stalled: stalled,
    };
    let conditions = merge(
        &old,
        desired(&facts),
        &rfc3339(chrono::Utc::now()),
        pool.metadata.generation,
    );
    status::transition_events(ctx, pool, &old, &conditions).await;
    let st = status::build(
        pool,
        current,
        rt.booting.len() as u32,
        rt.queued,
        conditions,
    );
    status::write(ctx, pool, &st, &mut rt.written).await;

    let boot_due = rt
        .booting
        .iter()
        .filter(|b| b.registering_since.is_none())
        .map(|b| b.ready_at)
        .min();
    let assign_due = rt.assign_at.filter(|_| rt.queued > 0);
    match (boot_due, assign_due) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Assigns queued nodes from the zone's free capacity once the assignment delay has passed;
/// each assigned node starts booting.
async fn assign(
    ctx: &Arc<Ctx>,
    pool: &NodePool,
    rt: &mut PoolRuntime,
    class: CapacityClass,
    now: Instant,
) {
    if rt.queued == 0 {
        rt.assign_at = None;
        return;
    }
    if rt.assign_at.is_some_and(|t| t > now) {
        return;
    }
    let n = ctx
        .capacity()
        .take(&pool.spec.instance_type, class, rt.queued);
    rt.queued -= n;
    // Still queued: try again after another assignment delay.
    rt.assign_at = (rt.queued > 0).then(|| now + ctx.clock.real(secs(rand_in(ctx, ASSIGN_TIME))));
    let gpu = spotboard_core::catalog::instance_type(&pool.spec.instance_type)
        .is_some_and(|t| t.gpus > 0);
    for _ in 0..n {
        let node = super::lock(&ctx.namer).next(gpu);
        let boot = ctx.clock.real(secs(rand_in(ctx, BOOT_TIME)));
        let msg = format!(
            "Node {node} assigned to NodePool {}; booting.",
            pool.name_any()
        );
        record(ctx, pool, Severity::Normal, "CWNodeAssigned", &msg).await;
        rt.booting.push(Booting {
            node,
            ready_at: now + boot,
            registering_since: None,
        });
    }
}

async fn pool_deleted(ctx: &Arc<Ctx>, rt: PoolRuntime) {
    if let Some(class) = rt.class {
        ctx.capacity()
            .release(&rt.instance_type, class, rt.booting.len() as u32);
    }
    let about = Involved {
        api_version: "compute.coreweave.com/v1alpha1".into(),
        kind: "NodePool".into(),
        name: rt.name.clone(),
        uid: rt.uid.clone(),
    };
    let msg = format!("NodePool {} deleted; its nodes are removed.", rt.name);
    ctx.events
        .record(
            &about,
            Severity::Normal,
            "CWNodePoolDeleted",
            &msg,
            Component::NodePoolOperator,
        )
        .await;
}

async fn record(ctx: &Ctx, pool: &NodePool, severity: Severity, reason: &str, message: &str) {
    ctx.events
        .record(
            &Involved::of(pool),
            severity,
            reason,
            message,
            Component::NodePoolOperator,
        )
        .await;
}

fn rand_in(ctx: &Ctx, r: Range<u64>) -> u64 {
    super::lock(&ctx.rng).random_range(r)
}
