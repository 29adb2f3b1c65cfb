//! `assent doctor`: the same inputs as `run`, `--mr` optional, `--format text|json`.
//!
//! Exit 0 when no check fails (a check that could not be verified is a warning, docs/contract.md#commands),
//! 1 when a check fails, or with `--strict` also when one could not be verified, 2 when
//! doctor itself cannot run (missing inputs, all named at once; an unreadable CA file; an
//! unusable URL).

use clap::Args;

use crate::commands::gitlab_inputs::{
    ConnectionArgs, EnvLookup, InputError, first_of, process_env, resolve_mr, switch_input,
    with_gitlab_environment,
};
use crate::commands::{CliError, CliResult, OutputFormat};
use crate::doctor::checks::missing_inputs_check;
use crate::doctor::enforcement::EnforcementVerdict;
use crate::doctor::{self, Check, DoctorInputs, DuplicatePrevention, Report};
use crate::engine::run::inputs::PolicyProject;

/// Arguments of `assent doctor`.
#[derive(Debug, Args)]
#[command(after_help = with_gitlab_environment("Examples:
  assent doctor                      In the MR job: every input comes from the CI environment
  assent doctor --mr 7 --project group/proj --api-url https://gitlab.example.com/api/v4
  assent doctor --format json
  assent doctor --strict             Also fail on what could not be verified
  assent doctor --serve-url https://assent-serve.example.com
                                     Also check assent serve and the webhook to it

A check that fails (✗) makes doctor exit 1. A check that could not be verified (?), or was
not checked because an earlier one failed (-), is a warning: exit 0 unless --strict.
Serialization (duplicate_prevention) and what holds the gate (gate_enforcement) can only be
verified from inside the MR job itself (CI_JOB_ID set), where the CI configuration is read;
anywhere else doctor reports unserialized-best-effort and threads-only, as warnings.

Doctor also reads:
  CI_JOB_ID              the running job, inside CI (serialization and gate_enforcement)
  ASSENT_TOKEN_VARIABLE  the CI/CD variable holding the token, for the token-variable
                         check (default ASSENT_TOKEN)
  CI_ENVIRONMENT_NAME    the environment the assent jobs declare (default assent)
  ASSENT_BOT_USER        the username of a person's account used as the bot where no
                         project or group access token is offered (GitLab.com Free): the
                         identity check then passes for that account only
  ASSENT_PREVIOUS_BOT_USERS
                         previous bot users (comma-separated usernames) whose assent
                         markers on the MR a run adopts, for the bot-markers check"))]
pub struct DoctorArgs {
    /// Where GitLab is and which project.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Merge request IID to check [env: CI_MERGE_REQUEST_IID].
    #[arg(long, value_name = "IID")]
    pub mr: Option<u64>,
    /// Output format on stdout: one line per check (`text`), or the typed report (`json`).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Exit 1 when a check could not be verified, not only when one fails (for a gate in CI:
    /// run doctor in the MR job, where everything can be verified)
    /// [env: ASSENT_DOCTOR_STRICT=1|0, true|false, yes|no, on|off].
    #[arg(long)]
    pub strict: bool,
    /// Also check that the central policy project runs read (`assent run --policy-project`)
    /// is readable with this token and its policies load [env: ASSENT_POLICY_PROJECT].
    #[arg(long, value_name = "ID_OR_PATH[@REF]")]
    pub policy_project: Option<String>,
    /// Also check `assent serve` at this URL: `<URL>/readyz` answers 200 (asked without the
    /// token), and a project webhook points at `<URL>/webhook` with merge request, comment
    /// and emoji events and SSL verification on (a warning when the token cannot read the
    /// project's webhooks) [env: ASSENT_SERVE_URL].
    #[arg(long, value_name = "URL")]
    pub serve_url: Option<String>,
}

/// Runs `assent doctor` with the process environment.
pub fn run(args: &DoctorArgs) -> CliResult {
    run_with_env(args, &process_env)
}

fn print(report: &Report, format: OutputFormat) {
    match format {
        OutputFormat::Text => crate::out!("{}", report.to_text()),
        OutputFormat::Json => crate::output::print_json(&format!("{}\n", report.to_json())),
    }
}

