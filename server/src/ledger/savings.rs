//! The server's [`SavingsSource`]: the ledger's lifetimes priced with the catalog in force.

use std::sync::Arc;

use app::create_api::BoxFuture;
use app::domain::prices::PriceCatalog;
use app::domain::savings::{ReportInput, report};
use app::model::{PriceEntry, SavingsReport};
use app::savings_api::SavingsSource;
use chrono::{DateTime, Utc};

use super::Ledger;

/// Lifetimes from the ledger, prices from the catalog.
pub struct Savings {
    pub ledger: Ledger,
    pub prices: Arc<PriceCatalog>,
}

impl Savings {
    /// The report over `[from, to]`, now.
    ///
    /// Errors: the ledger could not be read ("ledger unavailable since …").
    pub async fn report(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> crate::Result<SavingsReport> {
        let read = self.ledger.between(from, to).await;
        let lifetimes = self.ledger.track(read).map_err(|e| {
            let since = self
                .ledger
                .health()
                .unavailable_since
                .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
                .unwrap_or_default();
            crate::Error::Ledger(format!("ledger unavailable since {since}: {e}"))
        })?;
        Ok(report(&ReportInput {
            lifetimes: &lifetimes,
            prices: &self.prices,
            from,
            to,
            now: Utc::now(),
        }))
    }
}

impl SavingsSource for Savings {
    fn report<'a>(
        &'a self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<SavingsReport, String>> {
        Box::pin(async move {
            Savings::report(self, from, to)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn prices(&self) -> Vec<PriceEntry> {
        self.prices.entries.clone()
    }

    fn conditions<'a>(
        &'a self,
        cluster: &'a str,
        pool: &'a str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Vec<app::model::ConditionTransition>, String>> {
        Box::pin(async move {
            let read = self.ledger.conditions_of(cluster, pool, from, to).await;
            self.ledger.track(read).map_err(|e| e.to_string())
        })
    }
}
