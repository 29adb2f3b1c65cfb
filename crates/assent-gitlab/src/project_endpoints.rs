//! Project-level routes of the sweep (docs/contract.md#sweep), on [`GitLabClient`], returning the sweep
//! port's types ([`assent_forge::sweep_port`]):
//!
//! * [`GitLabClient::list_open_merge_requests`]: `GET projects/:id/merge_requests` with
//!   `state=opened`, `order_by=created_at`, `sort=asc`, every page through the pagination
//!   driver. Every open MR, not only those updated in the sweep's window: GitLab does not
//!   move an MR's `updated_at` when one thread of several is resolved
//!   (`app/models/concerns/resolvable_note.rb`, `update_all`), so an MR waiting at `REVIEW`
//!   can be anywhere in time, and the window is applied by the caller. Creation order
//!   ascending is the order least disturbed by activity during the listing (an update does
//!   not move an MR, a new MR lands on the last page); the caller deduplicates by IID all
//!   the same.
//! * [`GitLabClient::merge_request_entry`]: the single MR with its `head_pipeline` (status and
//!   SHA). GitLab leaves the field out when the token cannot read pipelines
//!   (`lib/api/entities/merge_request.rb`, `if: … :read_pipeline`): that is a decode error
//!   naming the cause, never "no pipeline".
//! * [`GitLabClient::create_merge_request_pipeline`]:
//!   `POST projects/:id/merge_requests/:iid/pipelines`, sent once (a write is never retried).
//!   GitLab answers `200` with the pipeline, or refuses without creating one: `405` when
//!   `MergeRequests::CreatePipelineService` answers no pipeline, `400` when the pipeline does
//!   not validate (below Developer: "Insufficient permissions to create a new pipeline"),
//!   `lib/api/merge_requests.rb`. A refusal is [`PipelineCreation::Refused`], an answer.
//!
//! They use the `gitlab` crate's builders (`MergeRequests`, `MergeRequest`,
//! `CreateMergeRequestPipelines`) and go through the client's one transport and retry
//! policy. The client knows no merge request: the IID is an argument, and one client serves
//! the whole sweep.

use gitlab::api::common::SortOrder;
use gitlab::api::projects::merge_requests::pipelines::CreateMergeRequestPipelines;
use gitlab::api::projects::merge_requests::{
    MergeRequest as SingleMergeRequest, MergeRequestOrderBy,
    MergeRequestState as ApiMergeRequestState, MergeRequests,
};
use serde::{Deserialize, Deserializer};

use super::client::GitLabClient;
use super::client::build_error;
use super::pagination::list_all;
use assent_core::commit_sha::CommitSha;
use assent_core::sweep_classification::HeadPipeline;
use assent_forge::ForgeError;
use assent_forge::sweep_port::{CreatedPipeline, ListedMergeRequest, PipelineCreation};

/// One entry of the MR listing as GitLab sends it (unknown fields ignored).
#[derive(Deserialize)]
struct ApiListedMergeRequest {
    iid: u64,
    state: String,
    #[serde(default, deserialize_with = "commit_sha")]
    sha: Option<CommitSha>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    target_branch: Option<String>,
    #[serde(default)]
    author: Option<ApiAuthor>,
    #[serde(default)]
    user_notes_count: Option<u64>,
}

#[derive(Deserialize)]
struct ApiAuthor {
    id: u64,
}

impl From<ApiListedMergeRequest> for ListedMergeRequest {
    fn from(mr: ApiListedMergeRequest) -> Self {
        ListedMergeRequest {
            iid: mr.iid,
            state: mr.state,
            head_sha: mr.sha,
            updated_at: mr.updated_at,
            target_branch: mr.target_branch,
            author_id: mr.author.map(|a| a.id),
            user_notes_count: mr.user_notes_count,
            head_pipeline: HeadPipeline::NotRead,
        }
    }
}

/// The single MR as GitLab sends it: the listing's fields and `head_pipeline`, told apart
/// from absent (`None`: the token cannot read pipelines) and `null` (`Some(None)`: no
/// pipeline).
#[derive(Deserialize)]
struct ApiSingleMergeRequest {
    #[serde(flatten)]
    listed: ApiListedMergeRequest,
    #[serde(default, deserialize_with = "present")]
    head_pipeline: Option<Option<ApiHeadPipeline>>,
}

