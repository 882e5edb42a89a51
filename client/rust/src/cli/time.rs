//! RFC 3339 text for protobuf timestamps, in UTC. Small enough to keep here rather than
//! pull a date crate in for one format.

use prost_types::Timestamp;

/// `2026-03-21T14:05:09.123Z` (milliseconds only when non-zero); `-` when unset.
pub(crate) fn rfc3339(timestamp: Option<&Timestamp>) -> String {
    let Some(ts) = timestamp else {
        return "-".to_owned();
    };
    let days = ts.seconds.div_euclid(86_400);
    let secs = ts.seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let millis = ts.nanos.clamp(0, 999_999_999) / 1_000_000;
    if millis == 0 {
        format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
    } else {
        format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{millis:03}Z")
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64, nanos: i32) -> String {
        rfc3339(Some(&Timestamp { seconds, nanos }))
    }

    #[test]
    fn formats_utc() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400, 0), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_774_101_909, 123_456_789), "2026-03-21T14:05:09.123Z");
        assert_eq!(at(-1, 0), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339(None), "-");
    }
}
