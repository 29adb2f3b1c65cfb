//! The application's one reading of the wall clock: every timestamp `run`, `sweep`, `serve`
//! and `doctor` take (a sweep's "now", a log line's time, doctor's today) comes from
//! [`now`], so a clock read is found in one place and the pure crates are handed theirs.
//! Durations are measured with `Instant` where they are taken.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::core::time::Timestamp;

/// The current time, to the millisecond (the epoch when the system clock is set before it).
pub fn now() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    Timestamp::from_unix_millis(millis)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every `.rs` file under `dir` that reads the wall clock, outside this module.
    fn clock_readers(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                clock_readers(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("src/clock.rs")
            {
                let text = std::fs::read_to_string(&path).unwrap();
                let reads = ["SystemTime::now", "Utc::now", "Local::now"];
                if reads.iter().any(|r| text.contains(r)) {
                    out.push(path.display().to_string());
                }
            }
        }
    }

    #[test]
    fn the_application_reads_the_wall_clock_only_here() {
        let mut readers = Vec::new();
        clock_readers(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut readers,
        );
        assert!(
            readers.is_empty(),
            "read the time through crate::clock::now instead: {readers:?}"
        );
    }

    #[test]
    fn now_is_after_the_projects_first_release_year() {
        // 2026-01-01T00:00:00Z: a clock read that fell back to the epoch would be 0.
        assert!(super::now().unix_millis() > 1_767_225_600_000);
    }
}
