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

/// How long ago `timestamp` was at `now`, in its largest whole unit: `42s`, `3m`, `5h`,
/// `2d`; `-` when unset. A timestamp in the future (clock skew) reads `0s`.
pub(crate) fn age(timestamp: Option<&Timestamp>, now: std::time::SystemTime) -> String {
    let Some(ts) = timestamp else {
        return "-".to_owned();
    };
    let now_secs = match now.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    };
    let secs = now_secs.saturating_sub(ts.seconds).max(0);
    match secs {
        0..60 => format!("{secs}s"),
        60..3_600 => format!("{}m", secs / 60),
        3_600..86_400 => format!("{}h", secs / 3_600),
        _ => format!("{}d", secs / 86_400),
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

    #[test]
    fn ages_use_the_largest_whole_unit() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let ago = |secs: i64| {
            age(
                Some(&Timestamp {
                    seconds: 1_000_000 - secs,
                    nanos: 0,
                }),
                now,
            )
        };
        assert_eq!(ago(0), "0s");
        assert_eq!(ago(59), "59s");
        assert_eq!(ago(60), "1m");
        assert_eq!(ago(3_599), "59m");
        assert_eq!(ago(7_200), "2h");
        assert_eq!(ago(3 * 86_400 + 5), "3d");
        assert_eq!(ago(-30), "0s");
        assert_eq!(age(None, now), "-");
    }
}
