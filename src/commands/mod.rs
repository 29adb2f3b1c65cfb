//! The thin command layer: flags and environment in, a call into the core, text out, an exit
//! code back. No protocol logic lives here.

pub mod doctor;
pub mod inputs;
pub mod lint;
pub mod local_tree;
pub mod policy_test;
pub mod replay;
pub mod run;
pub mod sweep;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes shared by every command (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success (for `run`: published and verified, or a designed no-write refusal).
    Success = 0,
    /// The gate failed, or `lint`/`test`/`doctor`/`replay` found problems.
    GateFailed = 1,
    /// Usage or configuration error, before any forge write.
    Usage = 2,
    /// Forge or runtime failure.
    Runtime = 3,
}

impl From<Exit> for ExitCode {
    fn from(value: Exit) -> Self {
        ExitCode::from(value as u8)
    }
}

const EXAMPLES: &str = "\
Examples:
  assent run                         The MR pipeline job (inputs from the CI environment)
  assent run --dry-run --mr 7        Print the plan for MR !7, write nothing
  assent lint                        Check ./.assent/policies, every problem with file:line
  assent test                        Run the policy unit tests under ./.assent/tests
  assent test fixtures/repos/topic-registry
  assent replay fixtures/            Replay the protocol fixtures on the in-memory forge
  assent replay fixtures/crash-then-rerun.yaml
  assent sweep --interval 1h --lookback 3h    Start pipelines for MRs left unverified
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

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The merge request pipeline job: judge the MR under the target branch's policies and
    /// reconcile its threads and summary.
    Run(run::RunArgs),
    /// Check a deployment: inputs, API reach, token identity, scope and role, project
    /// settings, policies and serialization; prints duplicate_prevention.
    Doctor(doctor::DoctorArgs),
    /// Validate `REPO/.assent/policies` (default `.`), every problem with file:line.
    Lint(lint::LintArgs),
    /// Run the policy unit tests under `REPO/.assent/tests/`; any mismatch fails.
    Test(policy_test::TestArgs),
    /// Replay protocol fixtures (files or folders of YAML) against the embedded in-memory forge.
    Replay(replay::ReplayArgs),
    /// Scheduled safety net: start a pipeline for every open MR whose review state is not
    /// verified for its head.
    Sweep(sweep::SweepArgs),
}

/// Parses the command line, runs the command and returns its exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let exit = match cli.command {
        Command::Lint(args) => lint::run(&args),
        Command::Test(args) => policy_test::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Doctor(args) => doctor::run(&args),
    };
    exit.into()
}
