//! The examination of one merge request, shared by `assent sweep` and `assent serve`
//! (docs/sweep.md, docs/serve.md): read its discussions through the sweep's port, classify
//! its review state with [`crate::core::sweep::classify`], read the single MR when the
//! classification asks for its head pipeline, and create a pipeline where the state needs
//! healing. It never publishes a review artifact: the pipeline runs the normal, serialized
//! `assent run` job, which does the healing.
//!
//! Requests, per MR: its discussions (all pages), and only when the summary calls for
//! healing, the single MR (for `head_pipeline`, which the listing lacks) and at most one
//! `POST .../pipelines`. A pipeline creation is a write and is never retried: after an
//! ambiguous failure the next examination sees the pipeline (then `pipeline-active`) or not
//! (then it tries again).

use serde::Serialize;

use crate::core::inventory::Inventory;
use crate::core::marker::{self, GateLine};
use crate::core::model::{Decision, MergeRequestState};
use crate::core::resolutions::resolution_fingerprint;
use crate::core::sweep::{
    Action, ClassifySettings, HeadPipeline, MrFacts, SweepDuration, SweepVerdict, Timestamp,
    classify,
};
use crate::forge::sweep::{ListedMergeRequest, SweepForge};

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
    /// A request failed; see the detail.
    Failed,
}

impl MrAction {
    /// `none`, `pipeline-created`, `would-create-pipeline`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            MrAction::None => "none",
            MrAction::PipelineCreated => "pipeline-created",
            MrAction::WouldCreatePipeline => "would-create-pipeline",
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
    pub head: Option<String>,
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
            head: listed.sha.clone().filter(|s| !s.is_empty()),
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
                    sha: None,
                    updated_at: None,
                    target_branch: None,
                    blocking_discussions_resolved: None,
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
    let mut out = Examination {
        report: MrReport::of(listed),
        warnings: Vec::new(),
        rate_limited: false,
        error: None,
        summary_at_review: false,
    };
    examine_into(forge, bot, listed, now, settings, &mut out);
    out
}

fn examine_into(
    forge: &dyn SweepForge,
    bot: u64,
    listed: &ListedMergeRequest,
    now: Timestamp,
    settings: &ExamineSettings,
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
    out.warnings
        .extend(inventory.warnings.iter().map(|w| format!("!{iid}: {w}")));
    let summary = inventory.canonical_summary();
    out.summary_at_review = summary.is_some_and(|s| {
        matches!(
            marker::gate_line_of(&s.body),
            Ok(Some(GateLine {
                decision: Decision::Review,
                ..
            }))
        )
    });
    mr.summary_note_id = summary.map(|s| s.note_id);
    let mut facts = MrFacts {
        iid,
        head_sha: mr.head.clone().unwrap_or_default(),
        open: listed.state == "opened",
        head_pipeline: listed.head_pipeline.clone(),
        target_branch: listed.target_branch.clone().filter(|b| !b.is_empty()),
        blocking_discussions_resolved: listed.blocking_discussions_resolved,
        resolutions: resolution_fingerprint(&inventory),
    };
    let mut classification = classify(&facts, summary, now, &classify_settings);
    if classification.action == Action::InspectMergeRequest {
        let info = match forge.merge_request(iid) {
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
        facts.head_sha = info.head_sha.clone();
        facts.open = info.state == MergeRequestState::Opened;
        facts.target_branch = Some(info.target_branch.clone()).filter(|b| !b.is_empty());
        facts.head_pipeline = match info.head_pipeline_status {
            Some(status) => HeadPipeline::Status(status),
            None => HeadPipeline::None,
        };
        mr.head = Some(info.head_sha);
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
            Ok(pipeline) => {
                mr.action = MrAction::PipelineCreated;
                mr.pipeline_id = Some(pipeline.id);
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
