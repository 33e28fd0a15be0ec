//! Capacity by zone: what the clusters show (pools' Capacity condition, queued and delivered
//! nodes, preemptions, fulfilment times) joined with the capacity feeds, as the grid that
//! `/capacity`, `/capacity-finder` and `GET /api/v1/capacity[-finder]` show; beside it,
//! Karpenter's refused launches (the clusters' events and the ledger's 7 days of them).
//!
//! # Layout
//! - `feed`: feed sources (file, URL; the documented seam for CoreWeave's API) and polling.
//! - `tracker`: observed time from queued to current.

mod feed;
mod tracker;

use std::{sync::Arc, time::Duration};

use app::capacity_api::CapacityReader;
use chrono::Utc;
use std::collections::BTreeMap;

use spotboard_core::domain::capacity::launch_failures::{self, LaunchFailure};
use spotboard_core::domain::capacity::{GridInputs, build_grid};
use spotboard_core::model::{CapacityGrid, LaunchFailureRow};

use crate::hub::{CapacityInputs, Hub};

pub(crate) use feed::read_limited;
pub use feed::{FeedSource, FeedStates};
pub use tracker::FulfilTracker;

/// How often the ledger's condition history is read for the time from queued to current.
pub const HISTORY_EVERY: Duration = Duration::from_secs(60);

/// How often the tracker looks at the pools.
pub const TRACK_EVERY: Duration = Duration::from_secs(2);

/// The server's [`CapacityReader`].
pub struct Capacity {
    hub: Hub,
    feeds: FeedStates,
    tracker: Arc<std::sync::Mutex<FulfilTracker>>,
    /// Each pool's queued time and scale-ups from the ledger, as last read.
    history: std::sync::Mutex<Option<Arc<PoolHistories>>>,
    /// Karpenter's launch failures of the last 7 days from the ledger, as last read (empty
    /// without a ledger: then only the events the clusters still hold count).
    launch_failures: std::sync::Mutex<Arc<Vec<LaunchFailure>>>,
}

/// [`spotboard_core::domain::capacity::obtainability::per_pool`]'s answer.
type PoolHistories = std::collections::BTreeMap<
    (String, String),
    spotboard_core::domain::capacity::obtainability::PoolHistory,
>;

impl Capacity {
    /// Starts the feed pollers and the fulfilment tracker; returns the reader and the tasks.
    ///
    /// With `ledger`, the time from queued to current comes from its condition history
    /// (read every [`HISTORY_EVERY`]), so it survives restarts.
    pub fn start(
        hub: Hub,
        sources: Vec<FeedSource>,
        poll_every: Duration,
        ledger: Option<crate::ledger::Ledger>,
    ) -> (Arc<Self>, Vec<tokio::task::JoinHandle<()>>) {
        let (feeds, poller) = feed::spawn_pollers(sources, poll_every);
        let tracker = Arc::new(std::sync::Mutex::new(FulfilTracker::default()));
        let capacity = Arc::new(Capacity {
            hub,
            feeds,
            tracker,
            history: std::sync::Mutex::new(None),
            launch_failures: Default::default(),
        });
        let c = capacity.clone();
        let tracking = tokio::spawn(async move {
            let mut tick = tokio::time::interval(TRACK_EVERY);
            loop {
                tick.tick().await;
                // One read of the hub serves the fulfilment tracker and the grid.
                let inputs = c.hub.capacity_inputs();
                c.tracker
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .observe(&inputs.pools);
                c.publish(c.build(inputs));
            }
        });
        let mut tasks = vec![poller, tracking];
        if let Some(ledger) = ledger {
            let c = capacity.clone();
            tasks.push(tokio::spawn(async move {
                // The pools place the episodes: wait until every cluster has listed them.
                while !c.hub.ready() {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                let mut tick = tokio::time::interval(HISTORY_EVERY);
                loop {
                    tick.tick().await;
                    c.read_history(&ledger).await;
                }
            }));
        }
        (capacity, tasks)
    }

    /// Reads the last 7 days of AtTarget and Capacity transitions: AtTarget's episodes into
    /// the tracker (time to fulfil), both into each pool's queued time and scale-ups (this
    /// fleet's obtainability); and the last 7 days of Karpenter's launch failures. A ledger
    /// that cannot be read leaves the figures as they were.
    async fn read_history(&self, ledger: &crate::ledger::Ledger) {
        use spotboard_core::nodepool::ConditionType;
        let now = Utc::now();
        let from = now - chrono::Duration::days(7);
        let read = async {
            let at_target = ledger
                .transitions_of(ConditionType::AtTarget.as_str(), from, now)
                .await?;
            let capacity = ledger
                .transitions_of(ConditionType::Capacity.as_str(), from, now)
                .await?;
            let failures = ledger.launch_failures_since(from).await?;
            Ok::<_, crate::Error>((at_target, capacity, failures))
        };
        match read.await {
            Ok((at_target, capacity, failures)) => {
                *self
                    .launch_failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Arc::new(failures);
                let episodes =
                    spotboard_core::domain::conditions_history::false_episodes(&at_target);
                let pools = self.hub.capacity_inputs().pools;
                self.tracker
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .set_history(&episodes, &pools);
                let per_pool = spotboard_core::domain::capacity::obtainability::per_pool(
                    &capacity, &at_target, now,
                );
                *self.history.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(per_pool));
            }
            Err(e) => tracing::debug!(error = %e, "capacity: condition history not read"),
        }
    }

