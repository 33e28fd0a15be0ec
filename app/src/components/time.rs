//! Ages and clock times, and the ticking "now" they are relative to.

use chrono::{DateTime, Datelike, Timelike, Utc};
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

// The formats below are written by hand rather than with chrono's `format("%H:%M")`: its
// strftime parser and the month and weekday names it carries were some 10 KB of the
// dashboard's wasm, for four fixed layouts.

/// A UTC wall-clock time, `HH:MM:SS UTC`.
pub fn clock(t: DateTime<Utc>) -> String {
    format!("{:02}:{:02}:{:02} UTC", t.hour(), t.minute(), t.second())
}

/// A full UTC timestamp for tooltips, `YYYY-MM-DD HH:MM:SS UTC`; `unknown` when absent.
pub fn stamp(t: Option<DateTime<Utc>>) -> String {
    t.map(|t| format!("{} {}", day(t), clock(t)))
        .unwrap_or_else(|| "unknown".into())
}

/// A UTC time to the minute, `YYYY-MM-DD HH:MM UTC`.
pub fn minute(t: DateTime<Utc>) -> String {
    format!("{} {:02}:{:02} UTC", day(t), t.hour(), t.minute())
}

/// A chart axis label in UTC, `MM-DD HH:MM`.
pub fn axis_label(t: DateTime<Utc>) -> String {
    format!(
        "{:02}-{:02} {:02}:{:02}",
        t.month(),
        t.day(),
        t.hour(),
        t.minute()
    )
}

fn day(t: DateTime<Utc>) -> String {
    format!("{:04}-{:02}-{:02}", t.year(), t.month(), t.day())
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

    #[test]
    fn the_hand_written_formats_match_strftime() {
        for t in [
            Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap(),
            Utc.with_ymd_and_hms(2026, 11, 21, 23, 59, 59).unwrap(),
            Utc.with_ymd_and_hms(987, 12, 31, 0, 0, 0).unwrap(),
        ] {
            assert_eq!(clock(t), t.format("%H:%M:%S UTC").to_string());
            assert_eq!(
                stamp(Some(t)),
                t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
            );
            assert_eq!(minute(t), t.format("%Y-%m-%d %H:%M UTC").to_string());
            assert_eq!(axis_label(t), t.format("%m-%d %H:%M").to_string());
        }
        assert_eq!(stamp(None), "unknown");
    }
}