/// Everything doctor needs from flags and environment, or every problem with them at once.
fn resolve(args: &DoctorArgs, env: EnvLookup<'_>) -> Result<(DoctorInputs, bool), InputError> {
    let mut problems = Vec::new();
    let strict = switch_input(args.strict, "ASSENT_DOCTOR_STRICT", env)
        .map_err(|e| problems.push(e))
        .unwrap_or(false);
    let connection = args
        .connection
        .resolve_each(env)
        .map_err(|each| problems.extend(each))
        .ok();
    let mr = resolve_mr(args.mr, env)
        .map_err(|e| problems.push(e))
        .ok()
        .flatten();
    let job_id = match first_of(None, &["CI_JOB_ID"], env) {
        None => None,
        Some(text) => text
            .trim()
            .parse::<u64>()
            .map_err(|_| {
                problems.push(InputError(format!(
                    "CI_JOB_ID is not a job id: {text:?} (unset it outside CI)"
                )))
            })
            .ok(),
    };
    let policy_project = first_of(
        args.policy_project.as_deref(),
        &["ASSENT_POLICY_PROJECT"],
        env,
    )
    .and_then(|text| {
        PolicyProject::parse(&text)
            .map_err(|e| problems.push(InputError(e)))
            .ok()
    });
    let serve_url =
        first_of(args.serve_url.as_deref(), &["ASSENT_SERVE_URL"], env).and_then(|text| {
            parse_serve_url(&text)
                .map_err(|e| problems.push(InputError(e)))
                .ok()
        });
    let Some(connection) = connection.filter(|_| problems.is_empty()) else {
        return Err(InputError::joined(problems));
    };
    let ca_source = if args.connection.ca_file.is_some() {
        Some("--ca-file".to_owned())
    } else if first_of(None, &["ASSENT_CA_FILE"], env).is_some() {
        Some("ASSENT_CA_FILE".to_owned())
    } else if connection.ca_file.is_some() {
        Some("CI_SERVER_TLS_CA_FILE".to_owned())
    } else {
        None
    };
    let inputs = DoctorInputs {
        api_url: connection.api_url,
        project: connection.project,
        token: connection.token,
        ca_file: connection.ca_file,
        ca_source,
        mr,
        job_id,
        token_variable: first_of(None, &["ASSENT_TOKEN_VARIABLE"], env)
            .map(|name| name.trim().to_owned())
            .unwrap_or_else(|| "ASSENT_TOKEN".to_owned()),
        environment: first_of(None, &["CI_ENVIRONMENT_NAME"], env)
            .map(|name| name.trim().to_owned())
            .unwrap_or_else(|| ASSENT_ENVIRONMENT.to_owned()),
        policy_project,
        serve_url,
        bot_user: first_of(None, &["ASSENT_BOT_USER"], env)
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty()),
        today: today_utc(),
        previous_bot_users: first_of(None, &["ASSENT_PREVIOUS_BOT_USERS"], env)
            .map(|names| names.split(',').map(|n| n.trim().to_owned()).collect())
            .unwrap_or_default(),
    };
    Ok((inputs, strict))
}

/// Today's date in UTC, from `crate::clock::now`: the one place doctor reads it.
fn today_utc() -> chrono::NaiveDate {
    let days = u64::try_from(crate::clock::now().unix_millis() / 86_400_000).unwrap_or(0);
    chrono::NaiveDate::default() + chrono::Days::new(days)
}

/// `--serve-url`: an `http` or `https` URL with no credentials, query or fragment (the
/// routes `/readyz` and `/webhook` are appended to its path).
fn parse_serve_url(text: &str) -> Result<url::Url, String> {
    let shown = crate::core::terminal::terminal_safe(text.trim()).into_owned();
    let url = url::Url::parse(text.trim())
        .map_err(|e| format!("--serve-url (ASSENT_SERVE_URL) is not a URL: {shown:?}: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "--serve-url (ASSENT_SERVE_URL) must be an http(s) URL with a host, like https://assent-serve.example.com: {shown:?}"
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "--serve-url (ASSENT_SERVE_URL) must not carry credentials: serve's routes need none"
                .into(),
        );
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "--serve-url (ASSENT_SERVE_URL) is serve's base URL, without a query or fragment: {shown:?}"
        ));
    }
    Ok(url)
}

/// The environment the shipped templates' assent jobs declare (`environment: assent`, action
/// `access`), to which the token's variable is scoped.
pub const ASSENT_ENVIRONMENT: &str = "assent";

/// Runs `assent doctor` with an injected environment.
pub fn run_with_env(args: &DoctorArgs, env: EnvLookup<'_>) -> CliResult {
    let cannot_run = |check: Check, cause: &str| {
        let report = Report::new(
            vec![check],
            DuplicatePrevention::UnserializedBestEffort,
            format!("doctor could not run: {cause}"),
        )
        .with_gate_enforcement(EnforcementVerdict::threads_only(format!(
            "doctor could not run: {cause}"
        )));
        print(&report, args.format);
        CliError::usage(cause)
    };
    let (inputs, strict) = match resolve(args, env) {
        Ok(resolved) => resolved,
        Err(e) => return Err(cannot_run(missing_inputs_check(&e.0), &e.0)),
    };
    let report = match doctor::run(&inputs) {
        Ok(report) => report,
        Err(e) => {
            let cause = e.to_string();
            return Err(cannot_run(
                Check::fail(
                    "inputs",
                    cause.clone(),
                    "Fix the setting named above: doctor cannot send a request with it.",
                ),
                &cause,
            ));
        }
    };
    print(&report, args.format);
    let verdicts = format!(
        "duplicate_prevention: {}, gate_enforcement: {}",
        report.duplicate_prevention.as_str(),
        report.gate_enforcement.as_str()
    );
    let (failures, warnings) = (report.failures(), report.warnings());
    if report.found_problems(strict) {
        let cause = if failures.is_empty() {
            format!(
                "doctor could not verify: {} (--strict; {verdicts})",
                warnings.join(", ")
            )
        } else {
            format!(
                "doctor found problems in: {} ({verdicts})",
                failures.join(", ")
            )
        };
        return Err(CliError::gate_failed(cause));
    }
    if !warnings.is_empty() {
        crate::errln!(
            "warning: doctor could not verify: {} (exit 0; --strict makes this exit 1)",
            warnings.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_serve_url;

    #[test]
    fn the_serve_url_is_a_plain_http_base() {
        assert_eq!(
            parse_serve_url(" https://serve.example.com/assent ")
                .unwrap()
                .as_str(),
            "https://serve.example.com/assent"
        );
        for (bad, why) in [
            ("serve.example.com", "not a URL"),
            ("ftp://serve.example.com", "http(s) URL"),
            ("https://user:pw@serve.example.com", "credentials"),
            ("https://serve.example.com/?token=x", "without a query"),
            ("\u{1b}[2Khttps://serve.example.com", "not a URL"),
        ] {
            let error = parse_serve_url(bad).map(|u| u.to_string()).unwrap_err();
            assert!(error.contains(why), "{bad}: {error}");
            assert!(
                !error.contains('\u{1b}') && !error.contains("pw@"),
                "{error}"
            );
        }
    }
}
