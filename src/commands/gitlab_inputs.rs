//! Inputs shared by the commands that talk to GitLab (docs/contract.md#run-inputs): flags first, then the
//! CI environment, first non-empty value wins. The token is never a flag.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::core::switch::{SPELLINGS, parse_switch};

use crate::gitlab::{DEFAULT_RATE_LIMIT_BUDGET, DEFAULT_WRITE_SETTLE, GitLabConfig, Token};

/// The longest accepted `ASSENT_WRITE_SETTLE_SECS`: a CI job should not hang for longer
/// than this on one write whose answer was lost.
const MAX_WRITE_SETTLE: Duration = Duration::from_secs(600);

/// The longest accepted `--rate-limit-wait`: a CI job's default timeout is one hour, and a
/// run should fail with its own clear line before the job is killed without one.
const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(6 * 3_600);

/// The fix to add to a rate-limited failure's line: how to wait longer.
pub const RATE_LIMIT_ADVICE: &str = "to wait longer, raise --rate-limit-wait or ASSENT_RATE_LIMIT_WAIT, or the bot user's rate limits in GitLab; a rerun continues where this run stopped";

/// The variables that every command talking to GitLab reads and that no option shows with
/// its `[env: …]`, appended to those commands' `--help` by [`with_gitlab_environment`].
pub const GITLAB_ENVIRONMENT: &str = "\
Environment, besides each option's [env: ...]:
  ASSENT_TOKEN, then GITLAB_TOKEN  the bot's API token (never a flag; sent only in the
                                   PRIVATE-TOKEN header)
  HTTPS_PROXY, HTTP_PROXY,         the proxy to GitLab by the API's scheme (also lowercase),
  ALL_PROXY, NO_PROXY              and the hosts reached directly
  ASSENT_ALLOW_HTTP=1              no warning for a plain http:// API base to a remote host
                                   (1, true, yes or on)
  ASSENT_WRITE_SETTLE_SECS=65      seconds a write whose answer was lost waits before the
                                   listing decides it (0 to 600; 0 only where GitLab answers
                                   within its request timeout)";

/// `help` followed by [`GITLAB_ENVIRONMENT`], for a command's `after_help`.
pub fn with_gitlab_environment(help: &str) -> String {
    format!("{help}\n\n{GITLAB_ENVIRONMENT}")
}

/// How long `run` and `sweep` may wait for GitLab's rate limits (docs/contract.md#write-rate-limits).
#[derive(Debug, Clone, Args)]
pub struct RateLimitArgs {
    /// Total time to wait for GitLab's rate limits (429 answers, pacing) before giving up with
    /// exit 3: seconds, or a number with a unit s, m or h; 0 never waits
    /// [env: ASSENT_RATE_LIMIT_WAIT] [default: 10m].
    #[arg(long, value_name = "DURATION")]
    pub rate_limit_wait: Option<String>,
}

impl RateLimitArgs {
    /// The flag, else `ASSENT_RATE_LIMIT_WAIT`, else [`DEFAULT_RATE_LIMIT_BUDGET`].
    pub fn resolve(&self, env: EnvLookup<'_>) -> Result<Duration, InputError> {
        let (text, source) = match (
            self.rate_limit_wait
                .as_deref()
                .filter(|v| !v.trim().is_empty()),
            env("ASSENT_RATE_LIMIT_WAIT").filter(|v| !v.trim().is_empty()),
        ) {
            (Some(flag), _) => (flag.to_owned(), "--rate-limit-wait"),
            (None, Some(var)) => (var, "ASSENT_RATE_LIMIT_WAIT"),
            (None, None) => return Ok(DEFAULT_RATE_LIMIT_BUDGET),
        };
        parse_wait(&text)
            .filter(|d| *d <= MAX_RATE_LIMIT_WAIT)
            .ok_or_else(|| {
                InputError(format!(
                    "{source} is not a duration from 0 to 6h: {text:?} (seconds, or a whole number with a unit s, m or h, e.g. 600, 90s or 10m)"
                ))
            })
    }
}

