//! Instants as GitLab reports them (`2026-11-30T17:41:36.123Z`): [`Timestamp`], parsed and
//! printed here for the sweep's window, the inventory's edited threads and the in-memory
//! forge's clock alike, and [`SweepDuration`], the length of the sweep's look-back, interval
//! and stuck-after (`48h`). Nothing here reads the clock: `now` is always the caller's.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};

/// An instant, in Unix milliseconds (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The instant `millis` after the Unix epoch.
    pub fn from_unix_millis(millis: i64) -> Self {
        Timestamp(millis)
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_millis(self) -> i64 {
        self.0
    }

    /// Parses a GitLab timestamp: RFC 3339 / ISO 8601 with a zone (`2026-11-30T17:41:36.123Z`,
    /// `2026-11-30T18:41:36+01:00`). `None` for anything else, including a date-time without
    /// a zone (ambiguous).
    pub fn parse(text: &str) -> Option<Timestamp> {
        DateTime::parse_from_rfc3339(text.trim())
            .ok()
            .map(|t| Timestamp(t.timestamp_millis()))
    }

    /// `YYYY-MM-DDTHH:MM:SS[.mmm]Z`; milliseconds only when not zero.
    pub fn to_rfc3339(self) -> String {
        match DateTime::<Utc>::from_timestamp_millis(self.0) {
            Some(t) => t.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            None => format!("@{}ms", self.0),
        }
    }

    /// This instant as a `chrono` UTC date-time (what the `gitlab` crate's builders take).
    pub fn to_chrono(self) -> Option<DateTime<Utc>> {
        DateTime::<Utc>::from_timestamp_millis(self.0)
    }

    /// The instant `duration` earlier.
    pub fn minus(self, duration: SweepDuration) -> Timestamp {
        Timestamp(self.0.saturating_sub(duration.as_millis()))
    }

    /// Rounded down to a whole second (a window start rounded down only widens the window).
    pub fn floor_to_second(self) -> Timestamp {
        Timestamp(self.0.div_euclid(1000) * 1000)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

/// Largest accepted duration: 100 years, far beyond any sensible schedule, and small enough
/// that millisecond arithmetic on timestamps never overflows.
const MAX_DURATION_SECS: u64 = 100 * 366 * 86_400;

/// A whole number with a unit `s`, `m`, `h` or `d` (`48h`, `30m`), strictly positive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SweepDuration {
    secs: u64,
    amount: u64,
    unit: char,
}

impl SweepDuration {
    /// The duration in seconds.
    pub fn as_secs(self) -> u64 {
        self.secs
    }

    /// The duration in milliseconds.
    pub fn as_millis(self) -> i64 {
        // Bounded by MAX_DURATION_SECS, so this never overflows.
        (self.secs as i64) * 1000
    }
}

impl fmt::Display for SweepDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.amount, self.unit)
    }
}

/// Why a duration text is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid duration {text:?}: {reason} (expected a whole number with a unit s, m, h or d, e.g. 48h or 30m)"
)]
pub struct DurationError {
    /// The text as given.
    pub text: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FromStr for SweepDuration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |reason| DurationError {
            text: text.to_owned(),
            reason,
        };
        let Some(unit) = text.chars().last() else {
            return Err(error("empty"));
        };
        let per_unit = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            _ => return Err(error("missing or unknown unit")),
        };
        let digits = &text[..text.len() - 1];
        if digits.is_empty() {
            return Err(error("missing number"));
        }
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(error("not a whole number"));
        }
        let amount: u64 = digits.parse().map_err(|_| error("number too large"))?;
        if amount == 0 {
            return Err(error("must be greater than zero"));
        }
        let secs = amount
            .checked_mul(per_unit)
            .filter(|s| *s <= MAX_DURATION_SECS)
            .ok_or_else(|| error("longer than 100 years"))?;
        Ok(SweepDuration { secs, amount, unit })
    }
}
