//! The project's repository at pinned SHAs ([`RepositoryFiles`]) on the client: trees, raw
//! files and branch tips are project routes, so `assent doctor` reads policies through the
//! same code as a run without naming a merge request.

use assent_forge::{ForgeError, RepositoryFiles};
use gitlab::api::projects::repository::Tree;
use gitlab::api::projects::repository::branches::Branch;
use gitlab::api::projects::repository::files::FileRaw;
use serde::Deserialize;

use super::client::{GitLabClient, is_absent_content};
use super::forge::build_error;
use super::pagination::list_all;

#[derive(Deserialize)]
struct ApiTreeItem {
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct ApiCommit {
    id: String,
}

#[derive(Deserialize)]
struct ApiBranch {
    commit: ApiCommit,
}

impl RepositoryFiles for GitLabClient {
    fn list_tree(&self, sha: &str, dir: &str) -> Result<Vec<String>, ForgeError> {
        let dir = dir.trim_matches('/');
        let mut builder = Tree::builder();
        builder
            .project(self.project_ref())
            .ref_(sha)
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
        Ok(items
            .into_iter()
            .filter(|i| i.kind == "blob")
            .map(|i| i.path)
            .collect())
    }

    fn read_file(&self, sha: &str, path: &str) -> Result<Option<Vec<u8>>, ForgeError> {
        let endpoint = FileRaw::builder()
            .project(self.project_ref())
            .file_path(path)
            .ref_(sha)
            .build()
            .map_err(|e| build_error("file", e))?;
        match self.requester.read(&self.prepare(&endpoint)?) {
            Ok(response) => Ok(Some(response.body)),
            Err(error) if is_absent_content(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }

    fn branch_head(&self, branch: &str) -> Result<String, ForgeError> {
        let endpoint = Branch::builder()
            .project(self.project_ref())
            .branch(branch)
            .build()
            .map_err(|e| build_error("branch", e))?;
        let branch: ApiBranch = self.get(&endpoint)?;
        Ok(branch.commit.id)
    }
}
