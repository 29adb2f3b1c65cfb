//! Gathering: every request `assent doctor` makes, through the project's one
//! [`GitLabClient`], decoded into `gitlab::doctor::responses`, turned into the verdicts'
//! facts ([`super::facts`]) and handed to [`super::checks`] and the verdicts. Reads only,
//! plus at most one `POST …/ci/lint` (a validation that writes nothing) when the CI
//! configuration lives outside the project.

use std::sync::Arc;
use std::time::Duration;

use gitlab::api::common::NameOrId;
use serde::de::DeserializeOwned;
use url::Url;

use super::checks::{self, Failed, PolicyRead, Reach};
use super::enforcement::{self, EnforcementEvidence, EnforcementVerdict, RuleFacts};
use super::facts::config_facts;
use super::report::{Check, Report};
use super::single_writer::{
    ConfigFacts, JobFacts, Probe, SingleWriterEvidence, expected_key, judge,
};
use super::target::DoctorInputs;
use crate::engine::run::inputs::{read_central_policies, read_policy_files};
use crate::forge::RepositoryFiles;
use crate::gitlab::doctor::responses::{
    Access, ApprovalRule, ApprovalSettings, CurrentUser, HoldingJob, Job, Lint, MergeRequest,
    Project, ProjectHook, ResourceGroup, TokenSelf, Variable, Version,
};
use crate::gitlab::doctor::{DoctorEndpoint, Route};
use crate::gitlab::retry::RetryPolicy;
use crate::gitlab::transport::{Token, allow_http, cleartext_warning, select_proxy};
use crate::gitlab::{GitLabClient, GitLabConfig, GitLabConfigError};

/// Doctor cannot run at all (exit 2): the configuration is unusable before any request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub GitLabConfigError);

/// Read retries for a diagnosis: few and short, so a broken GitLab is reported quickly.
fn doctor_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(200),
        max_backoff: Duration::from_secs(2),
        retry_after_cap: Duration::from_secs(10),
        rate_limit_budget: Duration::from_secs(30),
        ..RetryPolicy::default()
    }
}

/// The client configuration of a diagnosis: the run's, with a shorter request timeout and
/// [`doctor_retry`], so a broken GitLab is reported quickly.
fn doctor_config(inputs: &DoctorInputs) -> GitLabConfig {
    let mut config = GitLabConfig::new(
        inputs.api_url.clone(),
        inputs.token.clone(),
        inputs.project.clone(),
    );
    config.ca_file = inputs.ca_file.clone();
    config.request_timeout = Duration::from_secs(30);
    config.retry = doctor_retry();
    config
}

/// The checks in the order they run; those after a failed `api` or `token` check are
/// reported as skipped.
const AFTER_API: &[&str] = &[
    "token",
    "identity",
    "scope",
    "token-expiry",
    "role",
    "threads-setting",
    "pipelines-setting",
    "outdated-threads-setting",
    "token-variable",
    "merge-request",
    "bot-markers",
    "policies",
    "serialization",
];

/// [`AFTER_API`], then the checks only some inputs ask for.
fn after_api(inputs: &DoctorInputs) -> Vec<&'static str> {
    let mut ids = AFTER_API.to_vec();
    if inputs.policy_project.is_some() {
        ids.push("policy-project");
    }
    if inputs.serve_url.is_some() {
        ids.extend(["serve-ready", "serve-webhook"]);
    }
    ids
}

/// Sends doctor's routes through the project's client.
struct Prober<'a> {
    client: Arc<GitLabClient>,
    inputs: &'a DoctorInputs,
}

