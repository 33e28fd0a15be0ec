//! Rows that the server's producers derive (preemption timelines, waves, the ledger's rates,
//! the capacity grid, the readiness audit, alerts) and publish on the same stream as pools and
//! nodes (snapshot, keyed deltas and resume) through one interface, [`Hub::publish`]
//! (`super::Hub`). A producer publishes its whole current set of one kind; the publisher sends
//! what changed. Nothing here writes to the watched clusters' records.

use std::collections::HashMap;

use serde::Serialize;
use spotboard_core::{
    domain::preemption::rates::RateRow,
    model::{
        Alert, CapacityCell, Change, ClusterAudit, FallbackRow, LaunchFailureRow, PoolReadiness,
        PreemptionView, QueueRow, RowKind, Scope, SourceStatus, UndeliveredAlert, WaitingPool,
        Wave,
    },
};

/// A row kind a producer derives: its key on the stream, where it belongs, and where the
/// publisher keeps it.
pub trait DerivedRow: Serialize + PartialEq + Clone {
    const KIND: RowKind;
    fn key(&self) -> String;
    /// The cluster and pool the row is about; scopes filter on them.
    fn place(&self) -> (String, Option<String>) {
        (String::new(), None)
    }
    /// The map of [`Derived`] that holds this kind as last published.
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self>;
    /// The row as the stream carries it (a wave's or an alert's first nodes only).
    fn for_stream(self) -> Self {
        self
    }
}

impl DerivedRow for PreemptionView {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.preemptions
    }
    const KIND: RowKind = RowKind::Preemption;
    fn key(&self) -> String {
        self.uid.clone()
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), self.pool.clone())
    }
}

impl DerivedRow for Wave {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.waves
    }
    fn for_stream(self) -> Self {
        Wave::for_stream(self)
    }
    const KIND: RowKind = RowKind::Wave;
    fn key(&self) -> String {
        Wave::key(self)
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), None)
    }
}

impl DerivedRow for RateRow {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.rates
    }
    const KIND: RowKind = RowKind::Rate;
    fn key(&self) -> String {
        self.row_key()
    }
}

impl DerivedRow for UndeliveredAlert {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.alerts
    }
    const KIND: RowKind = RowKind::Alert;
    fn key(&self) -> String {
        UndeliveredAlert::key(self)
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), None)
    }
}

impl DerivedRow for ClusterAudit {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.audits
    }
    const KIND: RowKind = RowKind::Audit;
    fn key(&self) -> String {
        self.cluster.clone()
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), None)
    }
}

impl DerivedRow for PoolReadiness {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.pool_audits
    }
    const KIND: RowKind = RowKind::PoolAudit;
    fn key(&self) -> String {
        PoolReadiness::key(self)
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), Some(self.pool.clone()))
    }
}

impl DerivedRow for CapacityCell {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.cells
    }
    const KIND: RowKind = RowKind::Cell;
    fn key(&self) -> String {
        CapacityCell::key(self)
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), None)
    }
}

impl DerivedRow for Alert {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.firing
    }
    fn for_stream(self) -> Self {
        Alert::for_stream(self)
    }
    const KIND: RowKind = RowKind::Firing;
    fn key(&self) -> String {
        self.key.clone()
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), self.pool.clone())
    }
}

impl DerivedRow for SourceStatus {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.sources
    }
    const KIND: RowKind = RowKind::Source;
    fn key(&self) -> String {
        self.name.clone()
    }
}

impl DerivedRow for WaitingPool {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.waiting
    }
    const KIND: RowKind = RowKind::Waiting;
    fn key(&self) -> String {
        WaitingPool::key(self)
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), self.pool.clone())
    }
}

impl DerivedRow for FallbackRow {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.fallback
    }
    const KIND: RowKind = RowKind::Fallback;
    fn key(&self) -> String {
        FallbackRow::key(self)
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), Some(self.on_demand_pool.clone()))
    }
}

impl DerivedRow for QueueRow {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.queues
    }
    const KIND: RowKind = RowKind::Queue;
    fn key(&self) -> String {
        QueueRow::key(self)
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), None)
    }
}

impl DerivedRow for LaunchFailureRow {
    fn slot(d: &mut Derived) -> &mut HashMap<String, Self> {
        &mut d.launch_failures
    }
    const KIND: RowKind = RowKind::LaunchFailure;
    fn key(&self) -> String {
        LaunchFailureRow::key(self)
    }
    fn place(&self) -> (String, Option<String>) {
        (self.cluster.clone(), None)
    }
}

/// The derived rows as last published, one map per kind.
#[derive(Default)]
pub struct Derived {
    pub preemptions: HashMap<String, PreemptionView>,
    pub waves: HashMap<String, Wave>,
    pub rates: HashMap<String, RateRow>,
    pub alerts: HashMap<String, UndeliveredAlert>,
    pub audits: HashMap<String, ClusterAudit>,
    pub pool_audits: HashMap<String, PoolReadiness>,
    pub cells: HashMap<String, CapacityCell>,
    pub sources: HashMap<String, SourceStatus>,
    pub firing: HashMap<String, Alert>,
    pub waiting: HashMap<String, WaitingPool>,
    pub fallback: HashMap<String, FallbackRow>,
    pub queues: HashMap<String, QueueRow>,
    pub launch_failures: HashMap<String, LaunchFailureRow>,
}

