//! [`GitLabForge`]: the [`Forge`] and [`Repository`] ports over GitLab's REST API v4.
//!
//! Requests are described with the `gitlab` crate's endpoint builders (or the project's own,
//! [`super::endpoints`]) and sent through the one transport with the read retry policy; every
//! listing goes through the pagination driver. Writes are sent once.

use std::fmt;
use std::sync::{Arc, OnceLock};

use gitlab::api::projects::Project;
use gitlab::api::projects::members::AllProjectMember;
use gitlab::api::projects::merge_requests::approvals::MergeRequestApprovals;
use gitlab::api::projects::merge_requests::discussions::{
    CreateMergeRequestDiscussion, MergeRequestDiscussions, Position, TextPosition,
};
use gitlab::api::projects::merge_requests::notes::{CreateMergeRequestNote, EditMergeRequestNote};
use gitlab::api::projects::merge_requests::{
    ApproveMergeRequest, MergeRequest, MergeRequestDiffs, UnapproveMergeRequest,
};
use gitlab::api::users::User;
use serde::Deserialize;

use super::GitLabConfigError;
use super::client::{GitLabClient, build_error};
use super::config::GitLabConfig;
use super::discussion_stream;
use super::endpoints::{
    CreateMergeRequestDiscussionNote, MergeRequestNote, MergeRequestVersions,
    ResolveMergeRequestDiscussion,
};
use super::pagination::{list_all, list_all_with};
use super::retry::{ReadFailure, Sleeper, ThreadSleeper};
use super::transport::PreparedRequest;
use super::wire::{ApiDiscussion, ApiNote, ApiUser};
use assent_core::commit_sha::CommitSha;
use assent_core::model::{
    DiffLine, DiffPosition, ListedDiscussion, ListedNote, MergeRequestInfo, MergeRequestState, Role,
};
use assent_forge::{
    Account, BudgetedRead, ChangedFile, ContentBudget, CreatedThread, FileMode, Forge, ForgeError,
    Repository, RepositoryFiles, RequestCounts,
};

/// The GitLab HTTP adapter of one merge request, over a project's [`GitLabClient`].
/// `Send + Sync`; request counters are the client's.
pub struct GitLabForge {
    client: Arc<GitLabClient>,
    mr_iid: u64,
    bot_user: OnceLock<u64>,
}

impl fmt::Debug for GitLabForge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GitLabForge")
            .field("client", &self.client)
            .field("mr_iid", &self.mr_iid)
            .finish_non_exhaustive()
    }
}

impl GitLabForge {
    /// Builds the forge of MR `mr_iid` over a new client for `config`; read retries sleep
    /// the calling thread.
    pub fn new(config: GitLabConfig, mr_iid: u64) -> Result<Self, GitLabConfigError> {
        Self::with_sleeper(config, mr_iid, Arc::new(ThreadSleeper))
    }

    /// [`GitLabForge::new`] with an injected sleeper (tests record the delays asked for).
    pub fn with_sleeper(
        config: GitLabConfig,
        mr_iid: u64,
        sleeper: Arc<dyn Sleeper>,
    ) -> Result<Self, GitLabConfigError> {
        let client = GitLabClient::with_sleeper(&config, sleeper)?;
        Ok(Self::over(Arc::new(client), mr_iid))
    }

    /// The forge of MR `mr_iid` over an existing client: the sweep reviews many MRs of one
    /// project through one connection.
    pub fn over(client: Arc<GitLabClient>, mr_iid: u64) -> Self {
        GitLabForge {
            client,
            mr_iid,
            bot_user: OnceLock::new(),
        }
    }

    /// The client this forge sends through.
    pub fn client(&self) -> &GitLabClient {
        &self.client
    }

    /// One note of the merge request (`GET …/notes/:note_id`).
    pub fn note(&self, note_id: u64) -> Result<ListedNote, ForgeError> {
        let request = self.client.prepare(&MergeRequestNote {
            project: self.client.project_ref(),
            merge_request: self.mr_iid,
            note: note_id,
        })?;
        let response = self.client.requester.read(&request)?;
        let note: ApiNote = self.client.decode_read(&request, &response)?;
        Ok(note.into_listed())
    }
}

#[derive(Deserialize)]
struct ApiMember {
    access_level: u64,
}

