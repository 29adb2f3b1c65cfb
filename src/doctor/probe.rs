//! Gathering: every request `assent doctor` makes, through the one transport, turned into
//! checks and serialization [`Evidence`]. Reads only, plus at most one `POST …/ci/lint`
//! (a validation that writes nothing) when the CI configuration lives outside the project.

use std::path::PathBuf;
use std::time::Duration;

use gitlab::api::common::NameOrId;
use serde_json::Value;
use url::Url;

use super::endpoints::{DoctorEndpoint, Route};
use super::enforcement::{
    ApprovalSettingsFacts, EnforcementEvidence, EnforcementVerdict, ProjectFacts, RuleFacts,
};
use super::report::{Check, DuplicatePrevention, Report, Status};
use super::serialization::{
    Certainty, ConfigFacts, Evidence, JobFacts, Probe, expected_key, judge,
};
use crate::core::policy::{PolicyFile, PolicySet};
use crate::forge::{ForgeError, Repository};
use crate::gitlab::retry::RetryPolicy;
use crate::gitlab::transport::{Token, allow_http, cleartext_warning, select_proxy};
use crate::gitlab::{GitLabClient, GitLabConfig, GitLabConfigError, GitLabForge};
use crate::review_input::{POLICY_DIR, read_policy_files};

/// Where policies live on the target branch.
/// Developer: may post notes and resolve threads.
const DEVELOPER: u64 = 30;

/// What doctor needs; resolved by the command layer.
#[derive(Debug, Clone)]
pub struct DoctorInputs {
    /// API v4 base.
    pub api_url: String,
    /// Project id or path.
    pub project: String,
    /// The token (never printed).
    pub token: Token,
    /// Extra CA bundle.
    pub ca_file: Option<PathBuf>,
    /// Where the CA bundle setting came from (for the report), e.g. `--ca-file`.
    pub ca_source: Option<String>,
    /// The MR, when known.
    pub mr: Option<u64>,
    /// `CI_JOB_ID`, when set.
    pub job_id: Option<u64>,
}

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

struct Prober {
    client: GitLabClient,
}

impl Prober {
    /// Sends a route (reads retried, the lint POST sent once) and decodes its JSON.
    fn json(&self, route: Route<'_>) -> Result<Value, ForgeError> {
        self.client.send_json(&DoctorEndpoint {
            project: NameOrId::Name(self.client.project().into()),
            route,
        })
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

fn status_of(e: &ForgeError) -> Option<u16> {
    match e {
        ForgeError::Status { status, .. } => Some(*status),
        _ => None,
    }
}

fn role_name(level: u64) -> &'static str {
    match level {
        0..=9 => "no access",
        10..=14 => "Guest",
        15..=19 => "Planner",
        20..=29 => "Reporter",
        30..=39 => "Developer",
        40..=49 => "Maintainer",
        _ => "Owner",
    }
}

fn redacted_url(text: &str) -> String {
    match Url::parse(text) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "<unparsable proxy URL>".into(),
    }
}

/// The `inputs` check for resolved inputs.
pub fn inputs_check(inputs: &DoctorInputs) -> Check {
    let mr = inputs
        .mr
        .map_or_else(|| "no MR".to_owned(), |m| format!("MR !{m}"));
    let job = inputs
        .job_id
        .map_or_else(|| "no CI job".to_owned(), |j| format!("CI job {j}"));
    Check::pass(
        "inputs",
        format!(
            "API {}, project {}, {mr}, {job}, token set",
            inputs.api_url, inputs.project
        ),
    )
}

