//! One sweep pass (docs/contract.md#sweep), as `assent sweep` and `assent serve`'s embedded sweep run it:
//! list the project's open MRs, examine each one updated in the window, and each one outside
//! it whose summary says `REVIEW` ([`crate::sweep::examine`]: read its bot summary, classify it
//! with [`crate::core::sweep_classification`], create a pipeline where the review state needs healing). The
//! sweep never publishes a review artifact: the pipeline it creates runs the normal,
//! serialized `assent run` job, which does the healing.
//!
//! Why every open MR is listed: GitLab resolves a thread with `update_all`
//! (`app/models/concerns/resolvable_note.rb`), so one thread of several resolved moves no
//! `updated_at` and sends no webhook; only the last one does
//! (`MergeRequests::ResolvedDiscussionNotificationService`). An MR waiting at `REVIEW` can be
//! anywhere in time, and only its discussions say it waits: GitLab has no listing of one
//! user's notes across MRs, so an MR outside the window with user notes costs one
//! discussions read per sweep (usually one request) to learn whether its summary says
//! `REVIEW`. An MR without user notes (`user_notes_count: 0`) has no summary and costs
//! nothing.
//!
//! Requests, per sweep: `GET /user` once, the MR listing (one request per 100 open MRs), then
//! per examined MR its discussions (all pages), per MR outside the window with user notes its
//! discussions, and only for an MR whose summary calls for healing, the single MR (for
//! `head_pipeline`, which the listing lacks) and at most one `POST .../pipelines`. The target
//! branch check and decision freshness cost no request of their own: the MR listing carries
//! `target_branch` and the author, and the resolution fingerprint is computed from the
//! discussions already listed for the summary.
//!
//! Failures: a failure of `GET /user` or of the listing stops the sweep at once. A failure on
//! one MR is reported on that MR's line and the sweep goes on with the next, so one broken MR
//! cannot starve the others; either way the command exits 3 and the report shows what was
//! done. A pipeline creation is a write and is never retried: after an ambiguous failure the
//! next sweep sees the pipeline (then `pipeline-active`) or not (then it tries again).
//!
//! Order and cap: the MRs in the window are examined oldest update first (they are the
//! closest to leaving the window and the least likely to have a run in flight), then those
//! outside it, oldest update first; at most `max_mrs` MRs have their discussions read, and
//! the rest are counted in the report and left to the next sweep.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::core::commit_sha::CommitSha;
use crate::core::sweep_classification::{SweepVerdict, window_start};
use crate::core::time::{SweepDuration, Timestamp};
use crate::forge::sweep_port::{ListedMergeRequest, SweepForge};
use crate::forge::{ForgeError, RequestCounts};
use crate::observe::{Event, Progress, Silent};
use crate::sweep::examine::{ExamineSettings, MrAction, MrReport, examine, examine_at_review};

/// The sweep's settings (already checked: see [`crate::core::sweep_classification::check_window`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepSettings {
    /// How far back an MR's last update may lie.
    pub lookback: SweepDuration,
    /// The schedule's period.
    pub interval: SweepDuration,
    /// When a `reconciling` summary counts as stuck.
    pub stuck_after: SweepDuration,
    /// Classify and report, zero writes.
    pub dry_run: bool,
    /// The most MRs examined in one sweep.
    pub max_mrs: usize,
}

/// The whole sweep, complete or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// The project swept.
    pub project: String,
    /// The one "now" every MR was judged against.
    pub now: Timestamp,
    /// The window start (`now - lookback`, to the second).
    pub updated_after: Timestamp,
    /// The settings.
    pub settings: SweepSettings,
    /// Open MRs the listing returned in the window (`None` when the listing failed).
    pub listed: Option<usize>,
    /// Open MRs outside the window whose discussions were read for a `REVIEW` summary (those
    /// found at `REVIEW` are also among [`SweepReport::mrs`]).
    pub read_outside_window: usize,
    /// The MRs examined, in examination order.
    pub mrs: Vec<MrReport>,
    /// MRs in the window left for the next sweep because of `max_mrs`.
    pub not_examined: usize,
    /// MRs left to whoever held their key at the time (serve's live path).
    pub busy: usize,
    /// Pipelines created for lost or missing runs (`missing`, `reconciling-stuck`,
    /// `verified-older-head`, `verified-no-target`): the number to watch.
    pub healed: usize,
    /// Pipelines created after a human action (`review-resolved`, `verified-other-target`).
    pub refreshed: usize,
    /// Dry run: pipelines that would have been created.
    pub would_heal: usize,
    /// Pipelines GitLab refused to create (`405`, `400`): answers, reported on their MRs'
    /// lines, not failures.
    pub refused: usize,
    /// Operator-facing warnings (malformed bot markers, the `max_mrs` cap).
    pub warnings: Vec<String>,
    /// The failure that stopped the sweep early, if any.
    pub failure: Option<String>,
    /// Some request failed because GitLab's rate limits outlasted the wait budget.
    pub rate_limited: bool,
    /// The last forge failure, for a caller that tracks GitLab's health (serve's `/readyz`).
    pub last_error: Option<ForgeError>,
    /// Requests made.
    pub requests: RequestCounts,
}

