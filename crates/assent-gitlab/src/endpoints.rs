//! GitLab routes the `gitlab` crate has no builder for, as `gitlab::api::Endpoint` impls in
//! the crate's style. They only describe requests; [`super::transport`] sends them.
//!
//! * [`ResolveMergeRequestDiscussion`]:
//!   `PUT projects/:id/merge_requests/:iid/discussions/:discussion_id?resolved=true`
//! * [`CreateMergeRequestDiscussionNote`]:
//!   `POST projects/:id/merge_requests/:iid/discussions/:discussion_id/notes` (form `body`)
//! * [`MergeRequestNote`]: `GET projects/:id/merge_requests/:iid/notes/:note_id`
//! * [`MergeRequestVersions`]: `GET projects/:id/merge_requests/:iid/versions` (paginated)
//!
//! Path segments go through `gitlab::api::common::path_escaped`, as the crate's own builders
//! do, so a project path `group/sub/proj` is the single segment `group%2Fsub%2Fproj`.

use gitlab::api::common::{NameOrId, path_escaped};
use gitlab::api::endpoint_prelude::*;

/// Resolves (or unresolves) a merge request discussion.
#[derive(Debug, Clone)]
pub struct ResolveMergeRequestDiscussion<'a> {
    /// The project id or path.
    pub project: NameOrId<'a>,
    /// The merge request IID.
    pub merge_request: u64,
    /// The discussion id.
    pub discussion: Cow<'a, str>,
    /// `true` to resolve, `false` to reopen.
    pub resolved: bool,
}

impl Endpoint for ResolveMergeRequestDiscussion<'_> {
    fn method(&self) -> Method {
        Method::PUT
    }

    fn endpoint(&self) -> Cow<'static, str> {
        format!(
            "projects/{}/merge_requests/{}/discussions/{}",
            self.project,
            self.merge_request,
            path_escaped(&self.discussion),
        )
        .into()
    }

    fn parameters(&self) -> QueryParams<'_> {
        let mut params = QueryParams::default();
        params.push("resolved", self.resolved);
        params
    }
}

/// Adds a note to an existing merge request discussion (a reply in a thread).
#[derive(Debug, Clone)]
pub struct CreateMergeRequestDiscussionNote<'a> {
    /// The project id or path.
    pub project: NameOrId<'a>,
    /// The merge request IID.
    pub merge_request: u64,
    /// The discussion id.
    pub discussion: Cow<'a, str>,
    /// The note's Markdown body.
    pub body: Cow<'a, str>,
}

impl Endpoint for CreateMergeRequestDiscussionNote<'_> {
    fn method(&self) -> Method {
        Method::POST
    }

    fn endpoint(&self) -> Cow<'static, str> {
        format!(
            "projects/{}/merge_requests/{}/discussions/{}/notes",
            self.project,
            self.merge_request,
            path_escaped(&self.discussion),
        )
        .into()
    }

    fn body(&self) -> Result<Option<(&'static str, Vec<u8>)>, BodyError> {
        let mut params = FormParams::default();
        params.push("body", self.body.as_ref());
        params.into_body()
    }
}

/// One note of a merge request.
#[derive(Debug, Clone)]
pub struct MergeRequestNote<'a> {
    /// The project id or path.
    pub project: NameOrId<'a>,
    /// The merge request IID.
    pub merge_request: u64,
    /// The note id.
    pub note: u64,
}

impl Endpoint for MergeRequestNote<'_> {
    fn method(&self) -> Method {
        Method::GET
    }

    fn endpoint(&self) -> Cow<'static, str> {
        format!(
            "projects/{}/merge_requests/{}/notes/{}",
            self.project, self.merge_request, self.note
        )
        .into()
    }
}

/// The diff versions of a merge request, newest first (`lib/api/merge_request_diffs.rb`:
/// `paginate(merge_request.merge_request_diffs.order_id_desc)`).
#[derive(Debug, Clone)]
pub struct MergeRequestVersions<'a> {
    /// The project id or path.
    pub project: NameOrId<'a>,
    /// The merge request IID.
    pub merge_request: u64,
}

impl Endpoint for MergeRequestVersions<'_> {
    fn method(&self) -> Method {
        Method::GET
    }

    fn endpoint(&self) -> Cow<'static, str> {
        format!(
            "projects/{}/merge_requests/{}/versions",
            self.project, self.merge_request
        )
        .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_route_and_query() {
        let e = ResolveMergeRequestDiscussion {
            project: "group/sub/proj".into(),
            merge_request: 7,
            discussion: "6a9c1750b37d".into(),
            resolved: true,
        };
        assert_eq!(e.method(), Method::PUT);
        assert_eq!(
            e.endpoint(),
            "projects/group%2Fsub%2Fproj/merge_requests/7/discussions/6a9c1750b37d"
        );
        let mut url = url::Url::parse("https://x/").unwrap();
        e.parameters().add_to_url(&mut url);
        assert_eq!(url.query(), Some("resolved=true"));
        assert!(e.body().unwrap().is_none());
    }

    #[test]
    fn reply_route_and_body() {
        let e = CreateMergeRequestDiscussionNote {
            project: NameOrId::Id(42),
            merge_request: 7,
            discussion: "abc".into(),
            body: "a & b".into(),
        };
        assert_eq!(e.method(), Method::POST);
        assert_eq!(
            e.endpoint(),
            "projects/42/merge_requests/7/discussions/abc/notes"
        );
        let (mime, data) = e.body().unwrap().unwrap();
        assert_eq!(mime, "application/x-www-form-urlencoded");
        assert_eq!(data, b"body=a+%26+b");
    }

    #[test]
    fn note_route() {
        let e = MergeRequestNote {
            project: "g/p".into(),
            merge_request: 7,
            note: 99,
        };
        assert_eq!(e.method(), Method::GET);
        assert_eq!(e.endpoint(), "projects/g%2Fp/merge_requests/7/notes/99");
    }
}