/// Every check after `inputs`, all marked unknown because of `why`.
fn skipped(ids: &[&'static str], why: &str) -> Vec<Check> {
    ids.iter()
        .map(|id| {
            Check::unknown(
                id,
                format!("not checked: {why}"),
                format!("Fix the {why} first, then run assent doctor again."),
            )
        })
        .collect()
}

const AFTER_API: &[&str] = &[
    "token",
    "identity",
    "scope",
    "role",
    "threads-setting",
    "pipelines-setting",
    "merge-request",
    "policies",
    "serialization",
];

/// Runs every check against GitLab. `Err` only when doctor cannot run at all (exit 2).
pub fn run(inputs: &DoctorInputs) -> Result<Report, SetupError> {
    let prober = Prober {
        client: GitLabClient::new(&doctor_config(inputs)).map_err(SetupError)?,
    };
    let base = prober.client.api_base().clone();
    let mut checks = vec![inputs_check(inputs)];
    if let Some(warning) = cleartext_warning(&base, allow_http(|n| std::env::var(n).ok())) {
        checks.push(Check::unknown(
            "cleartext",
            warning,
            "Point --api-url (CI_API_V4_URL) at GitLab's https:// API base, or set ASSENT_ALLOW_HTTP=1 where the network path is trusted.",
        ));
    }
    let no_evidence = |why: &str| Evidence {
        mr_iid: inputs.mr,
        job_id: inputs.job_id,
        gitlab_version: None,
        job: Probe::NotAsked(why.into()),
        config: Probe::NotAsked(why.into()),
        resource_group: Probe::NotAsked(why.into()),
        current_job: Probe::NotAsked(why.into()),
    };

    // api: reachability, TLS, proxy, CA file.
    let tls = if base.scheme() == "https" {
        "TLS verified"
    } else {
        "plain HTTP, no TLS"
    };
    let proxy_text = match select_proxy(&base, |n| std::env::var(n).ok()) {
        Some(p) => format!("proxy {}", redacted_url(&p)),
        None => "no proxy".to_owned(),
    };
    let ca_text = match (&inputs.ca_file, &inputs.ca_source) {
        (Some(path), Some(src)) => {
            format!("CA file {} (from {src}) plus public roots", path.display())
        }
        (Some(path), None) => format!("CA file {} plus public roots", path.display()),
        _ => "public CA roots".to_owned(),
    };
    let how = format!("{tls}, {proxy_text}, {ca_text}");
    let mut gitlab_version = None;
    match prober.json(Route::Version) {
        Ok(v) => {
            let version = v["version"]
                .as_str()
                .unwrap_or("of unknown version")
                .to_owned();
            checks.push(Check::pass(
                "api",
                format!("GitLab {version} reached at {base} ({how})"),
            ));
            gitlab_version = v["version"].as_str().map(str::to_owned);
        }
        Err(e) if matches!(status_of(&e), Some(401 | 403)) => {
            checks.push(Check::pass(
                "api",
                format!("GitLab reached at {base} ({how}); it refused this token"),
            ));
        }
        Err(e) => {
            let text = e.to_string();
            let lower = text.to_ascii_lowercase();
            let fix = if lower.contains("certificate")
                || lower.contains("tls")
                || lower.contains("unknownissuer")
            {
                "Set ASSENT_CA_FILE (or pass --ca-file) to the PEM bundle of the CA that signed GitLab's certificate."
            } else if lower.contains("proxy") {
                "Check HTTPS_PROXY and NO_PROXY: the proxy must be reachable from the runner and allow CONNECT to GitLab."
            } else if matches!(status_of(&e), Some(300..=399)) {
                "Use the exact API base GitLab serves, https://<host>/api/v4 (CI_API_V4_URL in a job): redirects are never followed."
            } else if matches!(e, ForgeError::Decode { .. }) || status_of(&e) == Some(404) {
                "Point --api-url (CI_API_V4_URL) at GitLab's API base, which ends in /api/v4."
            } else if matches!(status_of(&e), Some(429)) {
                "GitLab is rate limiting this token: wait, then lower the rate of pipelines or ask an administrator to raise the limit."
            } else {
                "Check that the runner can reach the GitLab host (DNS, firewall, HTTPS_PROXY/NO_PROXY) and that GitLab is up."
            };
            checks.push(Check::fail(
                "api",
                format!("cannot reach GitLab at {base} ({how}): {text}"),
                fix,
            ));
            checks.extend(skipped(AFTER_API, "GitLab API reachability"));
            let verdict = judge(&no_evidence("GitLab could not be reached"));
            return Ok(finish(
                checks,
                verdict.guarantee,
                verdict.reason,
                EnforcementVerdict::threads_only("GitLab could not be reached"),
                &inputs.token,
            ));
        }
    }

    // token, identity.
    let user = match prober.json(Route::CurrentUser) {
        Ok(u) => u,
        Err(e) => {
            let (detail, fix) = match status_of(&e) {
                Some(401) => (
                    format!("GitLab rejects the token (401): {e}"),
                    "Create a project access token (Settings > Access tokens, role Developer, scope api) and store it in the masked variable ASSENT_TOKEN.",
                ),
                _ => (
                    format!("cannot read the token's user (GET /user): {e}"),
                    "Check the token is active and not expired, and that GitLab answers GET /api/v4/user for it.",
                ),
            };
            checks.push(Check::fail("token", detail, fix));
            checks.extend(skipped(&AFTER_API[1..], "token"));
            let verdict = judge(&no_evidence("the token is not usable"));
            return Ok(finish(
                checks,
                verdict.guarantee,
                verdict.reason,
                EnforcementVerdict::threads_only("the token is not usable"),
                &inputs.token,
            ));
        }
    };
    let user_id = user["id"].as_u64().unwrap_or(0);
    let username = user["username"].as_str().unwrap_or("?").to_owned();
    checks.push(Check::pass(
        "token",
        format!("valid: user @{username} (id {user_id})"),
    ));
    checks.push(match user["bot"].as_bool() {
        Some(true) => Check::pass("identity", format!("@{username} is a bot user (project or group access token)")),
        Some(false) => Check::fail(
            "identity",
            format!("@{username} is a person, not a bot user"),
            "Use a project access token: its bot user then owns assent's notes, and no person's notes can pass for assent's.",
        ),
        None => Check::unknown(
            "identity",
            format!("GitLab does not say whether @{username} is a bot"),
            "Make sure ASSENT_TOKEN is a project access token (Settings > Access tokens).",
        ),
    });

    // scope.
    checks.push(match prober.json(Route::TokenSelf) {
        Ok(t) => {
            let scopes: Vec<String> = t["scopes"]
                .as_array()
                .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            if scopes.iter().any(|s| s == "api") {
                Check::pass("scope", format!("scopes: {}", scopes.join(", ")))
            } else if scopes.is_empty() {
                Check::unknown(
                    "scope",
                    "GitLab lists no scopes for this token",
                    "Check in Settings > Access tokens that the token has the api scope.",
                )
            } else {
                Check::fail(
                    "scope",
                    format!("scopes: {} (no api)", scopes.join(", ")),
                    "Create a new token with the api scope: read_api cannot post notes or resolve threads.",
                )
            }
        }
        Err(e) => Check::unknown(
            "scope",
            format!("GitLab does not expose this token's scopes (GET /personal_access_tokens/self: {e})"),
            "Check in Settings > Access tokens that the token has the api scope (not read_api).",
        ),
    });

    // role and project settings.
    let project = prober.json(Route::Project);
    let project_error = project.as_ref().err().map(ToString::to_string);
    let project = match project {
        Ok(p) => Some(p),
        Err(e) => {
            let (status, fix) = match status_of(&e) {
                Some(404) => (
                    Status::Fail,
                    "Check --project (CI_PROJECT_ID) and add the token's bot user to the project: GitLab answers 404 for projects a user cannot see.",
                ),
                _ => (
                    Status::Unknown,
                    "Check that GitLab answers GET /projects/:id for this token.",
                ),
            };
            let detail = format!("cannot read project {}: {e}", inputs.project);
            checks.push(Check {
                id: "role",
                status,
                detail,
                fix: Some(fix.into()),
            });
            checks.extend(skipped(
                &["threads-setting", "pipelines-setting"],
                "project read",
            ));
            None
        }
    };
    if let Some(p) = &project {
        let level = ["project_access", "group_access"]
            .iter()
            .filter_map(|k| p["permissions"][k]["access_level"].as_u64())
            .max();
        let level = match level {
            Some(l) => Some(l),
            None => prober
                .json(Route::Member(user_id))
                .ok()
                .and_then(|m| m["access_level"].as_u64()),
        };
        checks.push(match level {
            Some(l) if l >= DEVELOPER => Check::pass("role", format!("{} ({l}) on {}", role_name(l), inputs.project)),
            Some(l) => Check::fail(
                "role",
                format!("{} ({l}) on {}: posting needs Reporter, resolving threads needs Developer", role_name(l), inputs.project),
                "Recreate the project access token with the Developer role: a Reporter cannot resolve assent's comment threads.",
            ),
            None => Check::unknown(
                "role",
                format!("GitLab shows no role of @{username} on {}", inputs.project),
                "Check in Settings > Members that the token's bot user has the Developer role.",
            ),
        });
        checks.push(setting_check(
            p,
            "threads-setting",
            "only_allow_merge_if_all_discussions_are_resolved",
            "all threads must be resolved before merge",
            "Enable Settings > Merge requests > Merge checks > All threads must be resolved: it is what makes an unresolved challenge block the merge.",
        ));
        checks.push(setting_check(
            p,
            "pipelines-setting",
            "only_allow_merge_if_pipeline_succeeds",
            "pipelines must succeed before merge",
            "Enable Settings > Merge requests > Merge checks > Pipelines must succeed: it is what makes a BLOCK decision (job exit 1) block the merge.",
        ));
    }

    // merge request: fork caveat.
    let mut target_branch = None;
    checks.push(match inputs.mr {
        None => Check::pass(
            "merge-request",
            "no MR given (pass --mr to check one); an MR from a fork runs its pipeline in the fork, without ASSENT_TOKEN",
        ),
        Some(iid) => match prober.json(Route::MergeRequest(iid)) {
            Ok(mr) => {
                target_branch = mr["target_branch"].as_str().map(str::to_owned);
                let source = mr["source_project_id"].as_u64();
                let target = mr["target_project_id"].as_u64();
                let state = mr["state"].as_str().unwrap_or("?");
                match (source, target) {
                    (Some(s), Some(t)) if s != t => Check::fail(
                        "merge-request",
                        format!("MR !{iid} comes from a fork (project {s}): its pipeline runs in the fork, without ASSENT_TOKEN, and is not judged"),
                        "After reviewing the fork's changes, run the MR's pipeline in the parent project (MR > Pipelines > Run pipeline), where the token and the protected template apply.",
                    ),
                    (Some(_), Some(_)) => Check::pass("merge-request", format!("MR !{iid} is {state}, same-project (not a fork)")),
                    _ => Check::unknown(
                        "merge-request",
                        format!("MR !{iid}: GitLab does not say whether it comes from a fork"),
                        "Check the MR's source project by hand: fork MR pipelines run without ASSENT_TOKEN.",
                    ),
                }
            }
            Err(e) => Check::fail(
                "merge-request",
                format!("cannot read MR !{iid}: {e}"),
                "Check --mr (CI_MERGE_REQUEST_IID) names an MR of this project.",
            ),
        },
    });

    // policies on the target branch.
    let branch = target_branch.or_else(|| {
        project
            .as_ref()
            .and_then(|p| p["default_branch"].as_str().map(str::to_owned))
    });
    checks.push(match branch {
        None => Check::unknown(
            "policies",
            "no target branch known (no MR and no default branch read)",
            "Pass --mr, or make sure the project has a default branch.",
        ),
        Some(branch) => policies_check(inputs, &branch),
    });

    // serialization.
    let evidence = gather_evidence(
        &prober,
        inputs,
        p_ci_config_path(project.as_ref()),
        gitlab_version,
    );
    let project_facts = match (&project, project_error) {
        (Some(p), _) => Probe::Got(project_facts(p)),
        (None, Some(err)) => Probe::Failed(err),
        (None, None) => Probe::NotAsked("the project was not read".into()),
    };
    let enforcement = gather_enforcement(
        &prober,
        inputs,
        (user_id != 0).then_some(user_id),
        project_facts,
        evidence.config.clone(),
    );
    let verdict = judge(&evidence);
    checks.push(match verdict.certainty {
        Certainty::Verified => Check::pass("serialization", verdict.reason.clone()),
        Certainty::Absent => Check::fail(
            "serialization",
            verdict.reason.clone(),
            "Use the shipped template, whose job holds resource_group: assent-mr-$CI_MERGE_REQUEST_IID, so one publisher runs per MR.",
        ),
        Certainty::Unverifiable => Check::unknown(
            "serialization",
            verdict.reason.clone(),
            "Run assent doctor as a step of the MR job itself, on GitLab 18.6 or later, with a Developer token, so the resource group and its holder can be read.",
        ),
    });
    Ok(finish(
        checks,
        verdict.guarantee,
        verdict.reason,
        super::enforcement::judge(&enforcement),
        &inputs.token,
    ))
}

fn finish(
    checks: Vec<Check>,
    guarantee: DuplicatePrevention,
    reason: String,
    enforcement: EnforcementVerdict,
    token: &Token,
) -> Report {
    let mut report = Report::new(checks, guarantee, reason).with_gate_enforcement(enforcement);
    report.redact(token);
    report
}

fn project_facts(p: &Value) -> ProjectFacts {
    ProjectFacts {
        path_with_namespace: p["path_with_namespace"].as_str().map(str::to_owned),
        only_allow_merge_if_pipeline_succeeds: p["only_allow_merge_if_pipeline_succeeds"].as_bool(),
        allow_merge_on_skipped_pipeline: p["allow_merge_on_skipped_pipeline"].as_bool(),
        ci_config_path: p_ci_config_path(Some(p)),
    }
}

/// One approval rule as GitLab lists it. Anything missing reads as the weaker setting: an
/// entry without an id is an unknown user or group, an absent `contains_hidden_groups` is
/// "may contain hidden groups".
fn rule_facts(v: &Value) -> RuleFacts {
    let ids = |list: &Value| -> Vec<u64> {
        list.as_array()
            .map(|a| a.iter().map(|x| x["id"].as_u64().unwrap_or(0)).collect())
            .unwrap_or_default()
    };
    RuleFacts {
        name: v["name"].as_str().unwrap_or("?").to_owned(),
        rule_type: v["rule_type"].as_str().unwrap_or_default().to_owned(),
        approvals_required: v["approvals_required"].as_u64().unwrap_or(0),
        user_ids: ids(&v["users"]),
        group_ids: ids(&v["groups"]),
        eligible_approver_ids: v["eligible_approvers"]
            .is_array()
            .then(|| ids(&v["eligible_approvers"])),
        contains_hidden_groups: v["contains_hidden_groups"].as_bool().unwrap_or(true),
        protected_branches: v["protected_branches"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|b| b["name"].as_str().unwrap_or("?").to_owned())
                    .collect()
            })
            .unwrap_or_default(),
        applies_to_all_protected_branches: v["applies_to_all_protected_branches"]
            .as_bool()
            .unwrap_or(false),
    }
}

