//! The examination of one merge request, shared by `assent sweep` and `assent serve`
//! (docs/sweep.md, docs/serve.md): read its discussions through the sweep's port, classify
//! its review state with [`crate::core::sweep_classification::classify`], read the single MR when the
//! classification asks for its head pipeline, and create a pipeline where the state needs
//! healing. It never publishes a review artifact: the pipeline runs the normal, serialized
//! `assent run` job, which does the healing.
//!
//! Requests, per MR: its discussions (all pages), and only when the summary calls for
//! healing, the single MR (for `head_pipeline`, which the listing lacks) and at most one
//! `POST .../pipelines`. A pipeline creation is a write and is never retried: after an
//! ambiguous failure the next examination sees the pipeline (then `pipeline-active`) or not
//! (then it tries again). GitLab's refusal (`405`, `400`: it created nothing) is an answer:
//! the MR's line says so ([`MrAction::PipelineRefused`]) and nothing failed.
//!
//! An MR outside the sweep's window is examined only when its summary says `REVIEW`
//! ([`examine_at_review`]): GitLab does not move an MR's `updated_at` when one thread of
//! several is resolved, so such an MR can wait anywhere in time for a resolution the sweep
//! must see.

use serde::Serialize;

use crate::core::commit_sha::CommitSha;
use crate::core::inventory::Inventory;
use crate::core::marker::{self, GateLine};
use crate::core::model::Decision;
use crate::core::resolutions::resolution_fingerprint;
use crate::core::sweep_classification::{
    Action, ClassifySettings, HeadPipeline, MrFacts, SweepVerdict, assent_possible, classify,
};
use crate::core::time::{SweepDuration, Timestamp};
use crate::forge::sweep_port::{ListedMergeRequest, PipelineCreation, SweepForge};

/// What an examination depends on besides the MR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExamineSettings {
    /// When a `reconciling` summary counts as stuck.
    pub stuck_after: SweepDuration,
    /// Classify, create no pipeline.
    pub dry_run: bool,
}

/// What the sweep did for one MR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MrAction {
    /// Nothing was needed (or the MR was left alone).
    None,
    /// A pipeline was created.
    PipelineCreated,
    /// Dry run: a pipeline would have been created.
    WouldCreatePipeline,
    /// GitLab refused the pipeline and created none (`405`, `400`): an answer, not a
    /// failure; see the detail.
    PipelineRefused,
    /// A request failed; see the detail.
    Failed,
}

impl MrAction {
    /// `none`, `pipeline-created`, `would-create-pipeline`, `pipeline-refused`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            MrAction::None => "none",
            MrAction::PipelineCreated => "pipeline-created",
            MrAction::WouldCreatePipeline => "would-create-pipeline",
            MrAction::PipelineRefused => "pipeline-refused",
            MrAction::Failed => "failed",
        }
    }
}

/// One examined MR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MrReport {
    /// The MR's IID.
    pub iid: u64,
    /// The head SHA it was judged against, when known.
    pub head_sha: Option<CommitSha>,
    /// The verdict; `None` when a failure came before classification.
    pub verdict: Option<SweepVerdict>,
    /// What the sweep did.
    pub action: MrAction,
    /// The pipeline created.
    pub pipeline_id: Option<u64>,
    /// The canonical summary's note id, when there is one.
    pub summary_note_id: Option<u64>,
    /// Why.
    pub detail: String,
}

impl MrReport {
    /// The report of an MR not examined yet: its head as listed, nothing done.
    pub fn of(listed: &ListedMergeRequest) -> Self {
        MrReport {
            iid: listed.iid,
            head_sha: listed.head_sha.clone(),
            verdict: None,
            action: MrAction::None,
            pipeline_id: None,
            summary_note_id: None,
            detail: String::new(),
        }
    }
}

