//! The server's [`SavingsSource`]: the ledger's lifetimes priced with the catalog in force.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use app::create_api::BoxFuture;
use app::savings_api::SavingsSource;
use chrono::{DateTime, Utc};
use spotboard_core::domain::fallback;
use spotboard_core::domain::preemption::rates::Window;
use spotboard_core::domain::prices::PriceCatalog;
use spotboard_core::domain::savings::{ReportInput, report};
use spotboard_core::domain::survival::{
    self,
    report::{SurvivalBy, SurvivalReport},
};
use spotboard_core::model::{FallbackReport, PriceEntry, SavingsHeadline, SavingsReport};

use super::Ledger;

/// How old a headline may be when served. The run rate is per hour and the range a day or
/// more, so a few seconds change nothing a person reads.
pub const HEADLINE_FRESH_FOR: Duration = Duration::from_secs(5);

/// Lifetimes from the ledger, prices from the catalog.
pub struct Savings {
    pub ledger: Ledger,
    pub prices: Arc<PriceCatalog>,
    /// The last headline per named range and when it was made. An async lock, held while a
    /// report is made, so tabs asking at once wait for one report instead of each making
    /// their own.
    headlines: tokio::sync::Mutex<HashMap<String, (Instant, SavingsHeadline)>>,
    /// [`HEADLINE_FRESH_FOR`], shorter in tests.
    fresh_for: Duration,
    /// The live pools, for the idle spot GPUs of a report (none: the report has none).
    hub: Option<crate::hub::Hub>,
    /// The reserved price net savings are weighed against, percent off on-demand.
    reserved_discount_pct: Option<rust_decimal::Decimal>,
    /// The capacity grid, for the Finder's score in the fallback pairs' move-back advice.
    capacity: Option<Arc<dyn app::capacity_api::CapacityReader>>,
    /// How long a pair's spot side must have been fulfilling before a move back is advised
    /// (`--fallback-move-back-minutes`).
    move_back_after: chrono::Duration,
    /// The pod label read for teams (`--team-label`).
    team_label: String,
}

/// [`Savings`]' `move_back_after` unless told otherwise.
pub const MOVE_BACK_AFTER_MINUTES: u32 = 60;

impl Savings {
    pub fn new(ledger: Ledger, prices: Arc<PriceCatalog>) -> Self {
        Self {
            ledger,
            prices,
            headlines: Default::default(),
            fresh_for: HEADLINE_FRESH_FOR,
            hub: None,
            reserved_discount_pct: None,
            capacity: None,
            move_back_after: chrono::Duration::minutes(i64::from(MOVE_BACK_AFTER_MINUTES)),
            team_label: "team".into(),
        }
    }

    /// Showback reads teams from `label` (`--team-label`).
    pub fn with_team_label(mut self, label: &str) -> Self {
        self.team_label = label.to_string();
        self
    }

    /// Showback over `[from, to]` by `by`: the lifetimes as the savings report reads them, and
    /// the pod intervals that overlap the range streamed by node, at most
    /// [`spotboard_core::domain::showback::MAX_INTERVALS`].
    ///
    /// Errors: the ledger could not be read ("ledger unavailable since …").
    pub async fn showback(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        by: spotboard_core::model::ShowbackBy,
    ) -> crate::Result<spotboard_core::model::ShowbackReport> {
        use spotboard_core::domain::showback::{MAX_INTERVALS, Params, Showback};
        let lifetimes = self.lifetimes(from, to).await?;
        let now = Utc::now();
        let mut fold = Showback::new(&Params {
            lifetimes: &lifetimes,
            prices: &self.prices,
            from,
            to,
            now,
            by,
            team_label: &self.team_label,
        });
        let mut node = String::new();
        let mut held: Vec<spotboard_core::model::PodInterval> = Vec::new();
        let read = self
            .ledger
            .each_pod_interval(from, to.min(now), MAX_INTERVALS, |iv| {
                if iv.node_uid != node {
                    fold.node(&node, &held);
                    held.clear();
                    node.clone_from(&iv.node_uid);
                }
                held.push(iv);
            })
            .await;
        let truncated = self.ledger.track(read).map_err(|e| self.unavailable(e))?;
        fold.node(&node, &held);
        if truncated {
            fold.truncated();
        }
        let killed = self.ledger.killed_pods(from, to).await;
        fold.killed(self.ledger.track(killed).map_err(|e| self.unavailable(e))?);
        Ok(fold.finish())
    }

