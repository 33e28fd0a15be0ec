//! The report's time range from what a URL or API query says.

use chrono::{DateTime, Duration, Utc};

/// The named ranges, ending now.
pub const RANGES: [&str; 4] = ["1h", "24h", "7d", "30d"];

/// `[from, to]` for `range` (`1h`, `24h`, `7d`, `30d`, ending at `to` or now) or explicit
/// RFC 3339 `from`/`to`. Default: the last 24 hours.
///
/// Errors: a time that is not RFC 3339, an unknown range, or `from` after `to`.
pub fn resolve(
    range: Option<&str>,
    from: Option<&str>,
    to: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, DateTime<Utc>), String> {
    let parse = |s: &str| {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| format!("\"{s}\" is not an RFC 3339 time: {e}"))
    };
    let to = match to.filter(|t| !t.is_empty()) {
        Some(t) => parse(t)?,
        None => now,
    };
    let from = match (
        from.filter(|f| !f.is_empty()),
        range.filter(|r| !r.is_empty()),
    ) {
        (Some(f), _) => parse(f)?,
        (None, None | Some("24h")) => to - Duration::hours(24),
        (None, Some("1h")) => to - Duration::hours(1),
        (None, Some("7d")) => to - Duration::days(7),
        (None, Some("30d")) => to - Duration::days(30),
        (None, Some(r)) => {
            return Err(format!("unknown range \"{r}\": use 1h, 24h, 7d or 30d"));
        }
    };
    if from > to {
        return Err("from is after to".into());
    }
    if to - from > Duration::days(MAX_RANGE_DAYS) {
        return Err(format!(
            "a range of at most {MAX_RANGE_DAYS} days: export longer periods a piece at a time"
        ));
    }
    Ok((from, to))
}

/// The longest range one request may ask for, in days. Every lifetime overlapping the range
/// is read and priced, so an unbounded range (years of a large fleet) would hold the ledger
/// and the server's memory for one request.
pub const MAX_RANGE_DAYS: i64 = 400;

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ranges() {
        let now = Utc.with_ymd_and_hms(2026, 11, 21, 9, 0, 0).unwrap();
        assert_eq!(
            resolve(None, None, None, now).unwrap().0,
            now - Duration::hours(24)
        );
        assert_eq!(
            resolve(Some("7d"), None, None, now).unwrap().0,
            now - Duration::days(7)
        );
        let (f, t) = resolve(
            None,
            Some("2026-11-20T00:00:00Z"),
            Some("2026-11-20T10:00:00Z"),
            now,
        )
        .unwrap();
        assert_eq!((t - f).num_hours(), 10);
        assert!(
            resolve(Some("2w"), None, None, now)
                .unwrap_err()
                .contains("unknown range")
        );
        assert!(resolve(None, Some("yesterday"), None, now).is_err());
        assert!(
            resolve(None, Some("2026-11-22T00:00:00Z"), None, now)
                .unwrap_err()
                .contains("after")
        );
    }

    #[test]
    fn ranges_are_bounded() {
        let now = Utc.with_ymd_and_hms(2026, 11, 23, 0, 0, 0).unwrap();
        assert!(resolve(None, Some("2025-11-01T00:00:00Z"), None, now).is_ok());
        let err = resolve(None, Some("2020-01-01T00:00:00Z"), None, now).unwrap_err();
        assert!(err.contains("400 days"), "{err}");
    }
}