impl Prober<'_> {
    /// Whose assent markers MR `iid` holds, read as `assent run` reads them: its discussions,
    /// then each other marker author's account, at most `MAX_MARKER_AUTHORS` of them.
    fn marker_owners(&self, iid: u64, bot: u64) -> checks::MarkerOwners {
        use crate::core::bot_identity::owners_reading;
        use crate::forge::Forge as _;
        let forge = crate::gitlab::GitLabForge::over(self.client.clone(), iid);
        let listed = forge.list_discussions().map_err(Failed::from)?;
        // Every refused read is an author doctor cannot place, as the run's would be after
        // its retries: the check says so rather than failing as a whole.
        let owners = owners_reading(&listed, bot, &self.inputs.previous_bot_users, |id| {
            Ok::<_, std::convert::Infallible>(
                forge
                    .user_account(id)
                    .map_err(|e| format!("GitLab refused to show user {id}: {e}")),
            )
        });
        Ok(owners.unwrap_or_else(|never| match never {}))
    }

    /// Sends a route (reads retried, the lint POST sent once) and decodes its answer.
    fn get<T: DeserializeOwned>(&self, route: Route<'_>) -> Result<T, Failed> {
        let value = self.client.send_json(&DoctorEndpoint {
            project: NameOrId::Name(self.client.project().into()),
            route: route.clone(),
        })?;
        serde_json::from_value(value).map_err(|e| Failed {
            diagnosis: crate::gitlab::Diagnosis::Unreadable,
            error: self.client.redact(format!(
                "{} {}: unexpected response: {e}",
                route.method_name(),
                route.path_template()
            )),
        })
    }

    /// How the client reaches GitLab, for the `api` line.
    fn reach(&self) -> Reach {
        let base = self.client.api_base();
        Reach {
            base: base.to_string(),
            https: base.scheme() == "https",
            proxy: select_proxy(base, |n| std::env::var(n).ok()).map(|p| without_credentials(&p)),
            ca_file: self
                .inputs
                .ca_file
                .clone()
                .map(|path| (path, self.inputs.ca_source.clone())),
        }
    }

    /// The policy files on `branch`'s tip, through the ports a run reads them with.
    fn policies(&self, branch: &str) -> PolicyRead {
        let sha = self.client.branch_head(branch)?;
        let files = read_policy_files(self.client.as_ref(), &sha)?;
        Ok((sha, files))
    }

    /// The project's access level for the token's user: the project's `permissions`, else
    /// its member entry (when GitLab said who the user is).
    fn access_level(&self, project: &Project, user: &CurrentUser) -> Option<u64> {
        project.access_level().or_else(|| {
            let member: Access = self.get(Route::Member(user.id?)).ok()?;
            member.access_level
        })
    }

    /// The lint request for the pipeline's configuration: the project's own file at the
    /// pipeline's commit, or an include of the external file (`path@group/project[:ref]`,
    /// or a URL) validated with `POST …/ci/lint`.
    fn lint_config(&self, ci_config_path: Option<&str>, sha: &str) -> Result<Lint, Failed> {
        let quote = |s: &str| serde_json::to_string(s).expect("string");
        match ci_config_path {
            Some(path) if path.starts_with("https://") || path.starts_with("http://") => {
                let content = format!("include:\n  - remote: {}\n", quote(path));
                self.get(Route::LintContent(content.into()))
            }
            Some(path) if path.contains('@') => {
                let (file, rest) = path.split_once('@').unwrap_or((path, ""));
                let (project, git_ref) = match rest.split_once(':') {
                    Some((p, r)) => (p, Some(r)),
                    None => (rest, None),
                };
                let mut content = format!(
                    "include:\n  - project: {}\n    file: {}\n",
                    quote(project),
                    quote(file)
                );
                if let Some(r) = git_ref {
                    content.push_str(&format!("    ref: {}\n", quote(r)));
                }
                self.get(Route::LintContent(content.into()))
            }
            _ => self.get(Route::LintAtRef(sha.into())),
        }
    }

    /// The serialization evidence: the job, its configuration, the resource group and its
    /// holder (only inside a CI job of an MR).
    fn single_writer_evidence(
        &self,
        ci_config_path: Option<String>,
        gitlab_version: Option<String>,
    ) -> SingleWriterEvidence {
        let inputs = self.inputs;
        let mut e = SingleWriterEvidence {
            mr_iid: inputs.mr,
            job_id: inputs.job_id,
            gitlab_version,
            job: Probe::NotAsked(String::new()),
            config: Probe::NotAsked(String::new()),
            resource_group: Probe::NotAsked(String::new()),
            current_job: Probe::NotAsked(String::new()),
        };
        let (Some(iid), Some(job_id)) = (inputs.mr, inputs.job_id) else {
            return e; // judge() names what is missing.
        };
        let key = expected_key(iid);
        let job: Option<JobFacts> = match self.get::<Job>(Route::Job(job_id)) {
            Ok(job) => {
                let facts = JobFacts::from(job);
                e.job = Probe::Got(facts.clone());
                Some(facts)
            }
            Err(failed) => {
                e.job = Probe::Failed(failed.error);
                None
            }
        };
        e.config = match job.and_then(|j| j.sha) {
            None => Probe::NotAsked(
                "the job's commit is unknown, so its configuration cannot be read".into(),
            ),
            Some(sha) => match self.lint_config(ci_config_path.as_deref(), &sha) {
                Ok(lint) => config_facts(lint).map_or_else(Probe::Failed, Probe::Got),
                Err(failed) => Probe::Failed(failed.error),
            },
        };
        e.resource_group =
            match self.get::<ResourceGroup>(Route::ResourceGroup(key.as_str().into())) {
                Ok(ResourceGroup { key: Some(k) }) => Probe::Got(k),
                Ok(ResourceGroup { key: None }) => {
                    Probe::Failed("the resource group answer has no key".into())
                }
                Err(failed) => Probe::Failed(failed.error),
            };
        e.current_job = match self
            .get::<Option<HoldingJob>>(Route::ResourceGroupCurrentJob(key.as_str().into()))
        {
            Ok(None) => Probe::Got(None),
            Ok(Some(HoldingJob { id: Some(id) })) => Probe::Got(Some(id)),
            Ok(Some(HoldingJob { id: None })) => {
                Probe::Failed("the current_job answer has no job id".into())
            }
            Err(failed) => Probe::Failed(failed.error),
        };
        e
    }

    /// Where the token's CI/CD variable reaches: its scope, or, when GitLab holds it for
    /// several scopes (409), whether one of them is `*`.
    fn token_variable(&self) -> checks::TokenVariable {
        let key = self.inputs.token_variable.as_str();
        let route = |scope: Option<&'static str>| Route::Variable {
            key: key.into(),
            scope: scope.map(Into::into),
        };
        match self.get::<Variable>(route(None)) {
            Ok(v) => checks::TokenVariable::Scoped(v.environment_scope),
            Err(failed) if failed.diagnosis == crate::gitlab::Diagnosis::Refused => {
                match self.get::<Variable>(route(Some("*"))) {
                    Ok(_) => checks::TokenVariable::SeveralOneForEveryJob,
                    Err(f) if f.diagnosis == crate::gitlab::Diagnosis::NotFound => {
                        checks::TokenVariable::SeveralNoneForEveryJob
                    }
                    Err(f) => checks::TokenVariable::Unread(f),
                }
            }
            Err(failed) => checks::TokenVariable::Unread(failed),
        }
    }

    fn rules(&self, route: Route<'_>) -> Probe<Vec<RuleFacts>> {
        match self.get::<Vec<ApprovalRule>>(route) {
            Ok(rules) => Probe::Got(rules.into_iter().map(RuleFacts::from).collect()),
            Err(failed) => Probe::Failed(failed.error),
        }
    }

    /// The gate-enforcement evidence: the project read before, the approval settings and
    /// rules, and the CI configuration the serialization check read.
    fn enforcement_evidence(
        &self,
        bot_user_id: Option<u64>,
        project: Probe<enforcement::ProjectFacts>,
        config: Probe<ConfigFacts>,
        mr_author: Probe<String>,
        mr_source_branch: Probe<String>,
    ) -> EnforcementEvidence {
        EnforcementEvidence {
            bot_user_id,
            project,
            approval_settings: match self.get::<ApprovalSettings>(Route::ApprovalSettings) {
                Ok(settings) => Probe::Got(settings.into()),
                Err(failed) => Probe::Failed(failed.error),
            },
            project_rules: self.rules(Route::ApprovalRules),
            mr_rules: match self.inputs.mr {
                Some(iid) => self.rules(Route::MergeRequestApprovalRules(iid)),
                None => Probe::NotAsked(String::new()),
            },
            config,
            mr_author,
            mr_source_branch,
        }
    }
}

