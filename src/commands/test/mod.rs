//! `assent test [REPO]`: run the policy unit tests under `REPO/.assent/tests/`.
//!
//! Each `*.yaml`/`*.yml` file (recursively) is one test case in the format of
//! [`crate::core::policy_cases`] (documented in `docs/policies.md`): inline file contents at
//! the base and at the head of an imagined merge request, and the findings and decision the
//! repository's policies must produce. A case runs the very function `assent run` uses,
//! [`compute_desired_state`](crate::core::desired_state::compute_desired_state), with the
//! policies of `REPO/.assent/policies/`, so built-in findings (`assent/self-edit`,
//! `assent/parse-error`, …) take part too.
//!
//! The command is in parts: [`case_files`] finds and reads the case files, [`runner`] runs
//! and judges each one, [`update`] rewrites an `expect:` block, [`report`] is what the run
//! found and its JUnit and JSON forms, [`print`](mod@print) what is printed of it.
//!
//! Findings are compared exactly as a multiset of (rule, subject, effect); messages and
//! occurrences are not compared, but a failure shows the message each unexpected finding would
//! post. `--update` rewrites the `expect:` block of every case whose result differs (the rest
//! of the file, comments included, is kept byte for byte), and is refused when the `CI`
//! environment variable is set: expectations are reviewed changes, never something a pipeline
//! rewrites to make itself pass. Nor does it write a result in which a rule could not be
//! evaluated ([`Actual::evaluation_failures`](crate::core::policy_cases::Actual::evaluation_failures)):
//! that is a broken rule or data the rule does not expect, and written down it would pass
//! unseen from then on; the case fails instead.
//!
//! `--format junit|json` prints the same results as one document ([`report`]); the `error:`
//! line of each broken case file and the command's final `error:` line go to stderr in every
//! format, and the exit codes do not depend on the format.
//!
//! Exit codes: `0` every case passes, `1` a case fails (`--update` refusing one included) or
//! the policies do not load (a refused policy file included), `2` a test file cannot be read,
//! is refused or does not parse,
//! `REPO/.assent/policies` or `REPO/.assent/tests` is missing or empty, or `--update` is
//! refused.

pub mod case_files;
pub mod print;
pub mod report;
pub mod runner;
pub mod update;

use std::path::{Path, PathBuf};

use clap::Args;

use crate::commands::lint::{LocalReadError, print_problems, read_policies, shown_path};
use crate::commands::local_tree::RefusedEntry;
use crate::commands::{CliError, CliResult, report_error};
use crate::core::policy::PolicyFile;
use crate::core::policy::excerpt::excerpt;
use crate::engine::run::inputs::TEST_DIR;

use case_files::list_case_files;
pub use case_files::load_case;
use print::{print_case, print_document, problem_line, tally};
use report::{CaseReport, CaseStatus, TestFormat, TestReport};
use runner::{MAX_NAME_CHARS, judge, run_case_file};

const TEST_EXAMPLES: &str = "\
Examples:
  assent test                                  Run the cases under ./.assent/tests/
  assent test fixtures/repos/topic-registry    Run another checkout's cases
  assent test --update                         Rewrite each failing case's `expect:` block
                                               from the actual result (refused when CI is set,
                                               and for a result where a rule could not be
                                               evaluated)
  assent test --format junit > assent-tests.xml
                                               JUnit XML for GitLab's test report

Prints `ok` or `FAILED` per case, a `- expected` / `+ actual` diff for each failure (with the
message each unexpected finding would post), then `N passed, M failed` (`, K broken` when a
case file could not be read or parsed).
Exit codes: 0 all pass, 1 a case fails, --update refuses a case, or the policies do not load,
2 a test file cannot be read or parsed (file:line), tests or policies missing, or --update
refused.";

/// Arguments of `assent test`.
#[derive(Debug, Args)]
#[command(after_help = TEST_EXAMPLES)]
pub struct TestArgs {
    /// The repository checkout whose `.assent/tests/` cases run.
    #[arg(value_name = "REPO", default_value = ".")]
    pub repo: PathBuf,
    /// Rewrite the `expect:` block of each case whose result differs. Refused when the `CI`
    /// environment variable is set; a case whose result holds a rule that could not be
    /// evaluated is not rewritten (it fails, saying why).
    #[arg(long)]
    pub update: bool,
    /// Run only the cases whose file path or name contains TEXT (any case); the others are
    /// counted as filtered out. A filter that matches no case is an error, so a typo cannot
    /// pass as a green run.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Output format on stdout: lines for a person (`text`), JUnit XML for GitLab's test
    /// report (`junit`), or one JSON document (`json`). Errors go to stderr in every format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: TestFormat,
    /// A checkout of the central policy project (`assent run --policy-project`): the cases
    /// run against its policies and REPO's together, as a run judges.
    #[arg(long, value_name = "DIR")]
    pub policy_project_dir: Option<PathBuf>,
}

