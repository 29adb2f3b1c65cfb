//! The fake's state: plain serde structs, usable as a YAML/JSON state file and as the seed
//! a test hands to [`crate::FakeGitLab::start`].
//!
//! Seeding rules (applied by [`State::normalize`] when the server starts and after every
//! `with_state` mutation):
//! * a note with `id: 0` gets the next note id; a discussion with an empty `id` gets the next
//!   deterministic discussion id;
//! * note ids are global integers: the next id is `max(note_id_start, max(existing ids) + 1)`,
//!   so explicit seeded ids are never reused and ids only ever grow;
//! * discussion ids are 40 lowercase hex digits derived from a counter (`discussion_seq`),
//!   never random, so two runs with the same seed produce the same ids;
//! * empty timestamps are filled with the fake's current time.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::time;
use crate::unified_diff::unified_diff;

/// Everything the fake knows. `Default` is an empty GitLab at `https://gitlab.example.com`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct State {
    /// Base used for `web_url` fields (not the API base).
    pub web_url: String,
    /// Lowest note id handed out (see module docs).
    pub note_id_start: u64,
    /// Lowest pipeline id handed out; next is `max(start, max(existing) + 1)`.
    pub pipeline_id_start: u64,
    /// Counter behind generated discussion ids.
    pub discussion_seq: u64,
    /// `None`: timestamps come from the system clock. `Some(ts)`: time is frozen at `ts`
    /// (RFC 3339) until a test moves it.
    pub fixed_time: Option<String>,
    /// Omit `X-Total`, `X-Total-Pages` and the `rel="last"` link, as GitLab does for
    /// listings above 10,000 items.
    pub omit_totals: bool,
    /// Serve at most this many items per page, whatever `per_page` asks (GitLab clamps
    /// `per_page` to 100; a lower cap lets a test page a small listing). `None`: 100.
    pub max_per_page: Option<u64>,
    /// Notes listed larger than stored: note id → `(text, times)`; the note is rendered as its
    /// stored body followed by `text` repeated `times` times, so a test can serve notes of
    /// GitLab's maximum size without keeping them in the state.
    pub inflated_notes: BTreeMap<u64, (String, usize)>,
    /// Listings paginate by `Link` alone (no `X-Page`/`X-Per-Page`/`X-Next-Page`/`X-Total*`).
    pub link_only: bool,
    /// `user:password` put into the authority of every `Link` URL of a listing.
    pub link_userinfo: Option<String>,
    /// Announce a next page after every full page (`X-Next-Page` and `rel="next"`), as
    /// GitLab's keyset pagination does without counting what follows: a listing whose length
    /// is a multiple of `per_page` then ends on an empty page.
    pub next_on_full_page: bool,
    /// When true, a reply to a resolved thread re-opens it; when false (default) the reply
    /// joins the thread resolved.
    pub reply_unresolves: bool,
    /// GitLab version answered by `GET /version` (default `18.6.0`). Routes newer than this
    /// version answer 404 like an unknown route (`resource_groups/:key/current_job`: 18.6).
    pub version: String,
    /// GitLab's `diff_max_patch_bytes` application setting (default 200 KiB): `/diffs`
    /// withholds patches by it ([`crate::diff_limits`]).
    pub diff_max_patch_bytes: u64,
    /// Object storage serves LFS objects through GitLab (`proxy_download: true`): a raw read
    /// with `lfs=true` answers the object inline. Off (GitLab's default), it answers `302`
    /// to the fake's storage route, `/__storage/lfs/<oid>`.
    pub lfs_proxy_download: bool,
    /// Every user.
    pub users: Vec<User>,
    /// Every access token.
    pub tokens: Vec<Token>,
    /// Every project.
    pub projects: Vec<Project>,
}

