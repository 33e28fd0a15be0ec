//! Deltas received and not yet applied: the browser applies them a frame at a time.
//!
//! The browser hands each SSE message to its own task, and every task that changes a row
//! re-runs the views that sum, filter or sort all rows (the header's preempting count, the
//! fleet summary, the pools table's order). At a thousand deltas a second on 2,000 pools that
//! is a thousand full passes a second, and the tab stops drawing. Queued here instead, they
//! are applied together before the next frame, so those views re-run once per frame whatever
//! the rate. The queue is plain data so its rules are tested without a browser.

/// Deltas held at most before they are applied at once without waiting for a frame: bounds
/// what a tab that draws no frames (a hidden one) holds.
pub const FLUSH_AT: usize = 2_000;

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
