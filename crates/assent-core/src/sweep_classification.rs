//! The sweep's decisions (docs/contract.md#sweep), as pure functions: durations, the window check, the
//! timestamps GitLab reports, and the classification of one merge request from what the
//! forge says about it.
//!
//! Nothing here reads the clock: the command reads it **once** and passes the same "now" to
//! every function, so one sweep judges every MR against one instant and every decision is
//! reproducible from its inputs.
//!
//! Classification is a function of (MR facts, canonical bot summary, now, settings):
//!
//! | summary (lowest-id bot summary note)        | verdict               | action            |
//! | ------------------------------------------- | --------------------- | ----------------- |
//! | MR no longer open                           | `not-open`            | none              |
//! | `verified` for the MR's head and target branch | `verified`         | none              |
//! | `verified` for another SHA                  | `verified-older-head` | create a pipeline |
//! | `verified` for the head, no `target` recorded | `verified-no-target` | create a pipeline |
//! | `verified` for the head, another target branch | `verified-other-target` | create a pipeline |
//! | `verified`, gate line `REVIEW`, resolutions changed since, one by a user who may assent | `review-resolved` | create a pipeline |
//! | `reconciling`, older than `--stuck-after`   | `reconciling-stuck`   | create a pipeline |
//! | `reconciling`, age unknown (no timestamp)   | `reconciling-stuck`   | create a pipeline |
//! | `reconciling`, not older than `--stuck-after` | `reconciling-recent` | none (a run is probably in flight) |
//! | none                                        | `missing`             | create a pipeline |
//!
//! A verdict that asks for a pipeline is first checked against the MR's head pipeline: the MR
//! listing does not carry `head_pipeline`, so the first classification (from the listing)
//! answers [`Action::InspectMergeRequest`] and the caller reads the single MR and classifies
//! again with [`HeadPipeline::Status`] or [`HeadPipeline::None`]. A head pipeline of the MR's
//! head that is `created`, `pending`, `waiting_for_resource`, `preparing` or `running` turns
//! the verdict into `pipeline-active` (left alone: the normal job will heal it). GitLab's
//! `head_pipeline` is the MR's latest pipeline, which after a push can belong to the previous
//! head (`lib/api/entities/merge_request.rb`, `app/models/merge_request.rb`): one for another
//! SHA, or whose SHA is unknown, is no job coming for this head. The second classification
//! never answers `InspectMergeRequest`.
//!
//! Decision freshness (docs/contract.md#decision-freshness): a summary `verified` for the head
//! and target whose gate line ([`GateLine`]) says `REVIEW` is healed when the resolution
//! fingerprint of the current listing differs from the one on the gate line and some bot
//! thread is resolved by a user who may assent (neither the MR's author nor the bot, and not
//! a thread GitLab shows changed since it was posted: [`MrFacts::assent_possible`]). It is read
//! from the discussions alone: GitLab's `blocking_discussions_resolved` is `true` whenever the
//! project does not require resolved threads (`app/models/merge_request.rb`
//! `mergeable_discussions_state?`, docs/contract.md#blocking-discussions-resolved), so it
//! says nothing about them. The run that heals it
//! records the new fingerprint, so a change of resolutions causes one pipeline, never one per
//! sweep, and a resolution that can never count (the author's) causes none. A summary without
//! a gate line, or with a malformed one, is never healed for freshness. When the MR listing
//! does not report the target branch, the recorded one is not compared (a summary without one
//! is still healed).

use std::fmt;

use crate::commit_sha::CommitSha;
use crate::inventory::{Inventory, SummaryArtifact};
use crate::marker::{self, GateLine, Marker, SummaryState};
use crate::model::{Decision, Occurrence};
use crate::time::{SweepDuration, Timestamp};

/// The look-back does not reach over the interval: consecutive windows would merely abut (or
/// leave gaps), and an MR updated on the boundary would be seen by no sweep.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--lookback {lookback} is not wider than --interval {interval}: consecutive sweep windows must overlap, \
     or an MR updated on the boundary between two sweeps is never examined; use a look-back of at least twice the interval"
)]
pub struct WindowError {
    /// The look-back given.
    pub lookback: SweepDuration,
    /// The interval given.
    pub interval: SweepDuration,
}

/// Refuses a look-back that is not strictly wider than the interval (docs/contract.md#sweep).
pub fn check_window(lookback: SweepDuration, interval: SweepDuration) -> Result<(), WindowError> {
    if lookback.as_secs() > interval.as_secs() {
        Ok(())
    } else {
        Err(WindowError { lookback, interval })
    }
}

/// A warning when a crashed run could go unnoticed although the window check passes: an MR
/// whose last update is its own "reconciling" summary is only called stuck once that summary
/// is older than `stuck_after`, and it leaves the window after `lookback`; some sweep falls
/// in between only when `lookback >= interval + stuck_after`.
pub fn coverage_warning(
    lookback: SweepDuration,
    interval: SweepDuration,
    stuck_after: SweepDuration,
) -> Option<String> {
    let needed = interval.as_secs() + stuck_after.as_secs();
    (lookback.as_secs() < needed).then(|| {
        format!(
            "--lookback {lookback} is shorter than --interval {interval} plus --stuck-after {stuck_after}: \
             an MR whose run crashed and that sees no other activity may leave the window before it counts as stuck"
        )
    })
}

