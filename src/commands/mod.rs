//! The thin command layer: flags and environment in, a call into the core, text out, an exit
//! code back. No protocol logic lives here.
//!
//! Every command's entry function returns a [`CliResult`], and [`main`] hands it to
//! [`finish`], the one place a command's error is printed and mapped to its exit code
//! ([`cli_error`]). What a command prints itself is its report; its error is what it
//! returns. The rule for each line on stderr:
//!
//! * The condition that makes the command exit non-zero (a usage error, a runtime failure,
//!   "N policy test case(s) failed", "N fixture path(s) could not be read or parsed",
//!   doctor's cause, `run`'s gate failure) is the command's [`CliError`], returned, never
//!   printed by the command: `finish` prints it once, as the last `error:` line.
//! * A problem with one of the many items a command goes through (a broken case file, a
//!   fixture path that cannot be read, a case `--update` could not rewrite), after which the
//!   command carries on, is part of its report: printed as it is found, through
//!   [`report_error`], then counted in the final error.
//! * Every non-zero exit names its cause in that one line (docs/contract.md#exit-codes),
//!   also when the report already says everything on stdout (`lint --format json`,
//!   `replay`'s `FAIL` lines).

pub mod check;
pub mod cli_error;
pub mod completions;
pub mod doctor;
pub mod inputs;
pub mod junit;
pub mod lint;
pub mod local_tree;
pub mod replay;
pub mod report_file;
pub mod run;
pub mod serve;
pub mod sweep;
pub mod test;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use cli_error::{
    CliError, CliResult, Exit, UsageError, error_lines, exit_of, finish, help_for, report_error,
};

use crate::engine::observe::{Progress, Silent};
use crate::progress::Lines;

/// What a command prints on stdout, for `--format`: one enum for every command, each
/// command's flag says what its JSON document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Lines for a person.
    Text,
    /// One JSON document, for a machine.
    Json,
}

/// The progress observer of `run` and `sweep`: lines on stderr, unless the output is JSON
/// (stderr then carries only errors and warnings) or `--quiet`.
pub fn progress_for(json: bool, quiet: bool) -> Box<dyn Progress> {
    if json || quiet {
        Box::new(Silent)
    } else {
        Box::new(Lines::stderr())
    }
}

const EXAMPLES: &str = "\
Examples:
  assent run                         The MR pipeline job (inputs from the CI environment)
  assent run --dry-run --mr 7        Print the plan for MR !7, write nothing
  assent lint                        Check ./.assent/policies, every problem with file:line
  assent check                       What the gate will say about the working tree, before pushing
  assent test                        Run the policy unit tests under ./.assent/tests
  assent test fixtures/repos/topic-registry
  assent replay fixtures/            Replay the protocol fixtures on the in-memory forge
  assent replay fixtures/crash-then-rerun.yaml
  assent sweep --interval 1h --lookback 3h    Start pipelines for MRs left unverified
  assent serve --project group/proj  Receive webhooks: pipelines within seconds of an assent
  assent doctor --mr 7               Check the deployment for MR !7 (in the MR job: no flags)

Exit codes: 0 success, 1 gate failed or problems found, 2 usage or configuration error,
3 forge or runtime failure.";

/// assent: a policy-driven, crash-safe review gate for GitLab merge requests.
#[derive(Debug, Parser)]
#[command(name = "assent", version, about, after_help = EXAMPLES)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Why `--token` is refused, and where the token goes instead.
pub const TOKEN_IS_NEVER_A_FLAG: &str = "the token is never a flag: a command line shows in process lists, shell history and CI job logs. Set ASSENT_TOKEN (or GITLAB_TOKEN) in the environment; in GitLab CI, a masked CI/CD variable (docs/setup.md)";

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The merge request pipeline job: judge the MR under the target branch's policies and
    /// reconcile its threads and summary.
    Run(run::RunArgs),
    /// What the gate will say about a local checkout's change, before it is pushed: the same
    /// judgement as `run`, from git, with no token and no GitLab.
    Check(check::CheckArgs),
    /// Check a deployment: inputs, API reach, token identity, scope and role, project
    /// settings, policies and serialization; prints duplicate_prevention.
    Doctor(doctor::DoctorArgs),
    /// Validate `REPO/.assent/policies` (default `.`), every problem with file:line.
    Lint(lint::LintArgs),
    /// Run the policy unit tests under `REPO/.assent/tests/`; any mismatch fails.
    Test(test::TestArgs),
    /// Replay protocol fixtures (files or folders of YAML) against the embedded in-memory forge.
    Replay(replay::ReplayArgs),
    /// Scheduled safety net: start a pipeline for every open MR whose review state is not
    /// verified for its head.
    Sweep(sweep::SweepArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or PowerShell.
    Completions(completions::CompletionsArgs),
    /// Long-lived webhook receiver: a reviewer's resolution (or a lost pipeline) gets its MR
    /// pipeline within seconds; never publishes, runs the sweep itself as the safety net.
    Serve(serve::ServeArgs),
}