fn rules(prober: &Prober, route: Route<'_>) -> Probe<Vec<RuleFacts>> {
    match prober.json(route) {
        Ok(Value::Array(items)) => Probe::Got(items.iter().map(rule_facts).collect()),
        Ok(_) => Probe::Failed("the approval rules answer is not a list".into()),
        Err(err) => Probe::Failed(err.to_string()),
    }
}

/// The gate-enforcement evidence: the project read above, the approval settings and rules,
/// and the CI configuration the serialization check read.
fn gather_enforcement(
    prober: &Prober,
    inputs: &DoctorInputs,
    bot_user_id: Option<u64>,
    project: Probe<ProjectFacts>,
    config: Probe<ConfigFacts>,
) -> EnforcementEvidence {
    let approval_settings = match prober.json(Route::ApprovalSettings) {
        Ok(v) if v.is_object() => Probe::Got(ApprovalSettingsFacts {
            reset_approvals_on_push: v["reset_approvals_on_push"].as_bool(),
            disable_overriding_approvers_per_merge_request:
                v["disable_overriding_approvers_per_merge_request"].as_bool(),
        }),
        Ok(_) => Probe::Failed("the approval settings answer is not an object".into()),
        Err(err) => Probe::Failed(err.to_string()),
    };
    EnforcementEvidence {
        bot_user_id,
        project,
        approval_settings,
        project_rules: rules(prober, Route::ApprovalRules),
        mr_rules: match inputs.mr {
            Some(iid) => rules(prober, Route::MergeRequestApprovalRules(iid)),
            None => Probe::NotAsked(String::new()),
        },
        config,
    }
}