/// `N`, `Ns`, `Nm` or `Nh` with a whole number `N`.
fn parse_wait(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (i, 's') => (&text[..i], 1),
        (i, 'm') => (&text[..i], 60),
        (i, 'h') => (&text[..i], 3_600),
        _ => (text, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs = digits.parse::<u64>().ok()?.checked_mul(unit)?;
    Some(Duration::from_secs(secs))
}

/// Where GitLab is and how to reach it.
#[derive(Debug, Clone, Args)]
pub struct ConnectionArgs {
    /// GitLab API v4 base URL, e.g. `https://gitlab.example.com/api/v4`.
    #[arg(
        long,
        value_name = "URL",
        env = "CI_API_V4_URL",
        hide_env_values = true
    )]
    pub api_url: Option<String>,
    /// Project id or full path [env: CI_MERGE_REQUEST_PROJECT_ID, then CI_PROJECT_ID].
    #[arg(long, value_name = "ID|PATH")]
    pub project: Option<String>,
    /// PEM bundle trusted in addition to the public roots [env: ASSENT_CA_FILE, then
    /// CI_SERVER_TLS_CA_FILE].
    #[arg(long, value_name = "PATH")]
    pub ca_file: Option<PathBuf>,
}

/// A missing or unusable input: exit 2 before any request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

