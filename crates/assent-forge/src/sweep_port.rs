//! The sweep's port (`assent sweep` and `assent serve`): the project-level reads and the one
//! write the safety net needs, beside the per-MR [`crate::Forge`]. The GitLab adapter is
//! `assent_gitlab::GitLabSweepForge`; the application's tests use stubs.

use assent_core::commit_sha::CommitSha;
use assent_core::model::{ListedDiscussion, MergeRequestInfo};
use assent_core::sweep_classification::HeadPipeline;

use crate::{ForgeError, RequestCounts};

/// One entry of the MR listing. The listing carries no `head_pipeline`: read the single MR
/// for that. GitLab's `blocking_discussions_resolved` is deliberately not here: it is `true`
/// whenever the project does not require resolved threads, so it says nothing about them
/// (the sweep reads the discussions instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedMergeRequest {
    /// The MR's IID.
    pub iid: u64,
    /// `opened`, `closed`, `merged` or `locked`.
    pub state: String,
    /// The MR's head SHA (GitLab's `sha`), when reported.
    pub head_sha: Option<CommitSha>,
    /// The MR's `updated_at`, when reported.
    pub updated_at: Option<String>,
    /// The branch the MR targets, when reported.
    pub target_branch: Option<String>,
    /// The MR author's user id, when reported: their resolutions never count as assent.
    pub author_id: Option<u64>,
    /// GitLab's `user_notes_count` (notes GitLab did not write itself), when reported: an MR
    /// with none has no bot summary.
    pub user_notes_count: Option<u64>,
    /// The head pipeline: [`HeadPipeline::NotRead`] from the listing, read from the single MR.
    pub head_pipeline: HeadPipeline,
}

/// A pipeline just created for a merge request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedPipeline {
    /// The pipeline id.
    pub id: u64,
    /// Its status (`created` right after creation).
    pub status: Option<String>,
    /// Its web URL.
    pub web_url: Option<String>,
}

/// GitLab's answer to a pipeline creation: a pipeline, or a refusal, which is an answer
/// (GitLab created nothing), not a failure of the forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineCreation {
    /// The pipeline was created.
    Created(CreatedPipeline),
    /// GitLab made no pipeline: `405` (`MergeRequests::CreatePipelineService` answered none,
    /// e.g. the MR has no commits) or `400` (the pipeline did not validate, e.g. the token's
    /// user is below Developer).
    Refused {
        /// `405` or `400`.
        status: u16,
        /// GitLab's message.
        message: String,
    },
}

/// What the sweep needs from the forge: one project's open MRs, each MR's discussions and
/// head pipeline, and the creation of an MR pipeline.
pub trait SweepForge {
    /// The user id behind the token: only its notes are artifacts.
    fn bot_user_id(&self) -> Result<u64, ForgeError>;
    /// Every open MR of the project, all pages.
    fn list_open_merge_requests(&self) -> Result<Vec<ListedMergeRequest>, ForgeError>;
    /// Every discussion of MR `iid`, all pages.
    fn list_discussions(&self, iid: u64) -> Result<Vec<ListedDiscussion>, ForgeError>;
    /// The single MR `iid` (state, head, head pipeline).
    fn merge_request(&self, iid: u64) -> Result<MergeRequestInfo, ForgeError>;
    /// The single MR `iid` as an entry of the listing, with its head pipeline read: what
    /// serve examines an MR from when an event names it, and what the sweep reads before it
    /// creates a pipeline.
    fn merge_request_entry(&self, iid: u64) -> Result<ListedMergeRequest, ForgeError>;
    /// Creates a merge request pipeline for MR `iid`; sent once.
    fn create_pipeline(&self, iid: u64) -> Result<PipelineCreation, ForgeError>;
    /// Requests made so far.
    fn request_counts(&self) -> RequestCounts;
}
