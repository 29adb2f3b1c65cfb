//! Progress of `assent run` and `assent sweep` (docs/contract.md#progress): what a long run is doing, one
//! line per phase on stderr, for the person watching a CI log.
//!
//! The engine's run and sweep report [`Event`]s to a [`Progress`] observer passed in
//! (`engine::observe`); they never print. The command layer passes this module's [`Lines`]
//! printer (stderr, with the time since it was made), or `Silent` under `--format json`
//! and `--quiet`, where stderr carries only errors and warnings.
//!
//! Writes are reported one event per request, and [`Lines`] keeps the log readable: a write
//! line at every tenth of the planned writes, at the last one, and whenever
//! [`Lines::heartbeat`] has passed since the last line (a run paced by GitLab's rate limit
//! still shows it is alive), never one line per write of ten thousand.

use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::core::terminal::terminal_safe;
use crate::engine::observe::{Event, Listing, Progress};

/// Prints events as `progress: …` lines, each with the time since the printer was made.
pub struct Lines<W: Write + Send> {
    out: Mutex<LinesState<W>>,
    started: Instant,
    /// The longest silence while writes go on: a write line is printed when this much has
    /// passed since the last line, whatever the count (default 10 s).
    pub heartbeat: Duration,
}

struct LinesState<W> {
    out: W,
    last_line: Instant,
}

impl Lines<std::io::Stderr> {
    /// Lines on stderr.
    pub fn stderr() -> Self {
        Lines::new(std::io::stderr())
    }
}

impl<W: Write + Send> Lines<W> {
    /// Lines on `out`.
    pub fn new(out: W) -> Self {
        let now = Instant::now();
        Lines {
            out: Mutex::new(LinesState {
                out,
                last_line: now,
            }),
            started: now,
            heartbeat: Duration::from_secs(10),
        }
    }

    /// The writer back (tests read what was printed).
    pub fn into_inner(self) -> W {
        self.out.into_inner().unwrap_or_else(|e| e.into_inner()).out
    }

    fn line(&self, state: &mut LinesState<W>, text: &str) {
        let elapsed = self.started.elapsed().as_secs_f64();
        // A log line that cannot be written is not worth failing a run for.
        let _ = writeln!(
            state.out,
            "progress: {} [{elapsed:.1} s]",
            terminal_safe(text)
        );
        let _ = state.out.flush();
        state.last_line = Instant::now();
    }
}

/// `n` and the noun, singular or plural.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Whether write `done` of `total` gets a line: every tenth of the plan, and the last.
fn write_milestone(done: usize, total: usize) -> bool {
    let step = total.div_ceil(10).max(1);
    done == total || done.is_multiple_of(step)
}

