//! Instants as GitLab reports them (`2026-11-30T17:41:36.123Z`): [`Timestamp`], parsed and
//! printed here for the sweep's window, the inventory's edited threads and the in-memory
//! forge's clock alike. Nothing here reads the clock: `now` is always the caller's.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::sweep::SweepDuration;

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
