//! When the preemption rates are recomputed. A pass reads 30 days of node lifetimes from the
//! ledger and folds them ([`super::PreemptionWatch::publish_rates`]): at the benchmark's
//! 10,000 nodes that is 0.4–0.7 s, at 20 clusters of 5,000 nodes 65,000–90,000 lifetimes and
//! 1.3–3.3 s. Every 15 s, the latter was a fifth of the one core the dashboard ran on, with
//! no change in the fleet. So a pass takes at most a tenth of the time whatever the fleet's
//! size, and only one runs at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often the rates are recomputed when no preemption starts or ends: the 24-hour, 7-day
/// and 30-day windows slide.
pub const RATES_EVERY: Duration = Duration::from_secs(15);

/// The least time between two passes when preemptions start or end. In a wave, or with a
/// few preemptions a minute, the ledger changes at nearly every publication: passes ran
/// every 2–3 s.
pub const RATES_AT_MOST_EVERY: Duration = Duration::from_secs(5);

/// A pass takes at most one part in this many of the time: the next starts no sooner than
/// this many times the last pass's duration after the last one started.
pub const COST_SHARE: u32 = 10;

/// The pace of the rates passes, kept by the preemption tracker's loop.
#[derive(Debug, Default)]
pub struct RatesPace {
    started: Option<Instant>,
    /// The ledger changed since the last pass started.
    due: bool,
    /// The last finished pass's duration, microseconds (reading and folding).
    cost_us: Arc<AtomicU64>,
    running: Arc<AtomicBool>,
}

impl RatesPace {
    /// The ledger changed (a preemption started, a node's lifetime ended).
    pub fn changed(&mut self) {
        self.due = true;
    }

    /// A pass to run now, if one may start: its [`RatesPass`] records its duration when
    /// dropped, at the end of the pass whichever way it ends.
    pub fn start(&mut self) -> Option<RatesPass> {
        let now = Instant::now();
        let cost = Duration::from_micros(self.cost_us.load(Ordering::Relaxed));
        let since = self.started.map(|t| now.duration_since(t));
        if !may_start(since, cost, self.running.load(Ordering::Acquire), self.due) {
            return None;
        }
        (self.started, self.due) = (Some(now), false);
        self.running.store(true, Ordering::Release);
        Some(RatesPass {
            started: now,
            cost_us: self.cost_us.clone(),
            running: self.running.clone(),
        })
    }
}

/// Whether a pass starts, `since` the last one started (`None`: there was none), that one
/// having taken `cost`; `running`: it has not ended; `due`: the ledger changed since.
pub fn may_start(since: Option<Duration>, cost: Duration, running: bool, due: bool) -> bool {
    if running {
        return false;
    }
    let Some(since) = since else { return true };
    let wait = if due {
        RATES_AT_MOST_EVERY
    } else {
        RATES_EVERY
    };
    since >= wait.max(cost * COST_SHARE)
}

/// One rates pass under way; dropping it ends it.
#[derive(Debug)]
pub struct RatesPass {
    started: Instant,
    cost_us: Arc<AtomicU64>,
    running: Arc<AtomicBool>,
}

impl Drop for RatesPass {
    fn drop(&mut self) {
        let took = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.cost_us.store(took, Ordering::Relaxed);
        self.running.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn the_first_pass_starts_at_once_and_never_beside_another() {
        assert!(may_start(None, Duration::ZERO, false, false));
        assert!(!may_start(Some(s(3600)), Duration::ZERO, true, true));
    }

    #[test]
    fn cheap_passes_keep_every_15_s_and_5_s_once_the_ledger_changed() {
        let cheap = Duration::from_millis(600);
        assert!(!may_start(Some(s(14)), cheap, false, false));
        assert!(may_start(Some(s(15)), cheap, false, false));
        assert!(!may_start(Some(s(4)), cheap, false, true));
        assert!(may_start(Some(s(6)), cheap, false, true));
    }

    #[test]
    fn a_costly_pass_spaces_the_next_to_ten_times_its_duration() {
        // 3.3 s, the slowest pass measured at 20 clusters: every 33 s, changed or not.
        let costly = Duration::from_millis(3_300);
        assert!(!may_start(Some(s(15)), costly, false, false));
        assert!(!may_start(Some(s(32)), costly, false, true));
        assert!(may_start(Some(s(33)), costly, false, true));
        assert!(may_start(Some(s(33)), costly, false, false));
    }

    #[test]
    fn a_pass_records_its_duration_and_frees_the_next_when_it_ends() {
        let mut pace = RatesPace::default();
        let pass = pace.start().expect("the first pass");
        assert!(pace.start().is_none(), "one at a time");
        std::thread::sleep(Duration::from_millis(5));
        drop(pass);
        assert!(pace.cost_us.load(Ordering::Relaxed) >= 5_000);
        assert!(!pace.running.load(Ordering::Acquire));
        // Just started: neither the 15 s nor (after a change) the 5 s have passed.
        pace.changed();
        assert!(pace.start().is_none());
    }
}