/// One MR examined: what was done, and what the caller reports beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Examination {
    /// The MR's line of the report.
    pub report: MrReport,
    /// Operator-facing warnings (malformed bot markers), each naming the MR (`!7: …`).
    pub warnings: Vec<String>,
    /// Some request failed because GitLab's rate limits outlasted the wait budget.
    pub rate_limited: bool,
    /// The last forge failure, for a caller that tracks GitLab's health (serve's `/readyz`).
    pub error: Option<crate::forge::ForgeError>,
    /// The MR's canonical summary was read and its gate line says `REVIEW` (serve watches
    /// such an MR: a resolution while other threads stay open sends no webhook).
    pub summary_at_review: bool,
}

impl Examination {
    /// Nothing examined yet: `listed`'s line, no warning, no failure.
    fn of(listed: &ListedMergeRequest) -> Self {
        Examination {
            report: MrReport::of(listed),
            warnings: Vec::new(),
            rate_limited: false,
            error: None,
            summary_at_review: false,
        }
    }
}

/// Examines MR `iid` from nothing but its IID (what serve does when an event names it): the
/// single MR read first, with its head pipeline, then [`examine`] on it, so the
/// classification never asks for the MR again. Requests: the MR, its discussions, at most
/// one pipeline creation.
pub fn examine_iid(
    forge: &dyn SweepForge,
    bot: u64,
    iid: u64,
    now: Timestamp,
    settings: &ExamineSettings,
) -> Examination {
    match forge.merge_request_entry(iid) {
        Ok(entry) => examine(forge, bot, &entry, now, settings),
        Err(e) => Examination {
            report: MrReport {
                action: MrAction::Failed,
                detail: format!("cannot read the merge request: {e}"),
                ..MrReport::of(&ListedMergeRequest {
                    iid,
                    state: String::new(),
                    head_sha: None,
                    updated_at: None,
                    target_branch: None,
                    author_id: None,
                    user_notes_count: None,
                    head_pipeline: HeadPipeline::NotRead,
                })
            },
            warnings: Vec::new(),
            rate_limited: e.is_rate_limited(),
            error: Some(e),
            summary_at_review: false,
        },
    }
}

/// Examines one MR (see the module documentation) at `now`, with `bot` the token's user id.
/// A failure is reported in the returned [`MrReport`] (`MrAction::Failed`), never raised.
pub fn examine(
    forge: &dyn SweepForge,
    bot: u64,
    listed: &ListedMergeRequest,
    now: Timestamp,
    settings: &ExamineSettings,
) -> Examination {
    let mut out = Examination::of(listed);
    examine_into(forge, bot, listed, now, settings, Scope::Any, &mut out);
    out
}

/// [`examine`] for an MR outside the sweep's window: its discussions are read, and it is
/// examined further only when its bot summary says `REVIEW` (`None` otherwise: nothing to
/// report, nothing done). An MR GitLab counts no user note on has no summary and costs no
/// request. A failure to read the discussions is reported like any examination's.
pub fn examine_at_review(
    forge: &dyn SweepForge,
    bot: u64,
    listed: &ListedMergeRequest,
    now: Timestamp,
    settings: &ExamineSettings,
) -> Option<Examination> {
    if listed.user_notes_count == Some(0) {
        return None;
    }
    let mut out = Examination::of(listed);
    examine_into(forge, bot, listed, now, settings, Scope::AtReview, &mut out);
    (out.report.action == MrAction::Failed || out.report.verdict.is_some()).then_some(out)
}

/// Which MRs an examination goes on with once it has read the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Every MR (one in the window, or named by an event).
    Any,
    /// Only an MR whose summary's gate line says `REVIEW`.
    AtReview,
}

/// Whether a summary's gate line says `REVIEW`.
fn says_review(body: &str) -> bool {
    matches!(
        marker::gate_line_of(body),
        Ok(Some(GateLine {
            decision: Decision::Review,
            ..
        }))
    )
}

