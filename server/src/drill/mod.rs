//! The preemption drill: rehearses a provider's preemption sequence on one spot node with the
//! user's own identity, as the create form writes (`crate::create`).
//!
//! # Layout
//! - `plan`: the dry run: the node, who would be hit, their readiness findings, what the
//!   budgets would say to each eviction (a dry-run eviction as the user), the missing verbs.
//! - `writes`: the node writes as the user (cordon, labels, taints, events, evictions) and the
//!   restore an abort makes.
//! - `runner`: one drill's task, carrying out `spotboard_core::domain::preemption::drill`'s
//!   steps on the cluster's clock.
//!
//! # Order of a request
//! `--read-only`, the identity and the node first (no API call), then the rate limit (one call
//! per request, per user and per client), then the SelfSubjectAccessReviews (`patch nodes`,
//! `create pods/eviction`), then the plan, then (for `run`) the confirmation and the start.
//! Every request writes one audit line, like a create.
//!
//! # What a drill never does
//! Delete a node, or run on a node already cordoned or under notice (an abort could not tell
//! what to restore). A drill left running when spotboard stops is aborted (the node restored)
//! before the server exits.

mod plan;
mod runner;
mod writes;

use runner::StopKind;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::request::Parts;
use spotboard_core::CapacityType;
use spotboard_core::model::{
    Drill, DrillMode, DrillOutcome, DrillRefusal, DrillRequest, DrillState, NodeRow,
};

use crate::create::{Creator, Identity, audit_field, client_as};
use crate::hub::Hub;

/// A drill spotboard started, while it runs and after.
struct Started {
    status: Arc<Mutex<Drill>>,
    /// Ends the runner early (abort or shutdown).
    stop: tokio::sync::watch::Sender<Option<StopKind>>,
    task: tokio::task::JoinHandle<()>,
    provider: spotboard_core::Provider,
}

/// How long a shutdown waits for one drill's restore before it gives up on it and says so.
const SHUTDOWN_RESTORE: std::time::Duration = std::time::Duration::from_secs(15);

/// Runs drills for users. One per node at a time.
pub struct Driller {
    creator: Arc<Creator>,
    hub: Hub,
    /// spotboard's own (read-only) clients per cluster: the plan's pod and budget reads.
    reads: HashMap<String, kube::Client>,
    /// Cluster seconds per wall second: the embedded cluster's `--speed`, 1 for real clusters
    /// (a CKS drill's seven minutes are seven seconds at speed 60, as the embedded cluster's
    /// own preemptions are).
    speed: f64,
    drills: Mutex<HashMap<(String, String), Started>>,
    /// Set once spotboard is stopping: no drill starts after its drills were aborted.
    closing: std::sync::atomic::AtomicBool,
}

