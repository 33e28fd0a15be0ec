//! Typed changes for the server's own followers (the ledger's recorder, the preemption
//! tracker): every row change the hub makes to nodes and pools, and to the "Preemption
//! pending" events, as the row now is. Browsers get JSON deltas; followers get these, so a
//! node under notice for less than a second is still seen, and nobody copies every row on
//! a timer.

use std::sync::Arc;

use app::model::{EventRow, NodeRow, PoolRow};
use tokio::sync::broadcast;

use super::LedgerInputs;

/// Facts a follower may fall behind by before it starts again from a fresh [`Following`].
pub const FACTS_BUFFER: usize = 4096;

/// One row change; `row` is `None` when the row left the hub.
#[derive(Clone, Debug)]
pub enum Fact {
    Node {
        key: String,
        row: Option<Box<NodeRow>>,
    },
    Pool {
        key: String,
        row: Option<Box<PoolRow>>,
    },
    /// An event whose reason is "Preemption pending" (the CKS signal at T=0).
    PreemptionSignal {
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
