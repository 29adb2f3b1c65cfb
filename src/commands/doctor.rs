//! `assent doctor`: the same inputs as `run`, `--mr` optional, `--format text|json`.
//!
//! Exit 0 when every check passes, 1 when any check fails or cannot be verified, 2 when
//! doctor itself cannot run (a missing input, an unreadable CA file, an unusable URL).

use clap::Args;

use crate::commands::inputs::{ConnectionArgs, EnvLookup, first_of, process_env, resolve_mr};
use crate::commands::{Exit, Format};
use crate::doctor::enforcement::EnforcementVerdict;
use crate::doctor::{self, Check, DoctorInputs, DuplicatePrevention, Report};

/// Arguments of `assent doctor`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  assent doctor                      In the MR job: every input comes from the CI environment
  assent doctor --mr 7 --project group/proj --api-url https://gitlab.example.com/api/v4
  assent doctor --format json

Serialization (duplicate_prevention) and what holds the gate (gate_enforcement) can only be
verified from inside the MR job itself (CI_JOB_ID set), where the CI configuration is read;
anywhere else doctor reports unserialized-best-effort and threads-only. A threads-only gate is
a warning: it does not change the exit code.")]
pub struct DoctorArgs {
    /// Where GitLab is and which project.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Merge request IID to check [env: CI_MERGE_REQUEST_IID].
    #[arg(long, value_name = "IID")]
    pub mr: Option<u64>,
    /// Output format on stdout: one line per check (`text`), or the typed report (`json`).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs `assent doctor` with the process environment.
pub fn run(args: &DoctorArgs) -> Exit {
    run_with_env(args, &process_env)
}

fn print(report: &Report, format: Format) {
    match format {
        Format::Text => print!("{}", report.to_text()),
        Format::Json => println!("{}", report.to_json()),
    }
}

/// Runs `assent doctor` with an injected environment.
pub fn run_with_env(args: &DoctorArgs, env: EnvLookup<'_>) -> Exit {
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
        eprintln!("error: {cause}");
        Exit::Usage
    };
    let connection = match args.connection.resolve(env) {
        Ok(c) => c,
        Err(e) => {
            return cannot_run(
                Check::fail(
                    "inputs",
                    e.0.clone(),
                    "Set the missing input named above (in an MR pipeline job, CI sets every input but the token).",
                ),
                &e.0,
            );
        }
    };
    let mr = match resolve_mr(args.mr, env) {
        Ok(mr) => mr,
        Err(e) => {
            return cannot_run(
                Check::fail("inputs", e.0.clone(), "Pass --mr with a number."),
                &e.0,
            );
        }
    };
    let job_id = match first_of(None, &["CI_JOB_ID"], env) {
        None => None,
        Some(text) => match text.trim().parse::<u64>() {
            Ok(id) => Some(id),
            Err(_) => {
                let cause = format!("CI_JOB_ID is not a job id: {text:?}");
                return cannot_run(
                    Check::fail("inputs", cause.clone(), "Unset CI_JOB_ID outside CI."),
                    &cause,
                );
            }
        },
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
    };
    let report = match doctor::run(&inputs) {
        Ok(report) => report,
        Err(e) => {
            let cause = e.to_string();
            return cannot_run(
                Check::fail(
                    "inputs",
                    cause.clone(),
                    "Fix the setting named above: doctor cannot send a request with it.",
                ),
                &cause,
            );
        }
    };
    print(&report, args.format);
    if report.all_passed() {
        Exit::Success
    } else {
        eprintln!(
            "error: doctor found problems in: {} (duplicate_prevention: {}, gate_enforcement: {})",
            report.not_passed().join(", "),
            report.duplicate_prevention.as_str(),
            report.gate_enforcement.as_str()
        );
        Exit::GateFailed
    }
}