/// A proxy URL without its credentials, for the report.
fn without_credentials(text: &str) -> String {
    match Url::parse(text) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "<unparsable proxy URL>".into(),
    }
}

/// Runs every check against GitLab. `Err` only when doctor cannot run at all (exit 2).
pub fn run(inputs: &DoctorInputs) -> Result<Report, SetupError> {
    let prober = Prober {
        client: Arc::new(GitLabClient::new(&doctor_config(inputs)).map_err(SetupError)?),
        inputs,
    };
    let mut checks = vec![checks::inputs_check(inputs)];
    checks.extend(checks::cleartext_check(cleartext_warning(
        prober.client.api_base(),
        allow_http(|n| std::env::var(n).ok()),
    )));

    let version = prober.get::<Version>(Route::Version);
    checks.push(checks::api_check(&prober.reach(), &version));
    if !checks::api_reached(&version) {
        checks.extend(checks::skipped(
            &after_api(inputs),
            "the api check failed: GitLab could not be reached",
        ));
        return Ok(stopped(checks, inputs, "GitLab could not be reached"));
    }
    let Some(user) = usable_token(&prober, &mut checks) else {
        return Ok(stopped(checks, inputs, "the token is not usable"));
    };
    let project = match prober.get::<Project>(Route::Project) {
        Ok(project) => project,
        Err(failed) => {
            // Every later read is under the project: one `project` failure says so, instead
            // of the same 404 from the MR, the policies, the approval rules and the jobs.
            const WHY: &str = "the project could not be read";
            checks.push(checks::project_unreadable_check(&inputs.project, &failed));
            checks.extend(checks::skipped(&PROJECT_CHECKS, WHY));
            if inputs.policy_project.is_some() {
                checks.extend(checks::skipped(&["policy-project"], WHY));
            }
            if inputs.serve_url.is_some() {
                checks.extend(checks::skipped(&["serve-ready", "serve-webhook"], WHY));
            }
            checks.extend(checks::skipped(&["serialization"], WHY));
            return Ok(stopped(checks, inputs, WHY));
        }
    };
    project_checks(&prober, &user, &project, &mut checks);
    let mr = inputs
        .mr
        .map(|iid| (iid, prober.get::<MergeRequest>(Route::MergeRequest(iid))));
    checks.push(checks::merge_request_check(
        mr.as_ref().map(|(iid, answer)| (*iid, answer)),
    ));
    let markers = mr
        .as_ref()
        .filter(|(_, answer)| answer.is_ok())
        .zip(user.id)
        .map(|((iid, _), bot)| (*iid, prober.marker_owners(*iid, bot)));
    checks.push(checks::bot_markers_check(
        markers.as_ref().map(|(iid, found)| (*iid, found)),
    ));
    policy_checks(&prober, mr.as_ref(), &project, &mut checks);
    serve_checks(&prober, &mut checks);

    let evidence = prober.single_writer_evidence(
        project.ci_config_path(),
        version.ok().and_then(|v| v.version),
    );
    let enforcement = prober.enforcement_evidence(
        user.id,
        Probe::Got((&project).into()),
        evidence.config.clone(),
        merge_request_fact(mr.as_ref(), "GitLab shows no MR author", |m| {
            m.author.as_ref()?.username.clone()
        }),
        merge_request_fact(mr.as_ref(), "GitLab shows no MR source branch", |m| {
            m.source_branch.clone()
        }),
    );
    let verdict = judge(&evidence);
    checks.push(checks::serialization_check(&verdict));
    Ok(finish(
        checks,
        &verdict,
        enforcement::judge(&enforcement),
        &inputs.token,
    ))
}

