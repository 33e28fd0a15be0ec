//! Records showback's pod intervals: every [`SAMPLE_EVERY`] it looks at the active pods the
//! hub holds on nodes and opens an interval for each pod newly there, closes the intervals of
//! pods gone, and starts a new one for a pod whose node, requests or team label changed.
//!
//! Why sampled, not per pod change: the hub keeps no change feed per pod (a pod is a 40-byte
//! slot, [`crate::hub::PodStay`]), and a pod's cost is hours × price, which an end seen up to
//! 15 s late moves by a quarter of a minute of one node's price at most.
//!
//! A restart, or a takeover by another replica, takes up the ledger's open intervals: a pod
//! still there continues its interval; one gone ends at the ledger's last heartbeat (it went
//! while nobody watched). Only clusters whose every watch has listed are judged, so a cluster
//! still connecting does not look empty. A failed write changes nothing here: the next look
//! makes the same changes again (the writes are idempotent).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use spotboard_core::model::PodInterval;
use uuid::Uuid;

use super::Ledger;
use super::pod_intervals::Close;
use crate::Result;
use crate::hub::{Hub, PodStay};

/// How often the hub's pods are looked at by default.
pub const SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

/// A pod's uid as kept: 16 bytes when it is a UUID (the API server's are), else its text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum PodKey {
    Uuid(Uuid),
    Text(Box<str>),
}

impl PodKey {
    fn of(uid: &str) -> Self {
        match Uuid::parse_str(uid) {
            Ok(u) if u.hyphenated().to_string() == uid => PodKey::Uuid(u),
            _ => PodKey::Text(uid.into()),
        }
    }

    fn text(&self) -> String {
        match self {
            PodKey::Uuid(u) => u.hyphenated().to_string(),
            PodKey::Text(t) => t.to_string(),
        }
    }
}

/// An open interval as the recorder remembers it.
#[derive(Clone, Debug)]
struct Open {
    started_at: DateTime<Utc>,
    /// What ends the interval when it changes: node, namespace, workload, team, requests.
    fingerprint: u64,
    cluster: Arc<str>,
}

fn fingerprint(iv: &PodInterval) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        &iv.node_uid,
        &iv.namespace,
        &iv.workload,
        &iv.team,
        iv.gpus,
        iv.cpu_m,
        iv.memory_b,
    )
        .hash(&mut h);
    h.finish()
}

/// The interval `stay` opens at `now`, its team the value of `team_label` on the pod, else on
/// its namespace (a pod's own label wins, as a namespace's default is meant to be overridden).
pub fn interval(
    cluster: &str,
    stay: &PodStay,
    team_label: &str,
    now: DateTime<Utc>,
) -> PodInterval {
    let f = &stay.facts;
    PodInterval {
        cluster: cluster.to_string(),
        node_uid: stay.node_uid.to_string(),
        namespace: f.namespace.clone(),
        workload: f.workload(),
        pod_uid: stay.pod_uid.clone(),
        team: f
            .labels
            .get(team_label)
            .or_else(|| stay.namespace_labels.as_ref()?.get(team_label))
            .cloned(),
        gpus: f.gpus,
        cpu_m: f.cpu_m,
        memory_b: f.memory_b,
        node_gpus: stay.node_gpus,
        node_cpu_m: stay.node_cpu_m,
        node_memory_b: stay.node_memory_b,
        started_at: now,
        ended_at: None,
    }
}

/// The recorder's memory: the open intervals, once read from the ledger.
pub struct PodRecorder {
    team_label: String,
    open: Option<HashMap<PodKey, Open>>,
}

impl PodRecorder {
    pub fn new(team_label: &str) -> Self {
        Self {
            team_label: team_label.to_string(),
            open: None,
        }
    }

    /// Intervals open now, as the recorder knows them (`None` before its first look).
    pub fn open_count(&self) -> Option<usize> {
        self.open.as_ref().map(HashMap::len)
    }

    /// One look: the changes since the last, written in one transaction. On a replica that
    /// does not write, forgets what it knew (the writer's intervals are read again on a
    /// takeover).
    ///
    /// Errors: the database failed; nothing is remembered as written, so the next look
    /// writes it again.
    pub async fn step(
        &mut self,
        ledger: &Ledger,
        stays: &[(String, Vec<PodStay>)],
        now: DateTime<Utc>,
    ) -> Result<()> {
        if !ledger.writer().holds() {
            self.open = None;
            return Ok(());
        }
        // After a start: pods gone meanwhile ended at the last heartbeat.
        let (mut open, gone_at) = match self.open.take() {
            Some(o) => (o, now),
            None => {
                let read = ledger.open_pod_intervals().await?;
                let beat = ledger.last_beat().await?.unwrap_or(now);
                let open = read
                    .iter()
                    .map(|iv| {
                        (
                            PodKey::of(&iv.pod_uid),
                            Open {
                                started_at: iv.started_at,
                                fingerprint: fingerprint(iv),
                                cluster: iv.cluster.as_str().into(),
                            },
                        )
                    })
                    .collect();
                (open, beat.min(now))
            }
        };
        let judged: HashSet<&str> = stays.iter().map(|(c, _)| c.as_str()).collect();
        let mut starts = Vec::new();
        let mut ends: Vec<Close> = Vec::new();
        let mut here: HashSet<PodKey> = HashSet::new();
        let mut opened: Vec<(PodKey, Open)> = Vec::new();
        for (cluster, pods) in stays {
            let shared: Arc<str> = cluster.as_str().into();
            for stay in pods {
                let iv = interval(cluster, stay, &self.team_label, now);
                let key = PodKey::of(&stay.pod_uid);
                let fp = fingerprint(&iv);
                match open.get(&key) {
                    Some(o) if o.fingerprint == fp => {}
                    was => {
                        if let Some(o) = was {
                            ends.push((stay.pod_uid.clone(), o.started_at, now));
                        }
                        opened.push((
                            key.clone(),
                            Open {
                                started_at: now,
                                fingerprint: fp,
                                cluster: shared.clone(),
                            },
                        ));
                        starts.push(iv);
                    }
                }
                here.insert(key);
            }
        }
        let gone: Vec<PodKey> = open
            .iter()
            .filter(|(k, o)| judged.contains(&*o.cluster) && !here.contains(*k))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            if let Some(o) = open.get(k) {
                ends.push((k.text(), o.started_at, gone_at.max(o.started_at)));
            }
        }
        if (!starts.is_empty() || !ends.is_empty())
            && let Err(e) = ledger.pod_intervals(&starts, &ends).await
        {
            // Nothing changed in the database: look again from what was known.
            self.open = Some(open);
            return Err(e);
        }
        for k in gone {
            open.remove(&k);
        }
        open.extend(opened);
        self.open = Some(open);
        Ok(())
    }
}

/// Follows the hub's pods into intervals every `every` ([`SAMPLE_EVERY`] unless
/// `--showback-sample-seconds` says otherwise); a failed look is logged once until one
/// succeeds.
pub fn spawn(
    ledger: Ledger,
    hub: Hub,
    team_label: String,
    every: std::time::Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut recorder = PodRecorder::new(&team_label);
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            tick.tick().await;
            let stays = hub.pod_stays();
            match recorder.step(&ledger, &stays, Utc::now()).await {
                Ok(()) => failing = false,
                Err(crate::Error::NotWriter { .. }) => {}
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e,
                        "recording pod intervals failed; the next look writes the changes again");
                }
                Err(_) => {}
            }
        }
    })
}

#[cfg(test)]
#[path = "pod_recorder_tests.rs"]
mod tests;
