//! Simulated time: every delay of the behaviour model goes through a [`Clock`] so that one
//! `speed` knob plays CoreWeave's minutes in seconds (speed 60 plays the 7-minute preemption
//! window of CoreWeave: Spot Node Pools in 7 s).
//!
//! Timestamps written to objects are never simulated: they are the real wall clock, as a
//! real cluster writes them, so `kubectl get` ages and the dashboard agree with the machine.

use std::time::Duration;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use tokio::time::Instant;

/// Converts between simulated and real durations at a fixed speed.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    speed: f64,
    origin: Instant,
}

impl Clock {
    /// A clock running `speed` times faster than real time. A speed that is not a positive
    /// finite number plays in real time.
    pub fn new(speed: f64) -> Self {
        let speed = if speed.is_finite() && speed > 0.0 {
            speed
        } else {
            1.0
        };
        Self {
            speed,
            origin: Instant::now(),
        }
    }

    /// Simulated seconds per real second.
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// The real time that `sim` simulated time takes.
    pub fn real(&self, sim: Duration) -> Duration {
        sim.div_f64(self.speed)
    }

    /// The simulated time that passes during `real` real time.
    pub fn sim(&self, real: Duration) -> Duration {
        real.mul_f64(self.speed)
    }

    /// The real instant `sim` simulated time from now.
    pub fn deadline(&self, sim: Duration) -> Instant {
        Instant::now() + self.real(sim)
    }

    /// Simulated time since the clock was made.
    pub fn elapsed(&self) -> Duration {
        self.sim(self.origin.elapsed())
    }

    /// Waits `sim` simulated time.
    pub async fn sleep(&self, sim: Duration) {
        tokio::time::sleep(self.real(sim)).await;
    }
}

/// Simulated seconds as a [`Duration`].
pub const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// Simulated minutes as a [`Duration`].
pub const fn mins(m: u64) -> Duration {
    Duration::from_secs(m * 60)
}

/// The wall clock as a Kubernetes `Time` (second precision on the wire).
pub fn wall_time() -> Time {
    to_time(Utc::now())
}

/// A chrono timestamp as a Kubernetes `Time`.
pub fn to_time(t: DateTime<Utc>) -> Time {
    let nanos = t.timestamp_nanos_opt().unwrap_or_default();
    Time(k8s_openapi::jiff::Timestamp::from_nanosecond(i128::from(nanos)).unwrap_or_default())
}

/// An RFC 3339 timestamp in UTC with second precision, as Kubernetes writes them.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_scales_both_ways() {
        let c = Clock::new(60.0);
        assert_eq!(c.real(mins(7)), Duration::from_secs(7));
        assert_eq!(c.sim(Duration::from_secs(2)), mins(2));
        let fast = Clock::new(600.0);
        assert_eq!(fast.real(secs(30)), Duration::from_millis(50));
    }

    #[test]
    fn bad_speeds_play_in_real_time() {
        for s in [0.0, -5.0, f64::NAN, f64::INFINITY] {
            assert_eq!(Clock::new(s).speed(), 1.0, "speed {s}");
        }
        assert_eq!(Clock::new(0.5).real(secs(1)), Duration::from_secs(2));
    }

    #[test]
    fn timestamps_are_utc_seconds() {
        let t: DateTime<Utc> = "2026-11-21T10:04:05.678Z".parse().unwrap();
        assert_eq!(rfc3339(t), "2026-11-21T10:04:05Z");
        assert_eq!(to_time(t).0.as_second(), t.timestamp());
    }

    #[tokio::test]
    async fn sleep_takes_scaled_real_time() {
        let c = Clock::new(6000.0);
        let start = Instant::now();
        c.sleep(mins(1)).await;
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(10), "{took:?}");
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert!(c.elapsed() >= mins(1));
    }
}