impl Default for State {
    fn default() -> Self {
        State {
            web_url: "https://gitlab.example.com".into(),
            note_id_start: 1,
            pipeline_id_start: 1,
            discussion_seq: 0,
            fixed_time: None,
            omit_totals: false,
            max_per_page: None,
            inflated_notes: BTreeMap::new(),
            link_only: false,
            link_userinfo: None,
            next_on_full_page: false,
            reply_unresolves: false,
            version: "18.6.0".into(),
            diff_max_patch_bytes: crate::diff_limits::DEFAULT_DIFF_MAX_PATCH_BYTES,
            lfs_proxy_download: false,
            users: vec![],
            tokens: vec![],
            projects: vec![],
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
/// A GitLab user.
pub struct User {
    /// The user's id.
    pub id: u64,
    /// The user's username.
    pub username: String,
    /// The user's display name.
    pub name: String,
    /// GitLab's `user_type`: `human`, `project_bot` (a project or group access token's
    /// user), `service_account`, … . GitLab answers `bot` from it (`User#bot?`: the type is
    /// one of `HasUserType::BOT_USER_TYPES`, `app/models/concerns/has_user_type.rb`) and shows
    /// the type itself to admins only, so the fake shows `bot` alone.
    pub user_type: String,
    /// `active`, `blocked`, `deactivated`, `banned`, ….
    pub state: String,
}

/// GitLab's `HasUserType::BOT_USER_TYPES`: the user types whose `bot` is `true`. A
/// `service_user` (a GitLab.com-internal type) is not among them.
pub const BOT_USER_TYPES: &[&str] = &[
    "alert_bot",
    "project_bot",
    "support_bot",
    "visual_review_bot",
    "migration_bot",
    "security_bot",
    "automation_bot",
    "security_policy_bot",
    "admin_bot",
    "suggested_reviewers_bot",
    "service_account",
    "llm_bot",
    "duo_code_review_bot",
];

impl Default for User {
    fn default() -> Self {
        User {
            id: 0,
            username: String::new(),
            name: String::new(),
            user_type: "human".into(),
            state: "active".into(),
        }
    }
}

impl User {
    /// A user `id` named `username` (its display name too), the other fields at their defaults.
    pub fn new(id: u64, username: &str) -> Self {
        User {
            id,
            username: username.into(),
            name: username.into(),
            ..Default::default()
        }
    }
    /// Marks the user as a bot, a project access token's (or a human).
    pub fn bot(self, bot: bool) -> Self {
        self.user_type(if bot { "project_bot" } else { "human" })
    }
    /// Sets the user's `user_type` (`project_bot`, `service_account`, …).
    pub fn user_type(mut self, user_type: &str) -> Self {
        self.user_type = user_type.into();
        self
    }
    /// Sets the user's `state` (`blocked`, `deactivated`, …).
    pub fn state(mut self, state: &str) -> Self {
        self.state = state.into();
        self
    }
    /// GitLab's `User#bot?`.
    pub fn is_bot(&self) -> bool {
        BOT_USER_TYPES.contains(&self.user_type.as_str())
    }
}

/// A personal/project access token.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Token {
    /// The secret the client sends as `PRIVATE-TOKEN`.
    pub token: String,
    /// The user the token belongs to.
    pub user_id: u64,
    /// `api`, `read_api`, `read_user`, ...
    pub scopes: Vec<String>,
    /// Project access level of the user in every project (10 guest, 20 reporter,
    /// 30 developer, 40 maintainer, 50 owner).
    pub access_level: u32,
    /// The token's name.
    pub name: String,
    /// The date the token expires (`YYYY-MM-DD`, GitLab's `expires_at` on
    /// `GET personal_access_tokens/self`, `lib/api/entities/personal_access_token.rb`);
    /// `None` answers `null`: a token without expiry, which GitLab still holds where an
    /// administrator lifted "require expiration" or for a token older than the 16.0 rule.
    pub expires_at: Option<String>,
}

impl Default for Token {
    fn default() -> Self {
        Token {
            token: String::new(),
            user_id: 0,
            scopes: vec!["api".into()],
            access_level: 40,
            name: "token".into(),
            expires_at: None,
        }
    }
}

impl Token {
    /// A token of `user_id` with `scopes`, at the default access level.
    pub fn new(token: &str, user_id: u64, scopes: &[&str]) -> Self {
        Token {
            token: token.into(),
            user_id,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }
    /// Sets the project access level of the token's user.
    pub fn access_level(mut self, level: u32) -> Self {
        self.access_level = level;
        self
    }
    /// Sets the date the token expires (`YYYY-MM-DD`).
    pub fn expires_at(mut self, date: &str) -> Self {
        self.expires_at = Some(date.into());
        self
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
/// A project.
pub struct Project {
    /// The project's id.
    pub id: u64,
    /// The project's path, e.g. `group/sub/proj`.
    pub path_with_namespace: String,
    /// The default branch.
    pub default_branch: String,
    /// "All threads must be resolved" before merging.
    pub only_allow_merge_if_all_discussions_are_resolved: bool,
    /// "Pipelines must succeed" before merging.
    pub only_allow_merge_if_pipeline_succeeds: bool,
    /// "Automatically resolve merge request diff threads when they become outdated".
    pub resolve_outdated_diff_discussions: bool,
    /// branch name -> commit sha
    pub branches: BTreeMap<String, String>,
    /// commit sha -> path -> content (the full tree of that commit)
    pub files: BTreeMap<String, BTreeMap<String, FileContent>>,
    /// commit sha -> path -> git mode of the entries of `files` that are not a regular
    /// `100644` file: `120000` (a symbolic link: its content is the link's target, which is
    /// what the raw file route answers), `160000` (a submodule: its content is the commit it
    /// names, and the file routes answer 404, as for anything that is not a blob), `100755`.
    pub modes: BTreeMap<String, BTreeMap<String, String>>,
    /// The project's "Git Large File Storage" setting (on by default, as on GitLab).
    pub lfs_enabled: bool,
    /// LFS objects by their `oid` (sha256 hex): what the raw file route answers with
    /// `lfs=true` for a file whose content is an LFS pointer naming one.
    pub lfs_objects: BTreeMap<String, FileContent>,
    /// The project's merge requests.
    pub merge_requests: Vec<MergeRequest>,
    /// Pipelines created through the API.
    pub pipelines: Vec<Pipeline>,
    /// The project's "CI/CD configuration file" setting; empty means `.gitlab-ci.yml`. A value
    /// `path@group/project[:ref]` names a file in another project (the CI lint GET route then
    /// finds no content in this repository, as GitLab's does).
    pub ci_config_path: String,
    /// CI jobs, readable through `GET /projects/:id/jobs/:job_id`.
    pub jobs: Vec<Job>,
    /// CI resource groups (`GET /projects/:id/resource_groups/:key[/current_job]`).
    pub resource_groups: Vec<ResourceGroup>,
    /// Render the CI lint `merged_yaml` with Ruby symbol keys (`:job:`), as older GitLab
    /// versions do.
    pub lint_symbol_keys: bool,
    /// "Skipped pipelines are considered successful" (`allow_merge_on_skipped_pipeline`).
    pub allow_merge_on_skipped_pipeline: bool,
    /// Merge request approval settings and rules (`GET /projects/:id/approvals`,
    /// `GET /projects/:id/approval_rules`).
    pub approvals: ApprovalSettings,
    /// Project CI/CD variables (`GET /projects/:id/variables/:key`, Maintainer and above).
    pub variables: Vec<CiVariable>,
    /// Project webhooks as `GET /projects/:id/hooks` lists them (Maintainer and above).
    /// [`crate::FakeGitLab::add_webhook`] adds one to every project, every event on.
    #[serde(default)]
    pub hooks: Vec<ProjectHook>,
}

/// A project webhook, with the fields of GitLab's REST answer that say where it points and
/// what triggers it (the secret token is never shown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectHook {
    /// The hook's id.
    pub id: u64,
    /// Where deliveries go.
    pub url: String,
    /// *Push events*.
    pub push_events: bool,
    /// *Merge request events*.
    pub merge_requests_events: bool,
    /// *Comments*.
    pub note_events: bool,
    /// *Emoji events*.
    pub emoji_events: bool,
    /// *Pipeline events*.
    pub pipeline_events: bool,
    /// *Enable SSL verification*.
    pub enable_ssl_verification: bool,
    /// Failed deliveries in a row (`recent_failures`; GitLab's auto-disabling counts them up
    /// to 40: `app/models/concerns/web_hooks/auto_disabling.rb`).
    #[serde(default)]
    pub recent_failures: u32,
    /// Until when the hook is backed off (`disabled_until`), once it failed 4 times in a row.
    #[serde(default)]
    pub disabled_until: Option<String>,
}

impl ProjectHook {
    /// Hook `id` to `url` with merge request, comment, emoji and pipeline events and SSL
    /// verification on (GitLab's form starts with push events only).
    pub fn new(id: u64, url: &str) -> ProjectHook {
        ProjectHook {
            id,
            url: url.into(),
            push_events: false,
            merge_requests_events: true,
            note_events: true,
            emoji_events: true,
            pipeline_events: true,
            enable_ssl_verification: true,
            recent_failures: 0,
            disabled_until: None,
        }
    }
}

/// A project CI/CD variable, with the fields GitLab's REST API returns for one.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CiVariable {
    /// The variable's name.
    pub key: String,
    /// The variable's value.
    pub value: String,
    /// `env_var` or `file`.
    pub variable_type: String,
    /// Only protected branches and tags see it.
    pub protected: bool,
    /// Masked in job logs.
    pub masked: bool,
    /// Masked and hidden in the UI.
    pub hidden: bool,
    /// Not expanded (`$` taken literally).
    pub raw: bool,
    /// `*` (every job) or an environment name or pattern.
    pub environment_scope: String,
    /// The variable's description.
    pub description: Option<String>,
}

impl Default for CiVariable {
    fn default() -> Self {
        CiVariable {
            key: String::new(),
            value: String::new(),
            variable_type: "env_var".into(),
            protected: false,
            masked: true,
            hidden: false,
            raw: false,
            environment_scope: "*".into(),
            description: None,
        }
    }
}

/// A project's merge request approval settings and rules, with GitLab's defaults.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalSettings {
    /// Approval rules need a Premium tier: when false, the rule and settings routes answer
    /// 403, as on GitLab Free. Approving, unapproving and reading an MR's approvals work on
    /// every tier.
    pub rules_available: bool,
    /// "Remove all approvals when commits are added to the source branch" (default on): a
    /// push that moves an MR's head clears its approvals.
    pub reset_approvals_on_push: bool,
    /// "Prevent editing approval rules in merge requests".
    pub disable_overriding_approvers_per_merge_request: bool,
    /// "Prevent approval by author" is this setting's negation.
    pub merge_requests_author_approval: bool,
    /// Project-level approval rules.
    pub rules: Vec<ApprovalRule>,
}

impl Default for ApprovalSettings {
    fn default() -> Self {
        ApprovalSettings {
            rules_available: true,
            reset_approvals_on_push: true,
            disable_overriding_approvers_per_merge_request: false,
            merge_requests_author_approval: false,
            rules: vec![],
        }
    }
}

/// One approval rule (project or merge request level).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalRule {
    /// The rule's id.
    pub id: u64,
    /// The rule's name.
    pub name: String,
    /// `regular`, `any_approver`, `code_owner` or `report_approver`.
    pub rule_type: String,
    /// How many approvals the rule requires.
    pub approvals_required: u64,
    /// Users named by the rule (they are its eligible approvers).
    pub user_ids: Vec<u64>,
    /// Groups named by the rule; their members are eligible too.
    pub group_ids: Vec<u64>,
    /// The rule names groups the reader cannot see.
    pub contains_hidden_groups: bool,
    /// Protected branch names the rule is scoped to; empty: every branch.
    pub protected_branches: Vec<String>,
    /// The rule applies to every protected branch.
    pub applies_to_all_protected_branches: bool,
}

impl Default for ApprovalRule {
    fn default() -> Self {
        ApprovalRule {
            id: 0,
            name: "rule".into(),
            rule_type: "regular".into(),
            approvals_required: 1,
            user_ids: vec![],
            group_ids: vec![],
            contains_hidden_groups: false,
            protected_branches: vec![],
            applies_to_all_protected_branches: false,
        }
    }
}

impl ApprovalRule {
    /// A regular rule `id` requiring one approval from exactly `users`.
    pub fn users(id: u64, name: &str, users: &[u64]) -> Self {
        ApprovalRule {
            id,
            name: name.into(),
            user_ids: users.to_vec(),
            ..Default::default()
        }
    }
}

impl Default for Project {
    fn default() -> Self {
        Project {
            id: 0,
            path_with_namespace: String::new(),
            default_branch: "main".into(),
            only_allow_merge_if_all_discussions_are_resolved: true,
            only_allow_merge_if_pipeline_succeeds: false,
            resolve_outdated_diff_discussions: false,
            branches: BTreeMap::new(),
            files: BTreeMap::new(),
            modes: BTreeMap::new(),
            lfs_enabled: true,
            lfs_objects: BTreeMap::new(),
            merge_requests: vec![],
            pipelines: vec![],
            ci_config_path: String::new(),
            jobs: vec![],
            resource_groups: vec![],
            lint_symbol_keys: false,
            allow_merge_on_skipped_pipeline: false,
            approvals: ApprovalSettings::default(),
            variables: vec![],
            hooks: vec![],
        }
    }
}

impl Project {
    /// Adds a project CI/CD variable.
    pub fn variable(mut self, variable: CiVariable) -> Self {
        self.variables.push(variable);
        self
    }