    /// Publishes `grid` on the hub's stream, cell by cell (only changed cells go out). A
    /// cell's `observed_at` is left out there: for live cluster data it is "now", which would
    /// change every cell at every build.
    fn publish(&self, grid: CapacityGrid) {
        let cells = grid
            .cells
            .into_iter()
            .map(|c| spotboard_core::model::CapacityCell {
                observed_at: None,
                ..c
            })
            .collect();
        self.hub.publish(cells);
        self.hub.publish(grid.sources);
        self.hub.publish(grid.launch_failures);
    }

    /// The grid from the hub's clusters, pools and rates, the tracked fulfilment times and
    /// the feeds as they are now.
    fn build(&self, inputs: CapacityInputs) -> CapacityGrid {
        let fulfil = self
            .tracker
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .samples()
            .clone();
        let feeds = self.feeds.read().unwrap_or_else(|p| p.into_inner()).clone();
        let history = self
            .history
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let now = Utc::now();
        let mut grid = build_grid(&GridInputs {
            clusters: &inputs.clusters,
            pools: &inputs.pools,
            rates: &inputs.rates,
            fulfil: &fulfil,
            history: history.as_deref(),
            feeds: &feeds,
            now,
        });
        grid.launch_failures = self.launch_failure_rows(&inputs, now);
        grid
    }

    /// Karpenter's launch failures per cluster × zone × instance type: the events the
    /// clusters hold now (a new one shows at the next build) and the ledger's 7 days.
    fn launch_failure_rows(
        &self,
        inputs: &CapacityInputs,
        now: chrono::DateTime<Utc>,
    ) -> Vec<LaunchFailureRow> {
        let kept = self
            .launch_failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let live: Vec<LaunchFailure> = inputs
            .launch_failures
            .iter()
            .filter_map(|e| launch_failures::from_event(e, now))
            .collect();
        let mut pools: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in inputs
            .pools
            .iter()
            .filter(|p| p.provider == spotboard_core::Provider::Karpenter)
        {
            pools
                .entry(p.cluster.clone())
                .or_default()
                .push(p.name.clone());
        }
        launch_failures::rows(kept.iter().chain(&live), &pools, now)
    }
}

impl CapacityReader for Capacity {
    fn grid(&self) -> CapacityGrid {
        self.build(self.hub.capacity_inputs())
    }
}
