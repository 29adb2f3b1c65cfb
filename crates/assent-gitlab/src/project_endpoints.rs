//! Project-level routes of the sweep (docs/contract.md#sweep), on [`GitLabClient`], returning the sweep
//! port's types ([`assent_forge::sweep`]):
//!
//! * [`GitLabClient::list_open_merge_requests`]: `GET projects/:id/merge_requests` with
//!   `state=opened`, `updated_after=<window start>`, `order_by=created_at`, `sort=asc`, every
//!   page through the pagination driver. GitLab filters by `updated_after` server-side, so an
//!   MR outside the window costs nothing. Creation order ascending is the order least
//!   disturbed by activity during the listing (an update does not move an MR, a new MR lands
//!   on the last page); the caller deduplicates by IID all the same.
//! * [`GitLabClient::create_merge_request_pipeline`]:
//!   `POST projects/:id/merge_requests/:iid/pipelines`, sent once (a write is never retried).
//!
//! Both use the `gitlab` crate's builders (`MergeRequests`, `CreateMergeRequestPipelines`) and
//! go through the client's one transport and retry policy. The client knows no merge
//! request: the IID is an argument, and one client serves the whole sweep.

use chrono::{DateTime, Utc};
use gitlab::api::common::SortOrder;
use gitlab::api::projects::merge_requests::pipelines::CreateMergeRequestPipelines;
use gitlab::api::projects::merge_requests::{
    MergeRequest as SingleMergeRequest, MergeRequestOrderBy,
    MergeRequestState as ApiMergeRequestState, MergeRequests,
};
use serde::Deserialize;

use super::client::GitLabClient;
use super::client::build_error;
use super::pagination::list_all;
use assent_core::sweep::HeadPipeline;
use assent_forge::ForgeError;
use assent_forge::sweep::{CreatedPipeline, ListedMergeRequest};

/// One entry of the MR listing as GitLab sends it (unknown fields ignored).
#[derive(Deserialize)]
struct ApiListedMergeRequest {
    iid: u64,
    state: String,
    #[serde(default)]
    sha: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    target_branch: Option<String>,
    #[serde(default)]
    blocking_discussions_resolved: Option<bool>,
}

impl From<ApiListedMergeRequest> for ListedMergeRequest {
    fn from(mr: ApiListedMergeRequest) -> Self {
        ListedMergeRequest {
            iid: mr.iid,
            state: mr.state,
            sha: mr.sha,
            updated_at: mr.updated_at,
            target_branch: mr.target_branch,
            blocking_discussions_resolved: mr.blocking_discussions_resolved,
            head_pipeline: HeadPipeline::NotRead,
        }
    }
}

/// The single MR as GitLab sends it: the listing's fields and `head_pipeline` (`null` when
/// the MR has none).
#[derive(Deserialize)]
struct ApiSingleMergeRequest {
    #[serde(flatten)]
    listed: ApiListedMergeRequest,
    #[serde(default)]
    head_pipeline: Option<ApiHeadPipeline>,
}

#[derive(Deserialize)]
struct ApiHeadPipeline {
    #[serde(default)]
    status: Option<String>,
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
    /// Every open MR of the project updated at or after `updated_after`, all pages, in
    /// creation order; an error when the listing cannot be proven complete.
    pub fn list_open_merge_requests(
        &self,
        updated_after: DateTime<Utc>,
    ) -> Result<Vec<ListedMergeRequest>, ForgeError> {
        let endpoint = MergeRequests::builder()
            .project(self.project_ref())
            .state(ApiMergeRequestState::Opened)
            .updated_after(updated_after)
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
        entry.head_pipeline = match mr.head_pipeline.and_then(|p| p.status) {
            Some(status) => HeadPipeline::Status(status),
            None => HeadPipeline::None,
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
    /// ambiguous failure is reported as such and never retried.
    pub fn create_merge_request_pipeline(&self, iid: u64) -> Result<CreatedPipeline, ForgeError> {
        let endpoint = CreateMergeRequestPipelines::builder()
            .project(self.project_ref())
            .merge_request(iid)
            .build()
            .map_err(|e| build_error("merge request pipelines", e))?;
        let request = self.prepare(&endpoint)?;
        let response = self.requester.write(&request)?;
        let created: ApiCreatedPipeline = self.decode_write(&request, &response)?;
        Ok(CreatedPipeline {
            id: created.id,
            status: created.status,
            web_url: created.web_url,
        })
    }
}

#[cfg(test)]
mod tests {
    use fake_gitlab::fixtures::{AUTHOR_ID, BASE_SHA, HEAD_SHA, PROJECT_ID};
    use fake_gitlab::{FakeGitLab, FaultAction, FaultRule, MergeRequest, RouteKind};
    use serde_json::json;

    use super::*;
    use crate::tests::{config, world};

    /// The bot's client of the fake's project, one attempt per request.
    fn client(fake: &FakeGitLab) -> GitLabClient {
        let mut config = config(fake);
        config.retry.max_attempts = 1;
        GitLabClient::new(&config).unwrap()
    }

    #[test]
    fn the_listing_asks_for_open_mrs_updated_in_the_window() {
        // One MR with every field read, one with none of them: a shape the fake's state
        // cannot hold, answered as it is.
        let fake = FakeGitLab::start(world());
        fake.inject(
            FaultRule::new(FaultAction::Reply {
                status: 200,
                headers: vec![
                    ("Content-Type".into(), "application/json".into()),
                    ("X-Next-Page".into(), String::new()),
                ],
                body: json!([
                    {"iid": 7, "state": "opened", "sha": "abc", "updated_at": "2026-11-30T17:41:36.123Z",
                     "title": "x", "target_branch": "main", "blocking_discussions_resolved": true},
                    {"iid": 8, "state": "opened"}
                ])
                .to_string(),
            })
            .route(RouteKind::MergeRequests),
        );
        let after = DateTime::parse_from_rfc3339("2026-11-28T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let listed = client(&fake).list_open_merge_requests(after).unwrap();
        let seen = fake.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].method.as_str(), seen[0].path.as_str()),
            ("GET", "/api/v4/projects/group%2Fsub%2Fproj/merge_requests")
        );
        for param in [
            "state=opened",
            "updated_after=2026-11-28T12%3A00%3A00Z",
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
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].sha.as_deref(), Some("abc"));
        assert_eq!(listed[1].updated_at, None);
        assert_eq!(listed[0].target_branch.as_deref(), Some("main"));
        assert_eq!(listed[0].blocking_discussions_resolved, Some(true));
        assert_eq!(listed[1].target_branch, None);
        assert_eq!(listed[1].blocking_discussions_resolved, None);
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
        assert_eq!(created.id, 5001);
        assert_eq!(created.status.as_deref(), Some("created"));
        let pipelines = fake.pipelines(PROJECT_ID);
        assert_eq!(pipelines.len(), 1);
        assert_eq!(pipelines[0].mr_iid, Some(9));
    }

    #[test]
    fn a_refused_pipeline_creation_is_a_status_error() {
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
