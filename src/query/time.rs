//! Time bounds as people write them, parsed once for every door.
//!
//! Stored times are the transcripts' own: UTC, `YYYY-MM-DDTHH:MM:SS.mmmZ`, compared as text
//! (both backends index them as text). A bound is therefore parsed into an instant and
//! written back in exactly that shape, so that the text comparison is the time comparison. A
//! date or date-time without a zone is the user's local time (the `TZ` of the process), as
//! `date` or `find -newermt` read it.

use chrono::{DateTime, Local, NaiveDate, NaiveDateTime, TimeZone, Utc};

use super::Error as QueryError;

/// The forms a time accepts, for error messages and help texts.
pub const TIME_FORMS: &str = "a date (2026-01-31), a date-time (2026-01-31T12:00, seconds and \
a zone such as Z or +02:00 optional) or an age (30m, 12h, 7d, 2w)";

/// An instant given by a filter (`--since`, `until`, `start_date`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TimeBound {
    /// Milliseconds since the Unix epoch.
    unix_ms: i64,
}

impl TimeBound {
    /// Parse `text` for the filter named `field` (the name the door shows: `--since` in the
    /// CLI, `since` in MCP and the web). An impossible date (`2026-13-45`), an unknown unit or
    /// anything else is an error naming the field, the value and the accepted forms.
    pub fn parse(field: &str, text: &str) -> Result<TimeBound, QueryError> {
        Self::parse_at(field, text, Utc::now().timestamp_millis())
    }

    /// [`TimeBound::parse`] with ages counted back from `now_ms`.
    pub fn parse_at(field: &str, text: &str, now_ms: i64) -> Result<TimeBound, QueryError> {
        let bad = || QueryError::BadTime {
            field: field.to_string(),
            value: text.to_string(),
        };
        let s = text.trim();
        if s.is_empty() {
            return Err(bad());
        }
        if let Some(ms) = age_ms(s) {
            return ms
                .and_then(|ms| now_ms.checked_sub(ms))
                .map(|unix_ms| TimeBound { unix_ms })
                .ok_or_else(bad);
        }
        absolute(s)
            .map(|unix_ms| TimeBound { unix_ms })
            .ok_or_else(bad)
    }

    /// [`TimeBound::parse`] for the end of a range (`--until`), which every filter compares as
    /// "before": a date written alone ends with its day, so `--until 2026-01-31` includes the
    /// 31st (as ccusage and `git log --until` read it), and an hour alone (`2026-01-31T05`) ends
    /// with its hour. A time given to the minute or second, or an age, is that instant.
    pub fn parse_until(field: &str, text: &str) -> Result<TimeBound, QueryError> {
        let start = Self::parse(field, text)?;
        let s = text.trim();
        let end = if let Some(d) = date_only(s) {
            d.succ_opt()
                .and_then(|d| absolute(&d.format("%Y-%m-%d").to_string()))
        } else if hour_only(s) {
            start.unix_ms.checked_add(3_600_000)
        } else {
            Some(start.unix_ms)
        };
        end.map(|unix_ms| TimeBound { unix_ms })
            .ok_or(QueryError::BadTime {
                field: field.to_string(),
                value: text.to_string(),
            })
    }

    /// An instant from Unix milliseconds.
    pub fn from_unix_ms(unix_ms: i64) -> TimeBound {
        TimeBound { unix_ms }
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_ms(self) -> i64 {
        self.unix_ms
    }

    /// The bound as stored times are written (`2026-01-31T11:00:00.000Z`), ready to compare.
    pub fn as_stored(self) -> String {
        crate::extract::rows::iso_from_unix_millis(self.unix_ms)
    }
}

/// `Some(Some(ms))` for an age like `7d`, `Some(None)` for an age that overflows, `None` when
/// `s` is not an age at all.
fn age_ms(s: &str) -> Option<Option<i64>> {
    let unit = s.chars().last()?;
    let per = match unit {
        's' => 1_000,
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        'w' => 7 * 86_400_000,
        _ => return None,
    };
    let digits = &s[..s.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<i64>().ok().and_then(|n| n.checked_mul(per)))
}

/// A date or date-time: with a zone (`Z`, `+02:00`) an instant; without one, local time.
fn absolute(s: &str) -> Option<i64> {
    // Years before 1000 or after 9999 do not compare as text with stored times.
    let year_ok = |y: i32| (1000..=9999).contains(&y);
    if let Ok(dt) = DateTime::parse_from_rfc3339(&s.replacen(' ', "T", 1)) {
        return year_ok(chrono::Datelike::year(&dt)).then(|| dt.timestamp_millis());
    }
    // Zoned forms RFC 3339 leaves out: no seconds (`2026-01-31T12:00Z`, `...12:00+02:00`).
    for fmt in ["%Y-%m-%dT%H:%M%#z", "%Y-%m-%d %H:%M%#z"] {
        if let Ok(dt) = DateTime::parse_from_str(&with_z_offset(s), fmt) {
            return year_ok(chrono::Datelike::year(&dt)).then(|| dt.timestamp_millis());
        }
    }
    // An hour alone (`2026-01-31T05`, ISO 8601's reduced precision) is that hour's start.
    let with_minutes = hour_only(s).then(|| format!("{s}:00"));
    let s = with_minutes.as_deref().unwrap_or(s);
    let civil = if let Some(d) = date_only(s) {
        d.and_hms_opt(0, 0, 0)?
    } else if NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() {
        return None;
    } else {
        [
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M",
            "%Y-%m-%d %H:%M",
        ]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())?
    };
    if !year_ok(chrono::Datelike::year(&civil)) {
        return None;
    }
    // A local time skipped by a clock change has no instant; take the one after the gap.
    let local = Local.from_local_datetime(&civil).earliest().or_else(|| {
        Local
            .from_local_datetime(&(civil + chrono::Duration::hours(1)))
            .earliest()
    })?;
    Some(local.timestamp_millis())
}

