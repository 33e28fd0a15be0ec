//! PodDisruptionBudget arithmetic, as the API server's eviction check and the disruption
//! controller do it (Kubernetes: "Specifying a Disruption Budget for your Application"):
//! `minAvailable` or `maxUnavailable`, each a count or a percent of the expected pods.
//!
//! Values are given as their text (`"2"`, `"50%"`): an `IntOrString` either way.

/// The pods a budget must keep healthy out of `expected`: `minAvailable` (a count, or a
/// percent of `expected` rounded up), else `expected - maxUnavailable` (a count, or a percent
/// rounded up), else none (a budget that sets neither protects nothing, as the disruption
/// controller reads it). A value that does not parse, or a percent above 100, counts as
/// unset (the API server would have refused it).
pub fn desired_healthy(
    min_available: Option<&str>,
    max_unavailable: Option<&str>,
    expected: i64,
) -> i64 {
    let of = |v: &str| -> Option<i64> {
        let v = v.trim();
        match v.strip_suffix('%') {
            Some(pct) => {
                let pct: i64 = pct.trim().parse().ok().filter(|p| (0..=100).contains(p))?;
                Some((expected.checked_mul(pct)? + 99) / 100)
            }
            None => v.parse().ok(),
        }
    };
    if let Some(min) = min_available.and_then(of) {
        min
    } else if let Some(max) = max_unavailable.and_then(of) {
        (expected - max).max(0)
    } else {
        0
    }
}

/// Disruptions a budget allows now: healthy pods above what it must keep, never negative.
pub fn allowed(
    min_available: Option<&str>,
    max_unavailable: Option<&str>,
    expected: i64,
    healthy: i64,
) -> i64 {
    (healthy - desired_healthy(min_available, max_unavailable, expected)).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_percents_round_up() {
        assert_eq!(desired_healthy(Some("2"), None, 3), 2);
        assert_eq!(desired_healthy(Some("50%"), None, 3), 2, "1.5 rounds up");
        assert_eq!(desired_healthy(None, Some("1"), 3), 2);
        assert_eq!(desired_healthy(None, Some("34%"), 3), 1, "3 - ceil(1.02)");
        assert_eq!(desired_healthy(None, Some("0"), 3), 3);
        assert_eq!(
            desired_healthy(None, None, 4),
            0,
            "neither set: nothing protected"
        );
        assert_eq!(desired_healthy(Some("900%"), None, 4), 0, "not a percent");
        assert_eq!(
            desired_healthy(Some("50%"), None, i64::MAX),
            0,
            "overflow is unset"
        );
        assert_eq!(
            desired_healthy(Some("x"), Some("1"), 4),
            3,
            "unparsable is unset"
        );
    }

    #[test]
    fn allowed_disruptions_never_go_negative() {
        assert_eq!(allowed(None, Some("1"), 8, 8), 1);
        assert_eq!(allowed(None, Some("1"), 8, 7), 0);
        assert_eq!(allowed(Some("3"), None, 3, 2), 0);
        assert_eq!(allowed(Some("2"), None, 3, 3), 1);
    }
}
