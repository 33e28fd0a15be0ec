//! Typed changes for the server's own followers (the ledger's recorder, the preemption
//! tracker): every row change the hub makes to nodes and pools, and to the "Preemption
//! pending" events, as the row now is. Browsers get JSON deltas; followers get these, so a
//! node under notice for less than a second is still seen, and nobody copies every row on
//! a timer. [`Hub::follow`] hands out where a follower starts ([`LedgerInputs`]).

use std::collections::HashSet;
use std::sync::Arc;

use spotboard_core::model::{EventRow, NodeRow, PoolRow};
use tokio::sync::broadcast;

use super::views::is_departure;
use super::{Hub, State};

/// Facts a follower may fall behind by before it starts again from a fresh [`Following`],
/// for each cluster the hub holds ([`facts_buffer`]).
pub const FACTS_BUFFER: usize = 4096;

/// The facts buffer of a hub of `clusters` clusters: [`FACTS_BUFFER`] for each.
///
/// Why per cluster: each cluster's watches write their list pages (500 objects, a fact each)
/// one after another before a follower is polled, so the burst a follower must absorb grows
/// with the clusters. With one buffer of 4,096 for 20 clusters × 5,000 nodes, the preemption
/// tracker fell behind 41 times during the first list, each time copying every node row
/// again to start over (measured 2026-11-29, `docs/performance.md`, S1–S3). Memory: the buffer
/// keeps up to that many recent facts, each a row, so a one-cluster hub keeps today's 4,096.
pub fn facts_buffer(clusters: usize) -> usize {
    FACTS_BUFFER * clusters.max(1)
}

/// One row change; `row` is `None` when the row left the hub.
#[derive(Clone, Debug)]
pub enum Fact {
    Node {
        key: String,
        row: Option<Arc<NodeRow>>,
    },
    Pool {
        key: String,
        row: Option<Arc<PoolRow>>,
    },
    /// An event whose reason is "Preemption pending" (the CKS signal at T=0).
    PreemptionSignal {
        key: String,
        row: Option<Box<EventRow>>,
    },
    /// An event about a Node reporting a refused eviction
    /// (`spotboard_core::domain::preemption::evictions::is_refusal`).
    EvictionSignal {
        key: String,
        row: Option<Box<EventRow>>,
    },
    /// A Karpenter `InsufficientCapacityError` event about a NodeClaim
    /// (`spotboard_core::domain::capacity::launch_failures::from_event`).
    LaunchFailureSignal {
        key: String,
        row: Option<Box<EventRow>>,
    },
    /// A Karpenter `DisruptionTerminating` event about a Node
    /// (`spotboard_core::domain::departures::KARPENTER_DISRUPTION_TERMINATING`).
    DepartureSignal {
        key: String,
        row: Option<Box<EventRow>>,
    },
    /// Every watch of `cluster` has listed once: what it holds is the whole cluster.
    Synced { cluster: String },
}

/// A follower's start: the hub as it was, then every fact after it, with no gap between
/// (both are taken under the hub's lock).
pub struct Following {
    pub initial: Arc<LedgerInputs>,
    pub rx: broadcast::Receiver<Arc<Fact>>,
}

/// What the server's followers start from: the hub's nodes, pools and "Preemption pending"
/// events at one revision. The node rows are the hub's own, shared.
#[derive(Default)]
pub struct LedgerInputs {
    pub nodes: Vec<Arc<NodeRow>>,
    pub pools: Vec<PoolRow>,
    /// "Preemption pending" events (the CKS signal at T=0).
    pub preemptions: Vec<EventRow>,
    /// Events about Nodes reporting refused evictions.
    pub evictions: Vec<EventRow>,
    /// Karpenter's `InsufficientCapacityError` events about NodeClaims.
    pub launch_failures: Vec<EventRow>,
    /// Karpenter's `DisruptionTerminating` events about Nodes.
    pub departures: Vec<EventRow>,
    /// Clusters whose every watch has listed.
    pub synced: HashSet<String>,
}

/// Notes that `follower` (its name, for the log) fell `skipped` facts behind and starts again
/// from a fresh [`Hub::follow`]: one debug line (target `server::hub::facts`) each time.
/// Why: each start hands over every row again (the node rows shared with the hub, the pools
/// and events copied) and the follower reads them all, so a follower that keeps falling
/// behind (during a large first list, or a flooded cluster) spends its time on those starts.
pub fn fell_behind(follower: &'static str, skipped: u64) {
    tracing::debug!(
        follower,
        skipped,
        "a follower fell behind the hub's facts; it follows again from every row"
    );
}

impl Following {
    /// The hub as it was when following started, handed over once: a follower that kept
    /// it for as long as it runs would hold a second copy of every node row.
    pub fn take_initial(&mut self) -> Arc<LedgerInputs> {
        std::mem::take(&mut self.initial)
    }
}

impl Hub {
    /// Starts following the hub: its nodes, pools and "Preemption pending" events as they are
    /// now, then every change to them as a [`Fact`]. A follower that falls more than
    /// [`facts_buffer`] facts behind gets `Lagged` and should follow again.
    pub fn follow(&self) -> Following {
        self.read(|s| Following {
            initial: Arc::new(Self::inputs_of(s)),
            rx: self.inner.facts.subscribe(),
        })
    }

    /// Every node and pool, the "Preemption pending" events, and the clusters whose every
    /// watch has listed: the ledger's view.
    pub fn ledger_inputs(&self) -> LedgerInputs {
        self.read(Self::inputs_of)
    }

    // One read: nodes, pools and events come from the same revision.
    fn inputs_of(s: &State) -> LedgerInputs {
        let (nodes, pools, preemptions) = s
            .views
            .ledger_inputs(spotboard_core::labels::REASON_PREEMPTION_PENDING);
        let evictions = s.views.eviction_signals();
        let launch_failures = s.views.launch_failure_signals();
        let departures = s.views.events_of(is_departure);
        let synced = s
            .clusters
            .iter()
            .filter(|(_, c)| c.listed())
            .map(|(name, _)| name.clone())
            .collect();
        LedgerInputs {
            nodes,
            pools,
            preemptions,
            evictions,
            launch_failures,
            departures,
            synced,
        }
    }
}
