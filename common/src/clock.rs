//! Wall-clock timestamps for records, manifests and run names (measurement itself uses `Instant`).

use std::time::SystemTime;
use time::OffsetDateTime;
use time::macros::format_description;

/// Formats a wall-clock time as RFC 3339 UTC with microseconds, e.g. `2026-11-29T19:55:19.123456Z`.
pub fn rfc3339_utc(at: SystemTime) -> String {
    let at = OffsetDateTime::from(at);
    let format =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");
    at.format(&format)
        .unwrap_or_else(|_| String::from("1970-01-01T00:00:00.000000Z"))
}

/// The current wall-clock time as RFC 3339 UTC.
pub fn now_rfc3339() -> String {
    rfc3339_utc(SystemTime::now())
}

/// Microseconds since the UNIX epoch of an RFC 3339 time (what [`rfc3339_utc`] writes); `None`
/// when `text` is not RFC 3339.
pub fn rfc3339_unix_micros(text: &str) -> Option<i64> {
    let at = OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000).ok()
}

/// Microseconds since the UNIX epoch of `at` (0 before the epoch).
pub fn unix_micros(at: SystemTime) -> i64 {
    at.duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A compact UTC stamp for run directory names: `YYYYMMDD-HHMMSS`.
pub fn run_stamp(at: SystemTime) -> String {
    let at = OffsetDateTime::from(at);
    let format = format_description!("[year][month][day]-[hour][minute][second]");
    at.format(&format)
        .unwrap_or_else(|_| String::from("19700101-000000"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn formats_known_instants() {
        // 1_700_000_000 s = 2023-11-14 22:13:20 UTC (`date -u -d @1700000000`).
        let at = UNIX_EPOCH + Duration::from_micros(1_700_000_000_000_042);
        assert_eq!(rfc3339_utc(at), "2023-11-14T22:13:20.000042Z");
        assert_eq!(run_stamp(at), "20231114-221320");
        // A leap day: 2024-02-29 00:00:00 UTC = 1_709_164_800.
        let leap = UNIX_EPOCH + Duration::from_secs(1_709_164_800);
        assert_eq!(rfc3339_utc(leap), "2024-02-29T00:00:00.000000Z");
    }

    #[test]
    fn rfc3339_reads_back_to_the_microsecond() {
        assert_eq!(
            rfc3339_unix_micros("2023-11-14T22:13:20.000042Z"),
            Some(1_700_000_000_000_042)
        );
        let at = UNIX_EPOCH + Duration::from_micros(1_709_164_800_123_456);
        assert_eq!(unix_micros(at), 1_709_164_800_123_456);
        assert_eq!(rfc3339_unix_micros(&rfc3339_utc(at)), Some(unix_micros(at)));
        assert_eq!(rfc3339_unix_micros("yesterday"), None);
    }
}
