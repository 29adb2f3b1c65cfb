//! `assent test [REPO]`: run the policy unit tests under `REPO/.assent/tests/`.
//!
//! Each `*.yaml`/`*.yml` file (recursively) is one test case: inline file contents at the
//! base and at the head of an imagined merge request, and the findings and decision the
//! repository's policies must produce. A case runs the very function `assent run` uses,
//! [`compute_desired_state`](crate::core::desired_state::compute_desired_state), with the policies of `REPO/.assent/policies/`, so built-in
//! findings (`assent/self-edit`, `assent/parse-error`, …) take part too. The format is strict
//! (unknown fields are errors), documented in `docs/policies.md`:
//!
//! ```yaml
//! name: retention shrink is challenged      # optional; defaults to the file name
//! mr: { title: "Shrink retention", labels: [] }   # optional: what `mr` shows predicates
//! files:
//!   - path: topics/orders.yaml
//!     old_path: topics/old-name.yaml      # optional: a rename (base is read from here)
//!     base: |                             # omitted or null: absent at the base
//!       topics: ...
//!     head: |                             # omitted or null: absent at the head (deleted)
//!       topics: ...
//! expect:
//!   decision: REVIEW                      # APPROVE | REVIEW | BLOCK, no thread resolved
//!   findings:
//!     - { rule: retention-shrink, subject: "topics/orders.yaml#/topics/orders.events.v1/retention_days", effect: challenge }
//! ```
//!
//! Findings are compared exactly as a multiset of (rule, subject, effect); messages and
//! occurrences are not compared, but a failure shows the message each unexpected finding would
//! post. `--update` rewrites the `expect:` block of every case whose result differs (the rest
//! of the file, comments included, is kept byte for byte), and is refused when the `CI`
//! environment variable is set: expectations are reviewed changes, never something a pipeline
//! rewrites to make itself pass. Nor does it write a result in which a rule could not be
//! evaluated ([`Actual::evaluation_failures`]): that is a broken rule or data the rule does not
//! expect, and written down it would pass unseen from then on; the case fails instead.
//!
//! `--format junit|json` prints the same results as one document
//! ([`crate::commands::test_report`]); the `error:` line of each broken case file and the
//! command's final `error:` line go to stderr in every format, and the exit codes do not
//! depend on the format.
//!
//! Case files are read like policy files ([`crate::commands::local_tree`]): a link, a special
//! file or a file over [`MAX_FILE_BYTES`] under `.assent/tests/` is a broken case, never
//! opened or read beyond the limit. A case holds its files inline: nothing else is read.
//!
//! Exit codes: `0` every case passes, `1` a case fails (`--update` refusing one included) or
//! the policies do not load (a refused policy file included), `2` a test file cannot be read,
//! is refused or does not parse,
//! `REPO/.assent/policies` or `REPO/.assent/tests` is missing or empty, or `--update` is
//! refused.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::commands::lint::{LocalReadError, print_problems, read_policies, shown_path};
use crate::commands::local_tree::{
    ListError, MAX_FILE_BYTES, ReadError, Refusal, list_folder, read_file, write_file_no_follow,
};
use crate::commands::test_report::{CaseReport, CaseStatus, TestReport};
use crate::commands::{CliError, CliResult, report_error};
use crate::core::policy::excerpt::{MAX_MESSAGE_CHARS, escape_controls, excerpt};
use crate::review_input::is_policy_file_name;

pub use crate::core::policy_cases::{
    Actual, BrokenCase, Expect, ExpectedFinding, FileSpec, MrSpec, TestCase, expect_block,
    message_lines, mismatches, parse_case, replace_expect_block, run_case,
};

/// The folder test cases are read from.
pub use crate::review_input::TEST_DIR;

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

