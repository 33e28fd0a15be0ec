//! NodePool condition history, from the ledger (`GET /api/v1/ledger/conditions`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::nodepool::ConditionType;

/// One condition of one NodePool as it was from `since` until the pool's next transition of
/// the same type (CoreWeave: Node Pool reference, `status.conditions`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConditionTransition {
    pub cluster: String,
    pub pool: String,
    #[serde(rename = "type")]
    pub type_: ConditionType,
    pub status: String,
    pub reason: String,
    pub message: String,
    /// The condition's `lastTransitionTime`, or when spotboard first saw it if the pool gave
    /// none.
    pub since: DateTime<Utc>,
}

/// How long one condition type held one status and reason within a window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConditionSpan {
    #[serde(rename = "type")]
    pub type_: ConditionType,
    pub status: String,
    pub reason: String,
    /// Seconds within the window.
    pub seconds: i64,
    /// Times the condition entered this status and reason within the window.
    pub entered: u32,
}

/// `GET /api/v1/ledger/conditions?cluster=&pool=&range=`: a pool's transitions in the window
/// (newest first) and the time spent in each status and reason.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConditionHistory {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub transitions: Vec<ConditionTransition>,
    pub spans: Vec<ConditionSpan>,
}