/// The derived rows of one scope, each list in the order its page shows it.
pub struct DerivedSnapshot {
    pub preemptions: Vec<PreemptionView>,
    pub waves: Vec<Wave>,
    pub rates: Vec<RateRow>,
    pub alerts: Vec<UndeliveredAlert>,
    pub audits: Vec<ClusterAudit>,
    pub pool_audits: Vec<PoolReadiness>,
    pub cells: Vec<CapacityCell>,
    pub sources: Vec<SourceStatus>,
    pub firing: Vec<Alert>,
    pub waiting: Vec<WaitingPool>,
    pub fallback: Vec<FallbackRow>,
    pub queues: Vec<QueueRow>,
    pub launch_failures: Vec<LaunchFailureRow>,
}

/// One change to publish: key, cluster, where (`P`: the pool, or where it moved), change.
pub type Pending<P> = (String, String, P, Change);

/// Makes `map` hold exactly `rows`, returning the changes to publish (rows that did not
/// change give none). `change_of` gives a changed row's change and where to publish it.
pub fn replace_all<T: DerivedRow, P>(
    map: &mut HashMap<String, T>,
    rows: Vec<T>,
    change_of: impl Fn(Option<&T>, Option<&T>) -> Option<(Change, P)>,
) -> Vec<Pending<P>> {
    let mut fresh: HashMap<String, T> = rows.into_iter().map(|r| (r.key(), r)).collect();
    let mut out = Vec::new();
    for (key, old) in map.iter() {
        if !fresh.contains_key(key)
            && let Some((c, place)) = change_of(Some(old), None)
        {
            out.push((key.clone(), old.place().0, place, c));
        }
    }
    for (key, new) in fresh.iter() {
        if let Some((c, place)) = change_of(map.get(key), Some(new)) {
            out.push((key.clone(), new.place().0, place, c));
        }
    }
    std::mem::swap(map, &mut fresh);
    out
}

impl Derived {
    /// The derived rows of `scope`.
    pub fn snapshot(&self, scope: &Scope) -> DerivedSnapshot {
        let mut preemptions: Vec<PreemptionView> = self
            .preemptions
            .values()
            .filter(|p| scope.wants_preemption(&p.cluster, p.pool.as_deref()))
            .cloned()
            .collect();
        preemptions.sort_by(PreemptionView::order);
        let mut audits: Vec<ClusterAudit> = self
            .audits
            .values()
            .filter(|a| scope.wants_audit(&a.cluster))
            .cloned()
            .collect();
        audits.sort_by(|a, b| a.cluster.cmp(&b.cluster));
        let mut pool_audits: Vec<PoolReadiness> = self
            .pool_audits
            .values()
            .filter(|p| scope.wants_preemption(&p.cluster, Some(&p.pool)))
            .cloned()
            .collect();
        pool_audits.sort_by_key(PoolReadiness::key);
        let (mut cells, mut sources): (Vec<CapacityCell>, Vec<SourceStatus>) = if scope.capacity {
            (
                self.cells.values().cloned().collect(),
                self.sources.values().cloned().collect(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        cells.sort_by_key(CapacityCell::key);
        sources.sort_by(|a, b| a.name.cmp(&b.name));
        let mut firing: Vec<Alert> = self.firing.values().cloned().collect();
        firing.sort_by(|a, b| a.key.cmp(&b.key));
        let mut waiting: Vec<WaitingPool> = self
            .waiting
            .values()
            .filter(|w| waiting_wanted(scope, &w.cluster, w.pool.as_deref()))
            .cloned()
            .collect();
        waiting.sort_by_key(WaitingPool::key);
        let mut fallback: Vec<FallbackRow> = self
            .fallback
            .values()
            .filter(|f| scope.wants_cluster(&f.cluster))
            .cloned()
            .collect();
        fallback.sort_by_key(FallbackRow::key);
        let mut queues: Vec<QueueRow> = self
            .queues
            .values()
            .filter(|q| scope.wants_cluster(&q.cluster))
            .cloned()
            .collect();
        queues.sort_by_key(QueueRow::key);
        let mut launch_failures: Vec<LaunchFailureRow> = self
            .launch_failures
            .values()
            .filter(|r| scope.wants_launch_failures(&r.cluster))
            .cloned()
            .collect();
        launch_failures.sort_by_key(LaunchFailureRow::key);
        if !scope.wants_fleet_preemptions() {
            return DerivedSnapshot {
                preemptions,
                waves: Vec::new(),
                rates: Vec::new(),
                alerts: Vec::new(),
                audits,
                pool_audits,
                cells,
                sources,
                firing,
                waiting,
                fallback,
                queues,
                launch_failures,
            };
        }
        let mut waves: Vec<Wave> = self.waves.values().cloned().collect();
        waves.sort_by_key(|w| std::cmp::Reverse(w.started));
        let mut rates: Vec<RateRow> = self.rates.values().cloned().collect();
        rates.sort_by_key(RateRow::row_key);
        let mut alerts: Vec<UndeliveredAlert> = self.alerts.values().cloned().collect();
        alerts.sort_by_key(|a| std::cmp::Reverse(a.at));
        DerivedSnapshot {
            preemptions,
            waves,
            rates,
            alerts,
            audits,
            pool_audits,
            cells,
            sources,
            firing,
            waiting,
            fallback,
            queues,
            launch_failures,
        }
    }
}

/// Whether a waiting row of `cluster` (and `pool`) belongs in `scope`: as pool rows do, every
/// pool's but on a pool page its own; a cluster's everywhere.
pub fn waiting_wanted(scope: &Scope, cluster: &str, pool: Option<&str>) -> bool {
    pool.is_none_or(|p| scope.wants_pool_row(cluster, p))
}
