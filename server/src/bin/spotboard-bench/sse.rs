//! A browser stand-in: reads one SSE stream, counting bytes and keeping node deltas.

use std::{
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
        let (b, d) = (bytes.clone(), deltas.clone());
        let task = tokio::spawn(async move {
            let mut body = resp.bytes_stream();
            let mut buf = String::new();
            while let Some(Ok(chunk)) = body.next().await {
                b.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let block: String = buf.drain(..end + 2).collect();
                    let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) else {
                        continue;
                    };
                    let Ok(delta) = serde_json::from_str::<app::model::Delta>(data.trim_start())
                    else {
                        continue;
                    };
                    if delta.kind != app::model::RowKind::Node {
                        continue;
                    }
                    if let app::model::Change::Patch(p) = &delta.change
                        && let Some(c) = p.get("cordoned").and_then(|v| v.as_bool())
                    {
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
            task,
        })
    }

    /// Forgets what was counted, and frees it (a fault test measures the heap after).
    pub fn reset(&self) {
        self.bytes.store(0, Ordering::Relaxed);
        *self.deltas.lock().unwrap_or_else(|e| e.into_inner()) = Vec::new();
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn deltas(&self) -> Vec<Seen> {
        self.deltas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