/// What a run reads of `GET /users/:id` (GitLab's `Entities::User` for a token that is not
/// an admin's: `bot` from `User#bot?`, `state` from `Entities::UserBasic`). A field left out
/// stays `None`, and the core does not count the resolution then.
#[derive(Deserialize)]
struct ApiAccount {
    bot: Option<bool>,
    state: Option<String>,
    username: Option<String>,
}

/// The one project setting a run reads (`GET /projects/:id`).
#[derive(Deserialize)]
struct ApiProjectSettings {
    resolve_outdated_diff_discussions: Option<bool>,
}

#[derive(Deserialize)]
struct ApiCreated {
    id: u64,
}

#[derive(Deserialize)]
struct ApiCreatedDiscussion {
    id: String,
    notes: Vec<ApiCreated>,
}

#[derive(Deserialize)]
struct ApiDiffRefs {
    base_sha: Option<String>,
    start_sha: Option<String>,
    head_sha: Option<String>,
}

#[derive(Deserialize)]
struct ApiPipeline {
    status: Option<String>,
}

#[derive(Deserialize)]
struct ApiMergeRequest {
    state: String,
    sha: Option<String>,
    diff_refs: Option<ApiDiffRefs>,
    target_branch: String,
    head_pipeline: Option<ApiPipeline>,
    web_url: Option<String>,
    #[serde(default)]
    title: String,
    #[serde(default)]
    source_branch: String,
    author: Option<ApiAuthorName>,
    #[serde(default)]
    labels: Vec<String>,
    /// A string (`"3"`, `"1000+"`) on GitLab; `null` before GitLab has computed the diff.
    changes_count: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ApiAuthorName {
    id: Option<u64>,
    username: String,
}

/// `GET …/approvals`: only who approves matters to assent.
#[derive(Deserialize)]
struct ApiApprovals {
    #[serde(default)]
    approved_by: Vec<ApiApprover>,
}

#[derive(Deserialize)]
struct ApiApprover {
    user: ApiUser,
}

#[derive(Deserialize)]
struct ApiDiff {
    old_path: String,
    new_path: String,
    new_file: Option<bool>,
    deleted_file: Option<bool>,
    renamed_file: Option<bool>,
    too_large: Option<bool>,
    collapsed: Option<bool>,
    diff: Option<String>,
    a_mode: Option<String>,
    b_mode: Option<String>,
}

/// GitLab's `position[…]` parameters of a DiffNote (docs/contract.md#diffnotes): `text`, the diff refs, both
/// paths, and `new_line` for an added line or `old_line` for a removed one (never both:
/// both name an unchanged line).
fn diff_note_position(position: &DiffPosition) -> Result<Position<'_>, ForgeError> {
    let mut text = TextPosition::builder();
    text.old_path(position.old_path.as_str())
        .new_path(position.new_path.as_str());
    match position.line {
        DiffLine::New(line) => text.new_line(line as u64),
        DiffLine::Old(line) => text.old_line(line as u64),
    };
    let text = text
        .build()
        .map_err(|e| build_error("discussion position", e))?;
    Position::builder()
        .base_sha(position.base_sha.as_str())
        .start_sha(position.start_sha.as_str())
        .head_sha(position.head_sha.as_str())
        .text_position(text)
        .build()
        .map_err(|e| build_error("discussion position", e))
}

impl Forge for GitLabForge {
    fn bot_user_id(&self) -> Result<u64, ForgeError> {
        if let Some(id) = self.bot_user.get() {
            return Ok(*id);
        }
        let id = self.client.current_user_id()?;
        Ok(*self.bot_user.get_or_init(|| id))
    }