impl SweepReport {
    /// MRs whose examination or healing failed.
    pub fn failed_mrs(&self) -> usize {
        self.mrs
            .iter()
            .filter(|m| m.action == MrAction::Failed)
            .count()
    }

    /// True when the sweep ran to the end without a forge failure.
    pub fn succeeded(&self) -> bool {
        self.failure.is_none() && self.failed_mrs() == 0
    }

    /// The one-line cause for stderr when the sweep did not succeed.
    pub fn failure_line(&self) -> Option<String> {
        if let Some(failure) = &self.failure {
            return Some(format!("sweep stopped: {failure}"));
        }
        let failed: Vec<String> = self
            .mrs
            .iter()
            .filter(|m| m.action == MrAction::Failed)
            .map(|m| format!("!{}", m.iid))
            .collect();
        (!failed.is_empty()).then(|| {
            format!(
                "sweep finished with forge failures on {} MR(s): {}",
                failed.len(),
                failed.join(", ")
            )
        })
    }

    /// The text report: one line per examined MR, warnings, in a dry run `would heal: K (dry
    /// run)`, then `refreshed: M` and `healed: N` last.
    ///
    /// Every value from GitLab or an MR (the project, a detail, a warning, an error) is one
    /// escaped field: a line break inside it never starts a line of its own.
    pub fn to_text(&self) -> String {
        use crate::core::terminal::terminal_safe;
        let s = &self.settings;
        let mut out = format!(
            "sweep of {} at {}: open MRs updated since {} (lookback {}, interval {}, stuck after {}){}\n",
            terminal_safe(&self.project),
            self.now,
            self.updated_after,
            s.lookback,
            s.interval,
            s.stuck_after,
            if s.dry_run { ", dry run" } else { "" }
        );
        for m in &self.mrs {
            let verdict = m.verdict.map_or("error", SweepVerdict::as_str);
            let pipeline = m.pipeline_id.map(|id| format!(" {id}")).unwrap_or_default();
            out.push_str(&format!(
                "!{} {verdict}: {}{pipeline} ({})\n",
                m.iid,
                m.action.as_str(),
                terminal_safe(&m.detail)
            ));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {}\n", terminal_safe(w)));
        }
        if let Some(f) = &self.failure {
            out.push_str(&format!("error: sweep stopped: {}\n", terminal_safe(f)));
        }
        // `healed: N` stays the last line in every mode (docs/contract.md#sweep), so a dry run's count gets
        // its own line before it: a scraper reading the last line never sees a dry run's
        // hypothetical pipelines as real ones.
        if s.dry_run {
            out.push_str(&format!("would heal: {} (dry run)\n", self.would_heal));
        }
        out.push_str(&format!("refreshed: {}\n", self.refreshed));
        out.push_str(&format!("healed: {}\n", self.healed));
        out
    }