/// What `assent test` prints on stdout. Its own enum, not the shared [`crate::commands::Format`]:
/// JUnit belongs to this command only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TestFormat {
    /// `ok`/`FAILED` lines, a diff per failure, a tally.
    Text,
    /// JUnit XML, for `artifacts:reports:junit`.
    Junit,
    /// A `PolicyTestReport` JSON document, for tooling.
    Json,
}

/// Longest case name printed, in characters (names come from the case file).
const MAX_NAME_CHARS: usize = 120;

/// Reads and parses the case file at repository path `case_path` of `repo`, under the
/// limits of [`crate::commands::local_tree`] (no link, regular file, at most
/// [`MAX_FILE_BYTES`]).
pub fn load_case(repo: &Path, case_path: &str) -> Result<(String, TestCase), BrokenCase> {
    let bytes = read_file(repo, case_path, MAX_FILE_BYTES).map_err(|e| BrokenCase {
        line: None,
        reason: match e {
            ReadError::Refused(reason) => reason,
            ReadError::Io(e) => e,
        },
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        BrokenCase {
            line: Some(valid.iter().filter(|&&b| b == b'\n').count() + 1),
            reason: "not valid UTF-8".to_owned(),
        }
    })?;
    let case = parse_case(&text)?;
    Ok((text, case))
}