/// The token's user, with the `token`, `identity` and `scope` checks; `None` (and every later
/// check skipped) when the token is not usable.
fn usable_token(prober: &Prober<'_>, checks: &mut Vec<Check>) -> Option<CurrentUser> {
    let user = prober.get::<CurrentUser>(Route::CurrentUser);
    checks.push(checks::token_check(&user));
    let user = match user {
        Ok(user) if user.id.is_some() => user,
        _ => {
            checks.extend(checks::skipped(
                &after_api(prober.inputs)[1..],
                "the token check did not pass: the token is not usable",
            ));
            return None;
        }
    };
    checks.push(checks::identity_check(
        &user,
        prober.inputs.bot_user.as_deref(),
    ));
    let token_self = prober.get::<TokenSelf>(Route::TokenSelf);
    checks.push(checks::scope_check(&token_self));
    checks.push(checks::token_expiry_check(&token_self, prober.inputs.today));
    Some(user)
}

/// The checks under the project, not checked when it cannot be read.
const PROJECT_CHECKS: [&str; 8] = [
    "role",
    "threads-setting",
    "pipelines-setting",
    "outdated-threads-setting",
    "token-variable",
    "merge-request",
    "bot-markers",
    "policies",
];

/// The checks the project's answer decides: the token's role, the three merge settings and
/// where the token's variable reaches.
fn project_checks(
    prober: &Prober<'_>,
    user: &CurrentUser,
    project: &Project,
    checks: &mut Vec<Check>,
) {
    let inputs = prober.inputs;
    let level = prober.access_level(project, user);
    checks.push(checks::role_check(&inputs.project, user, level));
    checks.push(checks::threads_setting_check(project));
    checks.push(checks::pipelines_setting_check(project));
    checks.push(checks::outdated_threads_setting_check(project));
    checks.push(checks::token_variable_check(
        &inputs.token_variable,
        &inputs.environment,
        &prober.token_variable(),
    ));
}

