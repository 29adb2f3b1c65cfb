//! What GitLab answers to doctor's routes ([`super::endpoints`]), as typed structs.
//!
//! Every field doctor reads is an `Option`: a field GitLab leaves out (an older version, a
//! permission that hides it, a proxy that rewrote the answer) reads as "GitLab did not say",
//! never as a default that could pass for a real value (a user id 0, a job named `""`, "no
//! hidden groups"). The application's conversions into its verdicts' facts keep that
//! distinction.

use serde::Deserialize;

/// `GET version`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Version {
    /// `18.6.0-ee`.
    pub version: Option<String>,
}

/// `GET user`: the token's user.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct CurrentUser {
    /// The user id (the author id of assent's notes).
    pub id: Option<u64>,
    /// The username.
    pub username: Option<String>,
    /// True for the bot user of a project or group access token.
    pub bot: Option<bool>,
}

/// `GET personal_access_tokens/self` (`lib/api/personal_access_tokens/self_information.rb`,
/// `Entities::PersonalAccessToken`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct TokenSelf {
    /// The token's scopes (`api`, `read_api`, …).
    pub scopes: Option<Vec<String>>,
    /// The date the token expires (`YYYY-MM-DD`): `None` when the answer has no such field,
    /// `Some(None)` when GitLab answers `null` (a token without expiry).
    #[serde(default, deserialize_with = "present")]
    pub expires_at: Option<Option<String>>,
}

/// A field that is present, `null` or not: `Some` of its value, told apart from a field left
/// out (`None`, by `#[serde(default)]`).
fn present<'de, D>(deserializer: D) -> Result<Option<Option<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Option::<String>::deserialize(deserializer).map(Some)
}

/// `GET projects/:id`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Project {
    /// `group/sub/project`.
    pub path_with_namespace: Option<String>,
    /// The default branch (policies come from it when no MR is given).
    pub default_branch: Option<String>,
    /// "All threads must be resolved".
    pub only_allow_merge_if_all_discussions_are_resolved: Option<bool>,
    /// "Pipelines must succeed".
    pub only_allow_merge_if_pipeline_succeeds: Option<bool>,
    /// "Automatically resolve merge request diff threads when they become outdated".
    pub resolve_outdated_diff_discussions: Option<bool>,
    /// "Skipped pipelines are considered successful".
    pub allow_merge_on_skipped_pipeline: Option<bool>,
    /// The "CI/CD configuration file" setting.
    pub ci_config_path: Option<String>,
    /// The token's own access to the project.
    pub permissions: Option<Permissions>,
}

/// `permissions` of a project: the caller's access, direct and through the group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Permissions {
    /// Direct membership.
    pub project_access: Option<Access>,
    /// Membership through the project's group.
    pub group_access: Option<Access>,
}

/// One access entry (`permissions.project_access`, a member).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Access {
    /// 10 Guest, 15 Planner, 20 Reporter, 30 Developer, 40 Maintainer, 50 Owner.
    pub access_level: Option<u64>,
}

impl Project {
    /// The caller's highest access level the project shows, direct or through the group.
    pub fn access_level(&self) -> Option<u64> {
        let permissions = self.permissions.as_ref()?;
        [&permissions.project_access, &permissions.group_access]
            .into_iter()
            .filter_map(|a| a.as_ref()?.access_level)
            .max()
    }

    /// The "CI/CD configuration file" setting, `None` for the default `.gitlab-ci.yml`.
    pub fn ci_config_path(&self) -> Option<String> {
        self.ci_config_path
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    }
}

/// `GET projects/:id/merge_requests/:iid`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct MergeRequest {
    /// `opened`, `merged`, `closed`, `locked`.
    pub state: Option<String>,
    /// The branch the MR targets (policies come from it).
    pub target_branch: Option<String>,
    /// The project the changes come from.
    pub source_project_id: Option<u64>,
    /// The project the MR belongs to.
    pub target_project_id: Option<u64>,
    /// Who opened it.
    pub author: Option<MergeRequestAuthor>,
    /// The branch the changes come from.
    pub source_branch: Option<String>,
}

/// The `author` of `GET projects/:id/merge_requests/:iid`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct MergeRequestAuthor {
    /// The author's username (the path of their personal namespace).
    pub username: Option<String>,
}

/// `GET projects/:id/jobs/:job_id`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Job {
    /// The job id.
    pub id: Option<u64>,
    /// The job's name in the configuration.
    pub name: Option<String>,
    /// `running`, `success`, …
    pub status: Option<String>,
    /// Its pipeline.
    pub pipeline: Option<JobPipeline>,
    /// Its commit.
    pub commit: Option<Commit>,
}

/// A job's pipeline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct JobPipeline {
    /// `refs/merge-requests/7/head`.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// `merge_request_event`, `push`, …
    pub source: Option<String>,
    /// The pipeline's commit.
    pub sha: Option<String>,
}

/// A commit reference.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Commit {
    /// The commit SHA.
    pub id: Option<String>,
}

/// The CI Lint API's answer (`GET …/ci/lint`, `POST …/ci/lint`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Lint {
    /// Whether the configuration is valid.
    pub valid: Option<bool>,
    /// The configuration with every include merged (absent when invalid).
    pub merged_yaml: Option<String>,
    /// What is wrong, when invalid.
    pub errors: Option<Vec<String>>,
    /// Every include the configuration resolved.
    pub includes: Option<Vec<LintInclude>>,
}