    /// A project `id` at `path_with_namespace` with default branch `main`.
    pub fn new(id: u64, path_with_namespace: &str) -> Self {
        Project {
            id,
            path_with_namespace: path_with_namespace.into(),
            ..Default::default()
        }
    }
    /// Sets branch `name`'s tip to `sha`.
    pub fn branch(mut self, name: &str, sha: &str) -> Self {
        self.branches.insert(name.into(), sha.into());
        self
    }
    /// Adds `path` with `content` to the tree of commit `sha`.
    pub fn file(mut self, sha: &str, path: &str, content: impl Into<Vec<u8>>) -> Self {
        self.files
            .entry(sha.into())
            .or_default()
            .insert(path.into(), FileContent(content.into()));
        self
    }
    /// Adds `path` to the tree of commit `sha` as a symbolic link to `target`.
    pub fn symlink(self, sha: &str, path: &str, target: &str) -> Self {
        self.file(sha, path, target).mode(sha, path, "120000")
    }
    /// Adds `path` to the tree of commit `sha` as a submodule at `commit`.
    pub fn submodule(self, sha: &str, path: &str, commit: &str) -> Self {
        self.file(sha, path, commit).mode(sha, path, "160000")
    }
    /// Adds `path` to the tree of commit `sha` as a file stored in Git LFS: the tree holds
    /// the LFS pointer, the project's LFS storage the `object`.
    pub fn lfs_file(mut self, sha: &str, path: &str, object: impl Into<Vec<u8>>) -> Self {
        let object = FileContent(object.into());
        let pointer = lfs_pointer(&object.0);
        self.lfs_objects.insert(lfs_oid(&object.0), object);
        self.file(sha, path, pointer)
    }
    /// Sets the git mode of `path` in the tree of commit `sha` (see [`Project::modes`]).
    pub fn mode(mut self, sha: &str, path: &str, mode: &str) -> Self {
        self.modes
            .entry(sha.into())
            .or_default()
            .insert(path.into(), mode.into());
        self
    }
    /// The git mode of `path` at commit `sha`: `100644` unless [`Project::modes`] says else.
    pub fn mode_of(&self, sha: &str, path: &str) -> &str {
        self.modes
            .get(sha)
            .and_then(|m| m.get(path))
            .map_or("100644", String::as_str)
    }
    /// Declares commit `sha` (possibly with an empty tree).
    pub fn commit(mut self, sha: &str) -> Self {
        self.files.entry(sha.into()).or_default();
        self
    }
    /// Adds a CI job. A job with a `resource_group` creates that group (as GitLab does when it
    /// creates the job); a `running` job becomes the group's holder.
    pub fn ci_job(mut self, job: Job) -> Self {
        self.add_job(job);
        self
    }
    /// See [`Project::ci_job`].
    pub fn add_job(&mut self, job: Job) {
        if let Some(key) = job.resource_group.clone() {
            let next_id = self.resource_groups.iter().map(|g| g.id).max().unwrap_or(0) + 1;
            let holder = (job.status == "running").then_some(job.id);
            match self.resource_groups.iter_mut().find(|g| g.key == key) {
                Some(g) => {
                    if holder.is_some() {
                        g.holder = holder;
                    }
                }
                None => self.resource_groups.push(ResourceGroup {
                    id: next_id,
                    key,
                    holder,
                    ..Default::default()
                }),
            }
        }
        self.jobs.push(job);
    }
    /// Adds a merge request.
    pub fn merge_request(mut self, mr: MergeRequest) -> Self {
        self.merge_requests.push(mr);
        self
    }
    /// Merge request `iid`.
    pub fn mr(&self, iid: u64) -> Option<&MergeRequest> {
        self.merge_requests.iter().find(|m| m.iid == iid)
    }
    /// Merge request `iid`, to change.
    pub fn mr_mut(&mut self, iid: u64) -> Option<&mut MergeRequest> {
        self.merge_requests.iter_mut().find(|m| m.iid == iid)
    }
    /// The project's web URL on a fake served at `base`.
    pub fn web_url(&self, base: &str) -> String {
        format!("{}/{}", base, self.path_with_namespace)
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
/// A merge request's state.
pub enum MrState {
    #[default]
    /// Open.
    Opened,
    /// Closed without merging.
    Closed,
    /// Merged.
    Merged,
    /// Locked (GitLab's transient state while merging).
    Locked,
}

impl MrState {
    /// GitLab's name of the state.
    pub fn as_str(self) -> &'static str {
        match self {
            MrState::Opened => "opened",
            MrState::Closed => "closed",
            MrState::Merged => "merged",
            MrState::Locked => "locked",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default, deny_unknown_fields)]
/// A merge request's diff refs.
pub struct DiffRefs {
    /// The merge base.
    pub base_sha: String,
    /// The source head.
    pub head_sha: String,
    /// The target's tip the diff was computed from.
    pub start_sha: String,
}

/// How `GET .../discussions` orders its items.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum DiscussionOrder {
    /// Oldest first, by first note id (GitLab's order).
    #[default]
    ById,
    /// Newest first.
    Reversed,
    /// These discussion ids first, in this order; the rest after them by first note id.
    Custom(Vec<String>),
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
/// A merge request.
pub struct MergeRequest {
    /// The iid within its project.
    pub iid: u64,
    /// Global id; 0 means `project_id * 10000 + iid`.
    pub id: u64,
    /// The title.
    pub title: String,
    /// The description.
    pub description: String,
    /// The state.
    pub state: MrState,
    /// The source branch.
    pub source_branch: String,
    /// The target branch.
    pub target_branch: String,
    /// Head sha of the source branch (kept equal to `diff_refs.head_sha` by the test API).
    pub sha: String,
    /// The current diff refs.
    pub diff_refs: DiffRefs,
    /// The head pipeline, if any.
    pub head_pipeline: Option<Pipeline>,
    /// Creation time.
    pub created_at: String,
    /// Last update time.
    pub updated_at: String,
    /// The author's user id.
    pub author_id: u64,
    /// Labels.
    pub labels: Vec<String>,
    /// Draft MR.
    pub draft: bool,
    /// The changed files, as the diffs listing gives them.
    pub diffs: Vec<DiffFile>,
    /// The discussions.
    pub discussions: Vec<Discussion>,
    /// The order discussions are listed in.
    pub discussion_order: DiscussionOrder,
    /// The source project when the MR comes from a fork; 0 means this project.
    pub source_project_id: u64,
    /// Users who approve the MR right now.
    pub approved_by: Vec<u64>,
    /// Merge request level approval rules.
    pub approval_rules: Vec<ApprovalRule>,
    /// GitLab stopped collecting the MR's diff at its limits (1,000 files by default): the
    /// listing holds only `diffs`, `changes_count` is `"<their number>+"`, and `GET
    /// …/changes` answers `overflow: true`.
    pub overflow: bool,
    /// `changes_count` as served, instead of the count of `diffs` (`Some("")` serves `null`,
    /// as GitLab does before it has computed the diff).
    pub changes_count: Option<String>,
    /// The MR has no commits (`MergeRequest#has_no_commits?`): GitLab creates no pipeline for
    /// it and answers the pipeline creation `405`.
    pub has_no_commits: bool,
    /// The heads of the MR's earlier diff versions, oldest first: GitLab keeps a
    /// `merge_request_diff` per push (`head_commit_sha`), and `GET …/versions` lists them
    /// with the current head's newest. [`crate::FakeGitLab::set_head`] adds the head it
    /// replaces.
    pub earlier_heads: Vec<String>,
}

impl Default for MergeRequest {
    fn default() -> Self {
        MergeRequest {
            iid: 0,
            id: 0,
            title: String::new(),
            description: String::new(),
            state: MrState::Opened,
            source_branch: "feature".into(),
            target_branch: "main".into(),
            sha: String::new(),
            diff_refs: DiffRefs::default(),
            head_pipeline: None,
            created_at: String::new(),
            updated_at: String::new(),
            author_id: 0,
            labels: vec![],
            draft: false,
            diffs: vec![],
            discussions: vec![],
            discussion_order: DiscussionOrder::ById,
            source_project_id: 0,
            approved_by: vec![],
            approval_rules: vec![],
            overflow: false,
            changes_count: None,
            has_no_commits: false,
            earlier_heads: vec![],
        }
    }
}

impl MergeRequest {
    /// An open MR `iid` from `source_branch` at `head_sha` into `target_branch`, whose diff
    /// base (and start) is `base_sha`.
    pub fn new(iid: u64, author_id: u64, head_sha: &str, base_sha: &str) -> Self {
        MergeRequest {
            iid,
            title: format!("MR {iid}"),
            author_id,
            sha: head_sha.into(),
            diff_refs: DiffRefs {
                base_sha: base_sha.into(),
                head_sha: head_sha.into(),
                start_sha: base_sha.into(),
            },
            ..Default::default()
        }
    }
    /// Sets the source and target branches.
    pub fn branches(mut self, source: &str, target: &str) -> Self {
        self.source_branch = source.into();
        self.target_branch = target.into();
        self
    }
    /// Adds a changed file.
    pub fn diff(mut self, d: DiffFile) -> Self {
        self.diffs.push(d);
        self
    }
    /// `changes_count` as GitLab serves it: a string counting the files of the diff (a
    /// rename once), with a `+` once GitLab stopped collecting, or `null`.
    pub fn changes_count_json(&self) -> serde_json::Value {
        match &self.changes_count {
            Some(count) if count.is_empty() => serde_json::Value::Null,
            Some(count) => count.as_str().into(),
            None if self.overflow => format!("{}+", self.diffs.len()).into(),
            None => self.diffs.len().to_string().into(),
        }
    }
    /// The MR's global id (its `id`, else one derived from the project and iid).
    pub fn global_id(&self, project_id: u64) -> u64 {
        if self.id != 0 {
            self.id
        } else {
            project_id * 10000 + self.iid
        }
    }
    /// Discussion `id`.
    pub fn discussion(&self, id: &str) -> Option<&Discussion> {
        self.discussions.iter().find(|d| d.id == id)
    }
    /// Discussion `id`, to change.
    pub fn discussion_mut(&mut self, id: &str) -> Option<&mut Discussion> {
        self.discussions.iter_mut().find(|d| d.id == id)
    }
    /// Note `note_id` in any discussion.
    pub fn note(&self, note_id: u64) -> Option<&Note> {
        self.discussions
            .iter()
            .flat_map(|d| d.notes.iter())
            .find(|n| n.id == note_id)
    }
    /// Note `note_id` in any discussion, to change.
    pub fn note_mut(&mut self, note_id: u64) -> Option<&mut Note> {
        self.discussions
            .iter_mut()
            .flat_map(|d| d.notes.iter_mut())
            .find(|n| n.id == note_id)
    }
    /// Discussions in listing order (see [`DiscussionOrder`]).
    pub fn listed_discussions(&self) -> Vec<&Discussion> {
        let mut by_id: Vec<&Discussion> = self.discussions.iter().collect();
        by_id.sort_by_key(|d| d.first_note_id());
        match &self.discussion_order {
            DiscussionOrder::ById => by_id,
            DiscussionOrder::Reversed => {
                by_id.reverse();
                by_id
            }
            DiscussionOrder::Custom(order) => {
                let mut out: Vec<&Discussion> = order
                    .iter()
                    .filter_map(|id| by_id.iter().copied().find(|d| &d.id == id))
                    .collect();
                for d in by_id {
                    if !order.contains(&d.id) {
                        out.push(d);
                    }
                }
                out
            }
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
/// A discussion: a thread of notes.
pub struct Discussion {
    /// 40 lowercase hex; empty in a seed means "generate".
    pub id: String,
    /// A plain note (not a thread).
    pub individual_note: bool,
    /// The notes, first note first.
    pub notes: Vec<Note>,
}

impl Discussion {
    /// The id of the discussion's first note.
    pub fn first_note_id(&self) -> u64 {
        self.notes.first().map(|n| n.id).unwrap_or(u64::MAX)
    }
    /// Whether the discussion can be resolved (any of its notes is resolvable).
    pub fn resolvable(&self) -> bool {
        self.notes.iter().any(|n| n.resolvable)
    }
    /// True when resolvable and every resolvable note is resolved.
    pub fn resolved(&self) -> bool {
        self.resolvable()
            && self
                .notes
                .iter()
                .filter(|n| n.resolvable)
                .all(|n| n.resolved)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
/// A note.
pub struct Note {
    /// 0 in a seed means "assign the next id".
    pub id: u64,
    /// `DiscussionNote` for thread notes, `DiffNote` for diff threads, `None` for plain notes.
    #[serde(rename = "type")]
    pub note_type: Option<String>,
    /// The note's body.
    pub body: String,
    /// The author's user id.
    pub author_id: u64,
    /// Creation time.
    pub created_at: String,
    /// Last update time.
    pub updated_at: String,
    /// A system note (written by GitLab itself).
    pub system: bool,
    /// The note can be resolved.
    pub resolvable: bool,
    /// The note is resolved.
    pub resolved: bool,
    /// Who resolved it.
    pub resolved_by: Option<u64>,
    /// When it was resolved.
    pub resolved_at: Option<String>,
    /// A confidential note.
    pub confidential: bool,
    /// An internal note.
    pub internal: bool,
    /// Where a `DiffNote` sits in the MR's diff; `None` for every other note.
    pub position: Option<NotePosition>,
}

/// A DiffNote's `text` position, as GitLab validated and stored it
/// (see [`crate::positions`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct NotePosition {
    /// The position's base SHA.
    pub base_sha: String,
    /// The position's start SHA.
    pub start_sha: String,
    /// The position's head SHA.
    pub head_sha: String,
    /// The file's old path.
    pub old_path: String,
    /// The file's new path.
    pub new_path: String,
    /// `text`.
    pub position_type: String,
    /// Set for a removed or an unchanged line.
    pub old_line: Option<u64>,
    /// Set for an added or an unchanged line.
    pub new_line: Option<u64>,
    /// `<path hash>_<old_pos>_<new_pos>`.
    pub line_code: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
/// A pipeline.
pub struct Pipeline {
    /// The pipeline's id.
    pub id: u64,
    /// The commit it runs for.
    pub sha: String,
    /// `created`, `pending`, `running`, `success`, `failed`, `canceled`, ...
    pub status: String,
    #[serde(rename = "ref")]
    /// The pipeline's ref.
    pub git_ref: String,
    /// What started it, e.g. `merge_request_event`.
    pub source: String,
    /// The MR it runs for, if an MR pipeline.
    pub mr_iid: Option<u64>,
    /// Creation time.
    pub created_at: String,
    /// Last update time.
    pub updated_at: String,
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline {
            id: 0,
            sha: String::new(),
            status: "created".into(),
            git_ref: String::new(),
            source: "merge_request_event".into(),
            mr_iid: None,
            created_at: String::new(),
            updated_at: String::new(),
        }
    }
}

/// A CI job (a build), as `GET /projects/:id/jobs/:job_id` shows it. Its `resource_group`
/// is kept for the fake's bookkeeping only: GitLab's job entity does not expose it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Job {
    /// The job's id.
    pub id: u64,
    /// The job's name.
    pub name: String,
    /// The job's stage.
    pub stage: String,
    /// `created`, `waiting_for_resource`, `pending`, `running`, `success`, `failed`, ...
    pub status: String,
    /// The pipeline the job belongs to.
    pub pipeline_id: u64,
    /// Pipeline ref, e.g. `refs/merge-requests/7/head`.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// The commit the job runs for.
    pub sha: String,
    /// Pipeline source, e.g. `merge_request_event`.
    pub source: String,
    /// The resource group the job holds or waits for.
    pub resource_group: Option<String>,
    /// Creation time.
    pub created_at: String,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            id: 0,
            name: "assent".into(),
            stage: "test".into(),
            status: "running".into(),
            pipeline_id: 0,
            git_ref: String::new(),
            sha: String::new(),
            source: "merge_request_event".into(),
            resource_group: None,
            created_at: "2024-01-01T00:00:00.000Z".into(),
        }
    }
}

impl Job {
    /// A running job `id` named `name` of an MR pipeline for `iid` at `sha`.
    pub fn mr_job(id: u64, name: &str, iid: u64, sha: &str) -> Self {
        Job {
            id,
            name: name.into(),
            pipeline_id: id / 10 + 1,
            git_ref: format!("refs/merge-requests/{iid}/head"),
            sha: sha.into(),
            ..Default::default()
        }
    }
    /// Sets the job's resource group.
    pub fn resource_group(mut self, key: &str) -> Self {
        self.resource_group = Some(key.into());
        self
    }
    /// Sets the job's status.
    pub fn status(mut self, status: &str) -> Self {
        self.status = status.into();
        self
    }
}

/// A CI resource group. `holder` is the job currently holding it (GitLab's "current job").
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ResourceGroup {
    /// The group's id.
    pub id: u64,
    /// The group's key.
    pub key: String,
    /// `unordered`, `oldest_first` or `newest_first`.
    pub process_mode: String,
    /// The job holding it, if any.
    pub holder: Option<u64>,
    /// Creation time.
    pub created_at: String,
}

impl Default for ResourceGroup {
    fn default() -> Self {
        ResourceGroup {
            id: 0,
            key: String::new(),
            process_mode: "unordered".into(),
            holder: None,
            created_at: "2024-01-01T00:00:00.000Z".into(),
        }
    }
}

/// One changed file of an MR, as `GET .../diffs` returns it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DiffFile {
    /// The file's old path.
    pub old_path: String,
    /// The file's new path.
    pub new_path: String,
    /// The old side's file mode.
    pub a_mode: String,
    /// The new side's file mode.
    pub b_mode: String,
    /// The unified diff text.
    pub diff: String,
    /// The file is added.
    pub new_file: bool,
    /// The file is renamed.
    pub renamed_file: bool,
    /// The file is deleted.
    pub deleted_file: bool,
    /// GitLab marks the file as generated.
    pub generated_file: bool,
    /// Serialized only when set.
    pub too_large: Option<bool>,
    /// Serialized only when set.
    pub collapsed: Option<bool>,
}

impl Default for DiffFile {
    fn default() -> Self {
        DiffFile {
            old_path: String::new(),
            new_path: String::new(),
            a_mode: "100644".into(),
            b_mode: "100644".into(),
            diff: String::new(),
            new_file: false,
            renamed_file: false,
            deleted_file: false,
            generated_file: false,
            too_large: None,
            collapsed: None,
        }
    }
}

impl DiffFile {
    /// A modified file at `path`.
    pub fn modified(path: &str) -> Self {
        DiffFile {
            old_path: path.into(),
            new_path: path.into(),
            diff: "@@ -1 +1 @@\n".into(),
            ..Default::default()
        }
    }
    /// The files whose bytes differ between the trees `base` and `head` (path to content),
    /// sorted by path, as GitLab lists an MR's diffs: each added, deleted or modified, with
    /// its unified diff, so findings can sit on their changed line.
    pub fn listing<C: AsRef<[u8]>>(
        base: &BTreeMap<String, C>,
        head: &BTreeMap<String, C>,
    ) -> Vec<DiffFile> {
        let text = |c: &C| String::from_utf8_lossy(c.as_ref()).into_owned();
        let mut paths: Vec<&String> = base.keys().chain(head.keys()).collect();
        paths.sort();
        paths.dedup();
        paths
            .into_iter()
            .filter_map(|path| match (base.get(path), head.get(path)) {
                (Some(a), Some(b)) if a.as_ref() == b.as_ref() => None,
                (Some(a), Some(b)) => Some(DiffFile {
                    diff: unified_diff(&text(a), &text(b)),
                    ..DiffFile::modified(path)
                }),
                (None, Some(b)) => Some(DiffFile {
                    diff: unified_diff("", &text(b)),
                    ..DiffFile::added(path)
                }),
                (Some(a), None) => Some(DiffFile {
                    diff: unified_diff(&text(a), ""),
                    ..DiffFile::deleted(path)
                }),
                (None, None) => None,
            })
            .collect()
    }
    /// An added file at `path`.
    pub fn added(path: &str) -> Self {
        DiffFile {
            new_file: true,
            a_mode: "0".into(),
            ..DiffFile::modified(path)
        }
    }
    /// A deleted file at `path`.
    pub fn deleted(path: &str) -> Self {
        DiffFile {
            deleted_file: true,
            b_mode: "0".into(),
            ..DiffFile::modified(path)
        }
    }
    /// The same entry with git modes `a_mode` (base side) and `b_mode` (source side).
    pub fn modes(mut self, a_mode: &str, b_mode: &str) -> Self {
        self.a_mode = a_mode.into();
        self.b_mode = b_mode.into();
        self
    }
    /// A file renamed from `old` to `new`.
    pub fn renamed(old: &str, new: &str) -> Self {
        DiffFile {
            old_path: old.into(),
            new_path: new.into(),
            renamed_file: true,
            ..Default::default()
        }
    }
}

/// File bytes. Serialized as a plain string when UTF-8, else as `{base64: "..."}`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FileContent(pub Vec<u8>);

impl AsRef<[u8]> for FileContent {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Serialize for FileContent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use base64::Engine;
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut m = BTreeMap::new();
                m.insert(
                    "base64",
                    base64::engine::general_purpose::STANDARD.encode(&self.0),
                );
                m.serialize(s)
            }
        }
    }
}