    /// Fallback pairs take the Capacity Finder's score from `capacity`'s grid, and advise a
    /// move back after the spot side has been fulfilling for `move_back_after`.
    pub fn with_fallback(
        mut self,
        capacity: Arc<dyn app::capacity_api::CapacityReader>,
        move_back_after: chrono::Duration,
    ) -> Self {
        self.capacity = Some(capacity);
        self.move_back_after = move_back_after;
        self
    }

    /// Reports weigh spot against a reserved price `pct` % off on-demand
    /// (`--reserved-discount-pct`).
    pub fn with_reserved_discount(mut self, pct: Option<rust_decimal::Decimal>) -> Self {
        self.reserved_discount_pct = pct;
        self
    }

    /// Reports add the idle spot GPUs of `hub`'s pools, priced from this catalog.
    pub fn with_hub(mut self, hub: crate::hub::Hub) -> Self {
        self.hub = Some(hub);
        self
    }

    /// The spot GPUs no running pod requests now, at the catalog's spot prices (a pool's
    /// cluster, zone and instance type; a pool of several types has no one price).
    fn idle_spot_gpus(&self) -> spotboard_core::model::IdleSpotGpus {
        let Some(hub) = &self.hub else {
            return Default::default();
        };
        let pools = hub.shared_pool_rows();
        spotboard_core::domain::savings::idle::idle_spot_gpus(pools.iter().map(|p| &**p), |p| {
            self.prices
                .lookup(
                    &p.cluster,
                    p.zone.as_deref(),
                    &p.instance_type,
                    spotboard_core::CapacityType::Spot,
                )
                .map(|u| u.usd_per_hour)
        })
    }

