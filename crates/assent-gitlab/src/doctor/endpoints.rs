//! The routes `assent doctor` reads, as `gitlab::api::Endpoint` impls in the crate's style.
//! They only describe requests; the one transport sends them.
//!
//! * `GET version`
//! * `GET user`, `GET personal_access_tokens/self` (works for project access tokens too)
//! * `GET projects/:id`, `GET projects/:id/members/all/:user_id`
//! * `GET projects/:id/merge_requests/:iid`
//! * `GET projects/:id/jobs/:job_id`
//! * `GET projects/:id/resource_groups/:key`, `GET …/resource_groups/:key/current_job` (18.6+)
//! * `GET projects/:id/variables/:key`, optionally `filter[environment_scope]=…` (Maintainer)
//! * `GET projects/:id/ci/lint?content_ref=…` (the project's configuration file at a commit)
//! * `POST projects/:id/ci/lint` (form `content`: validates a configuration, writes nothing)
//! * `GET projects/:id/approvals` (approval settings), `GET projects/:id/approval_rules`,
//!   `GET projects/:id/merge_requests/:iid/approval_rules` (GitLab Premium)
//! * `GET projects/:id/hooks` (Maintainer; with `--serve-url`)

use gitlab::api::common::{NameOrId, path_escaped};
use gitlab::api::endpoint_prelude::*;

/// One doctor route.
#[derive(Debug, Clone)]
pub enum Route<'a> {
    /// `GET version`
    Version,
    /// `GET user`
    CurrentUser,
    /// `GET personal_access_tokens/self`
    TokenSelf,
    /// `GET projects/:id`
    Project,
    /// `GET projects/:id/members/all/:user_id`
    Member(u64),
    /// `GET projects/:id/merge_requests/:iid`
    MergeRequest(u64),
    /// `GET projects/:id/jobs/:job_id`
    Job(u64),
    /// `GET projects/:id/resource_groups/:key`
    ResourceGroup(Cow<'a, str>),
    /// `GET projects/:id/resource_groups/:key/current_job`
    ResourceGroupCurrentJob(Cow<'a, str>),
    /// `GET projects/:id/variables/:key`, narrowed to one environment scope when given.
    Variable {
        /// The variable's key.
        key: Cow<'a, str>,
        /// `filter[environment_scope]`.
        scope: Option<Cow<'a, str>>,
    },
    /// `GET projects/:id/ci/lint?content_ref=…`
    LintAtRef(Cow<'a, str>),
    /// `POST projects/:id/ci/lint` with `content`
    LintContent(Cow<'a, str>),
    /// `GET projects/:id/approvals`
    ApprovalSettings,
    /// `GET projects/:id/approval_rules?per_page=100`
    ApprovalRules,
    /// `GET projects/:id/merge_requests/:iid/approval_rules?per_page=100`
    MergeRequestApprovalRules(u64),
    /// `GET projects/:id/hooks?per_page=100`
    ProjectHooks,
}

impl Route<'_> {
    /// The route's path for an error text: no project, no query (`projects/:id/jobs/:job_id`).
    pub fn path_template(&self) -> &'static str {
        match self {
            Route::Version => "version",
            Route::CurrentUser => "user",
            Route::TokenSelf => "personal_access_tokens/self",
            Route::Project => "projects/:id",
            Route::Member(_) => "projects/:id/members/all/:user_id",
            Route::MergeRequest(_) => "projects/:id/merge_requests/:iid",
            Route::Job(_) => "projects/:id/jobs/:job_id",
            Route::ResourceGroup(_) => "projects/:id/resource_groups/:key",
            Route::ResourceGroupCurrentJob(_) => "projects/:id/resource_groups/:key/current_job",
            Route::Variable { .. } => "projects/:id/variables/:key",
            Route::LintAtRef(_) | Route::LintContent(_) => "projects/:id/ci/lint",
            Route::ApprovalSettings => "projects/:id/approvals",
            Route::ApprovalRules => "projects/:id/approval_rules",
            Route::MergeRequestApprovalRules(_) => {
                "projects/:id/merge_requests/:iid/approval_rules"
            }
            Route::ProjectHooks => "projects/:id/hooks",
        }
    }

    /// `POST` for the one route that sends a body (the lint of a configuration, which writes
    /// nothing), `GET` for every other.
    pub fn method_name(&self) -> &'static str {
        match self {
            Route::LintContent(_) => "POST",
            _ => "GET",
        }
    }
}

/// A doctor request: a route, relative to a project where the route needs one.
#[derive(Debug, Clone)]
pub struct DoctorEndpoint<'a> {
    /// The project id or path.
    pub project: NameOrId<'a>,
    /// The route.
    pub route: Route<'a>,
}

