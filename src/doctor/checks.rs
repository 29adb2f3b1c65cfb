//! One function per check: each turns what GitLab answered (typed,
//! `gitlab::doctor::responses`) or how a request failed ([`Failed`]: the adapter's typed
//! [`Diagnosis`]) into one [`Check`], with its fix. Pure: the probe sends the requests, these decide.
//!
//! A fix is chosen from typed facts only (the diagnosis, what doctor knows of the setup:
//! the CA file, the proxy), never from an error's wording, so neither a library's phrasing
//! nor a hostile server's text can change it. An error's text appears only in a detail.

use std::path::PathBuf;

use crate::gitlab::Diagnosis;

use super::report::Check;
use super::single_writer::{Certainty, SingleWriterVerdict};
use super::target::DoctorInputs;
use crate::core::bot_identity::{IdentityRefusal, Owners};
use crate::core::commit_sha::CommitSha;
use crate::core::policy::{PolicyFile, PolicySet};
use crate::engine::run::inputs::{CentralPolicies, POLICY_DIR};
use crate::forge::{CertificateFailure, ForgeError, TransportFailure};
use crate::gitlab::doctor::responses::{CurrentUser, MergeRequest, Project, TokenSelf, Version};

/// Developer: may post notes and resolve threads.
const DEVELOPER: u64 = 30;

/// A request that failed, as a check sees it: the diagnosis picks the fix, the error's
/// (redacted) text is quoted in the detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// What the failure means.
    pub diagnosis: Diagnosis,
    /// The error, as the adapter wrote it (never the token).
    pub error: String,
}

impl From<ForgeError> for Failed {
    fn from(error: ForgeError) -> Failed {
        Failed {
            diagnosis: crate::gitlab::diagnose(&error),
            error: error.to_string(),
        }
    }
}

/// How doctor reaches GitLab: what the `api` line shows, and what its fix depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    /// The API base, as parsed.
    pub base: String,
    /// The API base is `https://`.
    pub https: bool,
    /// The proxy in use, without credentials.
    pub proxy: Option<String>,
    /// The CA file in use, and where the setting came from (`--ca-file`, `ASSENT_CA_FILE`,
    /// `CI_SERVER_TLS_CA_FILE`).
    pub ca_file: Option<(PathBuf, Option<String>)>,
}

impl Reach {
    /// `TLS verified, no proxy, public CA roots`.
    fn describe(&self) -> String {
        let tls = if self.https {
            "TLS verified"
        } else {
            "plain HTTP, no TLS"
        };
        let proxy = match &self.proxy {
            Some(p) => format!("proxy {p}"),
            None => "no proxy".to_owned(),
        };
        let ca = match &self.ca_file {
            Some((path, Some(source))) => {
                format!(
                    "CA file {} (from {source}) plus public roots",
                    path.display()
                )
            }
            Some((path, None)) => format!("CA file {} plus public roots", path.display()),
            None => "public CA roots".to_owned(),
        };
        format!("{tls}, {proxy}, {ca}")
    }