/// A commit SHA GitLab may leave out, send as `null` or as `""` (an MR without commits): a
/// SHA spelled any other way is a decode error, never a head the sweep compares.
fn commit_sha<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<CommitSha>, D::Error> {
    match Option::<String>::deserialize(deserializer)? {
        None => Ok(None),
        Some(text) if text.is_empty() => Ok(None),
        Some(text) => CommitSha::parse(&text)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// A field that is present, `null` included: `Some` of what it holds.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

#[derive(Deserialize)]
struct ApiHeadPipeline {
    #[serde(default)]
    status: Option<String>,
    #[serde(default, deserialize_with = "commit_sha")]
    sha: Option<CommitSha>,
}

/// A created pipeline as GitLab sends it.
#[derive(Deserialize)]
struct ApiCreatedPipeline {
    id: u64,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    web_url: Option<String>,
}

impl GitLabClient {
    /// Every open MR of the project, all pages, in creation order; an error when the listing
    /// cannot be proven complete.
    pub fn list_open_merge_requests(&self) -> Result<Vec<ListedMergeRequest>, ForgeError> {
        let endpoint = MergeRequests::builder()
            .project(self.project_ref())
            .state(ApiMergeRequestState::Opened)
            .order_by(MergeRequestOrderBy::CreatedAt)
            .sort(SortOrder::Ascending)
            .build()
            .map_err(|e| build_error("merge requests", e))?;
        let listed: Vec<ApiListedMergeRequest> = list_all(
            &self.requester,
            self.prepare(&endpoint)?,
            &self.listing("open merge requests", false),
        )?;
        Ok(listed.into_iter().map(ListedMergeRequest::from).collect())
    }

    /// The single MR `iid` (`GET projects/:id/merge_requests/:iid`) as a listing entry with
    /// its head pipeline read.
    pub fn merge_request_entry(&self, iid: u64) -> Result<ListedMergeRequest, ForgeError> {
        let endpoint = SingleMergeRequest::builder()
            .project(self.project_ref())
            .merge_request(iid)
            .build()
            .map_err(|e| build_error("merge request", e))?;
        let mr: ApiSingleMergeRequest = self.get(&endpoint)?;
        let mut entry = ListedMergeRequest::from(mr.listed);
        entry.head_pipeline = match mr.head_pipeline {
            None => {
                return Err(ForgeError::Decode {
                    method: "GET".into(),
                    route: format!("merge request !{iid}"),
                    message: "GitLab's answer has no head_pipeline, which it leaves out when the token cannot read pipelines: give the token's user the Developer role (creating MR pipelines needs it too)".into(),
                });
            }
            Some(None) => HeadPipeline::None,
            Some(Some(pipeline)) => HeadPipeline::Status {
                status: pipeline.status.unwrap_or_default(),
                sha: pipeline.sha,
            },
        };
        Ok(entry)
    }

    /// The project's numeric id (`GET projects/:id`), which webhook payloads name it by.
    pub fn project_id(&self) -> Result<u64, ForgeError> {
        #[derive(Deserialize)]
        struct ProjectId {
            id: u64,
        }
        let endpoint = gitlab::api::projects::Project::builder()
            .project(self.project_ref())
            .build()
            .map_err(|e| build_error("project", e))?;
        let project: ProjectId = self.get(&endpoint)?;
        Ok(project.id)
    }

    /// Creates a merge request pipeline for MR `iid` (its current head). Sent once; an
    /// ambiguous failure is reported as such and never retried; GitLab's refusal (`405`,
    /// `400`: nothing created) is an answer.
    pub fn create_merge_request_pipeline(&self, iid: u64) -> Result<PipelineCreation, ForgeError> {
        let endpoint = CreateMergeRequestPipelines::builder()
            .project(self.project_ref())
            .merge_request(iid)
            .build()
            .map_err(|e| build_error("merge request pipelines", e))?;
        let request = self.prepare(&endpoint)?;
        let response = match self.requester.write(&request) {
            Ok(response) => response,
            Err(ForgeError::Status {
                status: status @ (400 | 405),
                message,
                ..
            }) => return Ok(PipelineCreation::Refused { status, message }),
            Err(e) => return Err(e),
        };
        let created: ApiCreatedPipeline = self.decode_write(&request, &response)?;
        Ok(PipelineCreation::Created(CreatedPipeline {
            id: created.id,
            status: created.status,
            web_url: created.web_url,
        }))
    }
}

#[cfg(test)]
mod tests {
    use fake_gitlab::fixtures::{AUTHOR_ID, BASE_SHA, HEAD_SHA, PROJECT_ID};
    use fake_gitlab::{FakeGitLab, FaultAction, FaultRule, MergeRequest, RouteKind};
    use serde_json::json;

    use super::*;
    use crate::tests::{config, last_page, world};

    /// The head the listing test names.
    const LISTED_SHA: &str = "abc0000000000000000000000000000000000000";

    /// The bot's client of the fake's project, one attempt per request.
    fn client(fake: &FakeGitLab) -> GitLabClient {
        let mut config = config(fake);
        config.retry.max_attempts = 1;
        GitLabClient::new(&config).unwrap()
    }

    #[test]
    fn the_listing_asks_for_every_open_mr() {
        // One MR with every field read, one with none of them: a shape the fake's state
        // cannot hold, answered as it is.
        let fake = FakeGitLab::start(world());
        fake.inject(
            FaultRule::new(last_page(json!([
                {"iid": 7, "state": "opened", "sha": LISTED_SHA, "updated_at": "2026-11-30T17:41:36.123Z",
                 "title": "x", "target_branch": "main", "blocking_discussions_resolved": true,
                 "author": {"id": 300, "username": "bob"}, "user_notes_count": 3},
                {"iid": 8, "state": "opened"},
                {"iid": 9, "state": "opened", "sha": ""}
            ])))
            .route(RouteKind::MergeRequests),
        );
        let listed = client(&fake).list_open_merge_requests().unwrap();
        let seen = fake.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].method.as_str(), seen[0].path.as_str()),
            ("GET", "/api/v4/projects/group%2Fsub%2Fproj/merge_requests")
        );
        for param in [
            "state=opened",
            "order_by=created_at",
            "sort=asc",
            "per_page=100",
        ] {
            assert!(
                seen[0].query.split('&').any(|p| p == param),
                "{param} missing: {}",
                seen[0].query
            );
        }
        // No window: an MR waiting at REVIEW can have any `updated_at`.
        assert!(
            !seen[0].query.contains("updated_after"),
            "{}",
            seen[0].query
        );
        assert_eq!(listed.len(), 3);
        assert_eq!(
            listed[0].head_sha.as_ref().map(CommitSha::as_str),
            Some(LISTED_SHA)
        );
        // Left out, or empty (an MR without commits): no head.
        assert_eq!((&listed[1].head_sha, &listed[2].head_sha), (&None, &None));
        assert_eq!(listed[1].updated_at, None);
        assert_eq!(listed[0].target_branch.as_deref(), Some("main"));
        assert_eq!(
            (listed[0].author_id, listed[0].user_notes_count),
            (Some(300), Some(3))
        );
        assert_eq!(listed[1].target_branch, None);
        assert_eq!(
            (listed[1].author_id, listed[1].user_notes_count),
            (None, None)
        );
    }

    #[test]
    fn a_listed_head_that_is_no_commit_sha_fails_the_listing() {
        let fake = FakeGitLab::start(world());
        fake.inject(
            FaultRule::new(last_page(
                json!([{"iid": 7, "state": "opened", "sha": "abc"}]),
            ))
            .route(RouteKind::MergeRequests),
        );
        let error = client(&fake).list_open_merge_requests().unwrap_err();
        assert!(error.to_string().contains("is not a commit SHA"), "{error}");
    }

    #[test]
    fn the_single_mr_reads_the_head_pipelines_status_and_sha() {
        let fake = FakeGitLab::start(world());
        fake.set_head_pipeline(PROJECT_ID, 7, Some((4000, "running")));
        // A push after the pipeline: `head_pipeline` is still the old head's
        // (`app/models/merge_request.rb`).
        fake.set_head(PROJECT_ID, 7, "5555555555555555555555555555555555555555");
        let entry = client(&fake).merge_request_entry(7).unwrap();
        assert_eq!(
            entry.head_pipeline,
            HeadPipeline::Status {
                status: "running".into(),
                sha: Some(CommitSha::parse(HEAD_SHA).unwrap())
            }
        );
        assert_eq!(
            entry.head_sha.as_ref().map(CommitSha::as_str),
            Some("5555555555555555555555555555555555555555")
        );
        fake.set_head_pipeline(PROJECT_ID, 7, None);
        let entry = client(&fake).merge_request_entry(7).unwrap();
        assert_eq!(entry.head_pipeline, HeadPipeline::None, "null: no pipeline");
    }

    #[test]
    fn a_single_mr_without_head_pipeline_is_a_named_error_not_no_pipeline() {
        // GitLab leaves `head_pipeline` out when the token cannot read pipelines
        // (`lib/api/entities/merge_request.rb`).
        let fake = FakeGitLab::start(world());
        fake.inject(
            FaultRule::new(FaultAction::Reply {
                status: 200,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body:
                    json!({"iid": 7, "state": "opened", "sha": HEAD_SHA, "target_branch": "main"})
                        .to_string(),
            })
            .route(RouteKind::MergeRequest),
        );
        let err = client(&fake).merge_request_entry(7).unwrap_err();
        assert!(matches!(err, ForgeError::Decode { .. }), "{err:?}");
        assert!(err.to_string().contains("cannot read pipelines"), "{err}");
    }

    #[test]
    fn pipeline_creation_posts_once_to_the_mr_pipelines_route() {
        let mut state = world();
        state.pipeline_id_start = 5001;
        state.projects[0]
            .merge_requests
            .push(MergeRequest::new(9, AUTHOR_ID, HEAD_SHA, BASE_SHA).branches("other", "main"));
        let fake = FakeGitLab::start(state);
        let created = client(&fake).create_merge_request_pipeline(9).unwrap();
        let seen = fake.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].method.as_str(), seen[0].path.as_str()),
            (
                "POST",
                "/api/v4/projects/group%2Fsub%2Fproj/merge_requests/9/pipelines"
            )
        );
        assert_eq!(seen[0].status, Some(200), "GitLab answers 200, not 201");
        let PipelineCreation::Created(created) = created else {
            panic!("{created:?}")
        };
        assert_eq!(created.id, 5001);
        assert_eq!(created.status.as_deref(), Some("created"));
        let pipelines = fake.pipelines(PROJECT_ID);
        assert_eq!(pipelines.len(), 1);
        assert_eq!(pipelines[0].mr_iid, Some(9));
    }

    #[test]
    fn gitlabs_refusals_are_answers_and_create_nothing() {
        // 405: GitLab made no pipeline for an MR without commits; 400: the token's user is
        // below Developer (`lib/api/merge_requests.rb`, `MergeRequests::CreatePipelineService`).
        let mut state = world();
        state.projects[0].mr_mut(7).unwrap().has_no_commits = true;
        state
            .tokens
            .push(fake_gitlab::Token::new("glpat-reporter", 100, &["api"]).access_level(20));
        let fake = FakeGitLab::start(state);
        let refused = client(&fake).create_merge_request_pipeline(7).unwrap();
        assert!(
            matches!(refused, PipelineCreation::Refused { status: 405, .. }),
            "{refused:?}"
        );
        fake.with_state(|s| s.mr_mut_ref(PROJECT_ID, 7).unwrap().has_no_commits = false);
        let mut reporter = config(&fake);
        reporter.token = crate::Token::new("glpat-reporter");
        reporter.retry.max_attempts = 1;
        let refused = GitLabClient::new(&reporter)
            .unwrap()
            .create_merge_request_pipeline(7)
            .unwrap();
        let PipelineCreation::Refused { status, message } = refused else {
            panic!("{refused:?}")
        };
        assert_eq!(status, 400);
        assert!(message.contains("Insufficient permissions"), "{message}");
        assert!(fake.pipelines(PROJECT_ID).is_empty());
    }

    #[test]
    fn other_failures_of_a_pipeline_creation_stay_errors() {
        let fake = FakeGitLab::start(world());
        fake.inject(FaultRule::new(FaultAction::Forbidden).route(RouteKind::Pipelines));
        let err = client(&fake).create_merge_request_pipeline(9).unwrap_err();
        assert!(
            matches!(err, ForgeError::Status { status: 403, .. }),
            "{err:?}"
        );
        assert!(fake.pipelines(PROJECT_ID).is_empty());
    }
}
