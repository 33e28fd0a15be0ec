//! Each cluster's last known state: what a restarted spotboard shows, marked stale since it
//! was current, until the cluster's watches have listed it again. Kept as the published pool
//! and node rows (the projection), not as Kubernetes objects: what a browser was shown is
//! what it is shown again, and nothing raw is stored. The ledger keeps them
//! (`crate::ledger::last_known`).
//!
//! A restored row is replaced by the row the watches make for its key; a key the cluster no
//! longer has is removed once every kind of it has been listed. Restored rows are shown, not
//! judged: followers get no fact for one and do not find it in their first look, and the
//! alerts, the capacity grid, the readiness audit and `/metrics` leave them out; when the
//! watches refresh a row the followers get it as new. So the ledger's recorder and the
//! preemption tracker start from what the cluster says (a node under notice when the state
//! was kept, and gone since, is no preemption seen now).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use spotboard_core::model::{LinkState, NodeRow, PoolRow};

use super::Hub;

/// One cluster's rows as kept: its pools and nodes.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct KnownRows {
    pub pools: Vec<PoolRow>,
    pub nodes: Vec<NodeRow>,
}

/// How a kept body begins when compressed: zstd, then base64 so the ledger's column stays
/// TEXT on SQLite and PostgreSQL alike. A body without it is plain JSON (as first kept).
pub const COMPRESSED: &str = "zstd+base64:";

/// zstd's fastest level: the rows are compressed under the hub's read lock.
const LEVEL: i32 = 1;

/// The body `write` produces, compressed ([`COMPRESSED`]). Why: serialized whole, 10,000
/// node rows are about 7 MB, and a keep once a minute held two or three copies of that at once
/// (the growing string, the database's own copy), about 8 MB of the dashboard's RSS; streamed
/// into zstd, only the compressed bytes are held, about a tenth. `None` only if the
/// compressor fails, which it does not into memory.
pub fn encode_known(
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Option<String> {
    use base64::Engine as _;
    let mut z = zstd::stream::write::Encoder::new(Vec::new(), LEVEL).ok()?;
    write(&mut z).ok()?;
    let bytes = z.finish().ok()?;
    let mut out = String::with_capacity(COMPRESSED.len() + bytes.len() * 4 / 3 + 4);
    out.push_str(COMPRESSED);
    base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut out);
    Some(out)
}

/// The rows of a kept `body`, compressed or plain JSON, at most `max` bytes of JSON.
///
/// Errors: a sentence: not base64, not zstd, more than `max` bytes once decompressed, or
/// JSON that is not [`KnownRows`].
pub fn decode_known(body: &str, max: usize) -> Result<KnownRows, String> {
    use base64::Engine as _;
    use std::io::Read as _;
    let Some(packed) = body.strip_prefix(COMPRESSED) else {
        return serde_json::from_str(body).map_err(|e| e.to_string());
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(packed)
        .map_err(|e| format!("not base64: {e}"))?;
    let mut json = Vec::new();
    zstd::stream::read::Decoder::new(&bytes[..])
        .map_err(|e| format!("not zstd: {e}"))?
        .take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut json)
        .map_err(|e| format!("not zstd: {e}"))?;
    if json.len() > max {
        return Err(format!("larger than {max} bytes once decompressed"));
    }
    serde_json::from_slice(&json).map_err(|e| e.to_string())
}

/// The cluster row's message while it shows its last known state.
pub const RESTORED_MESSAGE: &str = "showing the last known state until the cluster is listed";

impl Hub {
    /// `cluster`'s pool and node rows as a kept body ([`encode_known`] of [`KnownRows`]'s
    /// JSON), when every kind of it has been
    /// listed; `None` for a cluster still connecting or showing its restored state, whose
    /// kept state stays the newer one.
    pub fn known_rows(&self, cluster: &str) -> Option<String> {
        self.read(|s| {
            let data = s.clusters.get(cluster)?;
            if !data.listed() {
                return None;
            }
            encode_known(|w| s.views.write_known_rows(cluster, w))
        })
    }

    /// Whether every cluster has been listed or shows its last known state, and how many
    /// show their last known state still: what `/readyz?last-known=true` answers.
    pub fn serving(&self) -> (bool, usize) {
        self.read(|s| {
            let restored = s
                .clusters
                .values()
                .filter(|d| !d.listed() && d.restored.is_some())
                .count();
            let all = s
                .clusters
                .values()
                .all(|d| d.listed() || d.restored.is_some());
            (all, restored)
        })
    }

    /// Shows `rows` as `cluster`'s last known state, current at `as_of`: the rows are
    /// published, and the cluster marked stale since `as_of` until it is listed. Nothing is
    /// restored once any kind of the cluster has been listed, or for a cluster the hub does
    /// not watch. Returns how many rows were restored.
    pub fn restore(&self, cluster: &str, as_of: DateTime<Utc>, rows: KnownRows) -> usize {
        self.write(|s, tx| {
            let Some(data) = s.clusters.get_mut(cluster) else {
                return 0;
            };
            if data.synced != 0 {
                return 0;
            }
            let n = s.views.restore(cluster, rows.pools, rows.nodes, tx);
            if n == 0 {
                return 0;
            }
            // A later outage keeps `since` here (see `set_link`).
            data.last_good = Some(as_of);
            data.restored = Some(as_of);
            if let Some(mut row) = s.views.cluster(cluster).cloned() {
                row.state = LinkState::Stale;
                row.since = Some(as_of);
                row.message = Some(RESTORED_MESSAGE.into());
                s.views.set_cluster(row, tx);
            }
            n
        })
    }
}
