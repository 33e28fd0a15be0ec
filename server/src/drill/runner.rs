//! One drill's task: the provider's steps (`spotboard_core::domain::preemption::drill`) at
//! their times on the cluster's clock, evictions a budget refused asked again every
//! [`RETRY_S`] until the window ends, and the stop asked early ([`StopKind`]).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use spotboard_core::Provider;
use spotboard_core::domain::preemption::drill::{self, Action, Pods};
use spotboard_core::labels;
use spotboard_core::model::{Drill, DrillRefusal, DrillState};
use tokio::time::Instant;

use super::writes::{self, PodName};

/// Cluster seconds between asks of an eviction a budget refused (as CKS's drain asks again).
pub const RETRY_S: i64 = 5;

/// Why a drill is asked to stop early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopKind {
    /// A user aborted it: the abort restores the node as that user; the runner only ends.
    User,
    /// spotboard is stopping: the runner restores the node as the drill's own user.
    Shutdown,
}

/// What one drill's task needs.
pub struct Run {
    /// The user's client: every write goes out as the user who started the drill.
    pub client: kube::Client,
    /// spotboard's own (read-only) client: the node's pods are read with it (a read needs no
    /// user's permission; only writes must be the user's).
    pub read: kube::Client,
    pub node: String,
    pub provider: Provider,
    /// The identity's label, for the drill annotation.
    pub by: String,
    /// Cluster seconds per wall second.
    pub speed: f64,
    pub status: Arc<Mutex<Drill>>,
    /// Set to stop early ([`StopKind`]).
    pub stopped: tokio::sync::watch::Receiver<Option<StopKind>>,
}

impl Run {
    /// Wall time for `s` cluster seconds.
    fn wall(&self, s: i64) -> Duration {
        Duration::from_secs_f64(s.max(0) as f64 / self.speed)
    }

    /// The stop asked, if any.
    fn stop(&self) -> Option<StopKind> {
        *self.stopped.borrow()
    }

    fn note(&self, at_s: i64, line: String) {
        if let Ok(mut d) = self.status.lock() {
            d.phase = drill::phase_at(self.provider, at_s);
            d.log.push(format!("T+{at_s} s: {line}"));
        }
    }

    fn end(&self, state: DrillState, line: Option<String>) {
        if let Ok(mut d) = self.status.lock() {
            d.state = state;
            if let Some(l) = line {
                d.log.push(l);
            }
        }
    }

    fn count(&self, evicted: u32, refused: u32) {
        if let Ok(mut d) = self.status.lock() {
            d.evicted += evicted;
            d.refused += refused;
        }
    }
}

/// Carries out the drill. Ends `Completed` at the window's end (the notice off, the node left
/// cordoned), `Aborted` when stopped, or `Failed` when a node write is refused (the node
/// restored as far as the user may).
pub async fn run(r: Run) {
    let t0 = Instant::now();
    let started = Utc::now();
    let steps = drill::steps(r.provider);
    // Evictions a budget refused, asked again until the window ends; each refusal reported
    // once per pod as a Warning event, as drains report them.
    let mut refused: BTreeSet<PodName> = BTreeSet::new();
    let mut reported: BTreeSet<PodName> = BTreeSet::new();
    let mut stop_rx = r.stopped.clone();
    let mut i = 0;
    while i < steps.len() {
        if let Some(kind) = r.stop() {
            return stopped(&r, kind).await;
        }
        let step = &steps[i];
        let due = t0 + r.wall(step.at_s);
        let next_retry = Instant::now() + r.wall(RETRY_S);
        let wake = if refused.is_empty() {
            due
        } else {
            due.min(next_retry)
        };
        // Biased: a stop asked while a step is also due wins, so a drill aborted at its last
        // moment never ends as completed.
        tokio::select! {
            biased;
            kind = stop_asked(&mut stop_rx) => return stopped(&r, kind).await,
            _ = tokio::time::sleep_until(wake) => {}
        }
        let at_s = elapsed_s(t0, r.speed);
        if Instant::now() < due {
            retry(&r, at_s, &mut refused, &mut reported).await;
            continue;
        }
        let result = match &step.action {
            Action::Cordon => writes::cordon(&r.client, &r.node, started, &r.by)
                .await
                .map(|()| "cordoned".to_string()),
            Action::Label(key, value) => writes::label(&r.client, &r.node, key, *value, Utc::now())
                .await
                .map(|()| format!("labelled {key}")),
            Action::Taint(key) => writes::taint(&r.client, &r.node, key)
                .await
                .map(|()| format!("tainted {key}:NoSchedule")),
            Action::Event(reason, message) => {
                // An event the user may not create does not stop the drill: the node's
                // own signals carry the notice.
                match writes::event(&r.client, &r.node, reason, message, Utc::now()).await {
                    Ok(()) => Ok(format!("Warning event {reason:?}")),
                    Err(e) => Ok(format!("no event {reason:?}: {e}")),
                }
            }
            Action::Evict(which) => {
                evict_step(&r, at_s, *which, &mut refused, &mut reported).await;
                Ok(String::new())
            }
            Action::Stop => {
                let line = match writes::end_notice(&r.client, &r.node, r.provider).await {
                    Ok(()) => "window over: notice and drill marks removed; the node stays \
                               cordoned for you to delete or uncordon (abort uncordons it)"
                        .to_string(),
                    Err(e) => format!("window over, but the notice could not be removed: {e}"),
                };
                r.note(at_s, line);
                let left = refused.len();
                let line = (left > 0).then(|| {
                    format!("{left} pod(s) never evicted: their budgets refused to the end")
                });
                r.end(DrillState::Completed, line);
                return;
            }
        };
        match result {
            Ok(line) if line.is_empty() => {}
            Ok(line) => r.note(at_s, line),
            Err(e) => {
                r.note(at_s, e.to_string());
                let line = match writes::restore(&r.client, &r.node, r.provider).await {
                    Ok(()) => "failed: node restored".to_string(),
                    Err(e) => format!("failed, and the node could not be restored: {e}"),
                };
                r.end(DrillState::Failed, Some(line));
                return;
            }
        }
        i += 1;
    }
}

