//! What `assent test` found, as a typed report, and its three forms: lines for a person,
//! JUnit XML for GitLab's test report widget, JSON for tooling.
//!
//! # JUnit
//!
//! One `<testsuites>` holding one `<testsuite name="assent policy tests">`: GitLab's unit test
//! report groups results by the job that uploaded them and shows each test case with its
//! name, class name and status, so one suite per run is what reads best there (one suite per
//! case file would only repeat the file name already shown as the class name). Each case is a
//! `<testcase name="<case name>" classname="<case file>" file="<case file>">` (paths are
//! repository paths, `.assent/tests/…`, whatever `REPO` was given), with:
//!
//! * nothing inside when it passes (an `--update`d case says so in `<system-out>`);
//! * `<failure type="mismatch" message="<first line>">` holding the expected/actual
//!   difference (with the messages the rules would post) when it fails;
//! * `<error type="broken" message="…">` when its file cannot be read or parsed;
//! * `<skipped message="filtered out by --filter"/>` when `--filter` left it out.
//!
//! No `time` attribute: the document is a function of the cases and the policies, so two runs
//! give the same bytes. Case names, messages and file names are the MR author's text: every
//! `<`, `>`, `&`, `"` and `'` is escaped, characters XML 1.0 does not allow (most control
//! characters) are dropped, and line breaks inside attributes are written as character
//! references so a parser keeps them. Everything quoted is cut the way the text output cuts
//! it.
//!
//! # JSON
//!
//! A `PolicyTestReport` document (its fields are described in `docs/policies.md`):
//! `apiVersion`, `kind`, `summary` (counts), `policyProblems` (set when the policies do not
//! load, then no case ran) and `cases`, each with its `file`, `name`, `status`, `expected`,
//! `actual` (with each finding's rendered `message` and the rules that could not be
//! evaluated), `details` (the lines a failure prints) and `error`.

use serde::Serialize;

use crate::commands::junit::{element, xml_attribute, xml_text};
use crate::core::model::{Decision, Effect};
use crate::core::policy::excerpt::excerpt;
use crate::core::policy_cases::{Actual, Expect, ExpectedFinding};

/// The form `assent test` prints its report in on stdout. Its own enum, not the shared
/// [`crate::commands::OutputFormat`]: JUnit belongs to this command only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TestFormat {
    /// `ok`/`FAILED` lines, a diff per failure, a tally.
    Text,
    /// JUnit XML, for `artifacts:reports:junit`.
    Junit,
    /// A `PolicyTestReport` JSON document, for tooling.
    Json,
}

/// Longest rendered message kept in the JSON report, in characters (per line, after
/// escaping, and in lines).
const MAX_JSON_MESSAGE_LINE_CHARS: usize = 1000;
const MAX_JSON_MESSAGE_LINES: usize = 200;

/// What happened to one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaseStatus {
    /// The result matched the expectation.
    Passed,
    /// `--update` rewrote the expectation to the result.
    Updated,
    /// The result differs from the expectation (or `--update` refused to write it).
    Failed,
    /// The case file could not be read, parsed or updated.
    Broken,
    /// `--filter` left the case out.
    FilteredOut,
}

/// One case of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseReport {
    /// The case file's repository path (`.assent/tests/…`).
    pub file: String,
    /// The case's name as shown (escaped and cut); `None` when the file did not parse.
    pub name: Option<String>,
    /// What happened.
    pub status: CaseStatus,
    /// The `expect:` block, when the case parsed and has one.
    pub expected: Option<Expect>,
    /// The result, when the case ran.
    pub actual: Option<Actual>,
    /// For a failure: the lines that explain it (decision, findings diff with the messages
    /// the rules would post, why `--update` refused), escaped and cut.
    pub details: Vec<String>,
    /// For a broken case: why, as `file:line: reason` with the repository path (escaped and
    /// cut).
    pub error: Option<String>,
}

impl CaseReport {
    /// A case with nothing but its file, name and status.
    pub fn new(file: &str, name: Option<String>, status: CaseStatus) -> Self {
        CaseReport {
            file: file.to_owned(),
            name,
            status,
            expected: None,
            actual: None,
            details: Vec::new(),
            error: None,
        }
    }

    /// The name shown for the case: its `name:`, else its file.
    pub fn shown_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.file)
    }
}

/// Everything one `assent test` run found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestReport {
    /// The problems of policies that do not load (then no case ran), `file:line: message`.
    pub policy_problems: Vec<String>,
    /// The cases, refused entries first, then the case files in path order.
    pub cases: Vec<CaseReport>,
}

