//! A browser stand-in: reads one SSE stream, counting bytes and keeping node deltas.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use futures::StreamExt;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// A node delta seen on the stream: (node uid, cordoned value, when it arrived).
pub type Seen = (String, bool, Instant);

pub struct Counter {
    bytes: Arc<AtomicU64>,
    deltas: Arc<Mutex<Vec<Seen>>>,
    /// Nodes a delta showed under a preemption notice (`notice: true`).
    noticed: Arc<Mutex<HashSet<String>>>,
    /// Snapshots received: the first, then one per resync (a stream that fell behind).
    snapshots: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Counter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Counter {
    pub async fn open(url: &str) -> Res<Self> {
        let resp = reqwest::get(url).await?.error_for_status()?;
        let bytes = Arc::new(AtomicU64::new(0));
        let deltas = Arc::new(Mutex::new(Vec::new()));
        let noticed = Arc::new(Mutex::new(HashSet::new()));
        let snapshots = Arc::new(AtomicU64::new(0));
        let (b, d, n, snaps) = (
            bytes.clone(),
            deltas.clone(),
            noticed.clone(),
            snapshots.clone(),
        );
        let task = tokio::spawn(async move {
            let mut body = resp.bytes_stream();
            let mut buf = String::new();
            while let Some(Ok(chunk)) = body.next().await {
                b.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let block: String = buf.drain(..end + 2).collect();
                    if block
                        .lines()
                        .any(|l| l.strip_prefix("event:").map(str::trim) == Some("snapshot"))
                    {
                        snaps.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) else {
                        continue;
                    };
                    let Ok(delta) =
                        serde_json::from_str::<spotboard_core::model::Delta>(data.trim_start())
                    else {
                        continue;
                    };
                    if delta.kind != spotboard_core::model::RowKind::Node {
                        continue;
                    }
                    let spotboard_core::model::Change::Patch(p) = &delta.change else {
                        continue;
                    };
                    if p.get("notice").and_then(|v| v.as_bool()) == Some(true) {
                        n.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(delta.key.clone());
                    }
                    if let Some(c) = p.get("cordoned").and_then(|v| v.as_bool()) {
                        d.lock().unwrap_or_else(|e| e.into_inner()).push((
                            delta.key.clone(),
                            c,
                            Instant::now(),
                        ));
                    }
                }
            }
        });
        Ok(Self {
            bytes,
            deltas,
            noticed,
            snapshots,
            task,
        })
    }

    /// Forgets what was counted, and frees it (a fault test measures the heap after).
    pub fn reset(&self) {
        self.bytes.store(0, Ordering::Relaxed);
        *self.deltas.lock().unwrap_or_else(|e| e.into_inner()) = Vec::new();
    }

    /// Snapshots received since the stream opened (not cleared by [`Self::reset`]).
    pub fn snapshots(&self) -> u64 {
        self.snapshots.load(Ordering::Relaxed)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The node deltas seen, less those of nodes that were under a preemption notice at any
    /// time: the behaviour model cordons such a node itself (CKS: at T=0), and that cordon,
    /// matched to the churn's last change of the node to the same value, showed up as a
    /// latency of up to one flip period (the 2.7–5.0 s maximum seen in many runs).
    pub fn deltas(&self) -> Vec<Seen> {
        let noticed = self.noticed.lock().unwrap_or_else(|e| e.into_inner());
        self.deltas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(key, _, _)| !noticed.contains(key))
            .cloned()
            .collect()
    }

    /// How many nodes [`Self::deltas`] leaves out for a preemption notice.
    pub fn noticed(&self) -> usize {
        self.noticed.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}