impl<W: Write + Send> Progress for Lines<W> {
    fn event(&self, event: &Event<'_>) {
        let mut state = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let text = match *event {
            Event::InputsRead {
                policy_files,
                changed_files,
                requests,
            } => {
                let changed = match changed_files {
                    Some(n) => count(n, "changed file", "changed files"),
                    None => "the change set incomplete".to_owned(),
                };
                format!(
                    "inputs read: {}, {changed} ({})",
                    count(policy_files, "policy file", "policy files"),
                    count(requests as usize, "request", "requests")
                )
            }
            Event::DesiredState { findings, rules } => format!(
                "desired state: {} of {}",
                count(findings, "finding", "findings"),
                count(rules, "rule", "rules")
            ),
            Event::Listed {
                listing,
                discussions,
                requests,
            } => {
                let what = match listing {
                    Listing::Inventory => "listed",
                    Listing::AfterAmbiguousWrite => {
                        "listed again after a write of unknown outcome:"
                    }
                    Listing::Rescan => "rescan listed",
                    Listing::Confirm => "confirmation listed",
                };
                format!(
                    "{what} {} ({})",
                    count(discussions, "discussion", "discussions"),
                    count(requests as usize, "request", "requests")
                )
            }
            Event::Planned { writes: 0 } => "plan: nothing to write".to_owned(),
            // The plan's writes end with the rescan; marking the summary verified is one more, so
            // the request count at the end is never a surprise.
            Event::Planned { writes } => format!(
                "plan: {}, then 1 to mark the summary verified",
                count(writes, "write", "writes")
            ),
            Event::Wrote { done, total } => {
                let due =
                    write_milestone(done, total) || state.last_line.elapsed() >= self.heartbeat;
                if !due {
                    return;
                }
                format!("writes {done}/{total}")
            }
            Event::Verified { source_sha } => {
                format!("verified at {}", source_sha.short())
            }
            Event::RateLimits {
                refused_writes,
                waited,
            } => format!(
                "rate limits: {} refused with 429 and sent again, {:.0} s waited in total",
                count(refused_writes as usize, "write", "writes"),
                waited.as_secs_f64()
            ),
            Event::MergeRequestsListed { count: n, requests } => format!(
                "listed {} in the window ({})",
                count(n, "open merge request", "open merge requests"),
                count(requests as usize, "request", "requests")
            ),
            Event::Examined {
                done,
                total,
                healed,
            } => {
                let due =
                    write_milestone(done, total) || state.last_line.elapsed() >= self.heartbeat;
                if !due {
                    return;
                }
                format!("examined {done}/{total} merge requests, {healed} needing a pipeline")
            }
        };
        self.line(&mut state, &text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(events: &[Event<'_>], heartbeat: Duration) -> Vec<String> {
        let mut lines = Lines::new(Vec::new());
        lines.heartbeat = heartbeat;
        for e in events {
            lines.event(e);
        }
        String::from_utf8(lines.into_inner())
            .unwrap()
            .lines()
            .map(|l| {
                let (text, time) = l.rsplit_once(" [").expect("a time");
                assert!(time.ends_with(" s]"), "{l}");
                text.to_owned()
            })
            .collect()
    }

    #[test]
    fn ten_thousand_writes_print_ten_lines_not_ten_thousand() {
        let writes: Vec<Event<'_>> = (1..=10_000)
            .map(|done| Event::Wrote {
                done,
                total: 10_000,
            })
            .collect();
        let lines = printed(&writes, Duration::from_secs(3_600));
        let expected: Vec<String> = (1..=10)
            .map(|k| format!("progress: writes {}/10000", k * 1_000))
            .collect();
        assert_eq!(lines, expected);
    }

    #[test]
    fn a_short_plan_prints_each_write_and_the_heartbeat_prints_between_milestones() {
        let writes = |total| -> Vec<Event<'_>> {
            (1..=total)
                .map(|done| Event::Wrote { done, total })
                .collect()
        };
        assert_eq!(
            printed(&writes(3), Duration::from_secs(3_600)),
            [
                "progress: writes 1/3",
                "progress: writes 2/3",
                "progress: writes 3/3"
            ]
        );
        // A zero heartbeat: every write is "long after the last line".
        assert_eq!(printed(&writes(100), Duration::ZERO).len(), 100);
    }

    #[test]
    fn every_phase_has_its_line() {
        let lines = printed(
            &[
                Event::InputsRead {
                    policy_files: 2,
                    changed_files: Some(1),
                    requests: 5,
                },
                Event::DesiredState {
                    findings: 1,
                    rules: 1,
                },
                Event::Listed {
                    listing: Listing::Inventory,
                    discussions: 0,
                    requests: 1,
                },
                Event::Planned { writes: 2 },
                Event::Listed {
                    listing: Listing::Rescan,
                    discussions: 2,
                    requests: 1,
                },
                Event::Verified {
                    source_sha: &crate::core::commit_sha::CommitSha::parse(
                        "2222222222222222222222222222222222222222",
                    )
                    .unwrap(),
                },
                Event::RateLimits {
                    refused_writes: 2,
                    waited: Duration::from_secs(120),
                },
                Event::MergeRequestsListed {
                    count: 3,
                    requests: 1,
                },
                Event::Examined {
                    done: 3,
                    total: 3,
                    healed: 1,
                },
            ],
            Duration::from_secs(3_600),
        );
        assert_eq!(
            lines,
            [
                "progress: inputs read: 2 policy files, 1 changed file (5 requests)",
                "progress: desired state: 1 finding of 1 rule",
                "progress: listed 0 discussions (1 request)",
                "progress: plan: 2 writes, then 1 to mark the summary verified",
                "progress: rescan listed 2 discussions (1 request)",
                "progress: verified at 22222222",
                "progress: rate limits: 2 writes refused with 429 and sent again, 120 s waited in total",
                "progress: listed 3 open merge requests in the window (1 request)",
                "progress: examined 3/3 merge requests, 1 needing a pipeline",
            ]
        );
    }
}