/// The counts of a report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Cases that passed, updated ones included.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Case files that could not be read, parsed or updated.
    pub broken: usize,
    /// Cases `--update` rewrote.
    pub updated: usize,
    /// Cases `--filter` left out.
    pub filtered_out: usize,
}

impl TestReport {
    /// The counts.
    pub fn summary(&self) -> Summary {
        let mut summary = Summary::default();
        for case in &self.cases {
            match case.status {
                CaseStatus::Passed => summary.passed += 1,
                CaseStatus::Updated => {
                    summary.passed += 1;
                    summary.updated += 1;
                }
                CaseStatus::Failed => summary.failed += 1,
                CaseStatus::Broken => summary.broken += 1,
                CaseStatus::FilteredOut => summary.filtered_out += 1,
            }
        }
        summary
    }

    /// The document of `format`; `None` for text, which is printed as the cases run.
    pub fn render(&self, format: TestFormat) -> Option<String> {
        match format {
            TestFormat::Junit => Some(self.to_junit()),
            TestFormat::Json => Some(self.to_json()),
            TestFormat::Text => None,
        }
    }

    /// The JSON document, pretty-printed, ending with a newline.
    pub fn to_json(&self) -> String {
        let document = JsonReport {
            api_version: "assent/v1",
            kind: "PolicyTestReport",
            summary: self.summary(),
            policy_problems: &self.policy_problems,
            cases: self.cases.iter().map(JsonCase::of).collect(),
        };
        let mut text =
            serde_json::to_string_pretty(&document).expect("the report serialises as JSON");
        text.push('\n');
        text
    }