impl Driller {
    pub fn new(
        creator: Arc<Creator>,
        hub: Hub,
        reads: HashMap<String, kube::Client>,
        speed: f64,
    ) -> Arc<Self> {
        Arc::new(Driller {
            creator,
            hub,
            reads,
            speed: if speed.is_finite() && speed > 0.0 {
                speed
            } else {
                1.0
            },
            drills: Mutex::new(HashMap::new()),
            closing: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Answers one request (see the module's order) and writes its audit line.
    pub async fn handle(&self, request: &Parts, req: DrillRequest) -> DrillOutcome {
        let identity = self.creator.identity_of(request);
        let outcome = self.decide(request, &identity, &req).await;
        let who = identity
            .as_ref()
            .map(Identity::label)
            .unwrap_or_else(|_| "anonymous".into());
        audit(&who, &req, &outcome);
        outcome
    }

    async fn decide(
        &self,
        request: &Parts,
        identity: &Result<Identity, String>,
        req: &DrillRequest,
    ) -> DrillOutcome {
        use DrillRefusal::*;
        if self.creator.read_only() {
            return DrillOutcome::refused(
                Forbidden,
                "spotboard runs with --read-only: it writes nothing, drills included",
            );
        }
        let identity = match identity {
            Ok(id) => id,
            Err(why) => return DrillOutcome::refused(Forbidden, why.clone()),
        };
        let Some(target) = self.creator.write_target(&req.cluster) else {
            return DrillOutcome::refused(
                NotFound,
                format!("spotboard does not know a cluster named {:?}", req.cluster),
            );
        };
        let node = self.hub.node_named(&req.cluster, &req.node);
        if req.mode == DrillMode::Abort {
            return self.abort(request, identity, target, req, node).await;
        }
        let Some(node) = node else {
            return DrillOutcome::refused(
                NotFound,
                format!("{} has no node named {:?}", req.cluster, req.node),
            );
        };
        // The two access reviews now; the dry-run evictions when the plan knows the pods.
        if let Err(why) = self.creator.charge(identity, request, 2) {
            return DrillOutcome::refused(RateLimited, why);
        }
        let client = match client_as(target, identity) {
            Ok(c) => c,
            Err(why) => return DrillOutcome::refused(Forbidden, why),
        };
        let charge = |n: u32| {
            if n == 0 {
                Ok(())
            } else {
                self.creator.charge(identity, request, n)
            }
        };
        let read = self
            .reads
            .get(&req.cluster)
            .cloned()
            .unwrap_or_else(|| client.clone());
        let (mut plan, plan_refusal) = plan::plan(&node, &client, &read, &charge).await;
        let busy = conflict(&node, self.running(&req.cluster, &req.node));
        if let Some(why) = &busy {
            plan.refusals.push(why.clone());
        }
        if node.capacity_type != CapacityType::Spot {
            plan.refusals.push(format!(
                "{} is not a spot node (capacity type {}): only spot nodes are drilled",
                node.name,
                node.capacity_type.as_str()
            ));
        }
        if req.mode == DrillMode::DryRun {
            return DrillOutcome {
                message: if plan.refusals.is_empty() {
                    format!(
                        "dry run: the drill may start on {}; type the node's name to confirm",
                        node.name
                    )
                } else {
                    format!(
                        "dry run: the drill may not start: {}",
                        plan.refusals.join("; ")
                    )
                },
                plan: Some(plan),
                ..Default::default()
            };
        }
        // Run.
        let refusal = if let Some(why) = busy {
            Some((Conflict, why))
        } else if node.capacity_type != CapacityType::Spot {
            Some((Invalid, plan.refusals.last().cloned().unwrap_or_default()))
        } else if !plan.refusals.is_empty() {
            Some((plan_refusal.unwrap_or(Forbidden), plan.refusals.join("; ")))
        } else if req.confirm.as_deref() != Some(node.name.as_str()) {
            Some((
                Invalid,
                format!("type the node's name {:?} to confirm the drill", node.name),
            ))
        } else {
            None
        };
        if let Some((kind, why)) = refusal {
            return DrillOutcome {
                plan: Some(plan),
                ..DrillOutcome::refused(kind, why)
            };
        }
        let drill = match self.start(&node, client, read, identity.label()) {
            Ok(d) => d,
            Err((kind, why)) => {
                return DrillOutcome {
                    plan: Some(plan),
                    ..DrillOutcome::refused(kind, why)
                };
            }
        };
        DrillOutcome {
            message: format!(
                "drill started on {} as {}: {} s notice window",
                node.name,
                identity.label(),
                plan.phases.last().map_or(0, |p| p.at_s)
            ),
            plan: Some(plan),
            drill: Some(drill),
            refusal: None,
        }
    }

    /// Whether a drill of spotboard's is running on the node.
    fn running(&self, cluster: &str, node: &str) -> bool {
        self.drills
            .lock()
            .map(|d| {
                d.get(&(cluster.to_string(), node.to_string()))
                    .is_some_and(|s| !s.task.is_finished())
            })
            .unwrap_or(false)
    }

    /// Starts the drill, unless one runs on the node already (409: two requests that both
    /// passed the plan's check) or spotboard is stopping (503). The check and the insert
    /// are one step under the lock, so two starts cannot both win.
    fn start(
        &self,
        node: &NodeRow,
        client: kube::Client,
        read: kube::Client,
        by: String,
    ) -> Result<Drill, (DrillRefusal, String)> {
        let mut drills = self.drills.lock().map_err(|_| {
            (
                DrillRefusal::Upstream,
                "drill registry unavailable".to_string(),
            )
        })?;
        if self.closing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err((
                DrillRefusal::Stopping,
                "spotboard is stopping: no drill starts now".into(),
            ));
        }
        let key = (node.cluster.clone(), node.name.clone());
        if drills.get(&key).is_some_and(|s| !s.task.is_finished()) {
            return Err((
                DrillRefusal::Conflict,
                format!("{} is already under a drill", node.name),
            ));
        }
        let status = Arc::new(Mutex::new(Drill {
            cluster: node.cluster.clone(),
            node: node.name.clone(),
            provider: node.provider,
            by: by.clone(),
            started_at: Some(chrono::Utc::now()),
            state: DrillState::Running,
            phase: spotboard_core::domain::preemption::drill::phase_at(node.provider, 0),
            ..Default::default()
        }));
        let snapshot = status.lock().map(|d| d.clone()).unwrap_or_default();
        let (stop, stopped) = tokio::sync::watch::channel(None);
        let task = tokio::spawn(runner::run(runner::Run {
            client,
            read,
            node: node.name.clone(),
            provider: node.provider,
            by,
            speed: self.speed,
            status: status.clone(),
            stopped,
        }));
        drills.insert(
            key,
            Started {
                status,
                stop,
                task,
                provider: node.provider,
            },
        );
        Ok(snapshot)
    }

    /// Stops the node's drill, if spotboard runs one, and restores the node as the user: a
    /// drill left by an earlier run of spotboard (its annotation on the node) is restored too.
    async fn abort(
        &self,
        request: &Parts,
        identity: &Identity,
        target: &crate::create::WriteTarget,
        req: &DrillRequest,
        node: Option<NodeRow>,
    ) -> DrillOutcome {
        let key = (req.cluster.clone(), req.node.clone());
        let known = self
            .drills
            .lock()
            .map(|d| d.contains_key(&key))
            .unwrap_or(false);
        if !known && !node.as_ref().is_some_and(|n| n.drill) {
            return DrillOutcome::refused(
                DrillRefusal::NotFound,
                format!("no drill to abort on {}", req.node),
            );
        }
        // Everything that can refuse comes before the drill is touched: the limit, the
        // aborting user's client, and whether that user may patch nodes (an abort restores
        // the node as the user who asks, not as the one who started the drill).
        if let Err(why) = self.creator.charge(identity, request, 2) {
            return DrillOutcome::refused(DrillRefusal::RateLimited, why);
        }
        let client = match client_as(target, identity) {
            Ok(c) => c,
            Err(why) => return DrillOutcome::refused(DrillRefusal::Forbidden, why),
        };
        match plan::may(&client, "patch", "nodes", "").await {
            Ok(true) => {}
            Ok(false) => {
                return DrillOutcome::refused(
                    DrillRefusal::Forbidden,
                    format!(
                        "you may not patch nodes in {} (SelfSubjectAccessReview): an abort restores the node as you",
                        req.cluster
                    ),
                );
            }
            Err(e) => {
                return DrillOutcome::refused(
                    DrillRefusal::Upstream,
                    format!(
                        "could not ask {} whether you may patch nodes: {e}",
                        req.cluster
                    ),
                );
            }
        }
        let started = self.drills.lock().ok().and_then(|mut d| d.remove(&key));
        let provider = started
            .as_ref()
            .map(|s| s.provider)
            .or(node.as_ref().map(|n| n.provider))
            .unwrap_or_default();
        let mut drill = match started {
            Some(s) => {
                // The runner only ends; the restore below is the aborting user's.
                let _ = s.stop.send(Some(StopKind::User));
                let _ = s.task.await;
                s.status.lock().map(|d| d.clone()).unwrap_or_default()
            }
            None => Drill {
                cluster: req.cluster.clone(),
                node: req.node.clone(),
                provider,
                ..Default::default()
            },
        };
        match writes::restore(&client, &req.node, provider).await {
            Ok(()) => {
                drill.state = DrillState::Aborted;
                drill
                    .log
                    .push(format!("aborted by {}: node restored", identity.label()));
                DrillOutcome {
                    message: format!(
                        "drill aborted: {} uncordoned and its drill marks removed",
                        req.node
                    ),
                    drill: Some(drill),
                    ..Default::default()
                }
            }
            Err(e) => {
                drill.state = DrillState::Failed;
                DrillOutcome {
                    drill: Some(drill),
                    ..DrillOutcome::refused(e.refusal(), format!("could not restore the node: {e}"))
                }
            }
        }
    }

    /// Aborts every running drill and restores its node, with the identity the drill wrote
    /// as: called once the server is asked to stop (SIGTERM), before it exits. From then on no
    /// drill starts (the flag is set under the registry's lock, so no start slips past the
    /// drain). Each restore gets [`SHUTDOWN_RESTORE`]; one that does not finish is logged.
    pub async fn abort_all(&self) {
        let started: Vec<((String, String), Started)> = match self.drills.lock() {
            Ok(mut d) => {
                self.closing
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                d.drain().collect()
            }
            Err(_) => Vec::new(),
        };
        for ((cluster, node), s) in started {
            if s.task.is_finished() {
                continue;
            }
            let _ = s.stop.send(Some(StopKind::Shutdown));
            match tokio::time::timeout(SHUTDOWN_RESTORE, s.task).await {
                Ok(_) => {
                    let state = s.status.lock().map(|d| d.state).unwrap_or_default();
                    if state == DrillState::Aborted {
                        tracing::info!(cluster, node, "drill aborted at shutdown; node restored");
                    } else {
                        tracing::error!(
                            cluster,
                            node,
                            ?state,
                            "drill stopped at shutdown, but its node could not be restored: uncordon it and remove its drill.spotboard.dev annotations"
                        );
                    }
                }
                Err(_) => tracing::error!(
                    cluster,
                    node,
                    "drill's node not restored within the shutdown's time: uncordon it and remove its drill.spotboard.dev annotations"
                ),
            }
        }
    }
}

/// Why a drill may not start on `node`: a notice or drill already on it, or a cordon an abort
/// could not tell from the drill's own.
fn conflict(node: &NodeRow, running: bool) -> Option<String> {
    if running || node.drill {
        Some(format!("{} is already under a drill", node.name))
    } else if node.notice {
        Some(format!(
            "{} is already under its provider's preemption notice",
            node.name
        ))
    } else if node.cordoned {
        Some(format!(
            "{} is cordoned already: a drill would not know whether to uncordon it after",
            node.name
        ))
    } else {
        None
    }
}

/// The request's one audit record (fields escaped and cut as the create's are).
fn audit(who: &str, req: &DrillRequest, outcome: &DrillOutcome) {
    let verdict = match outcome.refusal {
        None => "accepted",
        Some(DrillRefusal::Invalid) => "invalid",
        Some(DrillRefusal::Forbidden) => "forbidden",
        Some(DrillRefusal::NotFound) => "not-found",
        Some(DrillRefusal::Conflict) => "conflict",
        Some(DrillRefusal::RateLimited) => "rate-limited",
        Some(DrillRefusal::Upstream) => "upstream-error",
        Some(DrillRefusal::Stopping) => "stopping",
    };
    let cut = |s: &str| s.len() > crate::create::AUDIT_FIELD_MAX_BYTES;
    tracing::info!(
        target: crate::logging::AUDIT_TARGET,
        user = ?audit_field(who),
        action = req.mode.as_str(),
        cluster = ?audit_field(&req.cluster),
        node = ?audit_field(&req.node),
        verdict,
        detail = ?audit_field(&outcome.message),
        truncated = cut(who) || cut(&req.cluster) || cut(&req.node) || cut(&outcome.message),
        "preemption drill {}", req.mode.as_str()
    );
}

impl app::drill_api::DrillRunner for Driller {
    fn drill<'a>(
        &'a self,
        request: &'a Parts,
        req: DrillRequest,
    ) -> app::create_api::BoxFuture<'a, DrillOutcome> {
        Box::pin(self.handle(request, req))
    }
}