impl InputError {
    /// One error naming every problem in `problems` (at least one), numbered when there are
    /// several, so that one attempt shows everything there is to set.
    pub fn joined(problems: Vec<InputError>) -> InputError {
        match <[InputError; 1]>::try_from(problems) {
            Ok([one]) => one,
            Err(problems) => InputError(format!(
                "{} problems with the inputs: {}",
                problems.len(),
                problems
                    .iter()
                    .enumerate()
                    .map(|(i, p)| format!("({}) {}", i + 1, p.0))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        }
    }
}

/// Reads an environment variable; injected so resolution is testable.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, with empty values treated as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The first non-empty value among `flag` and the variables `vars`, in order.
pub fn first_of(flag: Option<&str>, vars: &[&str], env: EnvLookup<'_>) -> Option<String> {
    flag.map(str::to_owned)
        .filter(|v| !v.trim().is_empty())
        .or_else(|| {
            vars.iter()
                .find_map(|var| env(var).filter(|v| !v.trim().is_empty()))
        })
}

/// An on/off setting: `true` when the flag is given, else the variable `var` read with the
/// one parser of on/off text ([`crate::core::switch`]), else `false`. A value that is neither
/// is a usage error naming the variable: a misspelt setting must not silently mean "off".
pub fn switch_input(flag: bool, var: &str, env: EnvLookup<'_>) -> Result<bool, InputError> {
    if flag {
        return Ok(true);
    }
    match first_of(None, &[var], env) {
        None => Ok(false),
        Some(value) => parse_switch(&value).ok_or_else(|| {
            InputError(format!(
                "{var} is neither on nor off: {value:?} (write {SPELLINGS})"
            ))
        }),
    }
}

/// The resolved connection: everything [`GitLabConfig`] needs except the MR.
#[derive(Debug, Clone)]
pub struct Connection {
    /// API base.
    pub api_url: String,
    /// Project id or path.
    pub project: String,
    /// The token (redacted in Debug).
    pub token: Token,
    /// Extra CA bundle.
    pub ca_file: Option<PathBuf>,
    /// `ASSENT_WRITE_SETTLE_SECS`: how long an ambiguous write waits before the listing
    /// decides it (default [`DEFAULT_WRITE_SETTLE`]).
    pub write_settle: Duration,
    /// The run's budget for rate-limit waits (default [`DEFAULT_RATE_LIMIT_BUDGET`]; `run` and
    /// `sweep` set it from [`RateLimitArgs`]).
    pub rate_limit_wait: Duration,
}

impl ConnectionArgs {
    /// Resolves flags and environment; the error names every flag or variable to set.
    pub fn resolve(&self, env: EnvLookup<'_>) -> Result<Connection, InputError> {
        self.resolve_each(env).map_err(InputError::joined)
    }

    /// Resolves flags and environment; the error lists each problem (at least one), for a
    /// command that has more inputs of its own to report beside them.
    pub fn resolve_each(&self, env: EnvLookup<'_>) -> Result<Connection, Vec<InputError>> {
        let mut problems = Vec::new();
        let api_url = first_of(self.api_url.as_deref(), &["CI_API_V4_URL"], env);
        if api_url.is_none() {
            problems.push(InputError("no GitLab API URL: pass --api-url or set CI_API_V4_URL (e.g. https://gitlab.example.com/api/v4)".into()));
        }
        let project = first_of(
            self.project.as_deref(),
            &["CI_MERGE_REQUEST_PROJECT_ID", "CI_PROJECT_ID"],
            env,
        );
        if project.is_none() {
            problems.push(InputError(
                "no project: pass --project or set CI_MERGE_REQUEST_PROJECT_ID or CI_PROJECT_ID"
                    .into(),
            ));
        }
        let token = first_of(None, &["ASSENT_TOKEN", "GITLAB_TOKEN"], env);
        match &token {
            None => problems.push(no_token(env)),
            Some(token) if is_job_token(token, env) => problems.push(InputError(
                "ASSENT_TOKEN holds a CI job token (CI_JOB_TOKEN or a glcbt- token), which GitLab does not let post merge request notes or resolve threads: create a project access token with the api scope and the Developer role, store it as a masked CI/CD variable ASSENT_TOKEN, then run `assent doctor`"
                    .into(),
            )),
            Some(_) => {}
        }
        let ca_file = self.ca_file.clone().or_else(|| {
            first_of(None, &["ASSENT_CA_FILE", "CI_SERVER_TLS_CA_FILE"], env).map(PathBuf::from)
        });
        let write_settle = match first_of(None, &["ASSENT_WRITE_SETTLE_SECS"], env) {
            None => DEFAULT_WRITE_SETTLE,
            Some(text) => text
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                .filter(|d| *d <= MAX_WRITE_SETTLE)
                .unwrap_or_else(|| {
                    problems.push(InputError(format!(
                        "ASSENT_WRITE_SETTLE_SECS is not a number of seconds from 0 to {}: {text:?} (it should exceed the GitLab instance's request timeout, 60 s unless changed)",
                        MAX_WRITE_SETTLE.as_secs()
                    )));
                    DEFAULT_WRITE_SETTLE
                }),
        };
        match (api_url, project, token) {
            (Some(api_url), Some(project), Some(token)) if problems.is_empty() => Ok(Connection {
                api_url,
                project,
                token: Token::new(token),
                ca_file,
                write_settle,
                rate_limit_wait: DEFAULT_RATE_LIMIT_BUDGET,
            }),
            _ => Err(problems),
        }
    }
}

impl Connection {
    /// The project's client configuration (one `GitLabClient`; each MR's forge goes over it).
    pub fn gitlab_config(&self) -> GitLabConfig {
        let mut config = GitLabConfig::new(
            self.api_url.clone(),
            self.token.clone(),
            self.project.clone(),
        );
        config.ca_file = self.ca_file.clone();
        config.retry.write_settle = self.write_settle;
        config.retry.rate_limit_budget = self.rate_limit_wait;
        config
    }
}

/// The error for a missing token. Inside a merge request pipeline the likely causes are
/// GitLab's own rules for CI/CD variables, so the message names them.
fn no_token(env: EnvLookup<'_>) -> InputError {
    let base = "no token: set ASSENT_TOKEN (or GITLAB_TOKEN) to a project access token with the api scope; the token is never a flag";
    if env("CI_MERGE_REQUEST_IID").is_none() {
        return InputError(base.into());
    }
    InputError(format!(
        "{base}. This is a merge request pipeline and ASSENT_TOKEN is empty: a protected variable is given only to pipelines of protected branches (untick \"Protect variable\", keep it masked), and pipelines of merge requests from forks get no project variables at all (run them in the parent project)"
    ))
}

/// True when `token` is the job's own token: equal to `CI_JOB_TOKEN`, or in the job-token
/// form (`glcbt-`). Such a token can read some APIs but never write notes.
fn is_job_token(token: &str, env: EnvLookup<'_>) -> bool {
    let token = token.trim();
    token.starts_with("glcbt-") || env("CI_JOB_TOKEN").is_some_and(|job| job.trim() == token)
}

/// Parses an MR IID from a flag or `CI_MERGE_REQUEST_IID`.
pub fn resolve_mr(flag: Option<u64>, env: EnvLookup<'_>) -> Result<Option<u64>, InputError> {
    if flag.is_some() {
        return Ok(flag);
    }
    match env("CI_MERGE_REQUEST_IID") {
        None => Ok(None),
        Some(text) => text.trim().parse().map(Some).map_err(|_| {
            InputError(format!(
                "CI_MERGE_REQUEST_IID is not a merge request IID: {text:?}"
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned().filter(|v| !v.is_empty())
    }

    fn args() -> ConnectionArgs {
        ConnectionArgs {
            api_url: None,
            project: None,
            ca_file: None,
        }
    }

    #[test]
    fn first_non_empty_value_wins() {
        let lookup = env(&[
            ("CI_API_V4_URL", "https://g/api/v4"),
            ("CI_MERGE_REQUEST_PROJECT_ID", ""),
            ("CI_PROJECT_ID", "42"),
            ("GITLAB_TOKEN", "secret"),
            ("CI_SERVER_TLS_CA_FILE", "/ca.pem"),
        ]);
        let c = args().resolve(&lookup).unwrap();
        assert_eq!(c.project, "42");
        assert_eq!(c.api_url, "https://g/api/v4");
        assert_eq!(c.ca_file, Some(PathBuf::from("/ca.pem")));
        let flagged = ConnectionArgs {
            project: Some("g/p".into()),
            ..args()
        };
        assert_eq!(flagged.resolve(&lookup).unwrap().project, "g/p");
    }

    #[test]
    fn assent_token_takes_precedence_and_never_shows() {
        let lookup = env(&[
            ("CI_API_V4_URL", "u"),
            ("CI_PROJECT_ID", "1"),
            ("ASSENT_TOKEN", "a-secret"),
            ("GITLAB_TOKEN", "b"),
        ]);
        let c = args().resolve(&lookup).unwrap();
        assert!(!format!("{c:?}").contains("a-secret"));
    }

    #[test]
    fn missing_inputs_name_what_to_set() {
        let err = args()
            .resolve(&env(&[("CI_API_V4_URL", "u"), ("CI_PROJECT_ID", "1")]))
            .unwrap_err();
        assert!(err.0.starts_with("no token: set ASSENT_TOKEN"), "{err}");
        let err = args()
            .resolve(&env(&[("CI_PROJECT_ID", "1"), ("ASSENT_TOKEN", "t")]))
            .unwrap_err();
        assert!(
            err.0
                .starts_with("no GitLab API URL: pass --api-url or set CI_API_V4_URL"),
            "{err}"
        );
    }

    #[test]
    fn every_missing_input_is_named_in_one_error() {
        let err = args().resolve(&env(&[])).unwrap_err();
        assert_eq!(
            err.0,
            "3 problems with the inputs: \
             (1) no GitLab API URL: pass --api-url or set CI_API_V4_URL (e.g. https://gitlab.example.com/api/v4); \
             (2) no project: pass --project or set CI_MERGE_REQUEST_PROJECT_ID or CI_PROJECT_ID; \
             (3) no token: set ASSENT_TOKEN (or GITLAB_TOKEN) to a project access token with the api scope; the token is never a flag"
        );
        // Whatever else is wrong comes along, each once.
        let err = args()
            .resolve_each(&env(&[
                ("CI_PROJECT_ID", "1"),
                ("ASSENT_TOKEN", "glcbt-x"),
                ("ASSENT_WRITE_SETTLE_SECS", "soon"),
            ]))
            .unwrap_err();
        let parts: Vec<&str> = err.iter().map(|e| e.0.split(':').next().unwrap()).collect();
        assert_eq!(
            parts,
            [
                "no GitLab API URL",
                "ASSENT_TOKEN holds a CI job token (CI_JOB_TOKEN or a glcbt- token), which GitLab does not let post merge request notes or resolve threads",
                "ASSENT_WRITE_SETTLE_SECS is not a number of seconds from 0 to 600"
            ]
        );
        assert!(!InputError::joined(err).0.contains("glcbt-x"));
    }

    #[test]
    fn mr_from_env_must_be_a_number() {
        assert_eq!(
            resolve_mr(None, &env(&[("CI_MERGE_REQUEST_IID", "7")])),
            Ok(Some(7))
        );
        assert_eq!(
            resolve_mr(Some(3), &env(&[("CI_MERGE_REQUEST_IID", "7")])),
            Ok(Some(3))
        );
        assert!(resolve_mr(None, &env(&[("CI_MERGE_REQUEST_IID", "x")])).is_err());
        assert_eq!(resolve_mr(None, &env(&[])), Ok(None));
    }

    #[test]
    fn the_rate_limit_wait_comes_from_the_flag_or_the_environment_and_is_checked() {
        let wait = |flag: Option<&str>, var: Option<&str>| {
            let pairs: Vec<(&str, &str)> = var
                .map(|v| vec![("ASSENT_RATE_LIMIT_WAIT", v)])
                .unwrap_or_default();
            RateLimitArgs {
                rate_limit_wait: flag.map(str::to_owned),
            }
            .resolve(&env(&pairs))
        };
        assert_eq!(wait(None, None), Ok(DEFAULT_RATE_LIMIT_BUDGET));
        assert_eq!(DEFAULT_RATE_LIMIT_BUDGET, Duration::from_secs(600));
        assert_eq!(wait(None, Some("90")), Ok(Duration::from_secs(90)));
        assert_eq!(wait(None, Some("90s")), Ok(Duration::from_secs(90)));
        assert_eq!(
            wait(Some("20m"), Some("90")),
            Ok(Duration::from_secs(1_200))
        );
        assert_eq!(wait(Some("1h"), None), Ok(Duration::from_secs(3_600)));
        assert_eq!(wait(Some("0"), None), Ok(Duration::ZERO));
        for bad in [
            "-1",
            "soon",
            "7h",
            "1.5m",
            "m",
            "10d",
            "9999999999999999999h",
        ] {
            let err = wait(Some(bad), None).unwrap_err();
            assert!(err.0.contains("--rate-limit-wait"), "{bad}: {err}");
            let err = wait(None, Some(bad)).unwrap_err();
            assert!(err.0.contains("ASSENT_RATE_LIMIT_WAIT"), "{bad}: {err}");
        }
        let base = [
            ("CI_API_V4_URL", "u"),
            ("CI_PROJECT_ID", "1"),
            ("ASSENT_TOKEN", "t"),
        ];
        let mut c = args().resolve(&env(&base)).unwrap();
        assert_eq!(c.rate_limit_wait, DEFAULT_RATE_LIMIT_BUDGET);
        c.rate_limit_wait = Duration::from_secs(5);
        assert_eq!(
            c.gitlab_config().retry.rate_limit_budget,
            Duration::from_secs(5)
        );
    }

    #[test]
    fn the_write_settle_defaults_to_past_gitlabs_request_timeout_and_is_checked() {
        let base = [
            ("CI_API_V4_URL", "u"),
            ("CI_PROJECT_ID", "1"),
            ("ASSENT_TOKEN", "t"),
        ];
        let c = args().resolve(&env(&base)).unwrap();
        assert_eq!(c.write_settle, DEFAULT_WRITE_SETTLE);
        assert!(c.write_settle > Duration::from_secs(60));
        assert_eq!(c.gitlab_config().retry.write_settle, DEFAULT_WRITE_SETTLE);

        let with = |value: &str| {
            let mut pairs = base.to_vec();
            pairs.push(("ASSENT_WRITE_SETTLE_SECS", value));
            args().resolve(&env(&pairs))
        };
        assert_eq!(
            with("0.25").unwrap().write_settle,
            Duration::from_millis(250)
        );
        assert_eq!(with("90").unwrap().write_settle, Duration::from_secs(90));
        for bad in ["-1", "soon", "601", "NaN", "inf"] {
            let err = with(bad).unwrap_err();
            assert!(err.0.contains("ASSENT_WRITE_SETTLE_SECS"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_job_token_is_refused_with_what_to_use_instead() {
        for (token, job) in [("glcbt-64_abc", None), ("job-secret", Some("job-secret"))] {
            let mut pairs = vec![
                ("CI_API_V4_URL", "u"),
                ("CI_PROJECT_ID", "1"),
                ("ASSENT_TOKEN", token),
            ];
            if let Some(job) = job {
                pairs.push(("CI_JOB_TOKEN", job));
            }
            let err = args().resolve(&env(&pairs)).unwrap_err();
            assert!(err.0.contains("CI job token"), "{err}");
            assert!(err.0.contains("project access token"), "{err}");
            assert!(!err.0.contains(token), "the token never shows: {err}");
        }
        // Another token beside CI_JOB_TOKEN is fine.
        let ok = args().resolve(&env(&[
            ("CI_API_V4_URL", "u"),
            ("CI_PROJECT_ID", "1"),
            ("ASSENT_TOKEN", "glpat-bot"),
            ("CI_JOB_TOKEN", "job-secret"),
        ]));
        assert!(ok.is_ok());
    }

    #[test]
    fn an_empty_token_in_a_merge_request_pipeline_names_protected_variables_and_forks() {
        let outside = args()
            .resolve(&env(&[("CI_API_V4_URL", "u"), ("CI_PROJECT_ID", "1")]))
            .unwrap_err();
        assert!(!outside.0.contains("protected"), "{outside}");
        let inside = args()
            .resolve(&env(&[
                ("CI_API_V4_URL", "u"),
                ("CI_PROJECT_ID", "1"),
                ("CI_MERGE_REQUEST_IID", "7"),
            ]))
            .unwrap_err();
        assert!(inside.0.contains("Protect variable"), "{inside}");
        assert!(inside.0.contains("forks"), "{inside}");
    }
}