impl<'de> Deserialize<'de> for FileContent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use base64::Engine;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Text(String),
            B64 { base64: String },
        }
        match Repr::deserialize(d)? {
            Repr::Text(t) => Ok(FileContent(t.into_bytes())),
            Repr::B64 { base64 } => base64::engine::general_purpose::STANDARD
                .decode(base64)
                .map(FileContent)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// The `oid` Git LFS names `object` by: its sha256, in hex.
pub fn lfs_oid(object: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(object))
}

/// The pointer file Git LFS commits in place of `object` (spec v1).
pub fn lfs_pointer(object: &[u8]) -> String {
    format!(
        "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize {}\n",
        lfs_oid(object),
        object.len()
    )
}

/// The `oid` an LFS pointer names, when `content` is one.
pub fn lfs_pointer_oid(content: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(content).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "version https://git-lfs.github.com/spec/v1" {
        return None;
    }
    lines.find_map(|l| l.strip_prefix("oid sha256:").map(str::to_owned))
}

/// The first id of the notes GitLab writes itself when an MR's last thread is resolved
/// ("resolved all threads", `ops::notify_if_all_resolved`): far above any id a test seeds, and
/// left out of [`State::next_note_id`].
pub const ANNOUNCEMENT_NOTE_IDS: u64 = 1 << 40;

