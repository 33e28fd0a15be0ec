//! Deltas received and not yet applied: the browser applies them a frame at a time.
//!
//! The browser hands each SSE message to its own task, and every task that changes a row
//! re-runs the views that sum, filter or sort all rows (the header's preempting count, the
//! fleet summary, the pools table's order). At a thousand deltas a second on 2,000 pools that
//! is a thousand full passes a second, and the tab stops drawing. Queued here instead, they
//! are applied together before the next frame, so those views re-run once per frame whatever
//! the rate. A frame applies what fits in [`FRAME_BUDGET_MS`] and leaves the rest to the
//! next: a burst (the first readiness audit, 2,000 pools; a rates pass, 6,000 rows) is
//! spread over frames instead of holding the tab for half a second. The queue is plain data
//! so its rules are tested without a browser.

/// Deltas held at most before they are applied at once, whatever the time: bounds what a
/// tab that falls behind holds (a few MB of JSON text).
pub const FLUSH_AT: usize = 10_000;

/// Milliseconds a frame spends applying deltas before it leaves the rest to the next frame.
/// The views the applied rows change are drawn after, in the same task: half a 60 Hz frame
/// is left for them.
pub const FRAME_BUDGET_MS: f64 = 8.0;

/// What a flush did with its queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    /// Every delta.
    All,
    /// The budget ran out: these are left, in order.
    Rest(Vec<String>),
    /// A delta did not fit the store (the error); the rest are dropped.
    Failed(String),
}

/// Applies `queue` in order with `apply` until `elapsed_ms` (milliseconds since the flush
/// began) passes `budget_ms`; at least one delta is applied, so a flush always progresses.
/// `None`: no budget (a full queue, a hidden tab).
pub fn apply_within(
    queue: Vec<String>,
    budget_ms: Option<f64>,
    mut elapsed_ms: impl FnMut() -> f64,
    mut apply: impl FnMut(&str) -> Result<(), String>,
) -> Applied {
    let mut queue = queue.into_iter();
    while let Some(text) = queue.next() {
        if let Err(e) = apply(&text) {
            return Applied::Failed(e);
        }
        if budget_ms.is_some_and(|b| elapsed_ms() > b) && queue.len() > 0 {
            return Applied::Rest(queue.collect());
        }
    }
    Applied::All
}

/// What the receiver does after queueing a delta.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Apply the queue now: it is full.
    FlushNow,
    /// Ask for a flush (before the next frame); none is pending.
    Schedule,
    /// A flush is already pending, or the stream was closed.
    Wait,
}

/// The queue of one stream.
#[derive(Debug, Default)]
pub struct Inbox {
    queue: Vec<String>,
    scheduled: bool,
    closed: bool,
}

impl Inbox {
    /// Queues one delta's JSON text.
    pub fn push(&mut self, text: String) -> Next {
        if self.closed {
            return Next::Wait;
        }
        self.queue.push(text);
        if self.queue.len() >= FLUSH_AT {
            Next::FlushNow
        } else if self.scheduled {
            Next::Wait
        } else {
            self.scheduled = true;
            Next::Schedule
        }
    }

    /// Everything queued, in arrival order, for a flush; empty once the stream is closed.
    pub fn take(&mut self) -> Vec<String> {
        self.scheduled = false;
        std::mem::take(&mut self.queue)
    }

    /// Puts back, before anything queued since, what a flush left; `true`: the caller asks
    /// for the next flush (none is pending).
    pub fn put_back(&mut self, mut rest: Vec<String>) -> bool {
        if self.closed || rest.is_empty() {
            return false;
        }
        rest.append(&mut self.queue);
        self.queue = rest;
        !std::mem::replace(&mut self.scheduled, true)
    }

    /// Forgets what is queued: a snapshot arrived, and it already holds all of it.
    pub fn clear(&mut self) {
        self.queue.clear();
    }

    /// The stream is gone (another took over, or the store disagreed with a delta): nothing
    /// queued or arriving later may be applied.
    pub fn close(&mut self) {
        self.closed = true;
        self.queue = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_flush_is_scheduled_per_batch_in_arrival_order() {
        let mut i = Inbox::default();
        assert_eq!(i.push("1".into()), Next::Schedule);
        assert_eq!(i.push("2".into()), Next::Wait);
        assert_eq!(i.push("3".into()), Next::Wait);
        assert_eq!(i.take(), ["1", "2", "3"]);
        assert!(i.take().is_empty(), "a second flush finds nothing");
        assert_eq!(
            i.push("4".into()),
            Next::Schedule,
            "after a flush, a new one"
        );
    }

    #[test]
    fn a_full_queue_is_flushed_without_waiting_for_a_frame() {
        let mut i = Inbox::default();
        let nexts: Vec<Next> = (0..FLUSH_AT).map(|n| i.push(n.to_string())).collect();
        assert_eq!(nexts[0], Next::Schedule);
        assert!(nexts[1..FLUSH_AT - 1].iter().all(|n| *n == Next::Wait));
        assert_eq!(nexts[FLUSH_AT - 1], Next::FlushNow);
        assert_eq!(i.take().len(), FLUSH_AT);
    }

    #[test]
    fn a_frame_applies_what_fits_its_budget_and_leaves_the_rest_in_order() {
        let queue = |n: usize| (0..n).map(|i| i.to_string()).collect::<Vec<_>>();
        let mut applied = Vec::new();
        // Each delta takes 3 ms: the budget passes after the third.
        let clock = std::cell::Cell::new(0.0);
        let out = apply_within(
            queue(10),
            Some(FRAME_BUDGET_MS),
            || clock.get(),
            |d| {
                clock.set(clock.get() + 3.0);
                applied.push(d.to_string());
                Ok(())
            },
        );
        assert_eq!(applied, ["0", "1", "2"]);
        assert_eq!(out, Applied::Rest(queue(10)[3..].to_vec()));

        // One slow delta still goes through; without a budget everything does.
        let slow = apply_within(queue(2), Some(1.0), || 50.0, |_| Ok(()));
        assert_eq!(slow, Applied::Rest(vec!["1".into()]));
        assert_eq!(
            apply_within(queue(5), None, || 1e9, |_| Ok(())),
            Applied::All
        );
        let failed = apply_within(
            queue(5),
            None,
            || 0.0,
            |d| match d {
                "2" => Err("no such row".into()),
                _ => Ok(()),
            },
        );
        assert_eq!(failed, Applied::Failed("no such row".into()));

        // What is left goes before what arrived meanwhile, and asks for one flush.
        let mut i = Inbox::default();
        assert_eq!(i.push("a".into()), Next::Schedule);
        let taken = i.take();
        assert_eq!(i.push("late".into()), Next::Schedule);
        assert!(!i.put_back(taken), "a flush is already pending");
        assert_eq!(i.take(), ["a", "late"]);
        assert!(i.put_back(vec!["b".into()]), "none pending: ask for one");
        assert_eq!(i.push("c".into()), Next::Wait);
        assert_eq!(i.take(), ["b", "c"]);
        i.close();
        assert!(
            !i.put_back(vec!["d".into()]),
            "a closed stream takes nothing back"
        );
    }

    #[test]
    fn a_snapshot_drops_what_came_before_it() {
        let mut i = Inbox::default();
        i.push("old".into());
        i.clear();
        i.push("new".into());
        assert_eq!(i.take(), ["new"]);
    }

    #[test]
    fn a_closed_stream_applies_nothing_more() {
        let mut i = Inbox::default();
        i.push("queued".into());
        i.close();
        assert_eq!(i.push("late".into()), Next::Wait);
        assert!(i.take().is_empty());
    }
}