impl Endpoint for DoctorEndpoint<'_> {
    fn method(&self) -> Method {
        match self.route {
            Route::LintContent(_) => Method::POST,
            _ => Method::GET,
        }
    }

    fn endpoint(&self) -> Cow<'static, str> {
        let p = &self.project;
        match &self.route {
            Route::Version => "version".into(),
            Route::CurrentUser => "user".into(),
            Route::TokenSelf => "personal_access_tokens/self".into(),
            Route::Project => format!("projects/{p}").into(),
            Route::Member(user) => format!("projects/{p}/members/all/{user}").into(),
            Route::MergeRequest(iid) => format!("projects/{p}/merge_requests/{iid}").into(),
            Route::Job(id) => format!("projects/{p}/jobs/{id}").into(),
            Route::ResourceGroup(key) => {
                format!("projects/{p}/resource_groups/{}", path_escaped(key)).into()
            }
            Route::ResourceGroupCurrentJob(key) => format!(
                "projects/{p}/resource_groups/{}/current_job",
                path_escaped(key)
            )
            .into(),
            Route::Variable { key, .. } => {
                format!("projects/{p}/variables/{}", path_escaped(key)).into()
            }
            Route::LintAtRef(_) | Route::LintContent(_) => format!("projects/{p}/ci/lint").into(),
            Route::ApprovalSettings => format!("projects/{p}/approvals").into(),
            Route::ApprovalRules => format!("projects/{p}/approval_rules").into(),
            Route::MergeRequestApprovalRules(iid) => {
                format!("projects/{p}/merge_requests/{iid}/approval_rules").into()
            }
            Route::ProjectHooks => format!("projects/{p}/hooks").into(),
        }
    }

    fn parameters(&self) -> QueryParams<'_> {
        let mut params = QueryParams::default();
        match &self.route {
            Route::LintAtRef(content_ref) => {
                params.push("content_ref", content_ref.as_ref());
                params.push("dry_run", false);
            }
            // One page is enough: a rule missing from it can only make the verdict weaker,
            // since every rule must be satisfied.
            Route::ApprovalRules | Route::MergeRequestApprovalRules(_) => {
                params.push("per_page", 100u64);
            }
            // One page too: a hook past it is reported as not seen, never as missing.
            Route::ProjectHooks => {
                params.push("per_page", 100u64);
            }
            Route::Variable {
                scope: Some(scope), ..
            } => {
                params.push("filter[environment_scope]", scope.as_ref());
            }
            _ => {}
        }
        params
    }

    fn body(&self) -> Result<Option<(&'static str, Vec<u8>)>, BodyError> {
        match &self.route {
            Route::LintContent(content) => {
                let mut params = FormParams::default();
                params.push("content", content.as_ref());
                params.push("dry_run", false);
                params.into_body()
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(route: Route<'static>) -> DoctorEndpoint<'static> {
        DoctorEndpoint {
            project: "group/sub/proj".into(),
            route,
        }
    }

    #[test]
    fn routes() {
        assert_eq!(e(Route::Version).endpoint(), "version");
        assert_eq!(
            e(Route::Job(9)).endpoint(),
            "projects/group%2Fsub%2Fproj/jobs/9"
        );
        assert_eq!(
            e(Route::ResourceGroupCurrentJob("assent-mr-7".into())).endpoint(),
            "projects/group%2Fsub%2Fproj/resource_groups/assent-mr-7/current_job"
        );
        let lint = e(Route::LintAtRef("abc".into()));
        assert_eq!(lint.method(), Method::GET);
        let mut url = url::Url::parse("https://x/").unwrap();
        lint.parameters().add_to_url(&mut url);
        assert_eq!(url.query(), Some("content_ref=abc&dry_run=false"));
        let post = e(Route::LintContent("a: b".into()));
        assert_eq!(post.method(), Method::POST);
        let (mime, body) = post.body().unwrap().unwrap();
        assert_eq!(mime, "application/x-www-form-urlencoded");
        assert_eq!(body, b"content=a%3A+b&dry_run=false");
        assert_eq!(
            e(Route::ApprovalSettings).endpoint(),
            "projects/group%2Fsub%2Fproj/approvals"
        );
        let rules = e(Route::MergeRequestApprovalRules(7));
        assert_eq!(
            rules.endpoint(),
            "projects/group%2Fsub%2Fproj/merge_requests/7/approval_rules"
        );
        let mut url = url::Url::parse("https://x/").unwrap();
        rules.parameters().add_to_url(&mut url);
        assert_eq!(url.query(), Some("per_page=100"));
        assert_eq!(e(Route::ApprovalRules).method(), Method::GET);
    }

    #[test]
    fn a_routes_name_for_an_error_text_holds_no_project_and_no_value() {
        let job = Route::Job(9);
        assert_eq!(job.path_template(), "projects/:id/jobs/:job_id");
        assert_eq!(job.method_name(), "GET");
        let variable = Route::Variable {
            key: "ASSENT_TOKEN".into(),
            scope: Some("production".into()),
        };
        assert_eq!(variable.path_template(), "projects/:id/variables/:key");
        let lint = Route::LintContent("secret: value".into());
        assert_eq!(lint.method_name(), "POST");
        assert_eq!(e(lint.clone()).method(), Method::POST);
        assert_eq!(lint.path_template(), "projects/:id/ci/lint");
    }
}
