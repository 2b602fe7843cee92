//! `Retry-After` as the records keep it: the probe stores rate-limit headers with lower-case
//! names (`common::record::TerminalRecord::rate_limit_headers`), the value verbatim. A 429 is
//! never retried; the report only states how long the provider asked us to wait.

use std::collections::BTreeMap;
use time::PrimitiveDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;

/// Seconds the provider asked a client to wait, from a record's rate-limit headers.
///
/// Read in this order: `retry-after-ms` (milliseconds, a non-standard header some providers
/// send), then `retry-after` as delta-seconds (`"7"`, `"1.5"`), then `retry-after` as an
/// HTTP-date (IMF-fixdate, `"Sun, 06 Nov 1994 08:49:37 GMT"`, RFC 9110 §10.2.3), counted from the
/// request's clock zero `started_at` (RFC 3339, the record's field) and floored at 0. `None` when
/// no header is there, or its value is negative, non-finite or unreadable (a date also needs a
/// readable `started_at`).
pub fn retry_after_s(headers: &BTreeMap<String, String>, started_at: &str) -> Option<f64> {
    let seconds = |text: &str| {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(ms) = headers.get("retry-after-ms").and_then(|v| seconds(v)) {
        return Some(ms / 1000.0);
    }
    let value = headers.get("retry-after")?;
    if let Some(s) = seconds(value) {
        return Some(s);
    }
    let imf = format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let at = PrimitiveDateTime::parse(value.trim(), &imf)
        .ok()?
        .assume_utc();
    let zero = time::OffsetDateTime::parse(started_at, &Rfc3339).ok()?;
    Some(((at - zero).as_seconds_f64()).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const ZERO: &str = "2026-12-04T07:00:00.250000Z";

    #[test]
    fn delta_seconds_are_read_as_written() {
        assert_eq!(
            retry_after_s(&headers(&[("retry-after", "7")]), ZERO),
            Some(7.0)
        );
        assert_eq!(
            retry_after_s(&headers(&[("retry-after", " 1.5 ")]), ""),
            Some(1.5)
        );
        assert_eq!(
            retry_after_s(&headers(&[("retry-after", "0")]), ZERO),
            Some(0.0)
        );
    }

    #[test]
    fn milliseconds_win_over_seconds() {
        let h = headers(&[("retry-after", "7"), ("retry-after-ms", "250")]);
        assert_eq!(retry_after_s(&h, ZERO), Some(0.25));
    }

    #[test]
    fn an_http_date_counts_from_the_clock_zero() {
        // 07:00:12 GMT − 07:00:00.25 = 11.75 s.
        let h = headers(&[("retry-after", "Fri, 04 Dec 2026 07:00:12 GMT")]);
        assert_eq!(retry_after_s(&h, ZERO), Some(11.75));
        // A date already past waits 0 s.
        let past = headers(&[("retry-after", "Fri, 04 Dec 2026 06:59:00 GMT")]);
        assert_eq!(retry_after_s(&past, ZERO), Some(0.0));
        // A date needs a readable clock zero.
        assert_eq!(retry_after_s(&h, "yesterday"), None);
    }

    #[test]
    fn absent_negative_and_unreadable_values_give_none() {
        assert_eq!(retry_after_s(&headers(&[]), ZERO), None);
        assert_eq!(
            retry_after_s(&headers(&[("retry-after", "-3")]), ZERO),
            None
        );
        assert_eq!(
            retry_after_s(&headers(&[("retry-after", "soon")]), ZERO),
            None
        );
        assert_eq!(
            retry_after_s(&headers(&[("retry-after", "NaN")]), ZERO),
            None
        );
        assert_eq!(
            retry_after_s(&headers(&[("x-ratelimit-reset", "3")]), ZERO),
            None
        );
    }
}