    /// The JSON report: the same content as the text, as one document.
    pub fn to_json(&self) -> serde_json::Value {
        let s = &self.settings;
        let doc = JsonReport {
            api_version: "assent/v1",
            kind: "SweepReport",
            project: &self.project,
            now: self.now.to_rfc3339(),
            window: JsonWindow {
                updated_after: self.updated_after.to_rfc3339(),
                lookback: s.lookback.to_string(),
                interval: s.interval.to_string(),
                stuck_after: s.stuck_after.to_string(),
            },
            dry_run: s.dry_run,
            max_mrs: s.max_mrs,
            listed: self.listed,
            read_outside_window: self.read_outside_window,
            examined: self.mrs.len(),
            not_examined: self.not_examined,
            mrs: self
                .mrs
                .iter()
                .map(|m| JsonMr {
                    iid: m.iid,
                    head: m.head_sha.as_ref().map(CommitSha::as_str),
                    verdict: m.verdict.map_or("error", SweepVerdict::as_str),
                    action: m.action,
                    pipeline_id: m.pipeline_id,
                    summary_note_id: m.summary_note_id,
                    detail: &m.detail,
                })
                .collect(),
            warnings: &self.warnings,
            complete: self.succeeded(),
            error: self.failure_line(),
            requests: JsonRequests {
                reads: self.requests.reads,
                writes: self.requests.writes,
            },
            would_heal: self.would_heal,
            refused: self.refused,
            refreshed: self.refreshed,
            healed: self.healed,
        };
        serde_json::to_value(doc).expect("the report serializes")
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    api_version: &'static str,
    kind: &'static str,
    project: &'a str,
    now: String,
    window: JsonWindow,
    dry_run: bool,
    max_mrs: usize,
    listed: Option<usize>,
    read_outside_window: usize,
    examined: usize,
    not_examined: usize,
    mrs: Vec<JsonMr<'a>>,
    warnings: &'a [String],
    complete: bool,
    error: Option<String>,
    requests: JsonRequests,
    would_heal: usize,
    refused: usize,
    refreshed: usize,
    healed: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonWindow {
    updated_after: String,
    lookback: String,
    interval: String,
    stuck_after: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonMr<'a> {
    iid: u64,
    head: Option<&'a str>,
    verdict: &'static str,
    action: MrAction,
    pipeline_id: Option<u64>,
    summary_note_id: Option<u64>,
    detail: &'a str,
}

#[derive(Serialize)]
struct JsonRequests {
    reads: u64,
    writes: u64,
}

/// Runs one sweep of `project` at `now` (read once by the caller).
pub fn sweep(
    forge: &dyn SweepForge,
    project: &str,
    now: Timestamp,
    settings: &SweepSettings,
) -> SweepReport {
    sweep_with(forge, project, now, settings, &Silent, &Unshared)
}

/// Who else may be examining the project's MRs at the same time (serve's live path): the
/// pass examines an MR only while it holds that MR's key.
pub trait MrLock {
    /// Takes MR `iid`'s key; false when someone else holds it or waits for it (the pass then
    /// leaves the MR to them and counts it in [`SweepReport::busy`]).
    fn try_lock(&self, iid: u64) -> bool;
    /// Gives MR `iid`'s key back.
    fn unlock(&self, iid: u64);
}

/// No one else examines the MRs (`assent sweep`).
pub struct Unshared;

impl MrLock for Unshared {
    fn try_lock(&self, _iid: u64) -> bool {
        true
    }
    fn unlock(&self, _iid: u64) {}
}

/// [`sweep`], reporting the listing and the MRs examined (`k/n`) to `progress`, and
/// examining each MR only while holding its key in `lock` ([`Unshared`] for `assent sweep`).
pub fn sweep_with(
    forge: &dyn SweepForge,
    project: &str,
    now: Timestamp,
    settings: &SweepSettings,
    progress: &dyn Progress,
    lock: &dyn MrLock,
) -> SweepReport {
    let updated_after = window_start(now, settings.lookback);
    let mut report = SweepReport {
        project: project.to_owned(),
        now,
        updated_after,
        settings: *settings,
        listed: None,
        read_outside_window: 0,
        mrs: Vec::new(),
        not_examined: 0,
        busy: 0,
        healed: 0,
        refreshed: 0,
        would_heal: 0,
        refused: 0,
        warnings: Vec::new(),
        failure: None,
        rate_limited: false,
        last_error: None,
        requests: RequestCounts::default(),
    };
    run_sweep(forge, &mut report, progress, lock);
    report.warnings.sort();
    report.warnings.dedup();
    report.requests = forge.request_counts();
    report
}

fn run_sweep(
    forge: &dyn SweepForge,
    report: &mut SweepReport,
    progress: &dyn Progress,
    lock: &dyn MrLock,
) {
    let settings = report.settings;
    let bot = match forge.bot_user_id() {
        Ok(id) => id,
        Err(e) => {
            report.rate_limited |= e.is_rate_limited();
            report.failure = Some(format!("cannot read the token's user: {e}"));
            report.last_error = Some(e);
            return;
        }
    };
    let reads = forge.request_counts().reads;
    let listing = match forge.list_open_merge_requests() {
        Ok(l) => l,
        Err(e) => {
            report.rate_limited |= e.is_rate_limited();
            report.failure = Some(format!("cannot list the open merge requests: {e}"));
            report.last_error = Some(e);
            return;
        }
    };
    let (candidates, outside) = by_window(listing, report.updated_after);
    report.listed = Some(candidates.len());
    progress.event(&Event::MergeRequestsListed {
        count: candidates.len(),
        requests: forge.request_counts().reads - reads,
    });
    // Only MRs that may hold a summary cost a read outside the window.
    let outside: Vec<ListedMergeRequest> = outside
        .into_iter()
        .filter(|m| m.user_notes_count != Some(0))
        .collect();
    let total_reads = candidates.len() + outside.len();
    if total_reads > settings.max_mrs {
        report.not_examined = total_reads - settings.max_mrs;
        let in_window_left = candidates.len().saturating_sub(settings.max_mrs);
        let outside_left = report.not_examined - in_window_left;
        let mut warning = format!("stopped at --max-mrs {}: ", settings.max_mrs);
        if in_window_left > 0 {
            warning.push_str(&format!(
                "{in_window_left} more open MR(s) in the window were not examined (the oldest-updated go first; the next sweep continues)"
            ));
        }
        if outside_left > 0 {
            if in_window_left > 0 {
                warning.push_str(", and ");
            }
            warning.push_str(&format!(
                "{outside_left} open MR(s) outside the window were not read for a REVIEW summary"
            ));
        }
        report.warnings.push(warning);
    }
    let examine_settings = ExamineSettings {
        stuck_after: settings.stuck_after,
        dry_run: settings.dry_run,
    };
    let total = candidates.len().min(settings.max_mrs);
    let in_window = candidates.len();
    let mrs = candidates
        .into_iter()
        .map(|m| (m, true))
        .chain(outside.into_iter().map(|m| (m, false)))
        .take(settings.max_mrs);
    for (listed, in_window_mr) in mrs {
        if !lock.try_lock(listed.iid) {
            report.busy += 1;
            continue;
        }
        let examined = if in_window_mr {
            Some(examine(forge, bot, &listed, report.now, &examine_settings))
        } else {
            report.read_outside_window += 1;
            examine_at_review(forge, bot, &listed, report.now, &examine_settings)
        };
        lock.unlock(listed.iid);
        let Some(examined) = examined else { continue };
        report.warnings.extend(examined.warnings);
        report.rate_limited |= examined.rate_limited;
        if examined.error.is_some() {
            report.last_error = examined.error;
        }
        let mr = examined.report;
        match mr.action {
            MrAction::PipelineCreated
                if mr.verdict.is_some_and(SweepVerdict::follows_human_action) =>
            {
                report.refreshed += 1
            }
            MrAction::PipelineCreated => report.healed += 1,
            MrAction::WouldCreatePipeline => report.would_heal += 1,
            MrAction::PipelineRefused => report.refused += 1,
            MrAction::None | MrAction::Failed => {}
        }
        report.mrs.push(mr);
        if report.mrs.len() <= in_window {
            progress.event(&Event::Examined {
                done: report.mrs.len(),
                total,
                healed: report.healed + report.refreshed + report.would_heal,
            });
        }
    }
}

/// The open MRs, one per IID, split at the window start: those at or after it, then those
/// before it, each oldest update first. An MR whose `updated_at` is missing or unreadable is
/// in the window (GitLab did not say it is outside).
fn by_window(
    listing: Vec<ListedMergeRequest>,
    start: Timestamp,
) -> (Vec<ListedMergeRequest>, Vec<ListedMergeRequest>) {
    let mut by_iid: BTreeMap<u64, ListedMergeRequest> = BTreeMap::new();
    for mr in listing {
        if mr.state == "opened" {
            by_iid.insert(mr.iid, mr);
        }
    }
    let updated = |m: &ListedMergeRequest| m.updated_at.as_deref().and_then(Timestamp::parse);
    let (mut inside, mut outside): (Vec<_>, Vec<_>) = by_iid
        .into_values()
        .partition(|m| updated(m).is_none_or(|u| u >= start));
    inside.sort_by_key(|m| (updated(m).unwrap_or(start), m.iid));
    outside.sort_by_key(|m| (updated(m).unwrap_or(start), m.iid));
    (inside, outside)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashMap;

    use super::*;
    use crate::core::inventory::Inventory;
    use crate::core::marker::{Marker, SummaryState, compose_body};
    use crate::core::model::{ListedDiscussion, MergeRequestInfo};
    use crate::core::model::{ListedNote, Occurrence};
    use crate::core::resolutions::resolution_fingerprint;
    use crate::core::sweep_classification::HeadPipeline;
    use crate::core::time::Timestamp;
    use crate::forge::sweep_port::{CreatedPipeline, PipelineCreation};
    use crate::sweep::examine::MrAction;

    const HEAD: &str = "2222222222222222222222222222222222222222";
    const OLD: &str = "1111111111111111111111111111111111111111";
    const BOT: u64 = 100;
    const AUTHOR: u64 = 300;

    #[derive(Default)]
    struct Stub {
        listing: Vec<ListedMergeRequest>,
        discussions: HashMap<u64, Vec<ListedDiscussion>>,
        pipelines: HashMap<u64, Option<String>>,
        fail_list: bool,
        fail_discussions: Vec<u64>,
        fail_create: Vec<u64>,
        refuse_create: Vec<u64>,
        log: RefCell<Vec<String>>,
    }

    fn err(what: &str) -> ForgeError {
        ForgeError::Status {
            method: "GET".into(),
            route: what.into(),
            status: 500,
            message: "boom".into(),
        }
    }

    impl SweepForge for Stub {
        fn bot_user_id(&self) -> Result<u64, ForgeError> {
            self.log.borrow_mut().push("user".into());
            Ok(BOT)
        }
        fn list_open_merge_requests(&self) -> Result<Vec<ListedMergeRequest>, ForgeError> {
            self.log.borrow_mut().push("list".into());
            if self.fail_list {
                return Err(err("list"));
            }
            Ok(self.listing.clone())
        }
        fn list_discussions(&self, iid: u64) -> Result<Vec<ListedDiscussion>, ForgeError> {
            self.log.borrow_mut().push(format!("discussions {iid}"));
            if self.fail_discussions.contains(&iid) {
                return Err(err("discussions"));
            }
            Ok(self.discussions.get(&iid).cloned().unwrap_or_default())
        }
        fn merge_request(&self, _iid: u64) -> Result<MergeRequestInfo, ForgeError> {
            Err(err("the sweep reads the MR as an entry"))
        }
        fn merge_request_entry(&self, iid: u64) -> Result<ListedMergeRequest, ForgeError> {
            self.log.borrow_mut().push(format!("mr {iid}"));
            let mut entry = self
                .listing
                .iter()
                .find(|m| m.iid == iid)
                .cloned()
                .unwrap_or_else(|| listed(iid, "2026-11-30T11:00:00Z"));
            entry.head_pipeline = match self.pipelines.get(&iid).cloned().flatten() {
                Some(status) => HeadPipeline::Status {
                    status,
                    sha: Some(CommitSha::parse(HEAD).unwrap()),
                },
                None => HeadPipeline::None,
            };
            Ok(entry)
        }
        fn create_pipeline(&self, iid: u64) -> Result<PipelineCreation, ForgeError> {
            self.log.borrow_mut().push(format!("create {iid}"));
            if self.fail_create.contains(&iid) {
                return Err(ForgeError::AmbiguousWrite {
                    method: "POST".into(),
                    route: "pipelines".into(),
                    message: "HTTP 502".into(),
                });
            }
            if self.refuse_create.contains(&iid) {
                return Ok(PipelineCreation::Refused {
                    status: 405,
                    message: "405 Method Not Allowed".into(),
                });
            }
            Ok(PipelineCreation::Created(CreatedPipeline {
                id: 5000 + iid,
                status: Some("created".into()),
                web_url: None,
            }))
        }
        fn request_counts(&self) -> RequestCounts {
            RequestCounts::default()
        }
    }

    fn listed(iid: u64, updated: &str) -> ListedMergeRequest {
        ListedMergeRequest {
            iid,
            state: "opened".into(),
            head_sha: Some(CommitSha::parse(HEAD).unwrap()),
            updated_at: Some(updated.into()),
            target_branch: Some("main".into()),
            author_id: Some(AUTHOR),
            user_notes_count: None,
            head_pipeline: HeadPipeline::NotRead,
        }
    }

    fn summary_discussion(state: SummaryState, head: &str, updated_at: &str) -> ListedDiscussion {
        summary_discussion_with(state, head, updated_at, "summary")
    }

    fn summary_discussion_with(
        state: SummaryState,
        head: &str,
        updated_at: &str,
        text: &str,
    ) -> ListedDiscussion {
        let body = compose_body(
            &Marker::Summary {
                occurrence: Occurrence::digest(b"x"),
                state,
                source_sha: CommitSha::parse(head).unwrap(),
                target: Some("main".into()),
            },
            text,
        );
        ListedDiscussion {
            id: "d".into(),
            individual_note: true,
            notes: vec![ListedNote {
                id: 900,
                author_id: BOT,
                system: false,
                resolvable: false,
                resolved: false,
                resolved_by: None,
                resolved_at: None,
                diff_note: false,
                body,
                created_at: Some(updated_at.into()),
                updated_at: Some(updated_at.into()),
            }],
        }
    }

    fn settings() -> SweepSettings {
        SweepSettings {
            lookback: "48h".parse().unwrap(),
            interval: "24h".parse().unwrap(),
            stuck_after: "30m".parse().unwrap(),
            dry_run: false,
            max_mrs: 100,
        }
    }

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-30T12:00:00Z").unwrap()
    }

    fn stub() -> Stub {
        let mut s = Stub {
            listing: vec![
                listed(1, "2026-11-30T11:00:00Z"),
                listed(2, "2026-11-30T10:00:00Z"),
                listed(3, "2026-11-30T09:00:00Z"),
                listed(4, "2026-11-30T08:00:00Z"),
            ],
            ..Stub::default()
        };
        s.discussions.insert(
            1,
            vec![summary_discussion(
                SummaryState::Verified,
                HEAD,
                "2026-11-30T11:00:00Z",
            )],
        );
        s.discussions.insert(
            2,
            vec![summary_discussion(
                SummaryState::Reconciling,
                HEAD,
                "2026-11-30T10:00:00Z",
            )],
        );
        s.discussions.insert(
            3,
            vec![summary_discussion(
                SummaryState::Verified,
                OLD,
                "2026-11-30T09:00:00Z",
            )],
        );
        s.pipelines.insert(3, Some("running".into()));
        s
    }

    #[test]
    fn examines_oldest_update_first_and_reads_the_mr_only_for_candidates() {
        let forge = stub();
        let report = sweep(&forge, "g/p", now(), &settings());
        let lines: Vec<(u64, &str, MrAction)> = report
            .mrs
            .iter()
            .map(|m| (m.iid, m.verdict.unwrap().as_str(), m.action))
            .collect();
        assert_eq!(
            lines,
            vec![
                (4, "missing", MrAction::PipelineCreated),
                (3, "pipeline-active", MrAction::None),
                (2, "reconciling-stuck", MrAction::PipelineCreated),
                (1, "verified", MrAction::None),
            ]
        );
        assert_eq!(
            *forge.log.borrow(),
            [
                "user",
                "list",
                "discussions 4",
                "mr 4",
                "create 4",
                "discussions 3",
                "mr 3",
                "discussions 2",
                "mr 2",
                "create 2",
                "discussions 1",
            ]
        );
        assert_eq!(report.healed, 2);
        assert!(report.succeeded());
        let text = report.to_text();
        assert!(text.ends_with("\nrefreshed: 0\nhealed: 2\n"), "{text}");
        assert!(
            text.contains(
                "!4 missing: pipeline-created 5004 (no assent summary on the MR; no head pipeline)"
            ),
            "{text}"
        );
        let json = report.to_json();
        assert_eq!(json["healed"], 2);
        assert_eq!(json["mrs"][0]["verdict"], "missing");
        assert_eq!(json["mrs"][0]["action"], "pipeline-created");
        assert_eq!(json["mrs"][0]["pipelineId"], 5004);
        assert_eq!(json["complete"], true);
    }

    #[test]
    fn dry_run_makes_no_write_and_counts_what_it_would_heal() {
        let forge = stub();
        let report = sweep(
            &forge,
            "g/p",
            now(),
            &SweepSettings {
                dry_run: true,
                ..settings()
            },
        );
        assert!(!forge.log.borrow().iter().any(|l| l.starts_with("create")));
        assert_eq!((report.healed, report.would_heal), (0, 2));
        let text = report.to_text();
        assert!(
            text.ends_with("\nwould heal: 2 (dry run)\nrefreshed: 0\nhealed: 0\n"),
            "{text}"
        );
    }

    #[test]
    fn the_cap_examines_the_oldest_and_says_how_many_were_left() {
        let forge = stub();
        let report = sweep(
            &forge,
            "g/p",
            now(),
            &SweepSettings {
                max_mrs: 2,
                ..settings()
            },
        );
        let iids: Vec<u64> = report.mrs.iter().map(|m| m.iid).collect();
        assert_eq!(iids, [4, 3]);
        assert_eq!(report.not_examined, 2);
        assert!(report.succeeded());
        assert!(
            report
                .to_text()
                .contains("warning: stopped at --max-mrs 2: 2 more open MR(s)"),
            "{}",
            report.to_text()
        );
        assert!(!forge.log.borrow().contains(&"discussions 2".to_string()));
    }

    #[test]
    fn outside_the_window_only_an_mr_at_review_is_examined() {
        use crate::core::marker::{GateLine, encode_gate_line};
        use crate::core::model::Decision;
        let mut forge = stub();
        let review = summary_discussion_with(
            SummaryState::Verified,
            HEAD,
            "2026-11-01T00:00:00Z",
            &format!(
                "## assent · REVIEW\n\n{}",
                encode_gate_line(&GateLine {
                    decision: Decision::Review,
                    resolutions: resolution_fingerprint(&Inventory::from_listing(
                        &[challenge_thread(50, None)],
                        BOT
                    )),
                })
            ),
        );
        forge
            .discussions
            .insert(6, vec![review, challenge_thread(50, Some(7))]);
        forge.listing = vec![
            // Outside the window: verified (read, nothing to report), no user note (no
            // request at all), at REVIEW with a counted resolution (examined, healed).
            listed(1, "2026-11-28T11:59:59Z"),
            ListedMergeRequest {
                user_notes_count: Some(0),
                ..listed(5, "2026-11-01T00:00:00Z")
            },
            listed(6, "2026-11-01T00:00:00Z"),
            ListedMergeRequest {
                state: "merged".into(),
                ..listed(2, "2026-11-30T10:00:00Z")
            },
            listed(3, "2026-11-28T12:00:00Z"),
            listed(3, "2026-11-28T12:00:00Z"),
        ];
        let report = sweep(&forge, "g/p", now(), &settings());
        assert_eq!(report.listed, Some(1));
        assert_eq!(report.read_outside_window, 2);
        let lines: Vec<(u64, &str, MrAction)> = report
            .mrs
            .iter()
            .map(|m| (m.iid, m.verdict.unwrap().as_str(), m.action))
            .collect();
        assert_eq!(
            lines,
            [
                (3, "pipeline-active", MrAction::None),
                (6, "review-resolved", MrAction::PipelineCreated)
            ]
        );
        assert_eq!((report.refreshed, report.healed), (1, 0));
        assert_eq!(
            *forge.log.borrow(),
            [
                "user",
                "list",
                "discussions 3",
                "mr 3",
                "discussions 6",
                "mr 6",
                "create 6",
                "discussions 1",
            ]
        );
        assert_eq!(report.to_json()["readOutsideWindow"], 2);
    }

    #[test]
    fn a_refused_pipeline_is_an_answer_on_the_mrs_line_not_a_failure() {
        let mut forge = stub();
        forge.refuse_create = vec![4];
        let report = sweep(&forge, "g/p", now(), &settings());
        assert_eq!(report.mrs[0].iid, 4);
        assert_eq!(report.mrs[0].action, MrAction::PipelineRefused);
        assert!(report.succeeded(), "a refusal fails nothing");
        assert_eq!((report.refused, report.healed), (1, 1));
        let text = report.to_text();
        assert!(
            text.contains("!4 missing: pipeline-refused (no assent summary on the MR; no head pipeline; GitLab refused the pipeline and created none (HTTP 405: 405 Method Not Allowed))"),
            "{text}"
        );
        let json = report.to_json();
        assert_eq!(json["mrs"][0]["action"], "pipeline-refused");
        assert_eq!(json["refused"], 1);
        assert_eq!(json["complete"], true);
    }

    #[test]
    fn one_failing_mr_does_not_stop_the_others_but_fails_the_sweep() {
        let mut forge = stub();
        forge.fail_discussions = vec![4];
        forge.fail_create = vec![2];
        let report = sweep(&forge, "g/p", now(), &settings());
        assert_eq!(report.mrs.len(), 4);
        assert_eq!(report.mrs[0].action, MrAction::Failed);
        assert_eq!(report.mrs[0].verdict, None);
        assert_eq!(report.mrs[2].action, MrAction::Failed);
        assert_eq!(report.mrs[2].verdict, Some(SweepVerdict::ReconcilingStuck));
        assert!(report.mrs[2].detail.contains("outcome unknown"));
        assert_eq!(report.healed, 0);
        assert!(!report.succeeded());
        assert_eq!(
            report.failure_line().unwrap(),
            "sweep finished with forge failures on 2 MR(s): !4, !2"
        );
        assert!(
            report
                .to_text()
                .contains("!4 error: failed (cannot list the discussions")
        );
        assert_eq!(report.to_json()["complete"], false);
    }

    #[test]
    fn no_value_in_the_text_report_starts_a_line_of_its_own() {
        let mut report = sweep(&stub(), "g/p\nhealed: 0", now(), &settings());
        let forged = "x\r\x1b[2K\x1b[32m\nhealed: 0";
        report.mrs[0].detail = forged.into();
        report.warnings.push(forged.into());
        report.failure = Some(forged.into());
        let text = report.to_text();
        assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
        let healed: Vec<&str> = text.lines().filter(|l| l.starts_with("healed:")).collect();
        assert_eq!(healed.len(), 1, "{text}");
        assert_eq!(
            text.lines().count(),
            1 + report.mrs.len() + 1 + 1 + 2,
            "{text}"
        );
    }

    #[test]
    fn a_failed_listing_stops_the_sweep_with_the_reason() {
        let forge = Stub {
            fail_list: true,
            ..stub()
        };
        let report = sweep(&forge, "g/p", now(), &settings());
        assert_eq!(report.listed, None);
        assert!(report.mrs.is_empty());
        assert!(!report.succeeded());
        let text = report.to_text();
        assert!(
            text.contains("error: sweep stopped: cannot list the open merge requests"),
            "{text}"
        );
        assert!(text.ends_with("healed: 0\n"));
    }

    /// A challenge thread of the bot, first note `id`, resolved by `resolved_by` when given.
    fn challenge_thread(id: u64, resolved_by: Option<u64>) -> ListedDiscussion {
        ListedDiscussion {
            id: format!("{id:040x}"),
            individual_note: false,
            notes: vec![ListedNote {
                id,
                author_id: BOT,
                system: false,
                resolvable: true,
                resolved: resolved_by.is_some(),
                resolved_by: resolved_by.map(|id| crate::core::model::UserRef {
                    id,
                    username: format!("user{id}"),
                }),
                body: compose_body(
                    &Marker::Finding {
                        slot: crate::core::model::Slot {
                            rule: "r".into(),
                            subject: "f#/x".into(),
                        },
                        occurrence: Occurrence::digest(b"f"),
                    },
                    "challenge",
                ),
                resolved_at: resolved_by.map(|_| "2026-01-01T00:00:00Z".to_owned()),
                diff_note: false,
                created_at: resolved_by.map(|_| "2026-01-01T00:00:00Z".to_owned()),
                updated_at: resolved_by.map(|_| "2026-01-01T00:00:00Z".to_owned()),
            }],
        }
    }

    #[test]
    fn freshness_compares_the_gate_line_with_the_fingerprint_of_the_listing_read() {
        use crate::core::marker::{GateLine, encode_gate_line};
        use crate::core::model::Decision;
        // The summary was rendered while the challenge was open.
        let rendered_from = Inventory::from_listing(&[challenge_thread(50, None)], BOT);
        let gate = encode_gate_line(&GateLine {
            decision: Decision::Review,
            resolutions: resolution_fingerprint(&rendered_from),
        });
        let summary = summary_discussion_with(
            SummaryState::Verified,
            HEAD,
            "2026-11-30T11:00:00Z",
            &format!(
                "## assent · REVIEW

{gate}"
            ),
        );
        let sweep_with = |thread: ListedDiscussion| {
            let mut forge = Stub {
                listing: vec![listed(1, "2026-11-30T11:00:00Z")],
                ..Stub::default()
            };
            forge.discussions.insert(1, vec![summary.clone(), thread]);
            let report = sweep(&forge, "g/p", now(), &settings());
            let text = report.to_text();
            let tail: Vec<&str> = text.lines().rev().take(2).collect();
            assert_eq!(
                report.to_json()["refreshed"],
                report.refreshed,
                "the JSON says what the text says"
            );
            (
                report.mrs[0].verdict.unwrap(),
                report.refreshed,
                report.healed,
                tail.join(" < "),
            )
        };
        // Someone resolved it since: a pipeline, counted as a refresh (a human acted), not as
        // a repair, so `healed` stays 0.
        assert_eq!(
            sweep_with(challenge_thread(50, Some(7))),
            (
                SweepVerdict::ReviewResolved,
                1,
                0,
                "healed: 0 < refreshed: 1".into()
            )
        );
        // Nothing changed since the summary: nothing to do.
        assert_eq!(
            sweep_with(challenge_thread(50, None)),
            (
                SweepVerdict::Verified,
                0,
                0,
                "healed: 0 < refreshed: 0".into()
            )
        );
    }

    #[test]
    fn malformed_bot_markers_become_warnings_naming_the_mr() {
        let mut forge = stub();
        let mut d = summary_discussion(SummaryState::Verified, HEAD, "2026-11-30T11:00:00Z");
        d.notes[0].body = "<!-- assent:marker {broken -->".into();
        forge.discussions.insert(4, vec![d]);
        let report = sweep(&forge, "g/p", now(), &settings());
        assert_eq!(report.mrs[0].verdict, Some(SweepVerdict::Missing));
        assert!(
            report.warnings[0].starts_with("!4: note 900: malformed"),
            "{:?}",
            report.warnings
        );
    }
}
