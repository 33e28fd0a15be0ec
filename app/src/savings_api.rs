//! The savings page's server functions and the seam through which the server supplies
//! lifetimes and prices. The report itself is the pure [`report`](crate::domain::savings::report).

use leptos::prelude::*;

use crate::json_text::Json;
use crate::model::SavingsReport;

/// What the server provides (by Leptos context): the ledger's report and the prices in force.
#[cfg(feature = "ssr")]
pub trait SavingsSource: Send + Sync {
    /// The report over `[from, to]`.
    fn report<'a>(
        &'a self,
        from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
    ) -> crate::create_api::BoxFuture<'a, spotboard_core::Result<SavingsReport>>;

    /// The headline of the report over the named `range` ending now (see
    /// [`load_savings_headline`]). The server answers every tab from one report a few seconds
    /// old at most: each Node Pools tab asks again when the fleet's node counts change, so a
    /// preemption wave seen by many tabs would otherwise price the ledger once per tab per
    /// change.
    fn headline<'a>(
        &'a self,
        range: &'a str,
        from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
    ) -> crate::create_api::BoxFuture<'a, spotboard_core::Result<crate::model::SavingsHeadline>>;

    /// Showback over `[from, to]` by `by` (`spotboard_core::domain::showback`).
    fn showback<'a>(
        &'a self,
        from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
        by: crate::model::ShowbackBy,
    ) -> crate::create_api::BoxFuture<'a, spotboard_core::Result<crate::model::ShowbackReport>>;

    /// The price catalog in force, user rows first.
    fn prices(&self) -> Vec<crate::model::PriceEntry>;

    /// The survival curves by `by` of the spot nodes that turned Ready in the trailing
    /// `range` (`spotboard_core::domain::survival::report`).
    fn survival<'a>(
        &'a self,
        by: crate::domain::survival::report::SurvivalBy,
        range: crate::domain::preemption::rates::Window,
    ) -> crate::create_api::BoxFuture<
        'a,
        spotboard_core::Result<crate::domain::survival::report::SurvivalReport>,
    >;

    /// A NodePool's condition transitions that held in `[from, to]`, oldest first.
    fn conditions<'a>(
        &'a self,
        cluster: &'a str,
        pool: &'a str,
        from: chrono::DateTime<chrono::Utc>,
        to: chrono::DateTime<chrono::Utc>,
    ) -> crate::create_api::BoxFuture<
        'a,
        spotboard_core::Result<Vec<crate::model::ConditionTransition>>,
    >;
}

/// The context value carrying the server's [`SavingsSource`].
#[cfg(feature = "ssr")]
#[derive(Clone)]
pub struct SavingsSourceHandle(pub std::sync::Arc<dyn SavingsSource>);

/// The server's [`SavingsSource`], or a 500 when the server was wired without one.
#[cfg(feature = "ssr")]
fn savings_source() -> Result<SavingsSourceHandle, crate::api_error::ApiError> {
    use_context::<SavingsSourceHandle>()
        .ok_or_else(|| crate::api_error::ApiError::internal("no savings source in context"))
}