/// A date written alone (`2026-01-31`).
fn date_only(s: &str) -> Option<NaiveDate> {
    (s.len() == 10)
        .then(|| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok())
        .flatten()
}

/// An hour written alone (`2026-01-31T05`, ISO 8601's reduced precision).
fn hour_only(s: &str) -> bool {
    s.len() == 13 && matches!(s.as_bytes()[10], b'T' | b' ')
}

/// `Z` as `+00:00`, which `%#z` reads.
fn with_z_offset(s: &str) -> String {
    match s.strip_suffix(['Z', 'z']) {
        Some(head) => format!("{head}+00:00"),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_780_000_000_000;

    fn stored(s: &str) -> String {
        TimeBound::parse_at("--since", s, NOW)
            .map(TimeBound::as_stored)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn zoned_times_are_instants() {
        assert_eq!(stored("2026-01-31T12:00:00Z"), "2026-01-31T12:00:00.000Z");
        assert_eq!(
            stored("2026-01-31T12:00:00.25Z"),
            "2026-01-31T12:00:00.250Z"
        );
        assert_eq!(stored("2026-01-31T12:00+02:00"), "2026-01-31T10:00:00.000Z");
        assert_eq!(
            stored("2026-01-31 12:00:00-01:00"),
            "2026-01-31T13:00:00.000Z"
        );
        assert_eq!(stored("2026-01-31T12:00Z"), "2026-01-31T12:00:00.000Z");
    }

    #[test]
    fn ages_count_back_from_now() {
        let b = TimeBound::parse_at("since", "2d", NOW).unwrap();
        assert_eq!(b.unix_ms(), NOW - 2 * 86_400_000);
        let b = TimeBound::parse_at("since", " 30m ", NOW).unwrap();
        assert_eq!(b.unix_ms(), NOW - 30 * 60_000);
        assert!(TimeBound::parse_at("since", "99999999999999999w", NOW).is_err());
    }

    #[test]
    fn impossible_and_unknown_values_are_errors_naming_them() {
        for bad in [
            "2026-13-45",
            "2026-99-99",
            "2026-02-30",
            "2026-01-31T25:00",
            "2026-1-3",
            "yesterday",
            "7x",
            "-3d",
            "d",
            "",
            "2026-01-31garbage",
            "0099-01-01",
        ] {
            let e = TimeBound::parse_at("--since", bad, NOW)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("--since") && e.contains(&format!("{bad:?}")),
                "{e}"
            );
            assert!(e.contains("2026-01-31") && e.contains("7d"), "{e}");
        }
    }

    #[test]
    fn local_dates_are_valid_and_ordered() {
        let a = TimeBound::parse_at("since", "2028-02-29", NOW).unwrap();
        let b = TimeBound::parse_at("since", "2028-02-29T00:00:01", NOW).unwrap();
        assert_eq!(b.unix_ms() - a.unix_ms(), 1000);
        assert!(TimeBound::parse_at("since", "2027-02-29", NOW).is_err());
        assert_eq!(stored("2026-01-31").len(), "2026-01-31T00:00:00.000Z".len());
        let h = TimeBound::parse_at("since", "2028-02-29T05", NOW).unwrap();
        assert_eq!(h.unix_ms() - a.unix_ms(), 5 * 3_600_000);
    }

    #[test]
    fn an_end_written_as_a_date_or_an_hour_includes_it() {
        let day = |s| TimeBound::parse("--since", s).unwrap().unix_ms();
        let end = |s| TimeBound::parse_until("--until", s).unwrap().unix_ms();
        // The whole day: up to the next day's start (local, whatever its length).
        assert_eq!(end("2026-04-27"), day("2026-04-28"));
        assert_eq!(end("2028-02-28"), day("2028-02-29"));
        assert_eq!(end("2026-12-31"), day("2027-01-01"));
        assert_eq!(end("2026-04-27T05"), day("2026-04-27T06"));
        // Given to the minute, to the second, with a zone, or as an age: that instant.
        for exact in [
            "2026-04-27T05:30",
            "2026-04-27 05:30:10",
            "2026-04-27T05:30:00Z",
        ] {
            assert_eq!(end(exact), day(exact), "{exact}");
        }
        let age = TimeBound::parse_until("--until", "2d").unwrap().unix_ms();
        assert!((day("2d") - age).abs() < 60_000);
        // The last day a store can compare is still an error, not a wrap.
        let e = TimeBound::parse_until("--until", "2026-02-30").unwrap_err();
        assert!(e.to_string().contains("--until"), "{e}");
    }

    #[test]
    fn a_range_whose_start_is_not_before_its_end_is_an_error() {
        use crate::query::time_range;
        let (s, u) = time_range(
            ("--since", Some("2026-04-27")),
            ("--until", Some("2026-04-27")),
        )
        .unwrap();
        assert_eq!(u.unwrap().unix_ms() - s.unwrap().unix_ms(), 86_400_000);
        let e = time_range(
            ("--since", Some("2026-04-28")),
            ("--until", Some("2026-04-27")),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--since \"2026-04-28\"") && e.contains("--until \"2026-04-27\""),
            "{e}"
        );
        assert!(time_range(
            ("since", Some("2026-04-27T10:00")),
            ("until", Some("2026-04-27T10:00"))
        )
        .is_err());
        assert!(time_range(("since", None), ("until", Some("2026-04-27"))).is_ok());
        assert!(time_range(("since", Some("bad")), ("until", None)).is_err());
    }
}