/// The start of the window of a sweep at `now`: `now - lookback`, rounded down to the second.
/// MRs updated at or after it are examined.
pub fn window_start(now: Timestamp, lookback: SweepDuration) -> Timestamp {
    now.minus(lookback).floor_to_second()
}

/// The head pipeline statuses that mean "a job may still run for this head" (docs/contract.md#sweep).
pub const ACTIVE_PIPELINE_STATUSES: [&str; 5] = [
    "created",
    "pending",
    "waiting_for_resource",
    "preparing",
    "running",
];

/// True for a head pipeline status in [`ACTIVE_PIPELINE_STATUSES`].
pub fn is_active_pipeline(status: &str) -> bool {
    ACTIVE_PIPELINE_STATUSES.contains(&status)
}

/// What is known about the MR's head pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadPipeline {
    /// Not read yet (the MR listing does not carry it).
    NotRead,
    /// Read: the MR has no head pipeline.
    None,
    /// Read: the head pipeline's status and the SHA it runs for (`None` when GitLab did not
    /// say).
    Status {
        /// `created`, `running`, `success`, …
        status: String,
        /// The commit it runs for: the MR's head, or after a push an older one.
        sha: Option<CommitSha>,
    },
}

/// What the forge says about one merge request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MrFacts {
    /// The MR's IID.
    pub iid: u64,
    /// The MR's current head SHA; `None` when the forge did not say (an MR without
    /// commits): no summary is then for its head.
    pub head_sha: Option<CommitSha>,
    /// False once the MR is closed, merged or locked.
    pub open: bool,
    /// Its head pipeline, when read.
    pub head_pipeline: HeadPipeline,
    /// The branch it targets now, when the forge says.
    pub target_branch: Option<String>,
    /// [`crate::resolutions::resolution_fingerprint`] of the MR's current listing.
    pub resolutions: Occurrence,
    /// Some bot thread of the current listing is resolved by a user who may assent
    /// ([`assent_possible`]): a change of resolutions can turn the decision.
    pub assent_possible: bool,
}

/// Whether some finding thread of `inventory` is resolved by a user who may assent: someone
/// GitLab names (`resolved_by`) who is neither the bot nor the MR's author (`author`, when
/// known), on a thread GitLab does not show changed since it was posted. Who may assent is
/// narrowed further by the run (roles, a policy's `assenters`); this only rules out the
/// resolutions that can never count (docs/contract.md#who-may-assent), so that they never
/// cause a pipeline.
pub fn assent_possible(inventory: &Inventory, author: Option<u64>) -> bool {
    inventory.threads.iter().any(|t| {
        t.resolved
            && !t.resolved_by_bot
            && !t.edited
            && t.resolved_by.as_ref().is_some_and(|u| Some(u.id) != author)
    })
}

/// The sweep's settings that classification depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassifySettings {
    /// A `reconciling` summary older than this is stuck.
    pub stuck_after: SweepDuration,
}

/// The state of one MR's review, as the sweep sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SweepVerdict {
    /// The summary is `verified` for the MR's head: healthy.
    Verified,
    /// The summary is `verified` for another SHA: the head moved and no run verified it.
    VerifiedOlderHead,
    /// The summary is `verified` for the head but records no target branch (written before
    /// targets were recorded): healed once, by a run that records it.
    VerifiedNoTarget,
    /// The summary is `verified` for the head against another target branch: the MR was
    /// retargeted and no run judged it under the new target's policies.
    VerifiedOtherTarget,
    /// The summary says `REVIEW`, the resolutions changed since the summary was written, and a
    /// thread is resolved by a user who may assent: a run may now approve.
    ReviewResolved,
    /// The summary says `reconciling` for longer than `--stuck-after` (or for an unknown time).
    ReconcilingStuck,
    /// The summary says `reconciling`, recently: a run is probably in flight.
    ReconcilingRecent,
    /// No bot summary at all: no run ever got as far as its first write.
    Missing,
    /// The state needs healing but the head pipeline is still pending or running.
    PipelineActive,
    /// The MR is no longer open.
    NotOpen,
}

impl SweepVerdict {
    /// The verdict as reported: `verified`, `verified-older-head`, `verified-no-target`,
    /// `verified-other-target`, `review-resolved`, `reconciling-stuck`, `reconciling-recent`,
    /// `missing`, `pipeline-active`, `not-open`.
    pub fn as_str(self) -> &'static str {
        match self {
            SweepVerdict::Verified => "verified",
            SweepVerdict::VerifiedOlderHead => "verified-older-head",
            SweepVerdict::VerifiedNoTarget => "verified-no-target",
            SweepVerdict::VerifiedOtherTarget => "verified-other-target",
            SweepVerdict::ReviewResolved => "review-resolved",
            SweepVerdict::ReconcilingStuck => "reconciling-stuck",
            SweepVerdict::ReconcilingRecent => "reconciling-recent",
            SweepVerdict::Missing => "missing",
            SweepVerdict::PipelineActive => "pipeline-active",
            SweepVerdict::NotOpen => "not-open",
        }
    }

    /// True for the verdicts that follow a human action rather than a lost run
    /// (`review-resolved`, `verified-other-target`): their pipelines are counted as
    /// `refreshed`, not `healed`, so `healed` stays 0 in a healthy deployment.
    pub fn follows_human_action(self) -> bool {
        matches!(
            self,
            SweepVerdict::ReviewResolved | SweepVerdict::VerifiedOtherTarget
        )
    }

    /// True for the verdicts that call for a new pipeline (before the head pipeline check).
    pub fn needs_healing(self) -> bool {
        matches!(
            self,
            SweepVerdict::VerifiedOlderHead
                | SweepVerdict::VerifiedNoTarget
                | SweepVerdict::VerifiedOtherTarget
                | SweepVerdict::ReviewResolved
                | SweepVerdict::ReconcilingStuck
                | SweepVerdict::Missing
        )
    }
}

