//! Routing on the raw (still percent-encoded) request path.

use serde::{Deserialize, Serialize};

/// The API route a path matches (the method is matched separately).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum RouteKind {
    /// `/user`
    User,
    /// `/users/:id`
    UserById,
    /// `/personal_access_tokens/self`
    TokenSelf,
    /// `/projects/:id`
    Project,
    /// `/projects/:id/members/all/:user_id`
    ProjectMember,
    /// `/projects/:id/merge_requests`
    MergeRequests,
    /// `/projects/:id/merge_requests/:iid`
    MergeRequest,
    /// `/projects/:id/merge_requests/:iid/discussions` (GET list, POST create thread)
    Discussions,
    /// `/projects/:id/merge_requests/:iid/discussions/:discussion_id` (GET, PUT resolve)
    Discussion,
    /// `/projects/:id/merge_requests/:iid/discussions/:discussion_id/notes` (POST reply)
    DiscussionNotes,
    /// `/projects/:id/merge_requests/:iid/discussions/:discussion_id/notes/:note_id`
    DiscussionNote,
    /// `/projects/:id/merge_requests/:iid/notes` (GET list, POST plain note)
    Notes,
    /// `/projects/:id/merge_requests/:iid/notes/:note_id` (GET, PUT edit, DELETE)
    Note,
    /// `/projects/:id/merge_requests/:iid/diffs`
    Diffs,
    /// `/projects/:id/merge_requests/:iid/versions` (GET: the MR's diff versions, newest
    /// first)
    Versions,
    /// `/projects/:id/merge_requests/:iid/changes` (deprecated by GitLab for `diffs`; the MR
    /// with its `changes` and `overflow`)
    Changes,
    /// `/projects/:id/merge_requests/:iid/pipelines`
    Pipelines,
    /// `/projects/:id/repository/tree`
    Tree,
    /// `/projects/:id/repository/files/:path`
    File,
    /// `/projects/:id/repository/files/:path/raw`
    FileRaw,
    /// `/projects/:id/repository/branches/:branch`
    Branch,
    /// `/projects/:id/repository/commits/:sha` (GET: the commit, 404 for a ref GitLab does
    /// not know)
    Commit,
    /// `/version`
    Version,
    /// `/projects/:id/jobs/:job_id`
    Job,
    /// `/projects/:id/resource_groups/:key`
    ResourceGroup,
    /// `/projects/:id/variables/:key` (optionally `filter[environment_scope]`)
    ProjectVariable,
    /// `/projects/:id/resource_groups/:key/current_job` (GitLab 18.6+)
    ResourceGroupCurrentJob,
    /// `/projects/:id/ci/lint` (GET: the project's config at `content_ref`; POST: `content`)
    CiLint,
    /// `/projects/:id/merge_requests/:iid/approvals` (GET: who approves)
    MrApprovals,
    /// `/projects/:id/merge_requests/:iid/approve` (POST, optional `sha`)
    Approve,
    /// `/projects/:id/merge_requests/:iid/unapprove` (POST)
    Unapprove,
    /// `/projects/:id/merge_requests/:iid/approval_rules` (GET)
    MrApprovalRules,
    /// `/projects/:id/approvals` (GET: the project's approval settings)
    ProjectApprovals,
    /// `/projects/:id/approval_rules` (GET)
    ApprovalRules,
    /// `/projects/:id/hooks` (GET, Maintainer and above)
    ProjectHooks,
    /// Anything else (answered 404).
    Unknown,
}

#[derive(Clone, Debug)]
pub(crate) struct Route {
    pub kind: RouteKind,
    /// Percent-decoded project id or path.
    pub project: String,
    pub iid: u64,
    pub discussion: String,
    pub note: u64,
    /// Percent-decoded file path, branch name or member id.
    pub name: String,
}

pub(crate) fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

