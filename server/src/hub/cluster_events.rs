//! A cluster's events: kept within their bounds (the newest of each sort), and what they tell
//! the rows of other kinds: Karpenter's `SpotInterrupted` puts its node under notice, a
//! NodeClaim's launch failure belongs to a Karpenter NodePool, a node's event waits for the
//! node's pool to be known.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use spotboard_core::Provider;
use spotboard_core::model::RowKind;

use super::{
    CLAIM_EVENTS_PER_CLUSTER, ClusterData, Dirty, EVENTS_PER_CLUSTER, POD_EVENTS_PER_CLUSTER,
};
use crate::{
    projection,
    watch::records::{EventRecord, Observed},
};

/// The uids of the oldest of the events `counted` picks (by last seen) beyond the newest
/// `keep`.
fn oldest_past(
    events: &HashMap<String, EventRecord>,
    keep: usize,
    counted: impl Fn(&EventRecord) -> bool,
) -> Vec<String> {
    if events.len() <= keep {
        return Vec::new();
    }
    let mut by_age: Vec<(Option<DateTime<Utc>>, &String)> = events
        .values()
        .filter(|e| counted(e))
        .map(|e| (e.last_seen, &e.uid))
        .collect();
    if by_age.len() <= keep {
        return Vec::new();
    }
    by_age.sort();
    let over = by_age.len() - keep;
    by_age
        .into_iter()
        .take(over)
        .map(|(_, uid)| uid.clone())
        .collect()
}

/// Whether `e` is about a NodeClaim (Karpenter's launch failures): counted apart.
fn about_claim(e: &EventRecord) -> bool {
    e.kind == "NodeClaim"
}

impl ClusterData {
    pub fn events(&mut self, change: Observed<EventRecord>) -> Vec<Dirty> {
        let mut dirty = self.observe(
            change,
            |s| {
                s.events
                    .keys()
                    .chain(s.pod_events.keys())
                    .cloned()
                    .collect()
            },
            |r| &r.uid,
            Self::put_event,
            Self::drop_event,
        );
        for uid in oldest_past(&self.pod_events, POD_EVENTS_PER_CLUSTER, |_| true) {
            self.pod_events.remove(&uid);
        }
        let others = oldest_past(&self.events, EVENTS_PER_CLUSTER, |e| !about_claim(e));
        let claims = oldest_past(&self.events, CLAIM_EVENTS_PER_CLUSTER, about_claim);
        for uid in others.into_iter().chain(claims) {
            self.forget_event(&uid);
            dirty.push((RowKind::Event, uid));
        }
        dirty
    }

    fn put_event(&mut self, rec: EventRecord, dirty: &mut Vec<Dirty>) {
        if rec.kind == "Pod" {
            self.pod_events.insert(rec.uid.clone(), rec);
            return;
        }
        dirty.push((RowKind::Event, rec.uid.clone()));
        let interrupted = if rec.drill {
            &mut self.drill_interrupted
        } else {
            &mut self.interrupted
        };
        if rec.kind == "Node"
            && rec.reason == spotboard_core::labels::KARPENTER_SPOT_INTERRUPTED
            && interrupted.insert(rec.object_name.clone())
        {
            self.dirty_node_named(&rec.object_name, dirty);
            if let Some(pool) = self.node_pool_seen.pool(&rec.object_name).cloned() {
                self.dirty_pool_named(&pool, dirty);
            }
        }
        if rec.kind == "NodeClaim" && self.nodeclaim_pool(&rec.object_name).is_none() {
            self.claims_awaiting_pool.insert(rec.uid.clone());
        }
        if rec.kind == "Node" && self.node_pool_seen.pool(&rec.object_name).is_none() {
            let waiting = self
                .events_awaiting_pool
                .entry(rec.object_name.clone())
                .or_default();
            if !waiting.contains(&rec.uid) {
                waiting.push(rec.uid.clone());
            }
        }
        self.events.insert(rec.uid.clone(), rec);
    }

    fn drop_event(&mut self, uid: &str, dirty: &mut Vec<Dirty>) {
        if self.pod_events.remove(uid).is_some() {
            return;
        }
        self.forget_event(uid);
        dirty.push((RowKind::Event, uid.to_string()));
    }

    /// Removes an event and its place among those awaiting their node's pool.
    fn forget_event(&mut self, uid: &str) {
        let Some(rec) = self.events.remove(uid) else {
            return;
        };
        self.claims_awaiting_pool.remove(uid);
        if let Some(waiting) = self.events_awaiting_pool.get_mut(&rec.object_name) {
            waiting.retain(|u| u != uid);
            if waiting.is_empty() {
                self.events_awaiting_pool.remove(&rec.object_name);
            }
        }
    }

    /// The Karpenter NodePool a NodeClaim named `nodeclaim` belongs to, among the NodePool
    /// objects and the pools the nodes name.
    pub(super) fn nodeclaim_pool(&self, nodeclaim: &str) -> Option<String> {
        let objects = self.karpenter.values().map(|r| r.name.as_str());
        let named = self
            .provider_pools
            .values()
            .filter(|(p, _)| *p == Provider::Karpenter)
            .map(|(_, name)| name.as_str());
        spotboard_core::domain::capacity::launch_failures::nodeclaim_pool(
            nodeclaim,
            objects.chain(named),
        )
        .map(str::to_string)
    }

    /// The current event row of `uid`, if the event is kept.
    pub fn event_row(&self, cluster: &str, uid: &str) -> Option<spotboard_core::model::EventRow> {
        let rec = self.events.get(uid)?;
        let pool = match rec.kind.as_str() {
            "NodePool" => Some(rec.object_name.clone()),
            "NodeClaim" => self.nodeclaim_pool(&rec.object_name),
            _ => self
                .node_pool_seen
                .pool(&rec.object_name)
                .map(|p| p.to_string()),
        };
        Some(projection::event_row(cluster, rec, pool))
    }
}
