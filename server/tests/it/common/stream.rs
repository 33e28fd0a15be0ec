//! A browser tab's store of rows, fed by one live stream the way the page's is: a snapshot
//! replaces it, a delta adds, patches or removes one row by key. The fault rows compare what
//! it holds with a fresh list from the API server, and count the statuses it was answered
//! with, so their "rows lost", "phantom rows" and "5xx" are measured, not written down.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use serde_json::Value;
use spotboard_core::nodepool::NodePool;

/// What one tab has been sent so far.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// The status the stream was answered with; `None` until answered (or unreachable).
    pub status: Option<u16>,
    /// The name of the first event (`snapshot` or `delta`).
    pub first: Option<String>,
    /// When it arrived, after the tab opened.
    pub first_after: Option<Duration>,
    pub snapshots: usize,
    pub deltas: usize,
    /// The last snapshot's epoch.
    pub epoch: Option<u64>,
    /// Rows by kind (`pool`, `node`, `event`) and key.
    pub rows: BTreeMap<String, BTreeMap<String, Value>>,
    /// Deltas that did not fit the store: a patch or removal of a row it does not hold.
    pub unmatched: usize,
    /// The body ended cleanly.
    pub ended: bool,
    /// The request or the body failed.
    pub broke: bool,
}

impl Seen {
    /// The keys of the rows of `kind` the tab holds.
    pub fn keys(&self, kind: &str) -> BTreeSet<String> {
        self.rows
            .get(kind)
            .map(|r| r.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The row of `kind` named `name`, if the tab holds one.
    pub fn named(&self, kind: &str, name: &str) -> Option<&Value> {
        self.rows.get(kind)?.values().find(|r| r["name"] == name)
    }

    /// 1 when the stream was answered with a 5xx.
    pub fn server_errors(&self) -> usize {
        usize::from(self.status.is_some_and(|s| s >= 500))
    }

    fn take_snapshot(&mut self, snap: &Value) {
        self.snapshots += 1;
        self.epoch = snap["epoch"].as_u64();
        self.rows.clear();
        for (field, kind) in [("pools", "pool"), ("nodes", "node"), ("events", "event")] {
            let rows = snap[field]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| Some((r["key"].as_str()?.to_string(), r.clone())))
                .collect();
            self.rows.insert(kind.to_string(), rows);
        }
    }

    fn take_delta(&mut self, delta: &Value) {
        self.deltas += 1;
        let (Some(kind), Some(key)) = (delta["kind"].as_str(), delta["key"].as_str()) else {
            return;
        };
        if !["pool", "node", "event"].contains(&kind) {
            return;
        }
        let rows = self.rows.entry(kind.to_string()).or_default();
        let change = &delta["change"];
        if change == "remove" {
            if rows.remove(key).is_none() {
                self.unmatched += 1;
            }
        } else if let Some(row) = change.get("add") {
            rows.insert(key.to_string(), row.clone());
        } else if let Some(Value::Object(patch)) = change.get("patch") {
            // A top-level merge patch (spotboard_core::model::patch): a field is replaced
            // whole, `null` removes it.
            let Some(Value::Object(row)) = rows.get_mut(key) else {
                self.unmatched += 1;
                return;
            };
            for (field, value) in patch {
                if value.is_null() {
                    row.remove(field);
                } else {
                    row.insert(field.clone(), value.clone());
                }
            }
        }
    }
}

/// One tab: its stream is read by a task until the tab is dropped.
pub struct Tab {
    seen: Arc<Mutex<Seen>>,
    opened: Instant,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Tab {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Tab {
    /// Opens `GET url` as a tab's EventSource does.
    pub fn open(url: &str) -> Tab {
        Self::send(reqwest::Client::new().get(url))
    }

    /// Opens the stream `request` asks for (a `Last-Event-ID`, another host ...).
    pub fn send(request: reqwest::RequestBuilder) -> Tab {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let s = seen.clone();
        let opened = Instant::now();
        let task = tokio::spawn(async move {
            let resp = match request.send().await {
                Ok(r) => r,
                Err(_) => {
                    s.lock().unwrap().broke = true;
                    return;
                }
            };
            s.lock().unwrap().status = Some(resp.status().as_u16());
            let mut body = resp.bytes_stream();
            let mut buf = String::new();
            loop {
                let chunk = match body.next().await {
                    Some(Ok(c)) => c,
                    Some(Err(_)) => {
                        s.lock().unwrap().broke = true;
                        return;
                    }
                    None => {
                        s.lock().unwrap().ended = true;
                        return;
                    }
                };
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let block: String = buf.drain(..end + 2).collect();
                    let (mut event, mut data) = (String::new(), String::new());
                    for line in block.lines() {
                        if let Some(e) = line.strip_prefix("event:") {
                            event = e.trim().to_string();
                        } else if let Some(d) = line.strip_prefix("data:") {
                            data.push_str(d.trim_start());
                        }
                    }
                    let Ok(msg) = serde_json::from_str::<Value>(&data) else {
                        continue;
                    };
                    let mut seen = s.lock().unwrap();
                    match event.as_str() {
                        "snapshot" => seen.take_snapshot(&msg),
                        "delta" => seen.take_delta(&msg),
                        _ => continue,
                    }
                    if seen.first.is_none() {
                        seen.first = Some(event);
                        seen.first_after = Some(opened.elapsed());
                    }
                }
            }
        });
        Tab { seen, opened, task }
    }

    /// What the tab holds now.
    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until `f` holds of what the tab holds; returns how long after the tab opened it
    /// did, or `None` after `limit`.
    pub async fn until(
        &self,
        limit: Duration,
        mut f: impl FnMut(&Seen) -> bool,
    ) -> Option<Duration> {
        let start = Instant::now();
        loop {
            if f(&self.seen.lock().unwrap()) {
                return Some(self.opened.elapsed());
            }
            if start.elapsed() > limit {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A tab's rows of one kind against a fresh list of the cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Compared {
    /// Keys in the cluster (in the lists before and after the tab was read) the tab lacks.
    pub lost: usize,
    /// Keys the tab holds that neither list had.
    pub phantom: usize,
    /// How many the cluster held (the last list) and the tab showed.
    pub listed: usize,
    pub shown: usize,
    /// How long until the tab equalled a fresh list; `None` when it never did.
    pub took: Option<Duration>,
}

/// Waits up to `limit` until the tab's keys of `kind` equal a fresh list (`fresh` lists the
/// cluster's keys); then, or at the limit, counts the differences. A key counts as lost only
/// when the lists before and after the tab was read both hold it, and as phantom only when
/// neither does, so a change in flight between the list and the read counts as neither.
pub async fn compare<F, Fut>(tab: &Tab, kind: &str, limit: Duration, fresh: F) -> Compared
where
    F: FnMut() -> Fut,
    Fut: Future<Output = BTreeSet<String>>,
{
    compare_where(tab, kind, |_| true, limit, fresh).await
}

/// [`compare`] for the tab's rows of `kind` that `wanted` keeps.
pub async fn compare_where<F, Fut>(
    tab: &Tab,
    kind: &str,
    wanted: impl Fn(&Value) -> bool,
    limit: Duration,
    mut fresh: F,
) -> Compared
where
    F: FnMut() -> Fut,
    Fut: Future<Output = BTreeSet<String>>,
{
    let start = Instant::now();
    loop {
        let before = fresh().await;
        let shown: BTreeSet<String> = tab
            .seen()
            .rows
            .get(kind)
            .into_iter()
            .flatten()
            .filter(|(_, row)| wanted(row))
            .map(|(key, _)| key.clone())
            .collect();
        let after = fresh().await;
        let settled = before == shown && shown == after;
        if settled || start.elapsed() > limit {
            return Compared {
                lost: before
                    .intersection(&after)
                    .filter(|k| !shown.contains(*k))
                    .count(),
                phantom: shown
                    .iter()
                    .filter(|k| !before.contains(*k) && !after.contains(*k))
                    .count(),
                listed: after.len(),
                shown: shown.len(),
                took: settled.then(|| start.elapsed()),
            };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Counts the 5xx among the responses a test received.
#[derive(Clone, Default)]
pub struct Statuses(Arc<Mutex<Vec<u16>>>);

impl Statuses {
    /// Sends `request`, counts its status, and hands the response back.
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> reqwest::Result<reqwest::Response> {
        let r = request.send().await?;
        self.count(r.status().as_u16());
        Ok(r)
    }

    pub fn count(&self, status: u16) {
        self.0.lock().unwrap().push(status);
    }

    /// Responses received.
    pub fn received(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    /// Those that were a 5xx.
    pub fn server_errors(&self) -> usize {
        self.0.lock().unwrap().iter().filter(|s| **s >= 500).count()
    }
}

/// A figure a test measured, or `–` for one it did not.
pub fn figure(v: Option<impl std::fmt::Display>) -> String {
    v.map_or_else(|| "–".to_string(), |v| v.to_string())
}

/// The uids of the objects of `api` that `params` selects, in the cluster now: the fresh list
/// a tab's rows are compared with.
pub async fn listed<K>(api: &Api<K>, params: &ListParams) -> BTreeSet<String>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    api.list(params)
        .await
        .unwrap()
        .items
        .iter()
        .filter_map(|o| o.meta().uid.clone())
        .collect()
}

/// The NodePools in the cluster now, by uid: what a tab's pool rows must equal.
pub async fn listed_pools(api: &Api<NodePool>) -> BTreeSet<String> {
    listed(api, &ListParams::default()).await
}

/// The nodes labelled with NodePool `pool` in the cluster now, by uid.
pub async fn listed_nodes(api: &Api<Node>, pool: &str) -> BTreeSet<String> {
    let selector = format!("{}={pool}", spotboard_core::labels::NODE_POOL);
    listed(api, &ListParams::default().labels(&selector)).await
}
