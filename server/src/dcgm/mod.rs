//! GPU utilisation from DCGM exporter metrics in Prometheus (`--prometheus-url`), beside the
//! allocation by requests (`GET /api/v1/allocation`, the pool page's node table).
//!
//! A pod that holds a GPU and leaves it idle counts as allocated; only the GPU's own counters
//! tell. NVIDIA's DCGM exporter publishes them per GPU (`DCGM_FI_DEV_GPU_UTIL`, percent), and
//! clusters that run it scrape it into Prometheus (CoreWeave's managed Grafana, GKE's and
//! EKS' GPU monitoring alike). spotboard does not scrape the exporters itself: it asks the
//! Prometheus that already does, once per poll, one bounded query for the whole fleet
//! ([`query`]), and keeps the last good answer when a poll fails.
//!
//! Nodes are joined by name: the query groups by `--dcgm-node-label` (`Hostname`, the label
//! the exporter sets to its node's name when it runs as the GPU Operator's DaemonSet).

pub mod query;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chrono::Utc;
use rust_decimal::Decimal;
use spotboard_core::model::DcgmStatus;

pub use query::Range;

/// The largest answer read: a 100,000-node fleet's answer is about 8 MiB.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// How long one query may take, connection included.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how to read utilisation.
#[derive(Clone, Debug)]
pub struct DcgmConfig {
    /// Prometheus' base URL (`http://prometheus.monitoring:9090`, or a path prefix such as
    /// `https://grafana.example/api/prom`); the query goes to `{url}/api/v1/query`.
    pub url: String,
    /// A bearer token for a Prometheus behind authentication.
    pub token: Option<String>,
    /// The range each node's utilisation is averaged over.
    pub range: Range,
    /// The label that names the node in the exporter's series.
    pub node_label: String,
    /// Time between polls.
    pub every: Duration,
}

/// Utilisation by node name, percent 0–100.
pub type ByNode = Arc<HashMap<String, Decimal>>;

/// The last reading and its status, shared by the poller and the handlers.
#[derive(Clone)]
pub struct DcgmReader {
    state: Arc<RwLock<(DcgmStatus, ByNode)>>,
}

impl DcgmReader {
    fn new(config: &DcgmConfig) -> Self {
        let status = DcgmStatus {
            prometheus: crate::preemption::redact(&config.url),
            range: config.range.as_str().to_string(),
            query: query::promql(&config.node_label, &config.range),
            ..Default::default()
        };
        Self {
            state: Arc::new(RwLock::new((status, Arc::default()))),
        }
    }

    /// The status, and utilisation by node name (percent 0–100) as of `status.as_of`.
    pub fn get(&self) -> (DcgmStatus, ByNode) {
        self.state.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn record(&self, result: Result<query::Reading, String>) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(reading) => {
                if state.0.error.is_some() {
                    tracing::info!(prometheus = %state.0.prometheus, "GPU utilisation readable again");
                }
                state.0.as_of = Some(Utc::now());
                state.0.nodes = u32::try_from(reading.by_node.len()).unwrap_or(u32::MAX);
                state.0.error = None;
                state.1 = Arc::new(reading.by_node);
            }
            Err(e) => {
                // One line when reading starts failing, not one per poll.
                if state.0.error.is_none() {
                    tracing::warn!(prometheus = %state.0.prometheus, error = %e, "GPU utilisation unreadable; keeping the last figures");
                }
                state.0.error = Some(e);
            }
        }
    }
}

/// Asks Prometheus once.
///
/// Errors: a sentence naming what failed: the connection or its timeout, an HTTP status
/// with Prometheus' own reason when it gave one, an answer over [`MAX_ANSWER_BYTES`], or an
/// answer [`query::read`] refuses.
pub async fn read_once(
    http: &reqwest::Client,
    config: &DcgmConfig,
) -> Result<query::Reading, String> {
    let url = format!("{}/api/v1/query", config.url.trim_end_matches('/'));
    let mut req = http
        .get(url)
        .query(&[("query", query::promql(&config.node_label, &config.range))]);
    if let Some(token) = &config.token {
        req = req.bearer_auth(token);
    }
    let resp = req.send().await.map_err(|e| e.without_url().to_string())?;
    let status = resp.status();
    let body = crate::capacity::read_limited(resp, MAX_ANSWER_BYTES).await?;
    let read = query::read(&body, &config.node_label);
    if status.is_success() {
        return read;
    }
    // Prometheus answers a bad query with 400 or 422 and its reason in the usual envelope;
    // anything else (a proxy's page) is told by its status.
    match read {
        Err(e) if e.starts_with(query::REFUSED) => Err(e),
        _ => Err(format!("HTTP {status}")),
    }
}

/// Starts polling: the first read at once, then every `config.every`.
pub fn spawn(config: DcgmConfig) -> (DcgmReader, tokio::task::JoinHandle<()>) {
    let reader = DcgmReader::new(&config);
    let out = reader.clone();
    let task = tokio::spawn(async move {
        let http = reqwest::Client::builder()
            .timeout(QUERY_TIMEOUT)
            .build()
            .unwrap_or_default();
        let mut tick = tokio::time::interval(config.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            reader.record(read_once(&http, &config).await);
        }
    });
    (out, task)
}

/// The pool page's utilisation source: the pool's nodes, from the hub, joined with the last
/// reading.
pub struct PoolUtilisationSource {
    pub hub: crate::hub::Hub,
    pub dcgm: Option<DcgmReader>,
}

impl app::allocation_api::UtilisationSource for PoolUtilisationSource {
    fn pool(&self, cluster: &str, pool: &str) -> spotboard_core::model::PoolUtilisation {
        let Some(dcgm) = &self.dcgm else {
            return Default::default();
        };
        let (status, by_node) = dcgm.get();
        // Names only: the page polls this every 30 s, and has the nodes' rows already.
        let nodes = self
            .hub
            .node_names(cluster, pool)
            .into_iter()
            .filter_map(|n| by_node.get(&n).map(|u| (n, *u)))
            .collect();
        spotboard_core::model::PoolUtilisation {
            dcgm: Some(status),
            nodes,
        }
    }
}