/// 40 lowercase hex digits derived from `n` (deterministic).
pub fn discussion_id(n: u64) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("fake-gitlab discussion {n}").as_bytes());
    hex::encode(digest)[..40].to_string()
}

impl State {
    /// Project `id`.
    pub fn project(&self, id: u64) -> Option<&Project> {
        self.projects.iter().find(|p| p.id == id)
    }
    /// Project `id`, to change.
    pub fn project_mut(&mut self, id: u64) -> Option<&mut Project> {
        self.projects.iter_mut().find(|p| p.id == id)
    }
    /// User `id`.
    pub fn user(&self, id: u64) -> Option<&User> {
        self.users.iter().find(|u| u.id == id)
    }

    /// Current time as GitLab formats it (`2024-01-02T03:04:05.678Z`).
    pub fn now(&self) -> String {
        match &self.fixed_time {
            Some(t) => time::format_ms(time::parse(t).unwrap_or(0)),
            None => time::format_ms(time::system_ms()),
        }
    }

    /// The next free note id.
    pub fn next_note_id(&self) -> u64 {
        let max = self
            .projects
            .iter()
            .flat_map(|p| p.merge_requests.iter())
            .flat_map(|m| m.discussions.iter())
            .flat_map(|d| d.notes.iter())
            .map(|n| n.id)
            .filter(|id| *id < ANNOUNCEMENT_NOTE_IDS)
            .max()
            .unwrap_or(0);
        self.note_id_start.max(max + 1)
    }