impl fmt::Display for SweepVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the sweep should do next for one MR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Nothing.
    None,
    /// Read the single MR (its head pipeline and current head) and classify again.
    InspectMergeRequest,
    /// Create a merge request pipeline so the normal, serialized job heals the MR.
    CreatePipeline,
}

/// A verdict, the action it calls for, and a one-line explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// The verdict.
    pub verdict: SweepVerdict,
    /// The action.
    pub action: Action,
    /// Why, for the report (`reconciling for 3h (stuck after 30m)`).
    pub detail: String,
}

/// Classifies one MR (see the module documentation for the table).
pub fn classify(
    mr: &MrFacts,
    summary: Option<&SummaryArtifact>,
    now: Timestamp,
    settings: &ClassifySettings,
) -> Classification {
    if !mr.open {
        return Classification {
            verdict: SweepVerdict::NotOpen,
            action: Action::None,
            detail: "the merge request is no longer open".into(),
        };
    }
    let (verdict, detail) = match summary {
        None => (
            SweepVerdict::Missing,
            "no assent summary on the MR".to_owned(),
        ),
        Some(s) => match s.state {
            SummaryState::Verified if mr.head_sha.as_ref() == Some(&s.source_sha) => {
                verified_for_head(mr, s)
            }
            SummaryState::Verified => (
                SweepVerdict::VerifiedOlderHead,
                format!(
                    "verified for {}, but the head is {}",
                    s.source_sha.short(),
                    mr.head_short()
                ),
            ),
            SummaryState::Reconciling => {
                let since = s.updated_at.as_deref().and_then(Timestamp::parse);
                match since {
                    None => (
                        SweepVerdict::ReconcilingStuck,
                        format!(
                            "reconciling {} since an unknown time (the summary note has no readable updated_at)",
                            s.source_sha.short()
                        ),
                    ),
                    Some(since) => {
                        let age = now.unix_millis().saturating_sub(since.unix_millis());
                        let verdict = if age > settings.stuck_after.as_millis() {
                            SweepVerdict::ReconcilingStuck
                        } else {
                            SweepVerdict::ReconcilingRecent
                        };
                        (
                            verdict,
                            format!(
                                "reconciling {} for {} (stuck after {})",
                                s.source_sha.short(),
                                format_age(age),
                                settings.stuck_after
                            ),
                        )
                    }
                }
            }
        },
    };
    if !verdict.needs_healing() {
        return Classification {
            verdict,
            action: Action::None,
            detail,
        };
    }
    match &mr.head_pipeline {
        HeadPipeline::NotRead => Classification {
            verdict,
            action: Action::InspectMergeRequest,
            detail,
        },
        HeadPipeline::Status { status, sha }
            if sha.is_none() || sha.as_ref() != mr.head_sha.as_ref() =>
        {
            Classification {
                verdict,
                action: Action::CreatePipeline,
                detail: format!(
                    "{detail}; head pipeline is {status} for {}, not the head",
                    sha.as_ref()
                        .map_or("an unknown commit".to_owned(), |s| s.short().to_owned())
                ),
            }
        }
        HeadPipeline::Status { status, .. } if is_active_pipeline(status) => Classification {
            verdict: SweepVerdict::PipelineActive,
            action: Action::None,
            detail: format!("{detail}; head pipeline is {status}, left alone"),
        },
        HeadPipeline::Status { status, .. } => Classification {
            verdict,
            action: Action::CreatePipeline,
            detail: format!("{detail}; head pipeline is {status}"),
        },
        HeadPipeline::None => Classification {
            verdict,
            action: Action::CreatePipeline,
            detail: format!("{detail}; no head pipeline"),
        },
    }
}

impl MrFacts {
    /// The head as reports print it: its first 8 hex digits, or `unknown`.
    fn head_short(&self) -> &str {
        self.head_sha.as_ref().map_or("unknown", CommitSha::short)
    }
}