    fn project_role(&self, user_id: u64) -> Result<Option<Role>, ForgeError> {
        let endpoint = AllProjectMember::builder()
            .project(self.client.project_ref())
            .user(user_id)
            .build()
            .map_err(|e| build_error("project member", e))?;
        let request = self.client.prepare(&endpoint)?;
        match self.client.requester.read(&request) {
            Ok(response) => {
                let member: ApiMember = self.client.decode_read(&request, &response)?;
                Ok(Role::from_access_level(member.access_level))
            }
            // The project was just read, so a 404 here is "not a member".
            Err(ForgeError::Status { status: 404, .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn user_account(&self, user_id: u64) -> Result<Option<Account>, ForgeError> {
        let endpoint = User::builder()
            .user(user_id)
            .build()
            .map_err(|e| build_error("user", e))?;
        let request = self.client.prepare(&endpoint)?;
        match self.client.requester.read(&request) {
            Ok(response) => {
                let account: ApiAccount = self.client.decode_read(&request, &response)?;
                Ok(Some(Account {
                    bot: account.bot,
                    state: account.state,
                    username: account.username,
                }))
            }
            // GitLab answers 404 for a user the token may not see (`lib/api/users.rb`).
            Err(ForgeError::Status { status: 404, .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn resolves_outdated_diff_threads(&self) -> Result<bool, ForgeError> {
        let endpoint = Project::builder()
            .project(self.client.project_ref())
            .build()
            .map_err(|e| build_error("project", e))?;
        let settings: ApiProjectSettings = self.client.get(&endpoint)?;
        // GitLab leaves the field out of a project answer it shortens for the caller's
        // access: unknown is read as on, so no DiffNote resolution counts on a guess.
        Ok(settings.resolve_outdated_diff_discussions.unwrap_or(true))
    }

    fn merge_request(&self) -> Result<MergeRequestInfo, ForgeError> {
        let endpoint = MergeRequest::builder()
            .project(self.client.project_ref())
            .merge_request(self.mr_iid)
            .build()
            .map_err(|e| build_error("merge request", e))?;
        let request = self.client.prepare(&endpoint)?;
        let response = self.client.requester.read(&request)?;
        let mr: ApiMergeRequest = self.client.decode_read(&request, &response)?;
        let decode_error = |message: String| ForgeError::Decode {
            method: "GET".into(),
            route: request.route(),
            message,
        };
        let state = match mr.state.as_str() {
            "opened" => MergeRequestState::Opened,
            "closed" => MergeRequestState::Closed,
            "merged" => MergeRequestState::Merged,
            "locked" => MergeRequestState::Locked,
            other => {
                return Err(decode_error(format!(
                    "unknown merge request state {other:?}"
                )));
            }
        };
        // Parsed here, at the edge: a SHA GitLab spells oddly is a decode error naming its
        // field, never a head the run pins, compares or writes into a marker.
        let commit_sha = |field: &str, text: Option<String>| {
            text.map(|text| {
                CommitSha::parse(&text)
                    .map_err(|e| decode_error(format!("the merge request's `{field}`: {e}")))
            })
            .transpose()
        };
        let head_sha = commit_sha("sha", mr.sha.filter(|s| !s.is_empty()))?
            .ok_or_else(|| decode_error("the merge request has no head sha".into()))?;
        let refs = mr.diff_refs.unwrap_or(ApiDiffRefs {
            base_sha: None,
            start_sha: None,
            head_sha: None,
        });
        Ok(MergeRequestInfo {
            state,
            head_sha,
            base_sha: commit_sha("diff_refs.base_sha", refs.base_sha)?,
            start_sha: commit_sha("diff_refs.start_sha", refs.start_sha)?,
            diff_head_sha: commit_sha("diff_refs.head_sha", refs.head_sha)?,
            target_branch: mr.target_branch,
            head_pipeline_status: mr.head_pipeline.and_then(|p| p.status),
            web_url: mr.web_url,
            title: mr.title,
            source_branch: mr.source_branch,
            author_id: mr.author.as_ref().and_then(|a| a.id),
            author: mr.author.map(|a| a.username).unwrap_or_default(),
            labels: mr.labels,
            changes_count: mr.changes_count.and_then(|count| match count {
                serde_json::Value::String(text) => Some(text),
                serde_json::Value::Number(number) => Some(number.to_string()),
                _ => None,
            }),
        })
    }

    fn version_heads(&self) -> Result<Vec<CommitSha>, ForgeError> {
        /// The one field read of `Entities::MergeRequestDiff`.
        #[derive(Deserialize)]
        struct ApiVersion {
            head_commit_sha: Option<String>,
        }
        let endpoint = MergeRequestVersions {
            project: self.client.project_ref(),
            merge_request: self.mr_iid,
        };
        let what = format!("diff versions of merge request {}", self.mr_iid);
        let versions: Vec<ApiVersion> = list_all(
            &self.client.requester,
            self.client.prepare(&endpoint)?,
            &self.client.listing(&what, false),
        )?;
        // A version without a head (GitLab's `empty` diff state) names no head; a head that
        // is no SHA is a decode error: a pin is never matched against text.
        versions
            .into_iter()
            .filter_map(|v| v.head_commit_sha.filter(|sha| !sha.is_empty()))
            .map(|text| {
                CommitSha::parse(&text).map_err(|e| ForgeError::Decode {
                    method: "GET".into(),
                    route: what.clone(),
                    message: format!("a version's `head_commit_sha`: {e}"),
                })
            })
            .collect()
    }

    fn list_discussions(&self) -> Result<Vec<ListedDiscussion>, ForgeError> {
        let endpoint = MergeRequestDiscussions::builder()
            .project(self.client.project_ref())
            .merge_request(self.mr_iid)
            .build()
            .map_err(|e| build_error("discussions", e))?;
        let what = format!("discussions of merge request {}", self.mr_iid);
        // A page over the body limit even at one discussion per page (one thread with many
        // large replies) is streamed, keeping only the bot's note bodies: a human's notes
        // never stop the listing (`super::discussion_stream`).
        let requester = &self.client.requester;
        let streamed = |request: &PreparedRequest| {
            let bot = self.bot_user_id().map_err(ReadFailure::Failed)?;
            let limit = requester.transport.body_limit();
            requester.read_streamed(request, &mut |reader| {
                discussion_stream::read_page(reader, bot, limit)
            })
        };
        let pages: Vec<ApiDiscussion> = list_all_with(
            requester,
            self.client.prepare(&endpoint)?,
            &self.client.listing(&what, false),
            Some(&streamed),
        )?;
        Ok(pages
            .into_iter()
            .map(|d| ListedDiscussion {
                id: d.id,
                individual_note: d.individual_note.unwrap_or(false),
                notes: d
                    .notes
                    .unwrap_or_default()
                    .into_iter()
                    .map(ApiNote::into_listed)
                    .collect(),
            })
            .collect())
    }

    fn create_thread(
        &self,
        body: &str,
        position: Option<&DiffPosition>,
    ) -> Result<CreatedThread, ForgeError> {
        let mut builder = CreateMergeRequestDiscussion::builder();
        builder
            .project(self.client.project_ref())
            .merge_request(self.mr_iid)
            .body(body);
        if let Some(position) = position {
            builder.position(diff_note_position(position)?);
        }
        let endpoint = builder.build().map_err(|e| build_error("discussions", e))?;
        let request = self.client.prepare(&endpoint)?;
        let response = self.client.requester.write(&request)?;
        let created: ApiCreatedDiscussion = self.client.decode_write(&request, &response)?;
        let first = created
            .notes
            .first()
            .ok_or_else(|| ForgeError::AmbiguousWrite {
                method: "POST".into(),
                route: request.route(),
                message: "the created discussion lists no note".into(),
            })?;
        Ok(CreatedThread {
            discussion_id: created.id,
            note_id: first.id,
        })
    }

    fn reply_to_thread(&self, discussion_id: &str, body: &str) -> Result<u64, ForgeError> {
        let endpoint = CreateMergeRequestDiscussionNote {
            project: self.client.project_ref(),
            merge_request: self.mr_iid,
            discussion: discussion_id.into(),
            body: body.into(),
        };
        let request = self.client.prepare(&endpoint)?;
        let response = self.client.requester.write(&request)?;
        let created: ApiCreated = self.client.decode_write(&request, &response)?;
        Ok(created.id)
    }

    fn resolve_thread(&self, discussion_id: &str) -> Result<(), ForgeError> {
        let endpoint = ResolveMergeRequestDiscussion {
            project: self.client.project_ref(),
            merge_request: self.mr_iid,
            discussion: discussion_id.into(),
            resolved: true,
        };
        self.client
            .requester
            .write(&self.client.prepare(&endpoint)?)
            .map(drop)
    }

    fn create_note(&self, body: &str) -> Result<u64, ForgeError> {
        let endpoint = CreateMergeRequestNote::builder()
            .project(self.client.project_ref())
            .merge_request(self.mr_iid)
            .body(body)
            .build()
            .map_err(|e| build_error("notes", e))?;
        let request = self.client.prepare(&endpoint)?;
        let response = self.client.requester.write(&request)?;
        let created: ApiCreated = self.client.decode_write(&request, &response)?;
        Ok(created.id)
    }

    fn edit_note(&self, note_id: u64, body: &str) -> Result<(), ForgeError> {
        let endpoint = EditMergeRequestNote::builder()
            .project(self.client.project_ref())
            .merge_request(self.mr_iid)
            .note(note_id)
            .body(body)
            .build()
            .map_err(|e| build_error("notes", e))?;
        self.client
            .requester
            .write(&self.client.prepare(&endpoint)?)
            .map(drop)
    }

    fn bot_approves(&self) -> Result<bool, ForgeError> {
        let bot = self.bot_user_id()?;
        let endpoint = MergeRequestApprovals::builder()
            .project(self.client.project_ref())
            .merge_request(self.mr_iid)
            .build()
            .map_err(|e| build_error("approvals", e))?;
        let approvals: ApiApprovals = self.client.get(&endpoint)?;
        Ok(approvals.approved_by.iter().any(|a| a.user.id == bot))
    }

    fn approve(&self, sha: &CommitSha) -> Result<(), ForgeError> {
        let endpoint = ApproveMergeRequest::builder()
            .project(self.client.project_ref())
            .merge_request(self.mr_iid)
            .sha(sha.as_str())
            .build()
            .map_err(|e| build_error("approve", e))?;
        self.client
            .requester
            .write(&self.client.prepare(&endpoint)?)
            .map(drop)
    }

    fn unapprove(&self) -> Result<(), ForgeError> {
        let endpoint = UnapproveMergeRequest::builder()
            .project(self.client.project_ref())
            .merge_request(self.mr_iid)
            .build()
            .map_err(|e| build_error("unapprove", e))?;
        self.client
            .requester
            .write(&self.client.prepare(&endpoint)?)
            .map(drop)
    }

    fn request_counts(&self) -> RequestCounts {
        self.client.requester.transport.counts()
    }
}

impl Repository for GitLabForge {
    fn changed_files(&self) -> Result<Vec<ChangedFile>, ForgeError> {
        let endpoint = MergeRequestDiffs::builder()
            .project(self.client.project_ref())
            .merge_request(self.mr_iid)
            .build()
            .map_err(|e| build_error("diffs", e))?;
        let what = format!("diffs of merge request {}", self.mr_iid);
        let diffs: Vec<ApiDiff> = list_all(
            &self.client.requester,
            self.client.prepare(&endpoint)?,
            &self.client.listing(&what, false),
        )?;
        Ok(diffs
            .into_iter()
            .map(|d| ChangedFile {
                old_path: d.old_path,
                new_path: d.new_path,
                new_file: d.new_file.unwrap_or(false),
                deleted_file: d.deleted_file.unwrap_or(false),
                renamed_file: d.renamed_file.unwrap_or(false),
                withheld: d.too_large.unwrap_or(false) || d.collapsed.unwrap_or(false),
                diff: d.diff.unwrap_or_default(),
                old_mode: FileMode::from_git(d.a_mode.as_deref().unwrap_or_default()),
                new_mode: FileMode::from_git(d.b_mode.as_deref().unwrap_or_default()),
            })
            .collect())
    }
}

/// Content reads are the project's: the forge answers them through its client.
impl RepositoryFiles for GitLabForge {
    fn list_tree(&self, sha: &CommitSha, dir: &str) -> Result<Vec<String>, ForgeError> {
        self.client.list_tree(sha, dir)
    }

    fn read_file(&self, sha: &CommitSha, path: &str) -> Result<Option<Vec<u8>>, ForgeError> {
        self.client.read_file(sha, path)
    }

    fn read_file_within(
        &self,
        sha: &CommitSha,
        path: &str,
        budget: &ContentBudget,
    ) -> Result<BudgetedRead, ForgeError> {
        self.client.read_file_within(sha, path, budget)
    }

    fn branch_head(&self, branch: &str) -> Result<CommitSha, ForgeError> {
        self.client.branch_head(branch)
    }
}
