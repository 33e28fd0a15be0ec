//! Which replica writes the ledger: leader election on a `coordination.k8s.io/v1` Lease.
//!
//! Every replica watches its clusters and serves viewers; only the holder of the Lease writes
//! the ledger (lifetimes, T=0s, preempted pods, NodePool conditions, the heartbeat). The
//! others follow the same facts and keep their recent writes, so the one that takes over
//! writes what the old holder had not written yet (every ledger write is idempotent, so what
//! both wrote is written once).
//!
//! # Timing (defaults, `--lease-duration-seconds 15`)
//! - The holder renews every [`LeaseConfig::retry`] (2 s) and writes only until
//!   [`LeaseConfig::renew_deadline`] (10 s) after the start of its last successful renewal.
//! - Another replica takes the Lease once it has seen the same record for a whole lease
//!   duration (15 s) by its own clock, reading every second. Since it saw that record after the
//!   holder began renewing it, the old holder has stopped writing 5 s before the new one may
//!   start; a holder killed outright is replaced within 15 s + 2 s.
//! - On a clean stop the holder writes the Lease free, and the next replica takes it at once.
//!
//! Why not a crate: `kube-leader-election` is built on kube 4, and `kube-lease-manager` (kube
//! 5) keeps reporting leadership while it cannot renew (its watch channel does not turn false
//! on API errors), so its holder would go on writing after another replica took over.

pub mod decide;

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use tokio::sync::watch;

use decide::{Observed, Record, Step, decide};

/// Where the Lease is and how it is held.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// This replica's `holderIdentity`: unique per process (pod name and process epoch).
    pub identity: String,
    /// `leaseDurationSeconds`: how long a holder that stops renewing keeps the Lease.
    pub duration: Duration,
    /// How long the holder keeps writing after its last successful renewal began; two
    /// thirds of `duration`, so it stops before any other replica may start.
    pub renew_deadline: Duration,
    /// Between renewals; followers read twice as often.
    pub retry: Duration,
}

impl LeaseConfig {
    /// The Lease `namespace/name` held for `duration` by `identity`, with client-go's ratios
    /// (15 s / 10 s / 2 s at the default duration).
    pub fn new(namespace: &str, name: &str, identity: String, duration: Duration) -> Self {
        LeaseConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity,
            duration,
            renew_deadline: duration * 2 / 3,
            retry: (duration / 7).max(Duration::from_millis(200)),
        }
    }
}

/// This replica's part in the election, as last known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// No election: a lone process (an SQLite ledger, or the embedded cluster's own run).
    Sole,
    /// This replica holds the Lease and may write until `until`.
    Holding { until: Instant },
    /// Another replica (or nobody, yet) holds it.
    Following { holder: Option<String> },
}

/// Whether this process may write the ledger now. Cheap to clone; every ledger write asks.
#[derive(Clone, Debug)]
pub struct Leadership(watch::Receiver<State>);

impl Leadership {
    /// Always writes: no other replica shares the ledger.
    pub fn sole() -> Self {
        Leadership(watch::channel(State::Sole).1)
    }

    /// A replica that follows `holder` (for the recorder's tests).
    #[cfg(test)]
    pub(crate) fn following(holder: &str) -> Self {
        Leadership(
            watch::channel(State::Following {
                holder: Some(holder.into()),
            })
            .1,
        )
    }

    /// True when this process may write the ledger at this instant.
    pub fn holds(&self) -> bool {
        match &*self.0.borrow() {
            State::Sole => true,
            State::Holding { until } => Instant::now() < *until,
            State::Following { .. } => false,
        }
    }

    /// True when replicas elect the writer (false for a lone process).
    pub fn is_elected(&self) -> bool {
        *self.0.borrow() != State::Sole
    }

