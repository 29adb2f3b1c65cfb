//! [`GitLabSweepForge`]: the sweep's port ([`assent_forge::sweep_port::SweepForge`]) over GitLab.

use std::sync::Arc;

use assent_core::model::{ListedDiscussion, MergeRequestInfo};
use assent_forge::sweep_port::{ListedMergeRequest, PipelineCreation, SweepForge};
use assent_forge::{Forge, ForgeError, RequestCounts};

use crate::{GitLabClient, GitLabForge};

/// [`SweepForge`] over GitLab: one project [`GitLabClient`] for `/user`, the listing and
/// pipeline creation, and over it the forge of the MR examined, for its discussions and the
/// single MR read. One connection, one CA bundle read, one request tally; shareable between
/// threads (each call builds its MR's forge over the shared client, which costs no request).
pub struct GitLabSweepForge {
    client: Arc<GitLabClient>,
}

impl GitLabSweepForge {
    /// The sweep's forge over the project's client.
    pub fn new(client: GitLabClient) -> Self {
        GitLabSweepForge {
            client: Arc::new(client),
        }
    }

    /// The client every request goes through.
    pub fn client(&self) -> &GitLabClient {
        &self.client
    }

    fn mr(&self, iid: u64) -> GitLabForge {
        GitLabForge::over(self.client.clone(), iid)
    }
}

impl SweepForge for GitLabSweepForge {
    fn bot_user_id(&self) -> Result<u64, ForgeError> {
        self.client.current_user_id()
    }

    fn list_open_merge_requests(&self) -> Result<Vec<ListedMergeRequest>, ForgeError> {
        self.client.list_open_merge_requests()
    }

    fn list_discussions(&self, iid: u64) -> Result<Vec<ListedDiscussion>, ForgeError> {
        self.mr(iid).list_discussions()
    }

    fn merge_request(&self, iid: u64) -> Result<MergeRequestInfo, ForgeError> {
        self.mr(iid).merge_request()
    }

    fn merge_request_entry(&self, iid: u64) -> Result<ListedMergeRequest, ForgeError> {
        self.client.merge_request_entry(iid)
    }

    fn create_pipeline(&self, iid: u64) -> Result<PipelineCreation, ForgeError> {
        self.client.create_merge_request_pipeline(iid)
    }

    fn request_counts(&self) -> RequestCounts {
        self.client.request_counts()
    }
}