/// The `policies` check, and `policy-project` when a central policy project is named.
fn policy_checks(
    prober: &Prober<'_>,
    mr: Option<&(u64, Result<MergeRequest, Failed>)>,
    project: &Project,
    checks: &mut Vec<Check>,
) {
    // Policies come from the MR's target branch, else the project's default branch.
    let branch = mr
        .and_then(|(_, answer)| answer.as_ref().ok()?.target_branch.clone())
        .or_else(|| project.default_branch.clone());
    let policies = branch.as_deref().map(|b| prober.policies(b));
    checks.push(checks::policies_check(branch.as_deref(), policies.as_ref()));
    if let Some(source) = &prober.inputs.policy_project {
        // Read exactly as a run reads it, over a client of its own with the same token.
        let mut config = doctor_config(prober.inputs);
        config.project = source.project.clone();
        let read = GitLabClient::new(&config)
            .map_err(|e| e.to_string())
            .and_then(|client| {
                read_central_policies(&client, source).map_err(|e| client.redact(e.to_string()))
            });
        checks.push(checks::policy_project_check(&source.project, &read));
    }
}

/// With `--serve-url`: serve's readiness and the project webhook that feeds it.
fn serve_checks(prober: &Prober<'_>, checks: &mut Vec<Check>) {
    let inputs = prober.inputs;
    let Some(serve) = &inputs.serve_url else {
        return;
    };
    // Unauthenticated: the token goes to GitLab only.
    let ready = crate::gitlab::health::get_health(
        &checks::readyz_url(serve),
        inputs.ca_file.as_deref(),
        Duration::from_secs(10),
    );
    checks.push(checks::serve_ready_check(serve, &ready));
    let hooks = prober.get::<Vec<ProjectHook>>(Route::ProjectHooks);
    checks.push(checks::serve_webhook_check(serve, &hooks));
}

/// One field of the MR's answer as evidence: not asked without an MR, failed when the MR
/// could not be read or GitLab left the field out (`missing` says so).
fn merge_request_fact(
    mr: Option<&(u64, Result<MergeRequest, Failed>)>,
    missing: &str,
    field: impl FnOnce(&MergeRequest) -> Option<String>,
) -> Probe<String> {
    match mr {
        None => Probe::NotAsked(String::new()),
        Some((_, Ok(m))) => field(m).map_or_else(|| Probe::Failed(missing.into()), Probe::Got),
        Some((_, Err(failed))) => Probe::Failed(failed.error.clone()),
    }
}

/// The report of a diagnosis that stopped early because of `why`: nothing proves
/// serialization or the gate.
fn stopped(checks: Vec<Check>, inputs: &DoctorInputs, why: &str) -> Report {
    let evidence = SingleWriterEvidence {
        mr_iid: inputs.mr,
        job_id: inputs.job_id,
        gitlab_version: None,
        job: Probe::NotAsked(why.into()),
        config: Probe::NotAsked(why.into()),
        resource_group: Probe::NotAsked(why.into()),
        current_job: Probe::NotAsked(why.into()),
    };
    finish(
        checks,
        &judge(&evidence),
        EnforcementVerdict::threads_only(why),
        &inputs.token,
    )
}

fn finish(
    checks: Vec<Check>,
    verdict: &super::single_writer::SingleWriterVerdict,
    enforcement: EnforcementVerdict,
    token: &Token,
) -> Report {
    let mut report = Report::new(checks, verdict.guarantee, verdict.reason.clone())
        .with_gate_enforcement(enforcement);
    report.redact(token);
    report
}