    /// Who writes the ledger, for `/readyz` and the logs.
    pub fn describe(&self) -> String {
        match &*self.0.borrow() {
            State::Sole => "this process".into(),
            State::Holding { .. } if self.holds() => "this replica".into(),
            State::Holding { .. } => "nobody (this replica's lease ran out)".into(),
            State::Following { holder: Some(h) } => format!("replica {h}"),
            State::Following { holder: None } => "nobody yet".into(),
        }
    }

    /// Waits up to `limit` for this process to hold the Lease; true if it does.
    pub async fn wait_to_hold(&self, limit: Duration) -> bool {
        let mut rx = self.0.clone();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.holds() {
                return true;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => continue,
                _ => return self.holds(),
            }
        }
    }
}

/// A running election: its [`Leadership`], and the way to leave it cleanly (dropping it
/// leaves too: the loop sees its stop channel close).
pub struct Elector {
    pub leadership: Leadership,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Elector {
    /// Starts taking part in the election for `cfg`'s Lease through `client` (spotboard's own
    /// identity; it needs get, create and update on Leases in that namespace).
    pub fn spawn(client: kube::Client, cfg: LeaseConfig) -> Elector {
        let (state_tx, state_rx) = watch::channel(State::Following { holder: None });
        let (stop, stop_rx) = watch::channel(false);
        let api: Api<Lease> = Api::namespaced(client, &cfg.namespace);
        let task = tokio::spawn(run(api, cfg, state_tx, stop_rx));
        Elector {
            leadership: Leadership(state_rx),
            stop,
            task,
        }
    }

    /// Stops renewing at once and leaves the Lease held, as a killed process does: the next
    /// replica waits out the lease duration. For tests of a takeover.
    pub fn abandon(self) {
        self.task.abort();
    }

    /// Leaves the election: stops renewing and, when this replica holds the Lease, writes it
    /// free so another replica takes over at once instead of after a lease duration. Call
    /// it after the last ledger write.
    pub async fn release(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(2), self.task).await;
    }
}

async fn run(
    api: Api<Lease>,
    cfg: LeaseConfig,
    state: watch::Sender<State>,
    mut stop: watch::Receiver<bool>,
) {
    let mut observed: Option<Observed> = None;
    let mut failing = false;
    loop {
        let began = Instant::now();
        match attempt(&api, &cfg, &mut observed).await {
            Ok(None) => {
                state.send_if_modified(|s| {
                    set(
                        s,
                        State::Holding {
                            until: began + cfg.renew_deadline,
                        },
                    )
                });
                failing = false;
            }
            Ok(Some(holder)) => {
                state.send_if_modified(|s| set(s, State::Following { holder }));
                failing = false;
            }
            // A holder that cannot renew keeps its `until`: it stops writing when that passes.
            Err(e) if !failing => {
                failing = true;
                tracing::error!(error = %e, namespace = %cfg.namespace, lease = %cfg.name,
                    "leader election: the Lease could not be read or written (does the namespace exist, \
                     and may this account get, create and update Leases there?); this replica writes \
                     no ledger until it can, and keeps trying");
            }
            Err(_) => {}
        }
        let holding = matches!(*state.borrow(), State::Holding { .. });
        let wait = if holding { cfg.retry } else { cfg.retry / 2 };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => {
                // Not writing from here on: the Lease may be taken as soon as it is free.
                state.send_replace(State::Following { holder: None });
                if holding {
                    release(&api, &cfg).await;
                }
                return;
            }
        }
    }
}

fn set(s: &mut State, new: State) -> bool {
    let changed = std::mem::discriminant(s) != std::mem::discriminant(&new)
        || matches!((&*s, &new), (State::Following { holder: a }, State::Following { holder: b }) if a != b);
    if changed {
        match &new {
            State::Holding { .. } => {
                tracing::info!("leader election: this replica now writes the ledger")
            }
            State::Following { holder: Some(h) } => {
                tracing::info!(holder = %h, "leader election: another replica writes the ledger")
            }
            _ => {}
        }
    }
    // The deadline moves at every renewal even when the state's kind does not.
    let moved = matches!(&new, State::Holding { .. }) && *s != new;
    *s = new;
    changed || moved
}