fn setting_check(p: &Value, id: &'static str, field: &str, what: &str, fix: &str) -> Check {
    match p[field].as_bool() {
        Some(true) => Check::pass(id, format!("{what}: on")),
        Some(false) => Check::fail(id, format!("{what}: off ({field} is false)"), fix),
        None => Check::unknown(id, format!("GitLab does not show {field}"), fix),
    }
}

fn p_ci_config_path(project: Option<&Value>) -> Option<String> {
    project
        .and_then(|p| p["ci_config_path"].as_str())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn policies_check(inputs: &DoctorInputs, branch: &str) -> Check {
    let forge = match GitLabForge::new(doctor_config(inputs), inputs.mr.unwrap_or(0)) {
        Ok(f) => f,
        Err(e) => {
            return Check::unknown(
                "policies",
                format!("cannot build the GitLab client: {e}"),
                "Fix the connection settings.",
            );
        }
    };
    let load = || -> Result<(String, Vec<PolicyFile>), ForgeError> {
        let sha = forge.branch_head(branch)?;
        let files = read_policy_files(&forge, &sha)?;
        Ok((sha, files))
    };
    match load() {
        Err(e) => Check::unknown(
            "policies",
            format!("cannot read {POLICY_DIR} on {branch}: {e}"),
            "Check the token can read the repository (Reporter or higher) and the target branch exists.",
        ),
        Ok((sha, files)) => {
            let at = format!("{branch}@{}", &sha[..sha.len().min(8)]);
            match PolicySet::load(&files) {
                Ok(_) if files.is_empty() => Check::pass(
                    "policies",
                    format!(
                        "no policy files under {POLICY_DIR} on {at}: only the built-in findings apply"
                    ),
                ),
                Ok(_) => Check::pass(
                    "policies",
                    format!("{} policy file(s) on {at} load", files.len()),
                ),
                Err(problems) => {
                    let shown: Vec<String> =
                        problems.iter().take(3).map(ToString::to_string).collect();
                    let more = problems.len().saturating_sub(shown.len());
                    let more = if more > 0 {
                        format!(" (and {more} more)")
                    } else {
                        String::new()
                    };
                    Check::fail(
                        "policies",
                        format!("policies on {at} do not load: {}{more}", shown.join("; ")),
                        "Run assent lint on a checkout of the target branch and fix every problem it names; until then every MR is blocked by assent/policy-error.",
                    )
                }
            }
        }
    }
}

/// The lint request for the pipeline's configuration: the project's own file at the
/// pipeline's commit, or an include of the external file (`path@group/project[:ref]`, or a
/// URL) validated with `POST …/ci/lint`.
fn lint_config(
    prober: &Prober,
    ci_config_path: Option<&str>,
    sha: &str,
) -> Result<Value, ForgeError> {
    let quote = |s: &str| serde_json::to_string(s).expect("string");
    match ci_config_path {
        Some(path) if path.starts_with("https://") || path.starts_with("http://") => {
            let content = format!("include:\n  - remote: {}\n", quote(path));
            prober.json(Route::LintContent(content.into()))
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
            prober.json(Route::LintContent(content.into()))
        }
        _ => prober.json(Route::LintAtRef(sha.into())),
    }
}

fn gather_evidence(
    prober: &Prober,
    inputs: &DoctorInputs,
    ci_config_path: Option<String>,
    gitlab_version: Option<String>,
) -> Evidence {
    let mut e = Evidence {
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
    let job = match prober.json(Route::Job(job_id)) {
        Ok(j) => {
            let facts = JobFacts {
                id: j["id"].as_u64().unwrap_or(0),
                name: j["name"].as_str().unwrap_or_default().to_owned(),
                status: j["status"].as_str().unwrap_or_default().to_owned(),
                pipeline_ref: j["pipeline"]["ref"].as_str().map(str::to_owned),
                pipeline_source: j["pipeline"]["source"].as_str().map(str::to_owned),
                sha: j["pipeline"]["sha"]
                    .as_str()
                    .or_else(|| j["commit"]["id"].as_str())
                    .map(str::to_owned),
            };
            e.job = Probe::Got(facts.clone());
            Some(facts)
        }
        Err(err) => {
            e.job = Probe::Failed(err.to_string());
            None
        }
    };
    e.config = match job.as_ref().and_then(|j| j.sha.clone()) {
        None => Probe::NotAsked(
            "the job's commit is unknown, so its configuration cannot be read".into(),
        ),
        Some(sha) => match lint_config(prober, ci_config_path.as_deref(), &sha) {
            Ok(v) => match v["valid"].as_bool() {
                Some(valid) => Probe::Got(ConfigFacts {
                    valid,
                    merged_yaml: v["merged_yaml"].as_str().map(str::to_owned),
                    errors: v["errors"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|x| x.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                }),
                None => Probe::Failed("the CI Lint API answer has no \"valid\" field".into()),
            },
            Err(err) => Probe::Failed(err.to_string()),
        },
    };
    e.resource_group = match prober.json(Route::ResourceGroup(key.as_str().into())) {
        Ok(v) => match v["key"].as_str() {
            Some(k) => Probe::Got(k.to_owned()),
            None => Probe::Failed("the resource group answer has no key".into()),
        },
        Err(err) => Probe::Failed(err.to_string()),
    };
    e.current_job = match prober.json(Route::ResourceGroupCurrentJob(key.as_str().into())) {
        Ok(Value::Null) => Probe::Got(None),
        Ok(v) => match v["id"].as_u64() {
            Some(id) => Probe::Got(Some(id)),
            None => Probe::Failed("the current_job answer has no job id".into()),
        },
        Err(err) => Probe::Failed(err.to_string()),
    };
    e
}