/// One entry of the CI Lint API's `includes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct LintInclude {
    /// `local`, `file`, `remote`, `template`, `component`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The file, URL or component.
    pub location: Option<String>,
    /// `project` and `ref` of a `file` include.
    pub extra: Option<LintIncludeExtra>,
    /// The project whose configuration included it.
    pub context_project: Option<String>,
}

/// The `extra` of a lint include.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct LintIncludeExtra {
    /// The project a `file` include reads.
    pub project: Option<String>,
    /// The ref a `file` include reads.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
}

/// `GET projects/:id/variables/:key`: only where the variable reaches; its value is never
/// decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Variable {
    /// `*` (every job) or the environment name or pattern whose jobs read it.
    pub environment_scope: Option<String>,
}

/// `GET projects/:id/resource_groups/:key`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ResourceGroup {
    /// The group's key.
    pub key: Option<String>,
}

/// `GET …/resource_groups/:key/current_job`: `null` when no job holds the group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct HoldingJob {
    /// The holder's job id.
    pub id: Option<u64>,
}

/// `GET projects/:id/approvals`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ApprovalSettings {
    /// "Remove all approvals when commits are added to the source branch".
    pub reset_approvals_on_push: Option<bool>,
    /// "Prevent editing approval rules in merge requests".
    pub disable_overriding_approvers_per_merge_request: Option<bool>,
}

/// One approval rule (`GET …/approval_rules`, project or MR level).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ApprovalRule {
    /// The rule's name.
    pub name: Option<String>,
    /// `regular`, `any_approver`, `code_owner`, `report_approver`.
    pub rule_type: Option<String>,
    /// Approvals the rule requires.
    pub approvals_required: Option<u64>,
    /// The users it names.
    pub users: Option<Vec<Identified>>,
    /// The groups it names.
    pub groups: Option<Vec<Identified>>,
    /// Everyone who may approve under it, when GitLab lists them.
    pub eligible_approvers: Option<Vec<Identified>>,
    /// It names groups the token cannot see.
    pub contains_hidden_groups: Option<bool>,
    /// The protected branches it is scoped to.
    pub protected_branches: Option<Vec<Branch>>,
    /// It applies to every protected branch (and only to those).
    pub applies_to_all_protected_branches: Option<bool>,
}

/// A user or group entry: only its id matters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Identified {
    /// The id.
    pub id: Option<u64>,
}

/// A protected branch entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Branch {
    /// The branch name.
    pub name: Option<String>,
}

/// One entry of `GET projects/:id/hooks`: where it points and what triggers it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ProjectHook {
    /// The hook's id.
    pub id: u64,
    /// Where deliveries go.
    pub url: String,
    /// *Merge request events*.
    pub merge_requests_events: Option<bool>,
    /// *Comments*.
    pub note_events: Option<bool>,
    /// *Emoji events*.
    pub emoji_events: Option<bool>,
    /// *Enable SSL verification*.
    pub enable_ssl_verification: Option<bool>,
    /// GitLab's auto-disabling state (`lib/api/entities/hook.rb`, from
    /// `app/models/concerns/web_hooks/auto_disabling.rb`): `executable`,
    /// `temporarily_disabled` (backed off after 4 failed deliveries in a row) or `disabled`
    /// (for good, after 40). Absent from GitLab versions without it.
    pub alert_status: Option<String>,
    /// Until when a backed-off hook sends nothing.
    pub disabled_until: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_missing_field_is_none_never_a_default() {
        let user: CurrentUser = decode(json!({"username": "assent-bot"}));
        assert_eq!(user.id, None);
        assert_eq!(user.bot, None);
        let job: Job = decode(json!({"status": "running"}));
        assert_eq!((job.id, job.name.as_deref()), (None, None));
        let rule: ApprovalRule = decode(json!({
            "name": "assent",
            "users": [{"id": 100}, {"username": "ghost"}],
            "groups": [{}],
        }));
        let ids = |list: &Option<Vec<Identified>>| -> Vec<Option<u64>> {
            list.iter().flatten().map(|x| x.id).collect()
        };
        assert_eq!(ids(&rule.users), [Some(100), None]);
        assert_eq!(ids(&rule.groups), [None]);
        assert_eq!(rule.approvals_required, None);
        assert_eq!(rule.contains_hidden_groups, None);
        assert_eq!(rule.eligible_approvers, None);
        let lint: Lint = decode(json!({"merged_yaml": "a: 1"}));
        assert_eq!(lint.valid, None);
    }

    #[test]
    fn the_access_level_is_the_highest_shown_and_absent_when_none_is() {
        let project: Project = decode(json!({
            "permissions": {"project_access": {"access_level": 20}, "group_access": {"access_level": 40}}
        }));
        assert_eq!(project.access_level(), Some(40));
        let project: Project = decode(json!({
            "permissions": {"project_access": null, "group_access": null}
        }));
        assert_eq!(project.access_level(), None);
        assert_eq!(Project::default().access_level(), None);
    }

    #[test]
    fn a_blank_ci_configuration_path_is_the_default_file() {
        let ci: Project = decode(json!({"ci_config_path": "  "}));
        assert_eq!(ci.ci_config_path(), None);
        let ci: Project = decode(json!({"ci_config_path": " ci/main.yml "}));
        assert_eq!(ci.ci_config_path().as_deref(), Some("ci/main.yml"));
    }
}
