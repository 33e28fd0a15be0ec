//! Ages as kubectl prints them (`AGE`, `LAST SEEN`): Kubernetes' `duration.HumanDuration`.

use chrono::{DateTime, Utc};

/// `kubectl`'s age of an RFC 3339 timestamp: `<unknown>` when missing or unreadable.
pub fn since(timestamp: &str, now: DateTime<Utc>) -> String {
    match DateTime::parse_from_rfc3339(timestamp) {
        Ok(t) => human_duration((now - t.with_timezone(&Utc)).num_seconds()),
        Err(_) => "<unknown>".into(),
    }
}

/// Kubernetes' `duration.HumanDuration` of a number of seconds: `45s`, `3m20s`, `12m`,
/// `5h3m`, `20h`, `3d4h`, `40d`, `2y30d`, `9y`.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}