/// What one case file gave, before it is printed.
enum CaseOutcome {
    /// Left out by `--filter`.
    FilteredOut(Option<String>),
    /// Could not be read or parsed.
    Broken(BrokenCase),
    /// Ran: the case, its text and its result.
    Ran(String, Box<TestCase>, Actual),
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
    let local = match read_policies(repo, args.policy_project_dir.as_deref()) {
        Ok(local) => local,
        Err(LocalReadError(message)) => return Err(CliError::usage(message)),
    };
    if let Err(problems) = local.load() {
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
        return Err(CliError::gate_failed(format!(
            "the policies do not load ({} problem(s)); no case ran. See `assent lint {}`",
            problems.len(),
            shown_path(Path::new("."), &repo.display().to_string())
        )));
    }
    let policy_files = local.files;
    let (cases, refused) = match case_files(repo) {
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
    for Refusal { path, reason } in &refused {
        let status = if wanted(path, None) {
            let shown = shown_path(repo, path);
            if text {
                crate::outln!("BROKEN {shown}");
            }
            report_error(format_args!("{shown}: {reason}"));
            CaseStatus::Broken
        } else {
            CaseStatus::FilteredOut
        };
        report.cases.push(CaseReport {
            error: (status == CaseStatus::Broken).then(|| format!("{path}: {reason}")),
            ..CaseReport::new(path, None, status)
        });
    }
    for case_path in &cases {
        let ran = match load_case(repo, case_path) {
            // A case that does not parse has no name: the filter sees its path only.
            Err(_) if !wanted(case_path, None) => CaseOutcome::FilteredOut(None),
            Err(broken) => CaseOutcome::Broken(broken),
            Ok((_, case)) if !wanted(case_path, case.name.as_deref()) => {
                CaseOutcome::FilteredOut(case.name)
            }
            Ok((text, case)) => {
                let actual = run_case(&policy_files, &case);
                CaseOutcome::Ran(text, Box::new(case), actual)
            }
        };
        let case = judge(args, repo, case_path, ran);
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
    let mut tally = format!("{} passed, {} failed", summary.passed, summary.failed);
    // A broken case file counts in the tally as it does in the JUnit report (as an error),
    // so the two never disagree on how many cases there were.
    if summary.broken > 0 {
        tally.push_str(&format!(", {} broken", summary.broken));
    }
    if summary.updated > 0 {
        tally.push_str(&format!(" ({} updated)", summary.updated));
    }
    if summary.filtered_out > 0 {
        tally.push_str(&format!("; {} filtered out", summary.filtered_out));
    }
    match report.render(args.format) {
        Some(document) => print_document(args.format, &document),
        None => crate::outln!("{tally}"),
    }
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

/// A policy problem as a `path:line: message` line, paths shown for `repo`.
fn problem_line(repo: &Path, problem: &crate::core::policy::PolicyProblem) -> String {
    let shown = shown_path(repo, &problem.file);
    let message = escape_controls(&problem.message);
    match problem.line {
        Some(line) => format!("{shown}:{line}: {message}"),
        None => format!("{shown}: {message}"),
    }
}

/// Decides what happened to one case file, updating it when asked and allowed.
fn judge(args: &TestArgs, repo: &Path, case_path: &str, ran: CaseOutcome) -> CaseReport {
    let shown = shown_path(repo, case_path);
    let (text, case, actual) = match ran {
        CaseOutcome::FilteredOut(name) => {
            let name = name.map(|n| excerpt(&n, MAX_NAME_CHARS));
            return CaseReport::new(case_path, name, CaseStatus::FilteredOut);
        }
        CaseOutcome::Broken(broken) => {
            report_error(broken.at(&shown));
            return CaseReport {
                error: Some(broken.at(case_path)),
                ..CaseReport::new(case_path, None, CaseStatus::Broken)
            };
        }
        CaseOutcome::Ran(text, case, actual) => (text, case, actual),
    };
    let name = excerpt(case.name.as_deref().unwrap_or(case_path), MAX_NAME_CHARS);
    let report = mismatches(case.expect.as_ref(), &actual);
    let mut result = CaseReport {
        expected: case.expect.clone(),
        actual: Some(actual),
        ..CaseReport::new(case_path, Some(name), CaseStatus::Passed)
    };
    let actual = result.actual.as_ref().expect("set above");
    // Expected findings are quoted from the case file: shown, not echoed in full.
    let details: Vec<String> = report
        .iter()
        .map(|line| excerpt(line, MAX_MESSAGE_CHARS))
        .collect();
    if report.is_empty() {
        return result;
    }
    if args.update && actual.evaluation_failures.is_empty() {
        match update_case(&repo.join(case_path), &text, &shown, actual) {
            Ok(()) => result.status = CaseStatus::Updated,
            Err(message) => {
                report_error(&message);
                result.status = CaseStatus::Broken;
                result.error = Some(excerpt(
                    &message.replacen(&shown, case_path, 1),
                    MAX_MESSAGE_CHARS,
                ));
            }
        }
        return result;
    }
    result.status = CaseStatus::Failed;
    result.details = details;
    if args.update {
        // An evaluation error is a broken rule or a case whose data the rule does not
        // expect: written down as the expectation, it would pass from then on unseen.
        for failure in &actual.evaluation_failures {
            result.details.push(excerpt(
                &format!(
                    "not updated: rule `{}` could not be evaluated on `{}`: {}",
                    failure.rule, failure.subject, failure.reason
                ),
                MAX_MESSAGE_CHARS,
            ));
        }
    }
    result
}

/// The text lines of one case, as it ran.
fn print_case(repo: &Path, case: &CaseReport) {
    let shown = shown_path(repo, &case.file);
    // A case's name is the checkout's text: one visible line.
    let name = escape_controls(case.shown_name());
    match case.status {
        CaseStatus::FilteredOut => {}
        CaseStatus::Passed => crate::outln!("ok     {shown}: {name}"),
        CaseStatus::Updated => crate::outln!("updated {shown}: {name}"),
        CaseStatus::Broken => match &case.name {
            Some(_) => crate::outln!("BROKEN {shown}: {name}"),
            None => crate::outln!("BROKEN {shown}"),
        },
        CaseStatus::Failed => {
            crate::outln!("FAILED {shown}: {name}");
            for line in &case.details {
                crate::outln!("    {line}");
            }
        }
    }
}

/// Rewrites the case's `expect:` block, after checking the new text reads back as `actual`.
fn update_case(path: &Path, text: &str, shown: &str, actual: &Actual) -> Result<(), String> {
    let new_text = replace_expect_block(text, &expect_block(actual));
    let reread = parse_case(&new_text).map_err(|b| {
        format!(
            "{}: cannot update: the rewritten `expect:` block does not read back; edit it by hand",
            b.at(shown)
        )
    })?;
    if !mismatches(reread.expect.as_ref(), actual).is_empty() {
        return Err(format!(
            "{shown}: cannot update: the rewritten `expect:` block does not read back; edit it by hand"
        ));
    }
    write_file_no_follow(path, new_text.as_bytes()).map_err(|e| format!("{shown}: {e}"))
}

/// Repository-relative paths of the case files, sorted, and the entries of the folder that
/// are refused (links, special files, …), each a broken case.
fn case_files(repo: &Path) -> Result<(Vec<String>, Vec<Refusal>), String> {
    match list_folder(repo, TEST_DIR, is_policy_file_name) {
        Ok(listing) => Ok((listing.files, listing.refused)),
        Err(ListError::Missing) => Err(format!(
            "{} does not exist: create it and add test cases (see docs/policies.md)",
            shown_path(repo, TEST_DIR)
        )),
        Err(ListError::Refused(Refusal { path, reason })) => {
            Err(format!("{}: {reason}", shown_path(repo, &path)))
        }
        Err(ListError::Io(message)) => Err(shown_path(repo, &message)),
    }
}

/// Prints a report document: JSON stays JSON; JUnit XML, like text, has every control a
/// terminal would act on escaped (XML 1.0's forbidden ones are already dropped).
fn print_document(format: TestFormat, document: &str) {
    match format {
        TestFormat::Json => crate::output::print_json(document),
        TestFormat::Junit | TestFormat::Text => crate::output::print_text(document),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::{Decision, Effect};

    fn actual(decision: Decision, findings: &[(&str, &str, Effect)]) -> Actual {
        Actual {
            decision,
            findings: findings
                .iter()
                .map(|(r, s, e)| ExpectedFinding {
                    rule: (*r).into(),
                    subject: (*s).into(),
                    effect: *e,
                })
                .collect(),
            messages: findings
                .iter()
                .map(|(r, _, _)| format!("{r} fired"))
                .collect(),
            evaluation_failures: Vec::new(),
        }
    }

    fn parse_case(text: &str, shown: &str) -> Result<TestCase, String> {
        super::parse_case(text).map_err(|b| b.at(shown))
    }

    #[test]
    fn the_case_format_is_strict() {
        let err = parse_case(
            "name: x\nfiles: []\nexpect:\n  decision: REVIEW\n  extra: 1\n",
            "c.yaml",
        )
        .unwrap_err();
        assert!(
            err.starts_with("c.yaml:5: expect: unknown field `extra`"),
            "{err:?}"
        );
        let err = parse_case("files:\n  - path: a\n    heda: x\n", "c.yaml").unwrap_err();
        assert!(
            err.starts_with("c.yaml:3: files[0]: unknown field `heda`")
                && err.ends_with("(did you mean `head`?)"),
            "{err:?}"
        );
        let err = parse_case("expect: { decision: MAYBE }\n", "c.yaml").unwrap_err();
        assert!(err.contains("MAYBE"), "{err:?}");
        let ok = parse_case(
            "name: n\nmr: { labels: [a] }\nfiles:\n  - path: a.yaml\n    base: null\n    head: \"x: 1\"\nexpect:\n  decision: APPROVE\n",
            "c.yaml",
        )
        .unwrap();
        assert_eq!(ok.files[0].base, None);
        assert_eq!(ok.expect.unwrap().findings, vec![]);
        assert_eq!(ok.mr.labels, vec!["a".to_owned()]);
    }

    #[test]
    fn mismatches_show_expected_and_actual_lines() {
        let expect = Expect {
            decision: Decision::Review,
            findings: vec![
                ExpectedFinding {
                    rule: "b".into(),
                    subject: "f#/x".into(),
                    effect: Effect::Challenge,
                },
                ExpectedFinding {
                    rule: "a".into(),
                    subject: "f#/x".into(),
                    effect: Effect::Comment,
                },
            ],
        };
        let got = actual(
            Decision::Block,
            &[("a", "f#/x", Effect::Comment), ("c", "f#", Effect::Block)],
        );
        assert_eq!(
            mismatches(Some(&expect), &got),
            vec![
                "decision: expected REVIEW, got BLOCK",
                "findings (- expected, + actual):",
                "- { rule: \"b\", subject: \"f#/x\", effect: challenge }",
                "+ { rule: \"c\", subject: \"f#\", effect: block }",
                "  message: c fired",
            ]
        );
        let same = actual(
            Decision::Review,
            &[
                ("a", "f#/x", Effect::Comment),
                ("b", "f#/x", Effect::Challenge),
            ],
        );
        assert!(mismatches(Some(&expect), &same).is_empty());
        // Without an expectation, every finding is shown with the message it would post.
        assert_eq!(
            mismatches(None, &same),
            vec![
                "no `expect:` block (actual decision REVIEW; `assent test --update` writes it)",
                "findings (+ actual):",
                "+ { rule: \"a\", subject: \"f#/x\", effect: comment }",
                "  message: a fired",
                "+ { rule: \"b\", subject: \"f#/x\", effect: challenge }",
                "  message: b fired",
            ]
        );
    }

    #[test]
    fn a_long_message_is_shown_in_a_few_lines() {
        assert_eq!(message_lines("one"), vec!["  message: one"]);
        let long: String = (1..=9).map(|i| format!("line {i}\n\n")).collect();
        assert_eq!(
            message_lines(&long),
            vec![
                "  message: line 1",
                "           line 2",
                "           line 3",
                "           line 4",
                "           line 5",
                "           line 6",
                "           … 3 more line(s)",
            ]
        );
    }

    #[test]
    fn the_expect_block_is_replaced_in_place_keeping_the_rest() {
        let text = "# a comment\nname: x\nexpect:\n  decision: APPROVE\n  # inner comment\n  findings: []\n\n# trailing comment\nfiles: []\n";
        let got = actual(Decision::Review, &[("r", "f.yaml#/a", Effect::Challenge)]);
        let new = replace_expect_block(text, &expect_block(&got));
        assert_eq!(
            new,
            "# a comment\nname: x\nexpect:\n  decision: REVIEW\n  findings:\n    - { rule: \"r\", subject: \"f.yaml#/a\", effect: challenge }\n\n# trailing comment\nfiles: []\n"
        );
        let reread = parse_case(&new, "c").unwrap();
        assert!(mismatches(reread.expect.as_ref(), &got).is_empty());
        // Flow style and a block at the end of the file.
        let text = "files: []\nexpect: { decision: BLOCK }";
        let new = replace_expect_block(text, &expect_block(&actual(Decision::Approve, &[])));
        assert_eq!(
            new,
            "files: []\nexpect:\n  decision: APPROVE\n  findings: []\n"
        );
        // No block: appended.
        let new = replace_expect_block("files: []", &expect_block(&actual(Decision::Approve, &[])));
        assert_eq!(
            new,
            "files: []\nexpect:\n  decision: APPROVE\n  findings: []\n"
        );
        // `expected:` or an indented `expect:` is not the block.
        let text = "files:\n  - path: a\n    head: |\n      expect: 1\n";
        assert!(
            replace_expect_block(text, "expect: X\n").ends_with("      expect: 1\nexpect: X\n")
        );
    }

    #[test]
    fn quoting_survives_awkward_subjects() {
        let got = actual(
            Decision::Block,
            &[("r", "a b/c: \"d\" #e.yaml#/x~1y", Effect::Block)],
        );
        let case = parse_case(&expect_block(&got), "c").unwrap();
        assert!(mismatches(case.expect.as_ref(), &got).is_empty());
    }
}