    /// The headline of the report over `[from, to]`, shared by every caller for
    /// [`HEADLINE_FRESH_FOR`] under the name `range`. A failed read is not kept: the next
    /// caller tries the ledger again.
    ///
    /// Errors: as [`Savings::report`].
    pub async fn headline(
        &self,
        range: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> crate::Result<SavingsHeadline> {
        let mut kept = self.headlines.lock().await;
        if let Some((made, h)) = kept.get(range)
            && made.elapsed() < self.fresh_for
        {
            return Ok(h.clone());
        }
        // The headline carries no fallback pairs: leave out their condition-history read and
        // the capacity grid they rank against.
        let h = SavingsHeadline::from(&self.report_of(from, to, false).await?);
        kept.insert(range.to_string(), (Instant::now(), h.clone()));
        Ok(h)
    }

    /// The report over `[from, to]`, now.
    ///
    /// Errors: the ledger could not be read ("ledger unavailable since …").
    pub async fn report(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> crate::Result<SavingsReport> {
        self.report_of(from, to, true).await
    }

    /// The report over `[from, to]`, with its fallback pairs or without (empty).
    async fn report_of(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        with_fallback: bool,
    ) -> crate::Result<SavingsReport> {
        let lifetimes = self.lifetimes(from, to).await?;
        let fallback = if with_fallback {
            self.fallback_of(Some(&lifetimes), from, to).await?
        } else {
            FallbackReport::default()
        };
        Ok(SavingsReport {
            idle_spot_gpus: self.idle_spot_gpus(),
            fallback,
            ..report(&ReportInput {
                lifetimes: &lifetimes,
                prices: &self.prices,
                from,
                to,
                now: Utc::now(),
                reserved_discount_pct: self.reserved_discount_pct,
            })
        })
    }

    /// The lifetimes that overlap `[from, to]`.
    ///
    /// Errors: the ledger could not be read ("ledger unavailable since …").
    async fn lifetimes(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> crate::Result<Vec<spotboard_core::model::Lifetime>> {
        let read = self.ledger.between(from, to).await;
        self.ledger.track(read).map_err(|e| self.unavailable(e))
    }

    /// A failed read as the pages and the API say it: "ledger unavailable since …".
    fn unavailable(&self, e: crate::Error) -> crate::Error {
        let since = self
            .ledger
            .health()
            .unavailable_since
            .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
            .unwrap_or_default();
        crate::Error::Ledger(format!("ledger unavailable since {since}: {e}"))
    }

    /// The fallback pairs over `[from, to]` (`GET /api/v1/fallback`).
    ///
    /// Errors: the ledger could not be read.
    pub async fn fallback(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> crate::Result<FallbackReport> {
        self.fallback_of(None, from, to).await
    }

    /// The fallback pairs among the live pools, priced from the ledger's lifetimes and
    /// Capacity history; empty without the live pools. `known` is the lifetimes of
    /// `[from, to]` when the caller has them; they are read here otherwise, and read again
    /// up to now when the range ended before now (the advice counts the on-demand nodes
    /// running now).
    async fn fallback_of(
        &self,
        known: Option<&[spotboard_core::model::Lifetime]>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> crate::Result<FallbackReport> {
        let Some(hub) = &self.hub else {
            return Ok(FallbackReport::default());
        };
        let rows = hub.shared_pool_rows();
        let pairs = fallback::pairs(&rows);
        if pairs.is_empty() {
            return Ok(FallbackReport {
                from: Some(from),
                to: Some(to),
                ..Default::default()
            });
        }
        // The report reads only the spot sides' rows: a fleet has thousands of pools and
        // few pairs.
        let pools: Vec<spotboard_core::model::PoolRow> = rows
            .iter()
            .filter(|p| {
                pairs
                    .iter()
                    .any(|q| q.cluster == p.cluster && q.spot_pools.contains(&p.name))
            })
            .map(|p| (**p).clone())
            .collect();
        let read = self
            .ledger
            .transitions_of(
                spotboard_core::nodepool::ConditionType::Capacity.as_str(),
                from,
                to,
            )
            .await;
        let capacity = self.ledger.track(read).map_err(|e| self.unavailable(e))?;
        let grid = self.capacity.as_ref().map(|c| c.grid());
        let now = Utc::now();
        let ended_before_now = to < now - chrono::Duration::minutes(1);
        let fresh;
        let lifetimes = match known {
            Some(l) if !ended_before_now => l,
            _ => {
                fresh = self.lifetimes(from, now.max(to)).await?;
                &fresh[..]
            }
        };
        Ok(fallback::report(&fallback::Inputs {
            pairs: &pairs,
            pools: &pools,
            lifetimes,
            capacity: &capacity,
            prices: &self.prices,
            grid: grid.as_ref(),
            from,
            to,
            now,
            move_back_after: self.move_back_after,
        }))
    }

    /// The survival curves by `by` of the spot nodes that turned Ready in the trailing
    /// `range` ending `now` (`spotboard_core::domain::survival::report`).
    ///
    /// Errors: the ledger could not be read.
    pub async fn survival(
        &self,
        by: SurvivalBy,
        range: Window,
        now: DateTime<Utc>,
    ) -> crate::Result<SurvivalReport> {
        let from = now - chrono::Duration::hours(range.hours());
        let read = self.ledger.began_between(from, now).await;
        let lifetimes = self.ledger.track(read)?;
        Ok(SurvivalReport {
            by,
            range,
            from,
            to: now,
            rows: survival::report::rows(&lifetimes, by, now),
            departures: survival::report::departure_rows(&lifetimes, by, now),
        })
    }
}

impl SavingsSource for Savings {
    fn report<'a>(
        &'a self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxFuture<'a, spotboard_core::Result<SavingsReport>> {
        Box::pin(async move { Ok(Savings::report(self, from, to).await?) })
    }

    fn headline<'a>(
        &'a self,
        range: &'a str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxFuture<'a, spotboard_core::Result<SavingsHeadline>> {
        Box::pin(async move { Ok(Savings::headline(self, range, from, to).await?) })
    }

    fn showback<'a>(
        &'a self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        by: spotboard_core::model::ShowbackBy,
    ) -> BoxFuture<'a, spotboard_core::Result<spotboard_core::model::ShowbackReport>> {
        Box::pin(async move { Ok(Savings::showback(self, from, to, by).await?) })
    }

    fn prices(&self) -> Vec<PriceEntry> {
        self.prices.entries.clone()
    }

    fn survival<'a>(
        &'a self,
        by: SurvivalBy,
        range: Window,
    ) -> BoxFuture<'a, spotboard_core::Result<SurvivalReport>> {
        Box::pin(async move { Ok(Savings::survival(self, by, range, Utc::now()).await?) })
    }

    fn conditions<'a>(
        &'a self,
        cluster: &'a str,
        pool: &'a str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxFuture<'a, spotboard_core::Result<Vec<spotboard_core::model::ConditionTransition>>>
    {
        Box::pin(async move {
            let read = self.ledger.conditions_of(cluster, pool, from, to).await;
            Ok(self.ledger.track(read)?)
        })
    }
}

#[cfg(test)]
mod tests;