fn examine_into(
    forge: &dyn SweepForge,
    bot: u64,
    listed: &ListedMergeRequest,
    now: Timestamp,
    settings: &ExamineSettings,
    scope: Scope,
    out: &mut Examination,
) {
    let classify_settings = ClassifySettings {
        stuck_after: settings.stuck_after,
    };
    let iid = listed.iid;
    let mr = &mut out.report;
    let discussions = match forge.list_discussions(iid) {
        Ok(d) => d,
        Err(e) => {
            out.rate_limited |= e.is_rate_limited();
            out.error = Some(e.clone());
            mr.action = MrAction::Failed;
            mr.detail = format!("cannot list the discussions: {e}");
            return;
        }
    };
    let inventory = Inventory::from_listing(&discussions, bot);
    let summary = inventory.canonical_summary();
    if scope == Scope::AtReview && !summary.is_some_and(|s| says_review(&s.body)) {
        return;
    }
    out.warnings
        .extend(inventory.warnings.iter().map(|w| format!("!{iid}: {w}")));
    out.summary_at_review = summary.is_some_and(|s| says_review(&s.body));
    mr.summary_note_id = summary.map(|s| s.note_id);
    let mut facts = MrFacts {
        iid,
        head_sha: mr.head_sha.clone(),
        open: listed.state == "opened",
        head_pipeline: listed.head_pipeline.clone(),
        target_branch: listed.target_branch.clone().filter(|b| !b.is_empty()),
        resolutions: resolution_fingerprint(&inventory),
        assent_possible: assent_possible(&inventory, listed.author_id),
    };
    let mut classification = classify(&facts, summary, now, &classify_settings);
    if classification.action == Action::InspectMergeRequest {
        let info = match forge.merge_request_entry(iid) {
            Ok(info) => info,
            Err(e) => {
                out.rate_limited |= e.is_rate_limited();
                out.error = Some(e.clone());
                mr.verdict = Some(classification.verdict);
                mr.action = MrAction::Failed;
                mr.detail = format!(
                    "{}; cannot read the merge request: {e}",
                    classification.detail
                );
                return;
            }
        };
        // The single MR is not served from the listing's cache: its head, target and state
        // are the current ones.
        facts.head_sha = info.head_sha.clone();
        facts.open = info.state == "opened";
        facts.target_branch = info.target_branch.clone().filter(|b| !b.is_empty());
        if info.author_id.is_some() {
            facts.assent_possible = assent_possible(&inventory, info.author_id);
        }
        facts.head_pipeline = info.head_pipeline;
        mr.head_sha = info.head_sha;
        classification = classify(&facts, summary, now, &classify_settings);
    }
    mr.verdict = Some(classification.verdict);
    mr.detail = classification.detail;
    match classification.action {
        Action::None => {}
        Action::InspectMergeRequest => {
            // Unreachable by construction: a classification with a read head pipeline never
            // asks for it again. Reported rather than trusted.
            mr.action = MrAction::Failed;
            mr.detail
                .push_str("; internal: classification asked for the MR twice");
        }
        Action::CreatePipeline if settings.dry_run => {
            mr.action = MrAction::WouldCreatePipeline;
        }
        Action::CreatePipeline => match forge.create_pipeline(iid) {
            Ok(PipelineCreation::Created(pipeline)) => {
                mr.action = MrAction::PipelineCreated;
                mr.pipeline_id = Some(pipeline.id);
            }
            Ok(PipelineCreation::Refused { status, message }) => {
                mr.action = MrAction::PipelineRefused;
                mr.detail = format!(
                    "{}; GitLab refused the pipeline and created none (HTTP {status}: {message})",
                    mr.detail
                );
            }
            Err(e) => {
                out.rate_limited |= e.is_rate_limited();
                out.error = Some(e.clone());
                mr.action = MrAction::Failed;
                mr.detail = format!("{}; pipeline creation failed: {e}", mr.detail);
            }
        },
    }
}