/// Runs `assent test`.
pub fn run(args: &TestArgs) -> CliResult {
    if args.update && std::env::var_os("CI").is_some() {
        return Err(CliError::usage(
            "--update is refused because the CI environment variable is set: expectations \
             are rewritten on a workstation and reviewed, never by a pipeline to make itself pass",
        ));
    }
    let repo = args.repo.as_path();
    let policy_files = loaded_policies(args)?;
    let (cases, refused) = match list_case_files(repo) {
        Ok((cases, refused)) if !cases.is_empty() || !refused.is_empty() => (cases, refused),
        Ok(_) => {
            return Err(CliError::usage(format!(
                "{} holds no *.yaml test case: add cases (see docs/policies.md)",
                shown_path(repo, TEST_DIR)
            )));
        }
        Err(message) => return Err(CliError::usage(message)),
    };

    let wanted = |path: &str, name: Option<&str>| match &args.filter {
        None => true,
        Some(filter) => {
            let filter = filter.to_lowercase();
            path.to_lowercase().contains(&filter)
                || name.is_some_and(|n| n.to_lowercase().contains(&filter))
        }
    };
    let text = args.format == TestFormat::Text;
    let mut report = TestReport::default();
    for entry in &refused {
        report
            .cases
            .push(refused_case(repo, entry, wanted(&entry.path, None), text));
    }
    for case_path in &cases {
        let ran = run_case_file(repo, case_path, &policy_files, wanted);
        let case = judge(args.update, repo, case_path, ran);
        if text {
            print_case(repo, &case);
        }
        report.cases.push(case);
    }
    let summary = report.summary();
    if let Some(filter) = &args.filter
        && summary.passed + summary.failed + summary.broken == 0
    {
        return Err(CliError::usage(format!(
            "no test case matches --filter {:?} ({} case(s) in {}); a filter matches part of a case's file path or name",
            excerpt(filter, MAX_NAME_CHARS),
            summary.filtered_out,
            shown_path(repo, TEST_DIR)
        )));
    }
    match report.render(args.format) {
        Some(document) => print_document(args.format, &document),
        None => crate::outln!("{}", tally(&summary)),
    }
    outcome(args, &report)
}

/// The policies the cases run against (the repository's, and a central checkout's when
/// given); when they do not load, their problems reported in the asked format and no case
/// run.
fn loaded_policies(args: &TestArgs) -> Result<Vec<PolicyFile>, CliError> {
    let repo = args.repo.as_path();
    let local = match read_policies(repo, args.policy_project_dir.as_deref()) {
        Ok(local) => local,
        Err(LocalReadError(message)) => return Err(CliError::usage(message)),
    };
    let Err(problems) = local.load() else {
        return Ok(local.files);
    };
    match args.format {
        TestFormat::Text => print_problems(repo, &problems),
        TestFormat::Junit | TestFormat::Json => {
            let report = TestReport {
                policy_problems: problems.iter().map(ToString::to_string).collect(),
                cases: Vec::new(),
            };
            print_document(args.format, &report.render(args.format).unwrap_or_default());
            // The lines a person reads go to the log, as in text mode.
            for problem in &problems {
                crate::errln!("{}", problem_line(repo, problem));
            }
        }
    }
    Err(CliError::gate_failed(format!(
        "the policies do not load ({} problem(s)); no case ran. See `assent lint {}`",
        problems.len(),
        shown_path(Path::new("."), &repo.display().to_string())
    )))
}

/// A case file the folder walk would not read (a link, a special file, too deep): broken
/// when the filter wants it, with its reason on stderr (and `BROKEN` in text mode).
fn refused_case(repo: &Path, entry: &RefusedEntry, wanted: bool, text: bool) -> CaseReport {
    let RefusedEntry { path, reason } = entry;
    if !wanted {
        return CaseReport::new(path, None, CaseStatus::FilteredOut);
    }
    let shown = shown_path(repo, path);
    if text {
        crate::outln!("BROKEN {shown}");
    }
    report_error(format_args!("{shown}: {reason}"));
    CaseReport {
        error: Some(format!("{path}: {reason}")),
        ..CaseReport::new(path, None, CaseStatus::Broken)
    }
}

/// How the command ends once every case ran: unreadable cases are a usage error (exit 2),
/// failed ones fail the gate (exit 1), and cases `--update` would not rewrite are named.
fn outcome(args: &TestArgs, report: &TestReport) -> CliResult {
    let summary = report.summary();
    let refused_updates = report
        .cases
        .iter()
        .filter(|c| c.status == CaseStatus::Failed && args.update)
        .count();
    if refused_updates > 0 {
        report_error(format_args!(
            "{refused_updates} case(s) not updated: their result holds a rule that could not be evaluated; fix the rule or the case, or write the expectation by hand"
        ));
    }
    if summary.broken > 0 {
        Err(CliError::usage(format!(
            "{} test file(s) could not be read, parsed or updated",
            summary.broken
        )))
    } else if summary.failed > 0 {
        Err(CliError::gate_failed(format!(
            "{} policy test case(s) failed",
            summary.failed
        )))
    } else {
        Ok(())
    }
}