pub(crate) fn parse(raw_path: &str) -> Route {
    let mut r = Route {
        kind: RouteKind::Unknown,
        project: String::new(),
        iid: 0,
        discussion: String::new(),
        note: 0,
        name: String::new(),
    };
    let Some(rest) = raw_path.strip_prefix("/api/v4/") else {
        return r;
    };
    let seg: Vec<&str> = rest.split('/').collect();
    let num = |s: &str| s.parse::<u64>().ok().filter(|_| !s.starts_with('+'));
    let kind = match seg.as_slice() {
        ["user"] => RouteKind::User,
        ["users", id] => {
            r.name = decode(id);
            RouteKind::UserById
        }
        ["personal_access_tokens", "self"] => RouteKind::TokenSelf,
        ["version"] => RouteKind::Version,
        ["projects", p, tail @ ..] if !p.is_empty() => {
            r.project = decode(p);
            match tail {
                [] => RouteKind::Project,
                ["members", "all", u] => {
                    r.name = decode(u);
                    RouteKind::ProjectMember
                }
                ["merge_requests"] => RouteKind::MergeRequests,
                ["merge_requests", iid, mr_tail @ ..] => match num(iid) {
                    None => RouteKind::Unknown,
                    Some(iid) => {
                        r.iid = iid;
                        match mr_tail {
                            [] => RouteKind::MergeRequest,
                            ["discussions"] => RouteKind::Discussions,
                            ["discussions", d] => {
                                r.discussion = decode(d);
                                RouteKind::Discussion
                            }
                            ["discussions", d, "notes"] => {
                                r.discussion = decode(d);
                                RouteKind::DiscussionNotes
                            }
                            ["discussions", d, "notes", n] => match num(n) {
                                Some(n) => {
                                    r.discussion = decode(d);
                                    r.note = n;
                                    RouteKind::DiscussionNote
                                }
                                None => RouteKind::Unknown,
                            },
                            ["notes"] => RouteKind::Notes,
                            ["notes", n] => match num(n) {
                                Some(n) => {
                                    r.note = n;
                                    RouteKind::Note
                                }
                                None => RouteKind::Unknown,
                            },
                            ["diffs"] => RouteKind::Diffs,
                            ["versions"] => RouteKind::Versions,
                            ["changes"] => RouteKind::Changes,
                            ["pipelines"] => RouteKind::Pipelines,
                            ["approvals"] => RouteKind::MrApprovals,
                            ["approve"] => RouteKind::Approve,
                            ["unapprove"] => RouteKind::Unapprove,
                            ["approval_rules"] => RouteKind::MrApprovalRules,
                            _ => RouteKind::Unknown,
                        }
                    }
                },
                ["jobs", j] if !j.is_empty() => {
                    r.name = decode(j);
                    RouteKind::Job
                }
                ["resource_groups", k] if !k.is_empty() => {
                    r.name = decode(k);
                    RouteKind::ResourceGroup
                }
                ["variables", k] if !k.is_empty() => {
                    r.name = decode(k);
                    RouteKind::ProjectVariable
                }
                ["resource_groups", k, "current_job"] if !k.is_empty() => {
                    r.name = decode(k);
                    RouteKind::ResourceGroupCurrentJob
                }
                ["ci", "lint"] => RouteKind::CiLint,
                ["approvals"] => RouteKind::ProjectApprovals,
                ["approval_rules"] => RouteKind::ApprovalRules,
                ["hooks"] => RouteKind::ProjectHooks,
                ["repository", "tree"] => RouteKind::Tree,
                ["repository", "files", f] if !f.is_empty() => {
                    r.name = decode(f);
                    RouteKind::File
                }
                ["repository", "files", f, "raw"] if !f.is_empty() => {
                    r.name = decode(f);
                    RouteKind::FileRaw
                }
                ["repository", "branches", b] if !b.is_empty() => {
                    r.name = decode(b);
                    RouteKind::Branch
                }
                ["repository", "commits", c] if !c.is_empty() => {
                    r.name = decode(c);
                    RouteKind::Commit
                }
                _ => RouteKind::Unknown,
            }
        }
        _ => RouteKind::Unknown,
    };
    r.kind = kind;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_paths() {
        let r = parse("/api/v4/projects/group%2Fsub%2Fproj/merge_requests/7/discussions");
        assert_eq!(r.kind, RouteKind::Discussions);
        assert_eq!(r.project, "group/sub/proj");
        assert_eq!(r.iid, 7);
        let r = parse("/api/v4/projects/42/repository/files/topics%2Forders.yaml/raw");
        assert_eq!(r.kind, RouteKind::FileRaw);
        assert_eq!(r.name, "topics/orders.yaml");
        // An unencoded namespaced path is not a project route.
        let r = parse("/api/v4/projects/group/sub/merge_requests/7");
        assert_eq!(r.kind, RouteKind::Unknown);
        let r = parse("/api/v4/projects/42/repository/files/topics/orders.yaml/raw");
        assert_eq!(r.kind, RouteKind::Unknown);
    }
}
