//! Project-level routes of the sweep (SPEC §9), on [`GitLabClient`]:
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
    MergeRequestOrderBy, MergeRequestState as ApiMergeRequestState, MergeRequests,
};
use serde::Deserialize;

use super::client::GitLabClient;
use super::forge::build_error;
use super::pagination::list_all;
use assent_forge::ForgeError;

/// One entry of the MR listing. The listing carries no `head_pipeline`: read the single MR
/// for that.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ListedMergeRequest {
    /// The MR's IID.
    pub iid: u64,
    /// `opened`, `closed`, `merged` or `locked`.
    pub state: String,
    /// The head SHA, when reported.
    #[serde(default)]
    pub sha: Option<String>,
    /// The MR's `updated_at`, when reported.
    #[serde(default)]
    pub updated_at: Option<String>,
    /// The branch the MR targets, when reported.
    #[serde(default)]
    pub target_branch: Option<String>,
    /// GitLab's `blocking_discussions_resolved`: every resolvable discussion is resolved.
    #[serde(default)]
    pub blocking_discussions_resolved: Option<bool>,
}

/// A pipeline just created for a merge request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CreatedPipeline {
    /// The pipeline id.
    pub id: u64,
    /// Its status (`created` right after creation).
    #[serde(default)]
    pub status: Option<String>,
    /// Its web URL.
    #[serde(default)]
    pub web_url: Option<String>,
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
        list_all(
            &self.requester,
            self.prepare(&endpoint)?,
            &self.listing("open merge requests", false),
        )
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
        self.decode_write(&request, &response)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;

    use super::*;
    use crate::{GitLabConfig, Token};

    /// A one-shot HTTP server answering `status` with `body`; returns the base URL and a
    /// receiver of the request line.
    fn serve_once(status: u16, body: &'static str) -> (String, mpsc::Receiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let mut length = 0usize;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut rest = vec![0; length];
            reader.read_exact(&mut rest).unwrap();
            tx.send(line.trim().to_owned()).unwrap();
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nX-Next-Page: \r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        });
        (format!("http://{addr}/api/v4"), rx)
    }

    fn forge(base: &str) -> GitLabClient {
        let mut config = GitLabConfig::new(base, Token::new("t0ken"), "group/sub/proj");
        config.retry.max_attempts = 1;
        GitLabClient::new(&config).unwrap()
    }

    #[test]
    fn the_listing_asks_for_open_mrs_updated_in_the_window() {
        let (base, rx) = serve_once(
            200,
            r#"[{"iid":7,"state":"opened","sha":"abc","updated_at":"2026-11-30T17:41:36.123Z","title":"x","target_branch":"main","blocking_discussions_resolved":true},{"iid":8,"state":"opened"}]"#,
        );
        let after = DateTime::parse_from_rfc3339("2026-11-28T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let listed = forge(&base).list_open_merge_requests(after).unwrap();
        let line = rx.recv().unwrap();
        assert!(
            line.starts_with("GET /api/v4/projects/group%2Fsub%2Fproj/merge_requests?"),
            "{line}"
        );
        for param in [
            "state=opened",
            "updated_after=2026-11-28T12%3A00%3A00Z",
            "order_by=created_at",
            "sort=asc",
            "per_page=100",
        ] {
            assert!(line.contains(param), "{param} missing: {line}");
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
        let (base, rx) = serve_once(201, r#"{"id":5001,"status":"created","sha":"abc"}"#);
        let created = forge(&base).create_merge_request_pipeline(9).unwrap();
        assert_eq!(
            rx.recv().unwrap(),
            "POST /api/v4/projects/group%2Fsub%2Fproj/merge_requests/9/pipelines HTTP/1.1"
        );
        assert_eq!(created.id, 5001);
        assert_eq!(created.status.as_deref(), Some("created"));
    }

    #[test]
    fn a_refused_pipeline_creation_is_a_status_error() {
        let (base, _rx) = serve_once(403, r#"{"message":"403 Forbidden"}"#);
        let err = forge(&base).create_merge_request_pipeline(9).unwrap_err();
        assert!(
            matches!(err, ForgeError::Status { status: 403, .. }),
            "{err:?}"
        );
    }
}
