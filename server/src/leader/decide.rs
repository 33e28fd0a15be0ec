//! The leader-election decision, apart from the API calls: what a replica does with the Lease
//! it has just read. The algorithm is client-go's `leaderelection` (the one kube-controller-
//! manager and most controllers use): a Lease is free when it names no holder, or when its
//! record has not changed for a whole lease duration *as this replica observed it*, by its
//! own monotonic clock. Comparing `renewTime` with the local wall clock instead would make
//! safety depend on the replicas' clocks agreeing.

use std::time::{Duration, Instant};

/// What the Lease says, as far as the election cares. Two reads are the same record when
/// every field is equal; a changed record restarts the observed lease duration.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Record {
    /// `spec.holderIdentity`; `None` for none or empty (a released Lease).
    pub holder: Option<String>,
    /// `spec.renewTime`, as text (only compared).
    pub renew_time: Option<String>,
    /// `spec.leaseDurationSeconds`, seconds.
    pub duration_s: Option<i32>,
    /// `spec.leaseTransitions`: how many times the holder changed.
    pub transitions: i32,
}

/// What to do after a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Take the Lease (it is free or expired): write it with this replica as holder.
    Acquire,
    /// This replica holds it: write a new renewTime.
    Renew,
    /// Another replica holds it and has renewed within the lease duration: read again later.
    Wait,
}

/// The last record read and when this replica first saw it.
#[derive(Clone, Debug)]
pub struct Observed {
    pub record: Record,
    pub at: Instant,
}

impl Observed {
    /// Notes a read at `now`: the observation time moves only when the record changed.
    pub fn update(previous: Option<Observed>, record: Record, now: Instant) -> Observed {
        match previous {
            Some(p) if p.record == record => p,
            _ => Observed { record, at: now },
        }
    }
}

/// The step for replica `me` after reading `observed`, at `now`. `duration` is this replica's
/// lease duration, used when the record names none.
pub fn decide(me: &str, observed: &Observed, now: Instant, duration: Duration) -> Step {
    let r = &observed.record;
    match r.holder.as_deref() {
        None | Some("") => Step::Acquire,
        Some(h) if h == me => Step::Renew,
        Some(_) => {
            let held_for = r
                .duration_s
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(s as u64))
                .unwrap_or(duration);
            if now.duration_since(observed.at) >= held_for {
                Step::Acquire
            } else {
                Step::Wait
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held_by(h: &str, renew: &str) -> Record {
        Record {
            holder: Some(h.into()),
            renew_time: Some(renew.into()),
            duration_s: Some(15),
            transitions: 1,
        }
    }

    #[test]
    fn a_free_lease_is_taken_and_an_own_lease_renewed() {
        let t = Instant::now();
        let free = Observed::update(None, Record::default(), t);
        assert_eq!(
            decide("a", &free, t, Duration::from_secs(15)),
            Step::Acquire
        );
        let released = Observed::update(
            None,
            Record {
                holder: Some(String::new()),
                ..Record::default()
            },
            t,
        );
        assert_eq!(
            decide("a", &released, t, Duration::from_secs(15)),
            Step::Acquire
        );
        let mine = Observed::update(None, held_by("a", "t1"), t);
        assert_eq!(decide("a", &mine, t, Duration::from_secs(15)), Step::Renew);
    }

    #[test]
    fn another_holder_expires_only_after_a_whole_duration_without_a_change_seen_here() {
        let t0 = Instant::now();
        let seen = Observed::update(None, held_by("b", "t1"), t0);
        let d = Duration::from_secs(15);
        assert_eq!(
            decide("a", &seen, t0 + Duration::from_secs(14), d),
            Step::Wait
        );
        // The same record read again 14 s later: the clock keeps running from the first sight.
        let again = Observed::update(
            Some(seen.clone()),
            held_by("b", "t1"),
            t0 + Duration::from_secs(14),
        );
        assert_eq!(again.at, t0);
        assert_eq!(
            decide("a", &again, t0 + Duration::from_secs(15), d),
            Step::Acquire
        );
        // A renewal seen at 14 s starts a new duration from then.
        let renewed =
            Observed::update(Some(seen), held_by("b", "t2"), t0 + Duration::from_secs(14));
        assert_eq!(
            decide("a", &renewed, t0 + Duration::from_secs(28), d),
            Step::Wait
        );
        assert_eq!(
            decide("a", &renewed, t0 + Duration::from_secs(29), d),
            Step::Acquire
        );
    }

    #[test]
    fn the_record_s_own_duration_wins_over_ours() {
        let t0 = Instant::now();
        let mut r = held_by("b", "t1");
        r.duration_s = Some(60);
        let seen = Observed::update(None, r, t0);
        assert_eq!(
            decide(
                "a",
                &seen,
                t0 + Duration::from_secs(30),
                Duration::from_secs(15)
            ),
            Step::Wait
        );
    }
}
