//! GitLab's answers to doctor's routes (`gitlab::doctor::responses`) as the facts the
//! verdicts read (`single_writer`, `enforcement`). Here, between the adapter's wire types and
//! the pure verdicts, so neither side names the other.
//!
//! A field GitLab left out stays `None` in the facts: a conversion never invents a value
//! that could pass for one GitLab gave (a user id 0, a job named `""`, "no hidden groups").

use crate::gitlab::doctor::responses::{
    ApprovalRule, ApprovalSettings, Identified, Job, Lint, Project,
};

use super::enforcement::{ApprovalSettingsFacts, ProjectFacts, RuleFacts};
use super::single_writer::{ConfigFacts, IncludeFacts, JobFacts};

impl From<Job> for JobFacts {
    fn from(job: Job) -> JobFacts {
        let pipeline = job.pipeline.unwrap_or_default();
        JobFacts {
            id: job.id,
            name: job.name,
            status: job.status,
            pipeline_ref: pipeline.git_ref,
            pipeline_source: pipeline.source,
            sha: pipeline.sha.or_else(|| job.commit.and_then(|c| c.id)),
        }
    }
}

/// The configuration's facts from the CI Lint API's answer, or why the answer says nothing
/// usable.
pub fn config_facts(lint: Lint) -> Result<ConfigFacts, String> {
    let valid = lint
        .valid
        .ok_or("the CI Lint API answer has no \"valid\" field")?;
    Ok(ConfigFacts {
        valid,
        merged_yaml: lint.merged_yaml,
        errors: lint.errors.unwrap_or_default(),
        includes: lint.includes.map(|list| {
            list.into_iter()
                .map(|i| {
                    let extra = i.extra.unwrap_or_default();
                    IncludeFacts {
                        kind: i.kind,
                        location: i.location,
                        project: extra.project,
                        git_ref: extra.git_ref,
                        context_project: i.context_project,
                    }
                })
                .collect()
        }),
    })
}

impl From<&Project> for ProjectFacts {
    fn from(project: &Project) -> ProjectFacts {
        ProjectFacts {
            path_with_namespace: project.path_with_namespace.clone(),
            only_allow_merge_if_pipeline_succeeds: project.only_allow_merge_if_pipeline_succeeds,
            allow_merge_on_skipped_pipeline: project.allow_merge_on_skipped_pipeline,
            ci_config_path: project.ci_config_path(),
        }
    }
}

impl From<ApprovalSettings> for ApprovalSettingsFacts {
    fn from(s: ApprovalSettings) -> ApprovalSettingsFacts {
        ApprovalSettingsFacts {
            reset_approvals_on_push: s.reset_approvals_on_push,
            disable_overriding_approvers_per_merge_request: s
                .disable_overriding_approvers_per_merge_request,
        }
    }
}

impl From<ApprovalRule> for RuleFacts {
    fn from(rule: ApprovalRule) -> RuleFacts {
        let ids = |list: Option<Vec<Identified>>| -> Vec<Option<u64>> {
            list.unwrap_or_default().into_iter().map(|x| x.id).collect()
        };
        RuleFacts {
            name: rule.name.unwrap_or_else(|| "(unnamed)".to_owned()),
            rule_type: rule.rule_type,
            approvals_required: rule.approvals_required,
            user_ids: ids(rule.users),
            group_ids: ids(rule.groups),
            eligible_approver_ids: rule.eligible_approvers.map(|list| ids(Some(list))),
            contains_hidden_groups: rule.contains_hidden_groups,
            protected_branches: rule
                .protected_branches
                .unwrap_or_default()
                .into_iter()
                .map(|b| b.name.unwrap_or_else(|| "(unnamed)".to_owned()))
                .collect(),
            // GitLab versions before the setting existed scope a rule by its branch list
            // alone, which is what `false` means.
            applies_to_all_protected_branches: rule
                .applies_to_all_protected_branches
                .unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_field_gitlab_left_out_stays_none_in_the_facts() {
        let job: JobFacts = decode::<Job>(json!({"status": "running"})).into();
        assert_eq!((job.id, job.name.as_deref()), (None, None));
        let rule: RuleFacts = decode::<ApprovalRule>(json!({
            "name": "assent",
            "users": [{"id": 100}, {"username": "ghost"}],
            "groups": [{}],
        }))
        .into();
        assert_eq!(rule.user_ids, [Some(100), None]);
        assert_eq!(rule.group_ids, [None]);
        assert_eq!(rule.approvals_required, None);
        assert_eq!(rule.contains_hidden_groups, None);
        assert_eq!(rule.eligible_approver_ids, None);
        assert!(!rule.applies_to_all_protected_branches);
        assert_eq!(
            config_facts(decode(json!({"merged_yaml": "a: 1"}))),
            Err("the CI Lint API answer has no \"valid\" field".to_owned())
        );
        let settings: ApprovalSettingsFacts = decode::<ApprovalSettings>(json!({})).into();
        assert_eq!(settings, ApprovalSettingsFacts::default());
    }

    #[test]
    fn a_jobs_commit_comes_from_its_pipeline_or_else_its_commit() {
        let job: JobFacts = decode::<Job>(json!({
            "id": 9, "name": "assent", "status": "running",
            "pipeline": {"ref": "refs/merge-requests/7/head", "source": "merge_request_event"},
            "commit": {"id": "abc"}
        }))
        .into();
        assert_eq!(job.sha.as_deref(), Some("abc"));
        assert_eq!(
            job.pipeline_ref.as_deref(),
            Some("refs/merge-requests/7/head")
        );
        let job: JobFacts = decode::<Job>(json!({
            "pipeline": {"sha": "def"}, "commit": {"id": "abc"}
        }))
        .into();
        assert_eq!(job.sha.as_deref(), Some("def"));
    }

    #[test]
    fn the_project_facts_read_the_configuration_path_as_set_or_default() {
        let project: Project = decode(json!({
            "path_with_namespace": "group/proj",
            "only_allow_merge_if_pipeline_succeeds": true,
            "ci_config_path": "  ",
        }));
        let facts = ProjectFacts::from(&project);
        assert_eq!(facts.path_with_namespace.as_deref(), Some("group/proj"));
        assert_eq!(facts.only_allow_merge_if_pipeline_succeeds, Some(true));
        assert_eq!(facts.allow_merge_on_skipped_pipeline, None);
        assert_eq!(facts.ci_config_path, None);
    }
}
