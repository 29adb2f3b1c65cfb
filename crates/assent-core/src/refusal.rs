//! The one classification of a run that must not publish (docs/contract.md#pinned-target):
//! the merge request is not open, targets another branch than the pipeline pinned, or its
//! head moved. The run asks it at its start and again right before its first write; what the
//! receipt then says is `run_receipt::refusal_receipt_of`'s.

use crate::commit_sha::CommitSha;
use crate::model::{MergeRequestInfo, MergeRequestState};
use crate::receipt::Outcome;

/// What made a pipeline stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staleness {
    /// The MR's head is no longer the pinned source SHA; nothing was written.
    HeadMoved,
    /// The MR targets another branch than the pinned one; nothing was written.
    Retargeted,
    /// The forge refused the approval for the pinned head: the review was published for
    /// that head, not approved.
    HeadMovedBeforeApproval,
}

/// Why a run must not publish for the merge request as it is now, and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `mr-not-open` or `stale-pipeline`.
    pub outcome: Outcome,
    /// Why a `stale-pipeline` is stale.
    pub stale: Option<Staleness>,
    /// The receipt's warning, when the reason needs one.
    pub warning: Option<String>,
}

/// The one classification of a run that must not publish, asked at its start and again
/// right before its first write: the MR is closed or merged; it targets another branch than
/// the pinned one (`pinned_target`, `None` pins none); its head is no longer `source_sha`.
pub fn refusal_for(
    mr: &MergeRequestInfo,
    source_sha: &CommitSha,
    pinned_target: Option<&str>,
) -> Option<Refusal> {
    if mr.state != MergeRequestState::Opened {
        return Some(Refusal {
            outcome: Outcome::MrNotOpen,
            stale: None,
            warning: None,
        });
    }
    if let Some(pinned) = pinned_target.filter(|pinned| *pinned != mr.target_branch) {
        return Some(Refusal {
            outcome: Outcome::StalePipeline,
            stale: Some(Staleness::Retargeted),
            warning: Some(retargeted_warning(pinned, &mr.target_branch)),
        });
    }
    (&mr.head_sha != source_sha).then_some(Refusal {
        outcome: Outcome::StalePipeline,
        stale: Some(Staleness::HeadMoved),
        warning: None,
    })
}

/// The receipt warning of a stale pipeline whose MR was retargeted (docs/contract.md#pinned-target).
pub fn retargeted_warning(pinned: &str, current: &str) -> String {
    format!(
        "the merge request now targets `{current}`, not `{pinned}` as this pipeline pinned: stale pipeline, nothing written (a pipeline for the new target publishes)"
    )
}
