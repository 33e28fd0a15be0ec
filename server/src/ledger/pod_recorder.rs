//! Records showback's pod intervals: every [`SAMPLE_EVERY`] it looks at the active pods the
//! hub holds on nodes and opens an interval for each pod newly there, closes the intervals of
//! pods gone, and starts a new one for a pod whose node, requests or team label changed.
//!
//! Why sampled, not per pod change: the hub keeps no change feed per pod (a pod is a 40-byte
//! slot, read in place: [`PodStays`]), and a pod's cost is hours × price, which an end seen up to
//! 15 s late moves by a quarter of a minute of one node's price at most.
//!
//! A restart, or a takeover by another replica, takes up the ledger's open intervals: a pod
//! still there continues its interval; one gone ends at the ledger's last heartbeat (it went
//! while nobody watched). Only clusters whose every watch has listed are judged, so a cluster
//! still connecting does not look empty. A failed write changes nothing here: the next look
//! makes the same changes again (the writes are idempotent).

use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use spotboard_core::model::PodInterval;

use super::Ledger;
use super::pod_intervals::Close;
use crate::Result;
use crate::hub::{Hub, PodStay, PodStays, PodUid};

/// How often the hub's pods are looked at by default.
pub const SAMPLE_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

/// An open interval as the recorder remembers it: 24 bytes beside its 24-byte key, one per
/// running pod (a million of them at 20 clusters × 50,000 pods), so each field is as small
/// as it can be.
#[derive(Clone, Copy, Debug)]
struct Open {
    /// Unix seconds, as the ledger keys the interval (`started_at`).
    started_at: i64,
    /// What ends the interval when it changes: node, namespace, workload, team, requests.
    fingerprint: u64,
    /// The last look that saw the pod (looks wrap after 2,000 years of 15-second looks).
    seen: u32,
}

/// The open intervals of one cluster, by pod.
///
/// Why one map a cluster: a look reads and writes a cluster at a time, and one map of a
/// million pods has 2^21 slots of 49 bytes (103 MB, as a map is at most 7/8 full) where 20
/// maps of 50,000 have 2^16 each (64 MB in all).
type ClusterOpen = HashMap<PodUid, Open>;

impl Open {
    fn started(&self) -> DateTime<Utc> {
        DateTime::from_timestamp(self.started_at, 0).unwrap_or_default()
    }
}

/// The fingerprint of an interval's identity: the same from a [`PodStay`] (no allocation) and
/// from a [`PodInterval`] read back from the ledger.
fn fingerprint(
    node_uid: &str,
    namespace: &str,
    workload: &[&str],
    team: Option<&str>,
    requests: (u32, u64, u64),
) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    // Raw writes stream their bytes: the workload's pieces hash as its whole text.
    for part in [node_uid, namespace] {
        h.write(part.as_bytes());
        h.write_u8(0xff);
    }
    for piece in workload {
        h.write(piece.as_bytes());
    }
    h.write_u8(0xff);
    match team {
        Some(t) => {
            h.write_u8(1);
            h.write(t.as_bytes());
        }
        None => h.write_u8(0),
    }
    h.write_u32(requests.0);
    h.write_u64(requests.1);
    h.write_u64(requests.2);
    h.finish()
}

/// The team of `stay`: the value of `team_label` on the pod, else on its namespace (a pod's
/// own label wins, as a namespace's default is meant to be overridden).
fn team<'a>(stay: &PodStay<'a>, team_label: &str) -> Option<&'a str> {
    stay.facts
        .labels
        .get(team_label)
        .or_else(|| stay.namespace_labels?.get(team_label))
        .map(String::as_str)
}

fn stay_fingerprint(stay: &PodStay<'_>, team_label: &str) -> u64 {
    let f = stay.facts;
    let owner = f.owner_kind.as_deref().zip(f.owner_name.as_deref());
    let workload: [&str; 3] = match owner {
        Some((k, n)) => [k, "/", n],
        None => ["Pod", "/", &f.name],
    };
    fingerprint(
        stay.node_uid,
        &f.namespace,
        &workload,
        team(stay, team_label),
        (f.gpus, f.cpu_m, f.memory_b),
    )
}

fn interval_fingerprint(iv: &PodInterval) -> u64 {
    fingerprint(
        &iv.node_uid,
        &iv.namespace,
        &[&iv.workload],
        iv.team.as_deref(),
        (iv.gpus, iv.cpu_m, iv.memory_b),
    )
}