/// `[from, to]` of a named `range` or RFC 3339 `from`/`to` ending now, or a 400.
#[cfg(feature = "ssr")]
fn any_range(
    range: Option<String>,
    from: Option<String>,
    to: Option<String>,
) -> Result<
    (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
    crate::api_error::ApiError,
> {
    crate::domain::savings::range::resolve(
        range.as_deref(),
        from.as_deref(),
        to.as_deref(),
        chrono::Utc::now(),
    )
    .map_err(crate::api_error::ApiError::invalid)
}

/// `[from, to]` of a named `range` (`1h`, `24h`, `7d`, `30d`) ending now, or a 400.
#[cfg(feature = "ssr")]
fn named_range(
    range: &str,
) -> Result<
    (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>),
    crate::api_error::ApiError,
> {
    crate::domain::savings::range::resolve(Some(range), None, None, chrono::Utc::now())
        .map_err(crate::api_error::ApiError::invalid)
}

/// The savings report for a named `range` (`1h`, `24h`, `7d`, `30d`) or RFC 3339 `from`/`to`,
/// resolved on the server so the page's URL means the same thing on both sides.
///
/// Errors: a bad range (400), the ledger could not be read (503, the message says why), or
/// the server was wired without a savings source (500).
#[server(endpoint = "savings", input = Json, output = Json)]
pub async fn load_savings(
    range: Option<String>,
    from: Option<String>,
    to: Option<String>,
) -> Result<SavingsReport, crate::api_error::ApiError> {
    let source = savings_source()?;
    let (from, to) = any_range(range, from, to)?;
    source
        .0
        .report(from, to)
        .await
        .map_err(crate::api_error::ApiError::from)
}

/// Showback over a named `range` or RFC 3339 `from`/`to`, by `by` (`namespace`, `team`,
/// `pool`), as `GET /api/v1/showback` answers.
///
/// Errors: a bad range or `by` (400), the ledger could not be read (503), no savings source
/// (500).
#[server(endpoint = "showback", input = Json, output = Json)]
pub async fn load_showback(
    range: Option<String>,
    from: Option<String>,
    to: Option<String>,
    by: String,
) -> Result<crate::model::ShowbackReport, crate::api_error::ApiError> {
    use crate::api_error::ApiError;
    let source = savings_source()?;
    let (from, to) = any_range(range, from, to)?;
    let by = crate::model::ShowbackBy::parse(&by).map_err(ApiError::from)?;
    Ok(source.0.showback(from, to, by).await?)
}

/// The headline of [`load_savings`]'s report over a named `range` (`1h`, `24h`, `7d`,
/// `30d`) ending now: totals only, no rows. May be up to a few seconds old (the server shares
/// one report among the tabs that ask at once).
///
/// Errors: as [`load_savings`].
#[server(endpoint = "savings-headline", input = Json, output = Json)]
pub async fn load_savings_headline(
    range: String,
) -> Result<crate::model::SavingsHeadline, crate::api_error::ApiError> {
    let source = savings_source()?;
    // An unknown range is refused here, so the server keeps one headline per range it accepts.
    let (from, to) = named_range(&range)?;
    source
        .0
        .headline(&range, from, to)
        .await
        .map_err(crate::api_error::ApiError::from)
}

/// A NodePool's condition history over `range` (`24h`, `7d`, `30d`): its transitions, newest
/// first, and the time spent in each status and reason, from the ledger.
///
/// Errors: a bad range (400), the ledger could not be read (503), no savings source (500).
#[server(endpoint = "condition-history", input = Json, output = Json)]
pub async fn load_condition_history(
    cluster: String,
    pool: String,
    range: String,
) -> Result<crate::model::ConditionHistory, crate::api_error::ApiError> {
    let source = savings_source()?;
    let (from, to) = named_range(&range)?;
    let transitions = source
        .0
        .conditions(&cluster, &pool, from, to)
        .await
        .map_err(crate::api_error::ApiError::from)?;
    Ok(crate::domain::conditions_history::history(
        transitions,
        from,
        to,
    ))
}

/// The survival curves of spot nodes by `by` (`pool`, `zone`, `instance-type`,
/// `zone-instance-type`) over `range` (`24h`, `7d`, `30d`), as `GET /api/v1/survival`
/// answers. Read once per page and range: the curves change with preemptions over days, not
/// seconds.
///
/// Errors: a bad `by` or `range` (400), the ledger could not be read (503), no savings
/// source (500).
#[server(endpoint = "survival", input = Json, output = Json)]
pub async fn load_survival(
    by: String,
    range: String,
) -> Result<crate::domain::survival::report::SurvivalReport, crate::api_error::ApiError> {
    use crate::api_error::ApiError;
    let source = savings_source()?;
    let by = crate::domain::survival::report::SurvivalBy::parse(&by).map_err(ApiError::from)?;
    let range = crate::domain::preemption::rates::Window::parse(&range).map_err(ApiError::from)?;
    Ok(source.0.survival(by, range).await?)
}