    /// The JUnit XML document (see the module docs), ending with a newline.
    pub fn to_junit(&self) -> String {
        let summary = self.summary();
        let mut cases: Vec<JunitCase<'_>> = self.cases.iter().map(JunitCase::Case).collect();
        if !self.policy_problems.is_empty() {
            cases.push(JunitCase::PolicyProblems(&self.policy_problems));
        }
        let errors = summary.broken + usize::from(!self.policy_problems.is_empty());
        let counts = format!(
            "tests=\"{}\" failures=\"{}\" errors=\"{errors}\" skipped=\"{}\"",
            cases.len(),
            summary.failed,
            summary.filtered_out
        );
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(&format!("<testsuites name=\"assent test\" {counts}>\n"));
        out.push_str(&format!(
            "  <testsuite name=\"assent policy tests\" {counts}>\n"
        ));
        for case in cases {
            case.write(&mut out);
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

enum JunitCase<'a> {
    Case(&'a CaseReport),
    /// The policies did not load: one erroring case, so the widget says why nothing ran.
    PolicyProblems(&'a [String]),
}

impl JunitCase<'_> {
    fn write(&self, out: &mut String) {
        let (name, file, body) = match self {
            JunitCase::Case(case) => (case.shown_name(), case.file.as_str(), junit_body(case)),
            JunitCase::PolicyProblems(problems) => (
                "the policies load",
                ".assent/policies",
                Some(element(
                    "error",
                    "broken",
                    &format!("the policies do not load: {} problem(s)", problems.len()),
                    &problems.join("\n"),
                )),
            ),
        };
        let open = format!(
            "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\"",
            xml_attribute(name),
            xml_attribute(file),
            xml_attribute(file)
        );
        match body {
            None => out.push_str(&format!("{open}/>\n")),
            Some(body) => out.push_str(&format!("{open}>\n      {body}\n    </testcase>\n")),
        }
    }
}

/// The element inside a case's `<testcase>`, if any.
fn junit_body(case: &CaseReport) -> Option<String> {
    match case.status {
        CaseStatus::Passed => None,
        CaseStatus::Updated => Some(format!(
            "<system-out>{}</system-out>",
            xml_text("updated: the expect block was rewritten from the result")
        )),
        CaseStatus::Failed => {
            let first = case.details.first().map_or("", String::as_str);
            Some(element(
                "failure",
                "mismatch",
                first,
                &case.details.join("\n"),
            ))
        }
        CaseStatus::Broken => {
            let error = case
                .error
                .as_deref()
                .unwrap_or("the case could not be read");
            Some(element("error", "broken", error, error))
        }
        CaseStatus::FilteredOut => Some("<skipped message=\"filtered out by --filter\"/>".into()),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    api_version: &'static str,
    kind: &'static str,
    summary: Summary,
    policy_problems: &'a [String],
    cases: Vec<JsonCase<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonCase<'a> {
    file: &'a str,
    name: Option<&'a str>,
    status: CaseStatus,
    expected: Option<JsonExpected<'a>>,
    actual: Option<JsonActual>,
    details: &'a [String],
    error: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonExpected<'a> {
    decision: Decision,
    findings: &'a [ExpectedFinding],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonActual {
    decision: Decision,
    findings: Vec<JsonFinding>,
    evaluation_failures: Vec<JsonFailure>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonFinding {
    rule: String,
    subject: String,
    effect: Effect,
    message: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonFailure {
    rule: String,
    subject: String,
    reason: String,
}

impl<'a> JsonCase<'a> {
    fn of(case: &'a CaseReport) -> Self {
        JsonCase {
            file: &case.file,
            name: case.name.as_deref(),
            status: case.status,
            expected: case.expected.as_ref().map(|e| JsonExpected {
                decision: e.decision,
                findings: &e.findings,
            }),
            actual: case.actual.as_ref().map(|a| JsonActual {
                decision: a.decision,
                findings: a
                    .findings
                    .iter()
                    .zip(&a.messages)
                    .map(|(f, message)| JsonFinding {
                        rule: excerpt(&f.rule, MAX_JSON_MESSAGE_LINE_CHARS),
                        subject: excerpt(&f.subject, MAX_JSON_MESSAGE_LINE_CHARS),
                        effect: f.effect,
                        message: json_message(message),
                    })
                    .collect(),
                evaluation_failures: a
                    .evaluation_failures
                    .iter()
                    .map(|f| JsonFailure {
                        rule: excerpt(&f.rule, MAX_JSON_MESSAGE_LINE_CHARS),
                        subject: excerpt(&f.subject, MAX_JSON_MESSAGE_LINE_CHARS),
                        reason: excerpt(&f.reason, MAX_JSON_MESSAGE_LINE_CHARS),
                    })
                    .collect(),
            }),
            details: &case.details,
            error: case.error.as_deref(),
        }
    }
}

/// A rendered message for the JSON report: its lines kept, each escaped and cut, at most
/// [`MAX_JSON_MESSAGE_LINES`] of them.
fn json_message(message: &str) -> String {
    let lines: Vec<&str> = message.split('\n').collect();
    let mut kept: Vec<String> = lines
        .iter()
        .take(MAX_JSON_MESSAGE_LINES)
        .map(|line| excerpt(line, MAX_JSON_MESSAGE_LINE_CHARS))
        .collect();
    if lines.len() > MAX_JSON_MESSAGE_LINES {
        kept.push(format!(
            "… {} more line(s)",
            lines.len() - MAX_JSON_MESSAGE_LINES
        ));
    }
    kept.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(status: CaseStatus, name: &str) -> CaseReport {
        CaseReport {
            file: ".assent/tests/a.yaml".into(),
            name: Some(name.into()),
            status,
            expected: None,
            actual: None,
            details: vec![
                "decision: expected APPROVE, got <REVIEW>".into(),
                "- x".into(),
            ],
            error: Some("bad & broken".into()),
        }
    }

    #[test]
    fn junit_counts_and_escapes_every_case() {
        let report = TestReport {
            policy_problems: Vec::new(),
            cases: vec![
                case(CaseStatus::Passed, "ok \"quoted\""),
                case(CaseStatus::Failed, "<script>"),
                case(CaseStatus::Broken, "b"),
                case(CaseStatus::FilteredOut, "f"),
            ],
        };
        let xml = report.to_junit();
        assert!(
            xml.contains("<testsuites name=\"assent test\" tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\">"),
            "{xml}"
        );
        assert!(xml.contains("name=\"ok &quot;quoted&quot;\""), "{xml}");
        assert!(xml.contains("name=\"&lt;script&gt;\""), "{xml}");
        assert!(xml.contains("<failure type=\"mismatch\" message=\"decision: expected APPROVE, got &lt;REVIEW&gt;\">decision: expected APPROVE, got &lt;REVIEW&gt;\n- x</failure>"), "{xml}");
        assert!(
            xml.contains(
                "<error type=\"broken\" message=\"bad &amp; broken\">bad &amp; broken</error>"
            ),
            "{xml}"
        );
        assert!(
            xml.contains("<skipped message=\"filtered out by --filter\"/>"),
            "{xml}"
        );
        assert!(!xml.contains("<script>"));
    }
}
