//! One case file of `assent test`, from its path to its [`CaseReport`]: read, left out by
//! `--filter`, run with [`run_case`] (the function `assent run` judges with), compared with
//! its `expect:` block, and with `--update` rewritten ([`super::update`]) when its result may
//! be written down.

use std::path::Path;

use crate::commands::lint::shown_path;
use crate::commands::report_error;
use crate::commands::test::case_files::load_case;
use crate::commands::test::report::{CaseReport, CaseStatus};
use crate::commands::test::update::update_case;
use crate::core::policy::PolicyFile;
use crate::core::policy::excerpt::{MAX_MESSAGE_CHARS, excerpt};
use crate::core::policy_cases::{Actual, BrokenCase, TestCase, mismatches, run_case};

/// Longest case name printed, in characters (names come from the case file).
pub const MAX_NAME_CHARS: usize = 120;

/// What one case file gave, before it is judged.
pub enum CaseOutcome {
    /// Left out by `--filter`.
    FilteredOut(Option<String>),
    /// Could not be read or parsed.
    Broken(BrokenCase),
    /// Ran: the case, its text and its result.
    Ran(String, Box<TestCase>, Actual),
}

/// Reads the case file at `case_path` and runs it under `policy_files`, unless `wanted`
/// (given the path and the case's name) leaves it out.
pub fn run_case_file(
    repo: &Path,
    case_path: &str,
    policy_files: &[PolicyFile],
    wanted: impl Fn(&str, Option<&str>) -> bool,
) -> CaseOutcome {
    match load_case(repo, case_path) {
        // A case that does not parse has no name: the filter sees its path only.
        Err(_) if !wanted(case_path, None) => CaseOutcome::FilteredOut(None),
        Err(broken) => CaseOutcome::Broken(broken),
        Ok((_, case)) if !wanted(case_path, case.name.as_deref()) => {
            CaseOutcome::FilteredOut(case.name)
        }
        Ok((text, case)) => {
            let actual = run_case(policy_files, &case);
            CaseOutcome::Ran(text, Box::new(case), actual)
        }
    }
}

/// Decides what happened to one case file, updating it when `update` asks and its result
/// may be written down. A case file that is broken, or cannot be updated, is reported on
/// stderr as it is found.
pub fn judge(update: bool, repo: &Path, case_path: &str, ran: CaseOutcome) -> CaseReport {
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
    if update && actual.evaluation_failures.is_empty() {
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
    if update {
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