/// One read and, when due, one write. `Ok(None)`: this replica holds the Lease now;
/// `Ok(Some(holder))`: it does not.
async fn attempt(
    api: &Api<Lease>,
    cfg: &LeaseConfig,
    observed: &mut Option<Observed>,
) -> Result<Option<Option<String>>, kube::Error> {
    let Some(mut lease) = api.get_opt(&cfg.name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(cfg.name.clone()),
                namespace: Some(cfg.namespace.clone()),
                ..Default::default()
            },
            spec: Some(spec(cfg, None, 0)),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(None),
            // Another replica created it first: read it next time.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(Some(None)),
            Err(e) => Err(e),
        };
    };
    let record = record_of(&lease);
    // A record is observed when the read returns (as client-go does): a slow read must not
    // date it earlier than the holder's renewal.
    let read_at = Instant::now();
    let next = Observed::update(observed.take(), record.clone(), read_at);
    let step = decide(&cfg.identity, &next, read_at, cfg.duration);
    *observed = Some(next);
    let acquire_time = match step {
        Step::Wait => return Ok(Some(record.holder)),
        Step::Renew => lease.spec.as_ref().and_then(|s| s.acquire_time.clone()),
        Step::Acquire => None,
    };
    // Counted as client-go counts them: every acquisition after the Lease's creation.
    let transitions = record.transitions + i32::from(step == Step::Acquire);
    let s = spec(cfg, acquire_time, transitions);
    lease.spec = Some(s);
    // The read's resourceVersion goes with the write: a replica that took the Lease since
    // makes this a 409, never a second holder.
    match api.replace(&cfg.name, &PostParams::default(), &lease).await {
        Ok(written) => {
            *observed = Some(Observed::update(None, record_of(&written), Instant::now()));
            Ok(None)
        }
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(Some(None)),
        Err(e) => Err(e),
    }
}

/// This replica's spec, renewed now; `acquire_time` is kept on a renewal.
fn spec(cfg: &LeaseConfig, acquire_time: Option<MicroTime>, transitions: i32) -> LeaseSpec {
    let now = MicroTime(Timestamp::now());
    LeaseSpec {
        holder_identity: Some(cfg.identity.clone()),
        lease_duration_seconds: Some(cfg.duration.as_secs().max(1) as i32),
        acquire_time: Some(acquire_time.unwrap_or_else(|| now.clone())),
        renew_time: Some(now),
        lease_transitions: Some(transitions),
        ..Default::default()
    }
}

fn record_of(lease: &Lease) -> Record {
    let s = lease.spec.clone().unwrap_or_default();
    Record {
        holder: s.holder_identity.filter(|h| !h.is_empty()),
        renew_time: s.renew_time.map(|t| t.0.to_string()),
        duration_s: s.lease_duration_seconds,
        transitions: s.lease_transitions.unwrap_or(0),
    }
}

/// Writes the Lease free (no holder, as client-go's `ReleaseOnCancel` does) if this replica
/// still holds it; a failure only means the next replica waits out the lease duration.
async fn release(api: &Api<Lease>, cfg: &LeaseConfig) {
    let Ok(Some(mut lease)) = api.get_opt(&cfg.name).await else {
        return;
    };
    if record_of(&lease).holder.as_deref() != Some(cfg.identity.as_str()) {
        return;
    }
    if let Some(s) = lease.spec.as_mut() {
        s.holder_identity = None;
        s.lease_duration_seconds = Some(1);
        s.renew_time = Some(MicroTime(Timestamp::now()));
    }
    match api.replace(&cfg.name, &PostParams::default(), &lease).await {
        Ok(_) => tracing::info!("leader election: released the Lease"),
        Err(e) => {
            tracing::warn!(error = %e, "leader election: could not release the Lease; the next replica waits out its duration")
        }
    }
}