    /// The next free pipeline id.
    pub fn next_pipeline_id(&self) -> u64 {
        let max = self
            .projects
            .iter()
            .flat_map(|p| {
                p.pipelines.iter().map(|x| x.id).chain(
                    p.merge_requests
                        .iter()
                        .filter_map(|m| m.head_pipeline.as_ref().map(|x| x.id)),
                )
            })
            .max()
            .unwrap_or(0);
        self.pipeline_id_start.max(max + 1)
    }

    /// The next discussion id (deterministic), advancing the counter.
    pub fn next_discussion_id(&mut self) -> String {
        loop {
            self.discussion_seq += 1;
            let id = discussion_id(self.discussion_seq);
            let taken = self
                .projects
                .iter()
                .flat_map(|p| p.merge_requests.iter())
                .any(|m| m.discussions.iter().any(|d| d.id == id));
            if !taken {
                return id;
            }
        }
    }

    /// Fills generated ids and empty timestamps of a seed.
    pub fn normalize(&mut self) {
        let now = self.now();
        let mut next = self.next_note_id();
        let mut missing_disc = 0usize;
        for p in &mut self.projects {
            for m in &mut p.merge_requests {
                if m.created_at.is_empty() {
                    m.created_at = now.clone();
                }
                if m.updated_at.is_empty() {
                    m.updated_at = m.created_at.clone();
                }
                if let Some(hp) = &mut m.head_pipeline {
                    if hp.created_at.is_empty() {
                        hp.created_at = now.clone();
                    }
                    if hp.updated_at.is_empty() {
                        hp.updated_at = hp.created_at.clone();
                    }
                }
                for d in &mut m.discussions {
                    if d.id.is_empty() {
                        missing_disc += 1;
                    }
                    for n in &mut d.notes {
                        if n.id == 0 {
                            n.id = next;
                            next += 1;
                        }
                        if n.created_at.is_empty() {
                            n.created_at = now.clone();
                        }
                        if n.updated_at.is_empty() {
                            n.updated_at = n.created_at.clone();
                        }
                        if n.resolved && n.resolved_at.is_none() {
                            n.resolved_at = Some(now.clone());
                        }
                    }
                }
            }
        }
        for _ in 0..missing_disc {
            let id = self.next_discussion_id();
            'outer: for p in &mut self.projects {
                for m in &mut p.merge_requests {
                    for d in &mut m.discussions {
                        if d.id.is_empty() {
                            d.id = id;
                            break 'outer;
                        }
                    }
                }
            }
        }
    }
}