/// Resolves with the stop once one is asked. A sender dropped without asking (the driller gone
/// with the server) is no stop: the drill goes on until `Driller::abort_all` or its window's
/// end, so a shutdown that forgot to abort is seen by the tests, not papered over by a race.
async fn stop_asked(stopped: &mut tokio::sync::watch::Receiver<Option<StopKind>>) -> StopKind {
    // The borrow (`Ref`) is dropped before any further await.
    let asked = stopped.wait_for(Option::is_some).await.map(|kind| *kind);
    match asked {
        Ok(kind) => kind.unwrap_or(StopKind::User),
        Err(_) => std::future::pending().await,
    }
}

/// Ends a drill stopped early: at shutdown the node is restored here, as the drill's user; a
/// user's abort restores it itself, as that user.
async fn stopped(r: &Run, kind: StopKind) {
    match kind {
        StopKind::User => r.end(DrillState::Aborted, None),
        StopKind::Shutdown => match writes::restore(&r.client, &r.node, r.provider).await {
            Ok(()) => r.end(
                DrillState::Aborted,
                Some("spotboard stopping: node restored (uncordoned, drill marks removed)".into()),
            ),
            Err(e) => r.end(
                DrillState::Failed,
                Some(format!(
                    "spotboard stopping, but the node could not be restored: {e}"
                )),
            ),
        },
    }
}

/// Cluster seconds since `t0`.
fn elapsed_s(t0: Instant, speed: f64) -> i64 {
    (t0.elapsed().as_secs_f64() * speed).round() as i64
}

async fn evict_step(
    r: &Run,
    at_s: i64,
    which: Pods,
    refused: &mut BTreeSet<PodName>,
    reported: &mut BTreeSet<PodName>,
) {
    match writes::pods_to_evict(&r.read, &r.node, which).await {
        Ok(pods) => {
            r.note(at_s, format!("draining: {} pod(s) to evict", pods.len()));
            evict_each(r, at_s, pods, refused, reported).await;
        }
        Err(e) => r.note(at_s, e.to_string()),
    }
}

async fn retry(
    r: &Run,
    at_s: i64,
    refused: &mut BTreeSet<PodName>,
    reported: &mut BTreeSet<PodName>,
) {
    let again: Vec<PodName> = std::mem::take(refused).into_iter().collect();
    evict_each(r, at_s, again, refused, reported).await;
}

/// Evicts `pods` one after the other, until a stop is asked.
async fn evict_each(
    r: &Run,
    at_s: i64,
    pods: Vec<PodName>,
    refused: &mut BTreeSet<PodName>,
    reported: &mut BTreeSet<PodName>,
) {
    for p in pods {
        if r.stop().is_some() {
            return;
        }
        evict_one(r, at_s, p, refused, reported).await;
    }
}

async fn evict_one(
    r: &Run,
    at_s: i64,
    p: PodName,
    refused: &mut BTreeSet<PodName>,
    reported: &mut BTreeSet<PodName>,
) {
    match writes::evict(&r.client, &p, false).await {
        Ok(()) => {
            r.count(1, 0);
            r.note(at_s, format!("evicted {}/{}", p.namespace, p.name));
        }
        // Gone meanwhile: nothing left to evict.
        Err(e) if e.refusal() == DrillRefusal::NotFound => {}
        Err(e) if e.budget_refused() => {
            r.count(0, 1);
            if reported.insert(p.clone()) {
                r.note(
                    at_s,
                    format!(
                        "eviction of {}/{} refused: {}",
                        p.namespace,
                        p.name,
                        e.message()
                    ),
                );
                let message = format!(
                    "Cannot evict pod {}/{} as it would {} (preemption drill)",
                    p.namespace,
                    p.name,
                    labels::PDB_REFUSAL_MESSAGE
                );
                let _ = writes::event(
                    &r.client,
                    &r.node,
                    labels::REASON_FAILED_EVICTION,
                    &message,
                    Utc::now(),
                )
                .await;
            }
            refused.insert(p);
        }
        Err(e) => r.note(at_s, e.to_string()),
    }
}
