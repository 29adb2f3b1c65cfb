//! The project's repository at pinned SHAs ([`RepositoryFiles`]) on the client: trees, raw
//! files and branch tips are project routes, so `assent doctor` reads policies through the
//! same code as a run without naming a merge request.

use assent_core::commit_sha::CommitSha;
use assent_forge::{BudgetedRead, ContentBudget, ForgeError, PolicyProjectFiles, RepositoryFiles};
use gitlab::api::projects::repository::Tree;
use gitlab::api::projects::repository::branches::Branch;
use gitlab::api::projects::repository::commits::Commit;
use gitlab::api::projects::repository::files::FileRaw;
use serde::Deserialize;

use super::client::{GitLabClient, build_error};
use super::pagination::{is_absent_content, list_all};
use super::retry::ReadFailure;
use super::transport::PreparedRequest;

#[derive(Deserialize)]
struct ApiTreeItem {
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

/// A branch's commit: its `id` read through the SHA parser, so a malformed one is a decode
/// error, never a pin.
#[derive(Deserialize)]
struct ApiCommit {
    id: CommitSha,
}

#[derive(Deserialize)]
struct ApiBranch {
    commit: ApiCommit,
}

impl RepositoryFiles for GitLabClient {
    fn list_tree(&self, sha: &CommitSha, dir: &str) -> Result<Vec<String>, ForgeError> {
        let dir = dir.trim_matches('/');
        let mut builder = Tree::builder();
        builder
            .project(self.project_ref())
            .ref_(sha.as_str())
            .recursive(true);
        if !dir.is_empty() {
            builder.path(dir);
        }
        let endpoint = builder.build().map_err(|e| build_error("tree", e))?;
        let what = format!("tree {dir:?} at {sha}");
        let items: Vec<ApiTreeItem> = list_all(
            &self.requester,
            self.prepare(&endpoint)?,
            &self.listing(&what, true),
        )?;
        if items.is_empty() {
            // GitLab answers "404 Tree Not Found" alike for a path that does not exist and a
            // ref it does not know (`lib/api/repositories.rb`): "nothing there" is only
            // believed of a commit shown to exist, or policies at a wrong SHA would read as
            // none (docs/contract.md#unknown-refs).
            self.prove_commit(sha, &what)?;
        }
        Ok(items
            .into_iter()
            .filter(|i| i.kind == "blob")
            .map(|i| i.path)
            .collect())
    }

    fn read_file(&self, sha: &CommitSha, path: &str) -> Result<Option<Vec<u8>>, ForgeError> {
        match self
            .requester
            .read_lfs_within(&self.raw_file(sha, path)?, None)
        {
            Ok(response) => Ok(Some(response.body)),
            Err(failure) => match failure.into_error() {
                error if is_absent_content(&error) => Ok(None),
                error => Err(error),
            },
        }
    }

    fn read_file_within(
        &self,
        sha: &CommitSha,
        path: &str,
        budget: &ContentBudget,
    ) -> Result<BudgetedRead, ForgeError> {
        if budget.is_spent() {
            return Ok(BudgetedRead::OverBudget);
        }
        match self
            .requester
            .read_lfs_within(&self.raw_file(sha, path)?, Some(budget))
        {
            Ok(response) => Ok(BudgetedRead::Present(response.body)),
            Err(ReadFailure::OverBudget { .. }) => Ok(BudgetedRead::OverBudget),
            Err(failure) => match failure.into_error() {
                error if is_absent_content(&error) => Ok(BudgetedRead::Absent),
                error => Err(error),
            },
        }
    }

    fn branch_head(&self, branch: &str) -> Result<CommitSha, ForgeError> {
        let endpoint = Branch::builder()
            .project(self.project_ref())
            .branch(branch)
            .build()
            .map_err(|e| build_error("branch", e))?;
        let branch: ApiBranch = self.get(&endpoint)?;
        Ok(branch.commit.id)
    }
}

impl PolicyProjectFiles for GitLabClient {
    fn default_branch(&self) -> Result<String, ForgeError> {
        #[derive(Deserialize)]
        struct ApiDefaultBranch {
            default_branch: Option<String>,
        }
        let endpoint = gitlab::api::projects::Project::builder()
            .project(self.project_ref())
            .build()
            .map_err(|e| build_error("project", e))?;
        let project: ApiDefaultBranch = self.get(&endpoint)?;
        // A project with an empty repository has no default branch: nothing to read there.
        project
            .default_branch
            .filter(|b| !b.is_empty())
            .ok_or_else(|| ForgeError::Status {
                method: "GET".into(),
                route: "projects/:id".into(),
                status: 404,
                message: "the project has no default branch (an empty repository?)".into(),
            })
    }
}

impl GitLabClient {
    /// `GET …/repository/commits/:sha`: `Ok` when GitLab knows the commit; its 404 is an
    /// error naming the listing (`what`) that cannot be believed empty without it.
    fn prove_commit(&self, sha: &CommitSha, what: &str) -> Result<(), ForgeError> {
        let endpoint = Commit::builder()
            .project(self.project_ref())
            .commit(sha.as_str())
            .build()
            .map_err(|e| build_error("commit", e))?;
        let request = self.prepare(&endpoint)?;
        match self.requester.read(&request) {
            Ok(_) => Ok(()),
            Err(ForgeError::Status {
                method,
                route,
                status: 404,
                message,
            }) => Err(ForgeError::Status {
                method,
                route,
                status: 404,
                message: format!(
                    "{message}: GitLab does not know the commit `{sha}`, so the {what} that read \
                     as empty proves nothing (GitLab answers a ref it does not know as it answers \
                     a missing path); check the SHA or ref the run was given"
                ),
            }),
            Err(error) => Err(error),
        }
    }

    /// `GET …/repository/files/:path/raw?ref=<sha>&lfs=true`: a file stored in Git LFS is
    /// answered with its LFS object, which is what a consumer of the repository reads; any
    /// other file with its blob (GitLab ignores `lfs` for a file that is no LFS pointer). Read
    /// through [`Requester::read_lfs_within`](super::retry::Requester::read_lfs_within): the
    /// one route whose `302` to object storage is followed.
    fn raw_file(&self, sha: &CommitSha, path: &str) -> Result<PreparedRequest, ForgeError> {
        let endpoint = FileRaw::builder()
            .project(self.project_ref())
            .file_path(path)
            .ref_(sha.as_str())
            .lfs(true)
            .build()
            .map_err(|e| build_error("file", e))?;
        self.prepare(&endpoint)
    }
}
