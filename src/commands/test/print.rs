//! What `assent test` prints of its report: a line per case as it runs and the tally in
//! text, or the whole document ([`super::report`]) in JUnit or JSON.

use std::path::Path;

use crate::commands::lint::shown_path;
use crate::commands::test::report::{CaseReport, CaseStatus, Summary, TestFormat};
use crate::core::policy::PolicyProblem;
use crate::core::policy::excerpt::escape_controls;

/// A policy problem as a `path:line: message` line, paths shown for `repo`.
pub fn problem_line(repo: &Path, problem: &PolicyProblem) -> String {
    let shown = shown_path(repo, &problem.file);
    let message = escape_controls(&problem.message);
    match problem.line {
        Some(line) => format!("{shown}:{line}: {message}"),
        None => format!("{shown}: {message}"),
    }
}

/// The text lines of one case, as it ran.
pub fn print_case(repo: &Path, case: &CaseReport) {
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

/// The text form's last line: `N passed, M failed`, then what else happened.
pub fn tally(summary: &Summary) -> String {
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
    tally
}

/// Prints a report document: JSON stays JSON; JUnit XML, like text, has every control a
/// terminal would act on escaped (XML 1.0's forbidden ones are already dropped).
pub fn print_document(format: TestFormat, document: &str) {
    match format {
        TestFormat::Json => crate::output::print_json(document),
        TestFormat::Junit | TestFormat::Text => crate::output::print_text(document),
    }
}
