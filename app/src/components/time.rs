//! Ages and clock times, and the ticking "now" they are relative to.

use chrono::{DateTime, Utc};
use leptos::prelude::*;

/// The current time, ticking once a second in the browser. Context of type `Now`.
#[derive(Clone, Copy)]
pub struct Now(pub RwSignal<DateTime<Utc>>);

/// Provides [`Now`]; in the browser it ticks every second.
pub fn provide_now() {
    let now = RwSignal::new(Utc::now());
    #[cfg(feature = "hydrate")]
    {
        let _ = leptos_use::use_interval_fn(move || now.set(Utc::now()), 1000);
    }
    provide_context(Now(now));
}

/// The ticking current time (falls back to a fixed "now" outside [`crate::App`]).
pub fn use_now() -> RwSignal<DateTime<Utc>> {
    use_context::<Now>()
        .map(|n| n.0)
        .unwrap_or_else(|| RwSignal::new(Utc::now()))
}

/// A short age like kubectl prints: `42s`, `5m`, `3h`, `2d`; `—` when unknown.
pub fn age(since: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    let Some(since) = since else {
        return "—".into();
    };
    let s = (now - since).num_seconds().max(0);
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m", s / 60),
        7200..=172_799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// A UTC wall-clock time, `HH:MM:SS UTC`.
pub fn clock(t: DateTime<Utc>) -> String {
    t.format("%H:%M:%S UTC").to_string()
}

/// A full UTC timestamp for tooltips.
pub fn stamp(t: Option<DateTime<Utc>>) -> String {
    t.map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ages_like_kubectl() {
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap();
        let ago = |s: i64| Some(now - chrono::Duration::seconds(s));
        assert_eq!(age(ago(5), now), "5s");
        assert_eq!(age(ago(300), now), "5m");
        assert_eq!(age(ago(3 * 3600), now), "3h");
        assert_eq!(age(ago(3 * 86_400), now), "3d");
        assert_eq!(age(None, now), "—");
        assert_eq!(age(ago(-10), now), "0s");
    }
}