/// The verdict of a summary `verified` for the MR's head: is it for the MR's target branch,
/// and is its decision still fresh (see the module documentation)?
fn verified_for_head(mr: &MrFacts, summary: &SummaryArtifact) -> (SweepVerdict, String) {
    let head = mr.head_short();
    let recorded = match marker::decode_body(&summary.body) {
        Ok(Some(Marker::Summary { target, .. })) => target,
        _ => None,
    };
    let Some(recorded) = recorded else {
        return (
            SweepVerdict::VerifiedNoTarget,
            format!("verified for head {head}, but no target branch recorded"),
        );
    };
    if let Some(current) = mr.target_branch.as_deref().filter(|c| *c != recorded) {
        return (
            SweepVerdict::VerifiedOtherTarget,
            format!(
                "verified for head {head} against {}, but the MR now targets {}",
                branch(&recorded),
                branch(current)
            ),
        );
    }
    let verified = format!("verified for head {head}");
    match marker::gate_line_of(&summary.body) {
        Ok(Some(GateLine {
            decision: Decision::Review,
            resolutions,
        })) => {
            if resolutions == mr.resolutions {
                (
                    SweepVerdict::Verified,
                    format!("{verified}; REVIEW, and no resolution changed since the summary"),
                )
            } else if !mr.assent_possible {
                (
                    SweepVerdict::Verified,
                    format!(
                        "{verified}; REVIEW, and no thread is resolved by a user who may assent (the resolutions changed since the summary, by the MR's author or the bot only)"
                    ),
                )
            } else {
                (
                    SweepVerdict::ReviewResolved,
                    format!(
                        "REVIEW for head {head}, but the resolutions changed since the summary and a thread is resolved by a user who may assent"
                    ),
                )
            }
        }
        Ok(_) => (SweepVerdict::Verified, verified),
        Err(malformed) => (
            SweepVerdict::Verified,
            format!("{verified}; malformed gate line ({})", malformed.reason),
        ),
    }
}

/// A branch name for a report line: JSON-quoted, so no name can break the line or pose as
/// another field.
fn branch(name: &str) -> String {
    serde_json::Value::String(name.to_owned()).to_string()
}