    /// `the CA file /x.pem (from ASSENT_CA_FILE)`, when one is in use.
    fn ca_file_named(&self) -> Option<String> {
        self.ca_file.as_ref().map(|(path, source)| match source {
            Some(source) => format!("the CA file {} (from {source})", path.display()),
            None => format!("the CA file {}", path.display()),
        })
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

/// The `inputs` check when inputs are missing or unusable (doctor then cannot run).
pub fn missing_inputs_check(problems: &str) -> Check {
    Check::fail(
        "inputs",
        problems,
        "Set every input named above (in an MR pipeline job, CI sets every input but the token).",
    )
}

/// The `cleartext` warning: the token would cross the network unencrypted.
pub fn cleartext_check(warning: Option<String>) -> Option<Check> {
    warning.map(|warning| {
        Check::unknown(
            "cleartext",
            warning,
            "Point --api-url (CI_API_V4_URL) at GitLab's https:// API base, or set ASSENT_ALLOW_HTTP=1 where the network path is trusted.",
        )
    })
}

/// True when GitLab answered `GET version` at all: a refused token still proves the API is
/// there.
pub fn api_reached(answer: &Result<Version, Failed>) -> bool {
    match answer {
        Ok(_) => true,
        Err(failed) => matches!(
            failed.diagnosis,
            Diagnosis::TokenRejected | Diagnosis::Forbidden
        ),
    }
}

/// The `api` check: reachability, TLS, proxy and CA file, from `GET version`.
pub fn api_check(reach: &Reach, answer: &Result<Version, Failed>) -> Check {
    let how = reach.describe();
    let base = &reach.base;
    match answer {
        Ok(v) => {
            let version = v.version.as_deref().unwrap_or("of unknown version");
            Check::pass("api", format!("GitLab {version} reached at {base} ({how})"))
        }
        Err(_) if api_reached(answer) => Check::pass(
            "api",
            format!("GitLab reached at {base} ({how}); it refused this token"),
        ),
        Err(failed) => Check::fail(
            "api",
            format!("cannot reach GitLab at {base} ({how}): {}", failed.error),
            api_fix(reach, failed.diagnosis),
        ),
    }
}

/// What to do when `GET version` got no usable answer.
pub fn api_fix(reach: &Reach, diagnosis: Diagnosis) -> String {
    let with_ca = reach.ca_file_named();
    match diagnosis {
        Diagnosis::NoAnswer(TransportFailure::Certificate(failure)) => {
            certificate_fix(failure, with_ca.as_deref())
        }
        Diagnosis::NoAnswer(TransportFailure::Tls) => match with_ca {
            Some(ca) => format!(
                "The TLS handshake with GitLab failed although {ca} is in use: check that GitLab serves TLS on that port and that the file holds the CA certificate (PEM) that issued GitLab's."
            ),
            None => "The TLS handshake with GitLab failed: check that GitLab serves TLS on that port; for a private CA set ASSENT_CA_FILE (or pass --ca-file) to the CA's certificate (PEM).".to_owned(),
        },
        Diagnosis::NoAnswer(TransportFailure::PlainHttp) => "GitLab's port answered in plain HTTP, not TLS: use http://<host>/api/v4 for --api-url (CI_API_V4_URL), with ASSENT_ALLOW_HTTP=1 for a host that is not loopback, or the port that serves HTTPS.".to_owned(),
        Diagnosis::NoAnswer(TransportFailure::Proxy) => format!(
            "Check HTTPS_PROXY and NO_PROXY: the proxy{} must be reachable from the runner and allow CONNECT to GitLab, or add GitLab's host to NO_PROXY.",
            reach.proxy.as_deref().map(|p| format!(" {p}")).unwrap_or_default()
        ),
        Diagnosis::NoAnswer(TransportFailure::UnknownHost) => "GitLab's host name does not resolve from the runner: check --api-url (CI_API_V4_URL) and the runner's DNS, and that the runner can reach the GitLab host.".to_owned(),
        Diagnosis::Redirected => "Use the exact API base GitLab serves, https://<host>/api/v4 (CI_API_V4_URL in a job): redirects are never followed.".to_owned(),
        Diagnosis::NotFound | Diagnosis::Unreadable => {
            "Point --api-url (CI_API_V4_URL) at GitLab's API base, which ends in /api/v4.".to_owned()
        }
        Diagnosis::RateLimited => "GitLab is rate limiting this token: wait, then lower the rate of pipelines or ask an administrator to raise the limit.".to_owned(),
        Diagnosis::NoAnswer(
            TransportFailure::ConnectFailed | TransportFailure::Timeout | TransportFailure::Other,
        )
        | Diagnosis::ServerError
        | Diagnosis::Refused
        | Diagnosis::TokenRejected
        | Diagnosis::Forbidden
        | Diagnosis::Other => "Check that the runner can reach the GitLab host (DNS, firewall, HTTPS_PROXY/NO_PROXY) and that GitLab is up.".to_owned(),
    }
}

/// What to do about a certificate that did not verify, knowing whether a CA file (named by
/// `with_ca`) was in use.
fn certificate_fix(failure: CertificateFailure, with_ca: Option<&str>) -> String {
    match (failure, with_ca) {
        (CertificateFailure::CaUsedAsEndEntity, with_ca) => format!(
            "GitLab presents a CA certificate (basic constraints CA:TRUE, as `openssl req -x509` makes a self-signed one by default) as its own, and the TLS library assent uses (rustls) refuses that whatever CA file is given{}: serve GitLab a certificate issued by a CA (CA:FALSE) and set ASSENT_CA_FILE to that CA, or re-issue the self-signed certificate with CA:FALSE and set ASSENT_CA_FILE to it.",
            with_ca.map(|ca| format!(" ({ca} is in use)")).unwrap_or_default()
        ),
        (CertificateFailure::UnknownIssuer, Some(ca)) => format!(
            "{} does not verify GitLab's certificate: it must hold the certificate (PEM) of the CA that issued GitLab's, or of an intermediate up to it, not another CA's; `openssl s_client -connect <host>:443 -showcerts` shows who issued it.",
            capitalized(ca)
        ),
        (CertificateFailure::UnknownIssuer, None) => "Set ASSENT_CA_FILE (or pass --ca-file) to the PEM bundle of the CA that signed GitLab's certificate.".to_owned(),
        (CertificateFailure::WrongName, _) => "GitLab's certificate does not name the host in --api-url (CI_API_V4_URL): use the host name the certificate was issued for.".to_owned(),
        (CertificateFailure::NotCurrentlyValid, _) => "GitLab's certificate has expired or is not valid yet: renew it, or check the runner's clock.".to_owned(),
        (CertificateFailure::Other, Some(ca)) => format!(
            "GitLab's certificate does not verify although {ca} is in use: check that GitLab's certificate is issued for TLS servers with a supported signature, by the CA in that file."
        ),
        (CertificateFailure::Other, None) => "GitLab's certificate does not verify: for a private CA set ASSENT_CA_FILE (or pass --ca-file) to the CA's certificate (PEM), and check that GitLab's certificate is issued for TLS servers.".to_owned(),
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The `token` check, from `GET user`.
pub fn token_check(answer: &Result<CurrentUser, Failed>) -> Check {
    match answer {
        Ok(user) => match (user.id, user.username.as_deref()) {
            (Some(id), Some(name)) => {
                Check::pass("token", format!("valid: user @{name} (id {id})"))
            }
            (Some(id), None) => Check::pass("token", format!("valid: user id {id}")),
            (None, _) => Check::unknown(
                "token",
                "GitLab accepts the token but does not say which user it belongs to (GET /user has no id): assent could not tell its own notes",
                "Check that GitLab answers GET /api/v4/user with the user's id for this token.",
            ),
        },
        Err(failed) => match failed.diagnosis {
            Diagnosis::TokenRejected => Check::fail(
                "token",
                format!("GitLab rejects the token (401): {}", failed.error),
                "Create a project access token (Settings > Access tokens, role Developer, scope api) and store it in the masked variable ASSENT_TOKEN.",
            ),
            Diagnosis::Forbidden => Check::fail(
                "token",
                format!(
                    "GitLab refuses this token its own user (403): {}",
                    failed.error
                ),
                "Create a project access token with the api scope: a token limited to other scopes cannot read its user or post notes.",
            ),
            _ => Check::unknown(
                "token",
                format!("cannot read the token's user (GET /user): {}", failed.error),
                "Check the token is active and not expired, and that GitLab answers GET /api/v4/user for it.",
            ),
        },
    }
}

fn at(user: &CurrentUser) -> String {
    match (&user.username, user.id) {
        (Some(name), _) => format!("@{name}"),
        (None, Some(id)) => format!("user {id}"),
        (None, None) => "the token's user".to_owned(),
    }
}

/// The `identity` check: the token's user is a bot user (a project or group access token).
pub fn identity_check(user: &CurrentUser, declared_bot: Option<&str>) -> Check {
    let who = at(user);
    let name = user.username.as_deref().unwrap_or_default();
    if let Some(declared) = declared_bot {
        let declared = declared.trim_start_matches('@');
        if !declared.eq_ignore_ascii_case(name) {
            return Check::fail(
                "identity",
                format!(
                    "the token belongs to {who}, not to @{declared}, the account ASSENT_BOT_USER names as the bot"
                ),
                "Use the bot account's token, or set ASSENT_BOT_USER to the account the token belongs to.",
            );
        }
        if user.bot != Some(true) {
            return Check::pass(
                "identity",
                format!(
                    "{who} is a person's account declared as the bot (ASSENT_BOT_USER): nobody may write as it, since assent takes every note it writes for its own"
                ),
            );
        }
    }
    match user.bot {
        Some(true) => Check::pass(
            "identity",
            format!("{who} is a bot user (project or group access token, or service account)"),
        ),
        Some(false) => Check::fail(
            "identity",
            format!("{who} is a person, not a bot user"),
            "Use a project or group access token or a service account: its bot user then owns assent's notes, and no person's notes can pass for assent's. Where none is offered (GitLab.com Free), use a dedicated account nobody writes as and declare it with ASSENT_BOT_USER=<username> (docs/setup.md, Step 1).",
        ),
        None => Check::unknown(
            "identity",
            format!("GitLab does not say whether {who} is a bot"),
            "Make sure ASSENT_TOKEN is a project access token (Settings > Access tokens).",
        ),
    }
}

/// The `scope` check, from `GET personal_access_tokens/self`.
pub fn scope_check(answer: &Result<TokenSelf, Failed>) -> Check {
    match answer {
        Ok(token) => {
            let scopes = token.scopes.as_deref().unwrap_or_default();
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
        Err(failed) => Check::unknown(
            "scope",
            format!(
                "GitLab does not expose this token's scopes (GET /personal_access_tokens/self: {})",
                failed.error
            ),
            "Check in Settings > Access tokens that the token has the api scope (not read_api).",
        ),
    }
}

/// From how many days before its expiry date doctor warns about the token: a month leaves
/// time to rotate it in a maintenance window (docs/setup.md, "Renewing the token").
pub const TOKEN_EXPIRY_WARNING_DAYS: i64 = 30;

/// How to renew the token without changing its bot user, for the `token-expiry` fixes.
const ROTATE_FIX: &str = "Rotate it with GitLab's rotation API, which keeps the bot user (POST /projects/:id/access_tokens/:token_id/rotate, or POST /personal_access_tokens/self/rotate with the token itself), and store the new secret as ASSENT_TOKEN: creating a new token instead makes a new bot user (docs/setup.md, \"Renewing the token\")";

/// The `token-expiry` check, from `expires_at` of `GET personal_access_tokens/self`, judged
/// on `today` (UTC): ✓ with the date when more than [`TOKEN_EXPIRY_WARNING_DAYS`] days
/// away or never, a warning within them, a failure on or after the date, and "not checked"
/// when GitLab does not say. GitLab counts a token expired once `expires_at <= now`
/// (`app/models/concerns/expirable.rb`), and the date column reads as that day's midnight: a
/// token stops working as its expiry date begins.
pub fn token_expiry_check(answer: &Result<TokenSelf, Failed>, today: chrono::NaiveDate) -> Check {
    // Not checked rather than a warning: the scope check already warns when the route
    // fails, and a GitLab that leaves the date out is no fault of the setup.
    let not_said = |why: String| {
        Check::skipped(
            "token-expiry",
            format!("GitLab does not say when this token expires ({why})"),
        )
    };
    let expires_at = match answer {
        Err(failed) => {
            return not_said(format!(
                "GET /personal_access_tokens/self: {}",
                failed.error
            ));
        }
        Ok(token) => match &token.expires_at {
            None => return not_said("the answer has no expires_at".to_owned()),
            Some(None) => return Check::pass("token-expiry", "the token does not expire"),
            Some(Some(text)) => text,
        },
    };
    let Some(date) = parse_date(expires_at) else {
        return not_said(format!(
            "expires_at is not a date: {:?}",
            crate::core::terminal::terminal_safe(expires_at)
        ));
    };
    let days = (date - today).num_days();
    if days <= 0 {
        Check::fail(
            "token-expiry",
            format!("the token expired on {date}"),
            ROTATE_FIX,
        )
    } else if days <= TOKEN_EXPIRY_WARNING_DAYS {
        Check::unknown(
            "token-expiry",
            format!(
                "the token expires on {date}, in {days} day{}",
                if days == 1 { "" } else { "s" }
            ),
            ROTATE_FIX,
        )
    } else {
        Check::pass(
            "token-expiry",
            format!("the token expires on {date}, in {days} days"),
        )
    }
}

/// `YYYY-MM-DD`, as GitLab writes a token's `expires_at`.
fn parse_date(text: &str) -> Option<chrono::NaiveDate> {
    let mut parts = text.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    chrono::NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)
}

/// GitLab's name of an access level.
pub fn role_name(level: u64) -> &'static str {
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

/// The `role` check: the token's user's access level in `project` (from the project's
/// `permissions`, else its member entry), `None` when GitLab shows none.
pub fn role_check(project: &str, user: &CurrentUser, level: Option<u64>) -> Check {
    match level {
        Some(l) if l >= DEVELOPER => {
            Check::pass("role", format!("{} ({l}) on {project}", role_name(l)))
        }
        Some(l) => Check::fail(
            "role",
            format!(
                "{} ({l}) on {project}: posting needs Reporter, resolving threads needs Developer",
                role_name(l)
            ),
            "Recreate the project access token with the Developer role: a Reporter cannot resolve assent's comment threads.",
        ),
        None => Check::unknown(
            "role",
            format!("GitLab shows no role of {} on {project}", at(user)),
            "Check in Settings > Members that the token's bot user has the Developer role.",
        ),
    }
}

/// The `role` check when the project itself could not be read: GitLab answers 404 for a
/// project the token's user cannot see.
pub fn project_unreadable_check(project: &str, failed: &Failed) -> Check {
    let detail = format!("cannot read project {project}: {}", failed.error);
    match failed.diagnosis {
        Diagnosis::NotFound | Diagnosis::Forbidden => Check::fail(
            "project",
            detail,
            "Check --project (CI_PROJECT_ID) and add the token's bot user to the project: GitLab answers 404 for projects a user cannot see.",
        ),
        _ => Check::unknown(
            "project",
            detail,
            "Check that GitLab answers GET /projects/:id for this token.",
        ),
    }
}

fn setting_check(
    id: &'static str,
    value: Option<bool>,
    field: &str,
    what: &str,
    fix: &str,
) -> Check {
    match value {
        Some(true) => Check::pass(id, format!("{what}: on")),
        Some(false) => Check::fail(id, format!("{what}: off ({field} is false)"), fix),
        None => Check::unknown(id, format!("GitLab does not show {field}"), fix),
    }
}

/// The `threads-setting` check: "All threads must be resolved" is on.
pub fn threads_setting_check(project: &Project) -> Check {
    setting_check(
        "threads-setting",
        project.only_allow_merge_if_all_discussions_are_resolved,
        "only_allow_merge_if_all_discussions_are_resolved",
        "all threads must be resolved before merge",
        "Enable Settings > Merge requests > Merge checks > All threads must be resolved: it is what makes an unresolved challenge block the merge.",
    )
}

/// The `pipelines-setting` check: "Pipelines must succeed" is on.
pub fn pipelines_setting_check(project: &Project) -> Check {
    setting_check(
        "pipelines-setting",
        project.only_allow_merge_if_pipeline_succeeds,
        "only_allow_merge_if_pipeline_succeeds",
        "pipelines must succeed before merge",
        "Enable Settings > Merge requests > Merge checks > Pipelines must succeed: it is what makes a BLOCK decision (job exit 1) block the merge.",
    )
}

/// The `outdated-threads-setting` check: GitLab does not resolve a diff thread when a push
/// outdates it. With that setting on, a push that outdates the line of one of assent's
/// DiffNotes resolves the thread in the pusher's name, and a pusher other than the MR's
/// author would count as assent without anyone having assented (docs/contract.md#who-may-assent, docs/contract.md#diffnotes).
pub fn outdated_threads_setting_check(project: &Project) -> Check {
    const ID: &str = "outdated-threads-setting";
    const FIX: &str = "Turn off Settings > Merge requests > Merge options > Automatically resolve merge request diff threads when they become outdated: assent's threads on changed lines must be resolved by a reviewer, never by a push.";
    match project.resolve_outdated_diff_discussions {
        Some(false) => Check::pass(ID, "a push that outdates a line leaves its threads open"),
        Some(true) => Check::fail(
            ID,
            "a push that outdates a line resolves its threads (resolve_outdated_diff_discussions is true): a push by anyone but the MR's author would assent to a challenge on that line",
            FIX,
        ),
        None => Check::unknown(
            ID,
            "GitLab does not show resolve_outdated_diff_discussions",
            FIX,
        ),
    }
}

/// What GitLab shows of the token's CI/CD variable (`GET …/variables/:key`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenVariable {
    /// One project variable of that name, with this environment scope.
    Scoped(Option<String>),
    /// Several (one per scope), one of them `*`.
    SeveralOneForEveryJob,
    /// Several, none of them `*`.
    SeveralNoneForEveryJob,
    /// The variable could not be read: 403 below Maintainer, 404 when it is no project
    /// variable (a group or instance one, or another name).
    Unread(Failed),
}

/// The `token-variable` check: the token's variable reaches only the jobs of the assent
/// environment. Positive evidence only: a variable doctor cannot read is a warning.
pub fn token_variable_check(key: &str, environment: &str, seen: &TokenVariable) -> Check {
    const ID: &str = "token-variable";
    let fix = format!(
        "Scope the project variable {key} to the environment {environment} (Settings > CI/CD > Variables > Environments) and keep the template's `environment: {{ name: {environment}, action: access }}`; docs/setup.md, \"Step 2\"."
    );
    let every_job = format!(
        "{key} has environment scope * (All): every job of every pipeline reads it, the jobs that run the MR's own scripts included, and anyone who reads it can act as the bot"
    );
    match seen {
        TokenVariable::Scoped(Some(scope)) if scope == environment => Check::pass(
            ID,
            format!(
                "{key} is scoped to the environment {environment}: only jobs that declare it read the token (a job the MR itself adds can declare it too unless the CI configuration lives outside the project: docs/setup.md)"
            ),
        ),
        TokenVariable::Scoped(Some(scope)) if scope == "*" => Check::fail(ID, every_job, fix),
        TokenVariable::SeveralOneForEveryJob => Check::fail(ID, every_job, fix),
        TokenVariable::Scoped(scope) => Check::unknown(
            ID,
            format!(
                "{key} has environment scope {}, not {environment}: doctor cannot tell which jobs read it",
                scope.as_deref().unwrap_or("(not shown)")
            ),
            fix,
        ),
        TokenVariable::SeveralNoneForEveryJob => Check::unknown(
            ID,
            format!(
                "{key} is defined for several environment scopes, none of them *: doctor cannot tell which jobs read each"
            ),
            fix,
        ),
        TokenVariable::Unread(failed) => {
            let why = match failed.diagnosis {
                Diagnosis::Forbidden => "the token cannot read the project's CI/CD variables (GitLab shows them to Maintainers)".to_owned(),
                Diagnosis::NotFound => format!("{key} is not a project variable (a group or instance variable, or named otherwise: set ASSENT_TOKEN_VARIABLE)"),
                _ => format!("reading it failed: {}", failed.error),
            };
            Check::unknown(
                ID,
                format!("not verified which jobs read {key}: {why}"),
                fix,
            )
        }
    }
}

/// The `merge-request` check: MR `iid` (when given) is of this project, not from a fork.
pub fn merge_request_check(mr: Option<(u64, &Result<MergeRequest, Failed>)>) -> Check {
    let Some((iid, answer)) = mr else {
        // Nothing was read: no pass. Outside an MR pipeline that is the normal case, so it is
        // not a warning either.
        return Check::skipped(
            "merge-request",
            "no MR given; pass --mr to check that an MR is not from a fork, whose pipeline runs without ASSENT_TOKEN",
        );
    };
    match answer {
        Ok(mr) => match (mr.source_project_id, mr.target_project_id) {
            (Some(s), Some(t)) if s != t => Check::fail(
                "merge-request",
                format!(
                    "MR !{iid} comes from a fork (project {s}): its pipeline runs in the fork, without ASSENT_TOKEN, and is not judged"
                ),
                "After reviewing the fork's changes, run the MR's pipeline in the parent project (MR > Pipelines > Run pipeline), where the token and the protected template apply.",
            ),
            (Some(_), Some(_)) => Check::pass(
                "merge-request",
                format!(
                    "MR !{iid} is {}, same-project (not a fork)",
                    mr.state.as_deref().unwrap_or("in an unknown state")
                ),
            ),
            _ => Check::unknown(
                "merge-request",
                format!("MR !{iid}: GitLab does not say whether it comes from a fork"),
                "Check the MR's source project by hand: fork MR pipelines run without ASSENT_TOKEN.",
            ),
        },
        Err(failed) if failed.diagnosis == Diagnosis::NotFound => Check::fail(
            "merge-request",
            format!("cannot read MR !{iid}: {}", failed.error),
            "Check --mr (CI_MERGE_REQUEST_IID) names an MR of this project.",
        ),
        Err(failed) => Check::unknown(
            "merge-request",
            format!("cannot read MR !{iid}: {}", failed.error),
            "Check that GitLab answers GET /projects/:id/merge_requests/:iid for this token.",
        ),
    }
}

/// What doctor found of other users' assent markers on MR `iid`: whose notes a run there
/// reads as assent's own, or why it would refuse (`core::bot_identity`).
pub type MarkerOwners = Result<Result<Owners, IdentityRefusal>, Failed>;

/// The `bot-markers` check: whether `assent run` on MR `iid` would stop because another bot
/// user's markers are on it (a token renewed by creating a new one), or read them as an
/// adopted previous bot's. `None`: no MR given, or the MR could not be read.
pub fn bot_markers_check(mr: Option<(u64, &MarkerOwners)>) -> Check {
    let Some((iid, found)) = mr else {
        return Check::skipped(
            "bot-markers",
            "no readable MR; pass --mr to check that no other bot user's assent markers are on it",
        );
    };
    match found {
        Ok(Ok(owners)) if owners.adopted.is_empty() => Check::pass(
            "bot-markers",
            format!("no other bot user's assent markers on MR !{iid}"),
        ),
        Ok(Ok(owners)) => Check::pass(
            "bot-markers",
            format!(
                "MR !{iid} carries assent markers of the adopted previous bot user(s) {} (ASSENT_PREVIOUS_BOT_USERS): a run reads them as its own",
                owners
                    .adopted
                    .iter()
                    .map(|id| format!("id {id}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        Ok(Err(
            refusal @ (IdentityRefusal::PreviousBot { .. } | IdentityRefusal::NamedPerson { .. }),
        )) => Check::fail(
            "bot-markers",
            format!("assent run on MR !{iid} would write nothing and exit 2: {refusal}"),
            "Follow the run's fix above: adopt the previous bot user with ASSENT_PREVIOUS_BOT_USERS (a CI/CD variable beside ASSENT_TOKEN), never a person; renew tokens with GitLab's rotation API (docs/run.md, \"Renewing the token\").",
        ),
        Ok(Err(refusal)) => Check::unknown(
            "bot-markers",
            format!("assent run on MR !{iid} would write nothing and exit 2: {refusal}"),
            "Make the markers' authors readable to the token, or delete the pasted markers' notes.",
        ),
        Err(failed) => Check::unknown(
            "bot-markers",
            format!(
                "cannot list MR !{iid}'s discussions or their markers' authors: {}",
                failed.error
            ),
            "Check that GitLab answers GET /projects/:id/merge_requests/:iid/discussions and GET /users/:id for this token.",
        ),
    }
}

/// The policy files read from a branch's tip: its SHA and the files.
pub type PolicyRead = Result<(CommitSha, Vec<PolicyFile>), Failed>;

/// The `policies` check: the policies on `branch` (the MR's target, else the default
/// branch) load.
pub fn policies_check(branch: Option<&str>, read: Option<&PolicyRead>) -> Check {
    let (Some(branch), Some(read)) = (branch, read) else {
        return Check::unknown(
            "policies",
            "no target branch known (no MR and no default branch read)",
            "Pass --mr, or make sure the project has a default branch.",
        );
    };
    let (sha, files) = match read {
        Ok(read) => read,
        Err(failed) => {
            return Check::unknown(
                "policies",
                format!("cannot read {POLICY_DIR} on {branch}: {}", failed.error),
                "Check the token can read the repository (Reporter or higher) and the target branch exists.",
            );
        }
    };
    let at = format!("{branch}@{}", sha.short());
    match PolicySet::load(files) {
        Ok(_) if files.is_empty() => Check::pass(
            "policies",
            format!("no policy files under {POLICY_DIR} on {at}: only the built-in findings apply"),
        ),
        Ok(_) => Check::pass(
            "policies",
            format!("{} policy file(s) on {at} load", files.len()),
        ),
        Err(problems) => {
            let shown: Vec<String> = problems.iter().take(3).map(ToString::to_string).collect();
            let more = match problems.len().saturating_sub(shown.len()) {
                0 => String::new(),
                more => format!(" (and {more} more)"),
            };
            Check::fail(
                "policies",
                format!("policies on {at} do not load: {}{more}", shown.join("; ")),
                "Run assent lint on a checkout of the target branch and fix every problem it names; until then every MR is blocked by assent/policy-error.",
            )
        }
    }
}

/// The `policy-project` check: the central policy project (`--policy-project`) reads and its
/// policies load, exactly as a run reads them; `read` is what
/// [`read_central_policies`](crate::engine::run::inputs::read_central_policies) gave, or why it
/// could not be asked.
pub fn policy_project_check(project: &str, read: &Result<CentralPolicies, String>) -> Check {
    const ID: &str = "policy-project";
    let central = match read {
        Ok(central) => central,
        Err(error) => {
            return Check::unknown(
                ID,
                format!("cannot reach the central policy project `{project}`: {error}"),
                "Check that GitLab answers for this project and retry; until it does, runs stop before writing.",
            );
        }
    };
    let sha = central.sha.as_ref().map_or("", CommitSha::short);
    let at = format!("{project}@{sha}");
    if let Some(problem) = central.problems.first() {
        return Check::fail(
            ID,
            problem.clone(),
            "Give the bot's user at least Reporter access to the central policy project (or name the project and ref it can read), and keep its policies under .assent/policies/; until then every MR is blocked by assent/policy-error.",
        );
    }
    match PolicySet::load(&central.files) {
        Ok(_) => Check::pass(
            ID,
            format!(
                "{} central policy file(s) on {at} load",
                central.files.len()
            ),
        ),
        Err(problems) => Check::fail(
            ID,
            format!(
                "the central policies on {at} do not load: {}",
                problems
                    .iter()
                    .take(3)
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            "Run assent lint --policy-project-dir on a checkout of the central project and fix every problem it names; until then every MR is blocked by assent/policy-error.",
        ),
    }
}

/// The `serialization` check, from the duplicate-prevention verdict: verified passes, a
/// positively missing resource group fails, anything unverifiable is a warning.
pub fn serialization_check(verdict: &SingleWriterVerdict) -> Check {
    match verdict.certainty {
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
    }
}

/// The checks after `api` (or after `token`), each skipped because of `why`.
pub fn skipped(ids: &[&'static str], why: &str) -> Vec<Check> {
    ids.iter().map(|id| Check::skipped(id, why)).collect()
}

mod serve;
pub use serve::{readyz_url, serve_ready_check, serve_webhook_check, webhook_url};

#[cfg(test)]
mod tests;