/// The interval `stay` opens at `now`, its team read from `team_label` (see [`team`]).
pub fn interval(
    cluster: &str,
    stay: &PodStay<'_>,
    team_label: &str,
    now: DateTime<Utc>,
) -> PodInterval {
    let f = stay.facts;
    PodInterval {
        cluster: cluster.to_string(),
        node_uid: stay.node_uid.to_string(),
        namespace: f.namespace.clone(),
        workload: f.workload(),
        pod_uid: stay.pod_uid.to_string(),
        team: team(stay, team_label).map(str::to_string),
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
    /// The open intervals, by cluster (an index into [`PodRecorder::clusters`]).
    open: Option<HashMap<u32, ClusterOpen>>,
    /// The clusters the open intervals are kept under, each named once.
    clusters: Vec<Arc<str>>,
    looks: u32,
}

/// The index of `cluster` in `clusters`, added when new (a fleet has a few dozen at most).
fn cluster_index(clusters: &mut Vec<Arc<str>>, cluster: &str) -> u32 {
    let at = match clusters.iter().position(|c| &**c == cluster) {
        Some(i) => i,
        None => {
            clusters.push(cluster.into());
            clusters.len() - 1
        }
    };
    u32::try_from(at).unwrap_or(u32::MAX)
}

impl PodRecorder {
    pub fn new(team_label: &str) -> Self {
        Self {
            team_label: team_label.to_string(),
            open: None,
            clusters: Vec::new(),
            looks: 0,
        }
    }

    /// Intervals open now, as the recorder knows them (`None` before its first look).
    pub fn open_count(&self) -> Option<usize> {
        self.open
            .as_ref()
            .map(|o| o.values().map(HashMap::len).sum())
    }

    /// One look at `pods`, a cluster at a time: each cluster's pods are read, and the
    /// intervals its pods opened, changed or left written (one transaction), before the next
    /// cluster is read. On a replica that does not write, forgets what it knew (the writer's
    /// intervals are read again on a takeover).
    ///
    /// Why a cluster at a time: the first look after a list opens an interval for every pod.
    /// At 20 clusters × 50,000 pods, one look over all of them held the hub's read lock while
    /// it built a million intervals (heaptrack at a fifth of that fleet: 59 MB in that one
    /// vector), and every watch waited; the dashboard's RSS stood 300 MB higher for 25 s.
    /// Now the lock is held for one cluster's pods, and the intervals in memory are one
    /// cluster's.
    ///
    /// Errors: the database failed; the clusters written before it are remembered, the rest
    /// are not, so the next look writes them again.
    pub async fn step(
        &mut self,
        ledger: &Ledger,
        pods: &impl PodStays,
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
                let mut open: HashMap<u32, ClusterOpen> = HashMap::new();
                for iv in &read {
                    let c = cluster_index(&mut self.clusters, &iv.cluster);
                    open.entry(c).or_default().insert(
                        PodUid::of(&iv.pod_uid),
                        Open {
                            started_at: iv.started_at.timestamp(),
                            fingerprint: interval_fingerprint(iv),
                            seen: 0,
                        },
                    );
                }
                (open, beat.min(now))
            }
        };
        self.looks = self.looks.wrapping_add(1);
        let look = self.looks;
        for cluster in pods.listed_clusters() {
            let c = cluster_index(&mut self.clusters, &cluster);
            let known = open.entry(c).or_default();
            let (mut starts, mut ends) = (Vec::new(), Vec::<Close>::new());
            let mut opened: Vec<(PodUid, Open)> = Vec::new();
            let team_label = self.team_label.as_str();
            let listed = pods.each_pod_stay(&cluster, &mut |stay| {
                let fp = stay_fingerprint(stay, team_label);
                match known.get_mut(&stay.pod_uid) {
                    Some(o) if o.fingerprint == fp => {
                        o.seen = look;
                        return;
                    }
                    Some(o) => {
                        o.seen = look;
                        ends.push((stay.pod_uid.to_string(), o.started(), now));
                    }
                    None => {}
                }
                opened.push((
                    stay.pod_uid.clone(),
                    Open {
                        started_at: now.timestamp(),
                        fingerprint: fp,
                        seen: look,
                    },
                ));
                starts.push(interval(&cluster, stay, team_label, now));
            });
            // Between the two reads its watches began listing again: judged next time.
            if !listed {
                continue;
            }
            let gone: Vec<PodUid> = known
                .iter()
                .filter(|(_, o)| o.seen != look)
                .map(|(k, _)| k.clone())
                .collect();
            for k in &gone {
                if let Some(o) = known.get(k) {
                    ends.push((k.to_string(), o.started(), gone_at.max(o.started())));
                }
            }
            if (!starts.is_empty() || !ends.is_empty())
                && let Err(e) = ledger.pod_intervals(&starts, &ends).await
            {
                // This cluster's changes are not in the database: looked at again next time.
                self.open = Some(open);
                return Err(e);
            }
            for k in gone {
                known.remove(&k);
            }
            known.extend(opened);
            // A first list or a departed fleet leaves the map's buffer at its largest.
            if known.capacity() > 4 * known.len().max(1024) {
                known.shrink_to_fit();
            }
        }
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
            // A replica that does not write reads nothing of the hub's pods.
            if !ledger.writer().holds() {
                recorder.open = None;
                continue;
            }
            match recorder.step(&ledger, &hub, Utc::now()).await {
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