/// A short human age: `45s`, `12m`, `3h5m`, `2d4h`; negative ages (clock skew) read `0s`.
pub fn format_age(millis: i64) -> String {
    let secs = millis.max(0) / 1000;
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3_600,
        secs % 3_600 / 60,
        secs % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m"),
        (0, _, 0) => format!("{h}h"),
        (0, _, _) => format!("{h}h{m}m"),
        (_, 0, _) => format!("{d}d"),
        _ => format!("{d}d{h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Occurrence;

    fn dur(text: &str) -> SweepDuration {
        text.parse().unwrap()
    }

    const HEAD: &str = "2222222222222222222222222222222222222222";
    const OLD: &str = "1111111111111111111111111111111111111111";
    const NOW: &str = "2026-11-30T12:00:00Z";

    fn now() -> Timestamp {
        Timestamp::parse(NOW).unwrap()
    }

    fn settings() -> ClassifySettings {
        ClassifySettings {
            stuck_after: dur("30m"),
        }
    }

    fn summary(state: SummaryState, head: &str, updated_at: Option<&str>) -> SummaryArtifact {
        summary_with(state, head, updated_at, Some("main"), None)
    }

    /// A summary note as the run writes it: marker (with `target`) and, when given, a gate line
    /// as its last line.
    fn summary_with(
        state: SummaryState,
        head: &str,
        updated_at: Option<&str>,
        target: Option<&str>,
        gate: Option<GateLine>,
    ) -> SummaryArtifact {
        let marker = Marker::Summary {
            occurrence: Occurrence::digest(b"s"),
            state,
            source_sha: CommitSha::parse(head).unwrap(),
            target: target.map(str::to_owned),
        };
        let mut text = "## assent · REVIEW".to_owned();
        if let Some(gate) = &gate {
            text.push_str("\n\n");
            text.push_str(&marker::encode_gate_line(gate));
        }
        SummaryArtifact {
            open_thread: None,
            note_id: 1000,
            body: marker::compose_body(&marker, &text),
            occurrence: Occurrence::digest(b"s"),
            state,
            source_sha: CommitSha::parse(head).unwrap(),
            updated_at: updated_at.map(str::to_owned),
        }
    }

    fn mr(pipeline: HeadPipeline) -> MrFacts {
        MrFacts {
            iid: 7,
            head_sha: Some(CommitSha::parse(HEAD).unwrap()),
            open: true,
            head_pipeline: pipeline,
            target_branch: Some("main".into()),
            resolutions: resolutions("now"),
            assent_possible: true,
        }
    }

    /// A head pipeline of the MR's head in `status`.
    fn at_head(status: String) -> HeadPipeline {
        HeadPipeline::Status {
            status,
            sha: Some(CommitSha::parse(HEAD).unwrap()),
        }
    }

    fn resolutions(tag: &str) -> Occurrence {
        Occurrence::digest(tag.as_bytes())
    }

    fn gate(decision: Decision, tag: &str) -> Option<GateLine> {
        Some(GateLine {
            decision,
            resolutions: resolutions(tag),
        })
    }

    #[test]
    fn durations_parse_whole_numbers_with_a_unit() {
        assert_eq!(dur("45s").as_secs(), 45);
        assert_eq!(dur("30m").as_secs(), 1_800);
        assert_eq!(dur("48h").as_secs(), 172_800);
        assert_eq!(dur("2d").as_secs(), 172_800);
        assert_eq!(dur("48h").to_string(), "48h");
        assert_eq!(dur("007m").to_string(), "7m");
        for bad in [
            "",
            "h",
            "48",
            "48H",
            "1.5h",
            "-1h",
            "+1h",
            " 1h",
            "1 h",
            "1h30m",
            "0s",
            "0d",
            "1w",
            "99999999999999999999999d",
            "36600d0",
            "40000d",
            "१h",
        ] {
            assert!(bad.parse::<SweepDuration>().is_err(), "{bad:?} accepted");
        }
        let err = "48".parse::<SweepDuration>().unwrap_err().to_string();
        assert!(err.contains("\"48\"") && err.contains("48h"), "{err}");
        assert_eq!(dur("36600d").as_secs(), 36_600 * 86_400);
    }

    #[test]
    fn durations_compare_by_length_not_by_text() {
        assert!(dur("1d") > dur("23h"));
        assert!(check_window(dur("1d"), dur("23h")).is_ok());
        assert!(check_window(dur("1441m"), dur("1d")).is_ok());
    }

    #[test]
    fn the_window_must_be_strictly_wider_than_the_interval() {
        assert!(check_window(dur("48h"), dur("24h")).is_ok());
        assert!(check_window(dur("25h"), dur("1d")).is_ok());
        let equal = check_window(dur("24h"), dur("1d")).unwrap_err();
        assert_eq!(equal.lookback, dur("24h"));
        let text = equal.to_string();
        assert!(
            text.contains("--lookback 24h is not wider than --interval 1d"),
            "{text}"
        );
        assert!(check_window(dur("1h"), dur("2h")).is_err());
        assert!(check_window(dur("3599s"), dur("1h")).is_err());
    }

    #[test]
    fn coverage_warning_when_a_stuck_summary_can_leave_the_window_unseen() {
        assert_eq!(coverage_warning(dur("3h"), dur("1h"), dur("30m")), None);
        assert_eq!(coverage_warning(dur("90m"), dur("1h"), dur("30m")), None);
        let w = coverage_warning(dur("2h"), dur("1h"), dur("2h")).unwrap();
        assert!(w.contains("--stuck-after 2h"), "{w}");
    }

    #[test]
    fn gitlab_timestamps_parse_with_milliseconds_and_offsets() {
        let z = Timestamp::parse("2026-11-30T17:41:36.123Z").unwrap();
        assert_eq!(z.unix_millis(), 1_796_060_496_123);
        let offset = Timestamp::parse("2026-11-30T18:41:36.123+01:00").unwrap();
        assert_eq!(offset, z);
        let negative = Timestamp::parse("2026-11-30T12:41:36.123-05:00").unwrap();
        assert_eq!(negative, z);
        assert_eq!(
            Timestamp::parse(" 2026-11-30T17:41:36Z ")
                .unwrap()
                .unix_millis(),
            1_796_060_496_000
        );
        assert_eq!(
            Timestamp::parse("2024-02-29T00:00:00Z")
                .unwrap()
                .to_rfc3339(),
            "2024-02-29T00:00:00Z"
        );
        assert_eq!(z.to_rfc3339(), "2026-11-30T17:41:36.123Z");
        for bad in [
            "",
            "2026-11-30",
            "2026-11-30T17:41:36",
            "2026-02-30T00:00:00Z",
            "yesterday",
            "2026-11-30T25:00:00Z",
        ] {
            assert_eq!(Timestamp::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn window_start_is_now_minus_lookback_rounded_down() {
        let now = Timestamp::parse("2026-11-30T12:00:00.999Z").unwrap();
        assert_eq!(
            window_start(now, dur("48h")).to_rfc3339(),
            "2026-11-28T12:00:00Z"
        );
        assert_eq!(
            window_start(Timestamp::from_unix_millis(500), dur("1s")).unix_millis(),
            -1000
        );
        let chrono = window_start(now, dur("1d")).to_chrono().unwrap();
        assert_eq!(chrono.to_rfc3339(), "2026-11-29T12:00:00+00:00");
    }

    #[test]
    fn verified_for_the_head_needs_nothing_and_no_mr_read() {
        let s = summary(SummaryState::Verified, HEAD, Some(NOW));
        let c = classify(&mr(HeadPipeline::NotRead), Some(&s), now(), &settings());
        assert_eq!(
            (c.verdict, c.action),
            (SweepVerdict::Verified, Action::None)
        );
        assert_eq!(c.detail, "verified for head 22222222");
        // Whatever the pipeline says.
        for p in [
            HeadPipeline::None,
            at_head("failed".into()),
            at_head("running".into()),
        ] {
            let c = classify(&mr(p), Some(&s), now(), &settings());
            assert_eq!(
                (c.verdict, c.action),
                (SweepVerdict::Verified, Action::None)
            );
        }
    }

    /// (summary, expected base verdict) for every verdict that calls for healing, on an MR
    /// from [`mr`] whose blocking discussions are all resolved.
    fn healing_cases() -> Vec<(Option<SummaryArtifact>, SweepVerdict)> {
        vec![
            (None, SweepVerdict::Missing),
            (
                Some(summary_with(
                    SummaryState::Verified,
                    HEAD,
                    Some(NOW),
                    None,
                    None,
                )),
                SweepVerdict::VerifiedNoTarget,
            ),
            (
                Some(summary_with(
                    SummaryState::Verified,
                    HEAD,
                    Some(NOW),
                    Some("release"),
                    None,
                )),
                SweepVerdict::VerifiedOtherTarget,
            ),
            (
                Some(summary_with(
                    SummaryState::Verified,
                    HEAD,
                    Some(NOW),
                    Some("main"),
                    gate(Decision::Review, "before"),
                )),
                SweepVerdict::ReviewResolved,
            ),
            (
                Some(summary(SummaryState::Verified, OLD, Some(NOW))),
                SweepVerdict::VerifiedOlderHead,
            ),
            (
                Some(summary(
                    SummaryState::Reconciling,
                    HEAD,
                    Some("2026-11-30T11:29:59.999Z"),
                )),
                SweepVerdict::ReconcilingStuck,
            ),
            (
                Some(summary(
                    SummaryState::Reconciling,
                    OLD,
                    Some("2026-11-29T12:00:00+02:00"),
                )),
                SweepVerdict::ReconcilingStuck,
            ),
            (
                Some(summary(SummaryState::Reconciling, HEAD, None)),
                SweepVerdict::ReconcilingStuck,
            ),
            (
                Some(summary(SummaryState::Reconciling, HEAD, Some("garbage"))),
                SweepVerdict::ReconcilingStuck,
            ),
        ]
    }

    #[test]
    fn healing_verdicts_first_ask_for_the_single_mr() {
        for (s, verdict) in healing_cases() {
            let c = classify(&mr(HeadPipeline::NotRead), s.as_ref(), now(), &settings());
            assert_eq!(
                (c.verdict, c.action),
                (verdict, Action::InspectMergeRequest),
                "{s:?}"
            );
        }
    }

    #[test]
    fn healing_verdicts_create_a_pipeline_unless_one_is_active() {
        for (s, verdict) in healing_cases() {
            for status in ACTIVE_PIPELINE_STATUSES {
                let c = classify(&mr(at_head(status.into())), s.as_ref(), now(), &settings());
                assert_eq!(
                    (c.verdict, c.action),
                    (SweepVerdict::PipelineActive, Action::None),
                    "{status}"
                );
                assert!(c.detail.contains(status), "{}", c.detail);
            }
            for status in [
                "success",
                "failed",
                "canceled",
                "skipped",
                "manual",
                "scheduled",
            ] {
                let c = classify(&mr(at_head(status.into())), s.as_ref(), now(), &settings());
                assert_eq!(
                    (c.verdict, c.action),
                    (verdict, Action::CreatePipeline),
                    "{status}"
                );
            }
            let c = classify(&mr(HeadPipeline::None), s.as_ref(), now(), &settings());
            assert_eq!((c.verdict, c.action), (verdict, Action::CreatePipeline));
            assert!(c.detail.ends_with("no head pipeline"), "{}", c.detail);
        }
    }

    #[test]
    fn reconciling_is_stuck_only_when_strictly_older_than_stuck_after() {
        let at = |ts: &str| summary(SummaryState::Reconciling, HEAD, Some(ts));
        let c =
            |s: &SummaryArtifact| classify(&mr(HeadPipeline::None), Some(s), now(), &settings());
        // Exactly 30 minutes: not yet stuck.
        let exact = c(&at("2026-11-30T11:30:00Z"));
        assert_eq!(
            (exact.verdict, exact.action),
            (SweepVerdict::ReconcilingRecent, Action::None)
        );
        assert_eq!(
            exact.detail,
            "reconciling 22222222 for 30m (stuck after 30m)"
        );
        let older = c(&at("2026-11-30T11:29:59Z"));
        assert_eq!(older.verdict, SweepVerdict::ReconcilingStuck);
        assert_eq!(
            older.detail,
            "reconciling 22222222 for 30m (stuck after 30m); no head pipeline"
        );
        // A timestamp in the future (clock skew) is recent.
        let future = c(&at("2026-11-30T13:00:00Z"));
        assert_eq!(future.verdict, SweepVerdict::ReconcilingRecent);
        assert!(future.detail.contains("for 0s"), "{}", future.detail);
        // Recent needs no MR read, whatever the head.
        let recent_old_head = classify(
            &mr(HeadPipeline::NotRead),
            Some(&summary(
                SummaryState::Reconciling,
                OLD,
                Some("2026-11-30T11:59:00Z"),
            )),
            now(),
            &settings(),
        );
        assert_eq!(
            (recent_old_head.verdict, recent_old_head.action),
            (SweepVerdict::ReconcilingRecent, Action::None)
        );
    }

    #[test]
    fn a_closed_mr_is_left_alone_whatever_its_summary() {
        let closed = MrFacts {
            open: false,
            ..mr(HeadPipeline::None)
        };
        for (s, _) in healing_cases() {
            let c = classify(&closed, s.as_ref(), now(), &settings());
            assert_eq!((c.verdict, c.action), (SweepVerdict::NotOpen, Action::None));
        }
    }

    #[test]
    fn the_second_classification_never_asks_to_inspect_again() {
        let summaries: Vec<Option<SummaryArtifact>> = healing_cases()
            .into_iter()
            .map(|(s, _)| s)
            .chain([
                Some(summary(SummaryState::Verified, HEAD, None)),
                Some(summary(
                    SummaryState::Reconciling,
                    HEAD,
                    Some("2026-11-30T11:59:00Z"),
                )),
            ])
            .collect();
        for s in &summaries {
            for p in [
                HeadPipeline::None,
                at_head("running".into()),
                at_head("failed".into()),
            ] {
                for open in [true, false] {
                    let facts = MrFacts {
                        open,
                        ..mr(p.clone())
                    };
                    let c = classify(&facts, s.as_ref(), now(), &settings());
                    assert_ne!(c.action, Action::InspectMergeRequest);
                    assert_eq!(
                        c.action == Action::CreatePipeline,
                        open && c.verdict.needs_healing()
                    );
                }
            }
        }
    }

    #[test]
    fn a_summary_for_another_target_branch_is_not_verified() {
        let s = summary_with(
            SummaryState::Verified,
            HEAD,
            Some(NOW),
            Some("no-policies"),
            gate(Decision::Approve, "now"),
        );
        let c = classify(&mr(HeadPipeline::None), Some(&s), now(), &settings());
        assert_eq!(
            (c.verdict, c.action),
            (SweepVerdict::VerifiedOtherTarget, Action::CreatePipeline)
        );
        assert_eq!(
            c.detail,
            "verified for head 22222222 against \"no-policies\", but the MR now targets \"main\"; no head pipeline"
        );
        // Names are quoted: no branch name can break the report line.
        let hostile = summary_with(
            SummaryState::Verified,
            HEAD,
            Some(NOW),
            Some("a\"; verified for head x\n!1 verified: none"),
            None,
        );
        let c = classify(&mr(HeadPipeline::None), Some(&hostile), now(), &settings());
        assert_eq!(c.verdict, SweepVerdict::VerifiedOtherTarget);
        assert!(!c.detail.contains('\n'), "{}", c.detail);
        // The recorded target is compared only when the forge reports the current one.
        let unknown = MrFacts {
            target_branch: None,
            ..mr(HeadPipeline::None)
        };
        let c = classify(&unknown, Some(&s), now(), &settings());
        assert_eq!(
            (c.verdict, c.action),
            (SweepVerdict::Verified, Action::None)
        );
    }

    #[test]
    fn a_summary_without_a_target_is_healed_whatever_the_mr_reports() {
        let s = summary_with(SummaryState::Verified, HEAD, Some(NOW), None, None);
        for target_branch in [Some("main".to_owned()), None] {
            let facts = MrFacts {
                target_branch,
                ..mr(at_head("success".into()))
            };
            let c = classify(&facts, Some(&s), now(), &settings());
            assert_eq!(
                (c.verdict, c.action),
                (SweepVerdict::VerifiedNoTarget, Action::CreatePipeline)
            );
            assert!(
                c.detail.contains("no target branch recorded"),
                "{}",
                c.detail
            );
        }
        // A reconciling summary without target is judged by its age as before.
        let recent = summary_with(SummaryState::Reconciling, HEAD, Some(NOW), None, None);
        let c = classify(&mr(HeadPipeline::None), Some(&recent), now(), &settings());
        assert_eq!(c.verdict, SweepVerdict::ReconcilingRecent);
    }

    #[test]
    fn a_review_summary_is_healed_only_when_resolutions_changed_and_may_now_count() {
        let review = |tag: &str| {
            summary_with(
                SummaryState::Verified,
                HEAD,
                Some(NOW),
                Some("main"),
                gate(Decision::Review, tag),
            )
        };
        let facts = |assent_possible: bool| MrFacts {
            assent_possible,
            ..mr(HeadPipeline::None)
        };
        // Changed resolutions, one by a user who may assent: heal.
        let c = classify(&facts(true), Some(&review("before")), now(), &settings());
        assert_eq!(
            (c.verdict, c.action),
            (SweepVerdict::ReviewResolved, Action::CreatePipeline)
        );
        // The same resolutions as the summary was computed from: the run already judged them
        // (a resolution that does not count as assent), so no pipeline, however often asked.
        let c = classify(&facts(true), Some(&review("now")), now(), &settings());
        assert_eq!(
            (c.verdict, c.action),
            (SweepVerdict::Verified, Action::None)
        );
        assert!(c.detail.contains("no resolution changed"), "{}", c.detail);
        // Changed, but only by users whose resolution never counts (the MR's author, the
        // bot): nothing to refresh, not even once.
        let c = classify(&facts(false), Some(&review("before")), now(), &settings());
        assert_eq!(
            (c.verdict, c.action),
            (SweepVerdict::Verified, Action::None)
        );
        assert!(
            c.detail
                .contains("no thread is resolved by a user who may assent"),
            "{}",
            c.detail
        );
        // Other decisions, and summaries without (or with a broken) gate line, are never
        // refreshed.
        for gate_line in [
            gate(Decision::Approve, "before"),
            gate(Decision::Block, "before"),
            None,
        ] {
            let s = summary_with(
                SummaryState::Verified,
                HEAD,
                Some(NOW),
                Some("main"),
                gate_line,
            );
            let c = classify(&facts(true), Some(&s), now(), &settings());
            assert_eq!(
                (c.verdict, c.action),
                (SweepVerdict::Verified, Action::None)
            );
        }
        let mut broken = review("before");
        broken.body = broken.body.replace("REVIEW\"", "MAYBE\"");
        let c = classify(&facts(true), Some(&broken), now(), &settings());
        assert_eq!(
            (c.verdict, c.action),
            (SweepVerdict::Verified, Action::None)
        );
        assert!(c.detail.contains("malformed gate line"), "{}", c.detail);
        // A gate line that is not the last line is not the summary's gate line.
        let mut buried = review("before");
        buried.body.push_str("\nmore text");
        let c = classify(&facts(true), Some(&buried), now(), &settings());
        assert_eq!(
            (c.verdict, c.action),
            (SweepVerdict::Verified, Action::None)
        );
        // An older head is healed as such, whatever the gate line says.
        let mut older = review("before");
        older.source_sha = CommitSha::parse(OLD).unwrap();
        let c = classify(&facts(true), Some(&older), now(), &settings());
        assert_eq!(c.verdict, SweepVerdict::VerifiedOlderHead);
    }

    #[test]
    fn a_head_pipeline_counts_as_active_only_for_the_head() {
        // The MR's latest pipeline, still running for the head before a push: no job is
        // coming for the head the summary must be verified for.
        let older = summary(SummaryState::Verified, OLD, Some(NOW));
        for sha in [Some(CommitSha::parse(OLD).unwrap()), None] {
            let pipeline = HeadPipeline::Status {
                status: "running".into(),
                sha: sha.clone(),
            };
            let c = classify(&mr(pipeline), Some(&older), now(), &settings());
            assert_eq!(
                (c.verdict, c.action),
                (SweepVerdict::VerifiedOlderHead, Action::CreatePipeline),
                "{sha:?}"
            );
            assert!(c.detail.contains("not the head"), "{}", c.detail);
        }
        let c = classify(
            &mr(at_head("running".into())),
            Some(&older),
            now(),
            &settings(),
        );
        assert_eq!(
            (c.verdict, c.action),
            (SweepVerdict::PipelineActive, Action::None)
        );
    }

    #[test]
    fn only_a_resolution_that_may_count_makes_assent_possible() {
        use crate::inventory::ThreadArtifact;
        use crate::model::{Slot, UserRef};
        const AUTHOR: u64 = 5;
        let thread = |resolved_by: Option<u64>, by_bot: bool, edited: bool| ThreadArtifact {
            forge_id: 1,
            discussion_id: "d".into(),
            slot: Slot {
                rule: "r".into(),
                subject: "f".into(),
            },
            occurrence: Occurrence::digest(b"o"),
            resolved: resolved_by.is_some(),
            resolved_by_bot: by_bot,
            resolved_by: resolved_by.map(|id| UserRef {
                id,
                username: format!("u{id}"),
            }),
            edited,
            diff_note: false,
            bot_replies: Vec::new(),
        };
        let possible = |threads: Vec<ThreadArtifact>, author: Option<u64>| {
            let inventory = Inventory {
                threads,
                ..Inventory::default()
            };
            assent_possible(&inventory, author)
        };
        assert!(possible(vec![thread(Some(7), false, false)], Some(AUTHOR)));
        assert!(possible(vec![thread(Some(7), false, false)], None));
        for never in [
            thread(None, false, false),
            thread(Some(AUTHOR), false, false),
            thread(Some(100), true, false),
            thread(Some(7), false, true),
        ] {
            assert!(!possible(vec![never.clone()], Some(AUTHOR)), "{never:?}");
        }
        assert!(possible(
            vec![
                thread(Some(AUTHOR), false, false),
                thread(Some(7), false, false)
            ],
            Some(AUTHOR)
        ));
    }

    #[test]
    fn verdict_names_are_stable() {
        let all = [
            SweepVerdict::Verified,
            SweepVerdict::VerifiedOlderHead,
            SweepVerdict::VerifiedNoTarget,
            SweepVerdict::VerifiedOtherTarget,
            SweepVerdict::ReviewResolved,
            SweepVerdict::ReconcilingStuck,
            SweepVerdict::ReconcilingRecent,
            SweepVerdict::Missing,
            SweepVerdict::PipelineActive,
            SweepVerdict::NotOpen,
        ];
        let names: Vec<&str> = all.iter().map(|v| v.as_str()).collect();
        assert_eq!(
            names,
            [
                "verified",
                "verified-older-head",
                "verified-no-target",
                "verified-other-target",
                "review-resolved",
                "reconciling-stuck",
                "reconciling-recent",
                "missing",
                "pipeline-active",
                "not-open"
            ]
        );
        let healing: Vec<SweepVerdict> = all.into_iter().filter(|v| v.needs_healing()).collect();
        assert_eq!(
            healing,
            [
                SweepVerdict::VerifiedOlderHead,
                SweepVerdict::VerifiedNoTarget,
                SweepVerdict::VerifiedOtherTarget,
                SweepVerdict::ReviewResolved,
                SweepVerdict::ReconcilingStuck,
                SweepVerdict::Missing
            ]
        );
    }

    #[test]
    fn ages_and_shas_are_short() {
        assert_eq!(format_age(-5_000), "0s");
        assert_eq!(format_age(45_999), "45s");
        assert_eq!(format_age(12 * 60_000 + 5_000), "12m");
        assert_eq!(format_age(3 * 3_600_000), "3h");
        assert_eq!(format_age(3 * 3_600_000 + 5 * 60_000), "3h5m");
        assert_eq!(format_age(2 * 86_400_000 + 60_000), "2d");
        assert_eq!(format_age(2 * 86_400_000 + 4 * 3_600_000), "2d4h");
        assert_eq!(crate::commit_sha::short(HEAD), "22222222");
        assert_eq!(crate::commit_sha::short("abc"), "abc");
    }
}