/// Whether the arguments (before a `--`) pass `--token`, as `--token VALUE` or `--token=VALUE`.
fn names_a_token_flag(args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    args.take_while(|a| a != "--").any(|a| {
        a.to_str()
            .is_some_and(|a| a == "--token" || a.starts_with("--token="))
    })
}

/// Parses the command line, runs the command and returns its exit code.
pub fn main() -> ExitCode {
    // Before clap, whose "unexpected argument" (or a missing required flag) would hide the
    // real mistake; the flag's value is never read or shown.
    if names_a_token_flag(std::env::args_os().skip(1)) {
        return finish(Err(CliError::usage(TOKEN_IS_NEVER_A_FLAG))).into();
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Lint(args) => lint::run(&args),
        Command::Test(args) => test::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Completions(args) => completions::run(&args),
    };
    finish(result).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The long help of a subcommand, as `assent <name> --help` prints it.
    fn long_help(name: &str) -> String {
        use clap::CommandFactory as _;
        let mut cli = Cli::command();
        cli.build();
        cli.find_subcommand_mut(name)
            .expect(name)
            .render_long_help()
            .to_string()
    }

    #[test]
    fn the_sweeps_help_says_what_each_count_of_its_report_counts() {
        let help = long_help("sweep");
        for verdict in [
            "review-resolved",
            "verified-other-target",
            "missing",
            "reconciling-stuck",
            "verified-older-head",
            "verified-no-target",
        ] {
            assert!(help.contains(verdict), "{verdict} in {help}");
        }
        let refreshed = help
            .find("  refreshed: M  after a human action")
            .expect("refreshed explained");
        let healed = help
            .find("  healed: N     for runs that were lost")
            .expect("healed explained");
        assert!(refreshed < healed, "in the report's order: {help}");
    }

    #[test]
    fn the_help_of_every_command_talking_to_gitlab_names_every_variable_it_reads() {
        for name in ["run", "sweep", "doctor"] {
            let help = long_help(name);
            for var in [
                "ASSENT_TOKEN",
                "GITLAB_TOKEN",
                "ASSENT_ALLOW_HTTP",
                "ASSENT_WRITE_SETTLE_SECS",
                "HTTPS_PROXY",
                "NO_PROXY",
                "CI_API_V4_URL",
                "ASSENT_CA_FILE",
            ] {
                assert!(
                    help.contains(var),
                    "`assent {name} --help` lacks {var}:\n{help}"
                );
            }
            // An on/off option read from a variable shows its spellings, never an empty
            // `[env: NAME=]`.
            assert!(!help.contains("=]"), "`assent {name} --help`:\n{help}");
        }
        // Every variable a command's own module names is in its help.
        for (name, source) in [
            ("run", include_str!("run.rs")),
            ("sweep", include_str!("sweep.rs")),
            ("doctor", include_str!("doctor.rs")),
            ("serve", include_str!("serve.rs")),
        ] {
            let help = long_help(name);
            let code = source.split("#[cfg(test)]").next().unwrap_or(source);
            for quoted in code.split('"').skip(1).step_by(2) {
                let is_variable = (quoted.starts_with("ASSENT_") || quoted.starts_with("CI_"))
                    && quoted.len() > 4
                    && quoted
                        .bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
                if is_variable {
                    assert!(
                        help.contains(quoted),
                        "`assent {name} --help` lacks {quoted}, which src/commands/{name}.rs reads:\n{help}"
                    );
                }
            }
        }
        assert!(long_help("doctor").contains("ASSENT_DOCTOR_STRICT=1|0"));
        assert!(long_help("run").contains("ASSENT_APPROVE=1|0"));
        assert!(long_help("run").contains("ASSENT_RATE_LIMIT_WAIT"));
    }
}
