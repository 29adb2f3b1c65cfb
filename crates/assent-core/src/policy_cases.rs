//! Policy unit tests: the case format of `.assent/tests/` (docs/policies.md, "Policy unit
//! tests"), a case judged against a set of policy files, and how its result differs from
//! what it expects. Pure, so `assent test` (cases on disk) and `assent run` (an MR's own
//! cases, read through the API: docs/policies.md, "What the run checks on a policy MR") judge a
//! case alike.
//!
//! A case file, strict (unknown fields are errors):
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

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::desired_state::{
    ChangedFileInput, FileContent, ReviewInputs, compute_desired_state, self_edit_sides_of_contents,
};
use crate::model::{Decision, Effect};
use crate::policy::excerpt::{MAX_MESSAGE_CHARS, excerpt_lines, sanitize_message};
use crate::policy::{EvaluationFailure, MrContext, PolicyFile, document, suggest};
use crate::review_state::unresolved_decision;
use crate::semantic_diff::Limits;

/// One test case as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCase {
    /// Shown in the output; defaults to the file's path.
    #[serde(default)]
    pub name: Option<String>,
    /// What predicates see as `mr`; every field defaults to empty.
    #[serde(default)]
    pub mr: MrSpec,
    /// The files the imagined merge request changes.
    #[serde(default)]
    pub files: Vec<FileSpec>,
    /// The expected result; a case without it fails until `--update` writes one.
    #[serde(default)]
    pub expect: Option<Expect>,
}

/// The `mr` of a case.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MrSpec {
    /// IID.
    #[serde(default)]
    pub iid: u64,
    /// Title.
    #[serde(default)]
    pub title: String,
    /// Source branch.
    #[serde(default)]
    pub source_branch: String,
    /// Target branch.
    #[serde(default)]
    pub target_branch: String,
    /// Author username.
    #[serde(default)]
    pub author: String,
    /// Labels.
    #[serde(default)]
    pub labels: Vec<String>,
}

/// One changed file of a case.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// Path at the head.
    pub path: String,
    /// Path at the base, for a rename; defaults to `path`.
    #[serde(default)]
    pub old_path: Option<String>,
    /// Content at the base; absent when omitted or null.
    #[serde(default)]
    pub base: Option<String>,
    /// Content at the head; absent when omitted or null.
    #[serde(default)]
    pub head: Option<String>,
}

/// The expected result of a case.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The decision with no thread resolved.
    pub decision: Decision,
    /// Every finding, in any order.
    #[serde(default)]
    pub findings: Vec<ExpectedFinding>,
}

/// One expected finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedFinding {
    /// Rule id.
    pub rule: String,
    /// `<file>#<pointer>`.
    pub subject: String,
    /// Effect.
    pub effect: Effect,
}

impl ExpectedFinding {
    /// The line the case format uses (flow mapping, strings JSON-quoted).
    fn to_yaml(&self) -> String {
        format!(
            "{{ rule: {}, subject: {}, effect: {} }}",
            quote(&self.rule),
            quote(&self.subject),
            self.effect.as_str()
        )
    }
}

fn quote(text: &str) -> String {
    // A JSON string is a valid YAML double-quoted scalar.
    serde_json::Value::String(text.to_owned()).to_string()
}

/// What a case actually produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actual {
    /// The decision with no thread resolved.
    pub decision: Decision,
    /// Sorted findings.
    pub findings: Vec<ExpectedFinding>,
    /// The message each finding's thread would carry (same index as `findings`).
    pub messages: Vec<String>,
    /// The rules that could not be evaluated on a change of the case (each is also a
    /// `block` among `findings`): a result `--update` does not write down.
    pub evaluation_failures: Vec<EvaluationFailure>,
}

/// Runs one case against `policy_files`.
pub fn run_case(policy_files: &[PolicyFile], case: &TestCase) -> Actual {
    let content = |text: &Option<String>| match text {
        Some(text) => FileContent::Present(text.as_bytes().to_vec()),
        None => FileContent::Absent,
    };
    let files: Vec<ChangedFileInput> = case
        .files
        .iter()
        .map(|f| ChangedFileInput {
            old_path: f.old_path.clone().unwrap_or_else(|| f.path.clone()),
            new_path: f.path.clone(),
            base: content(&f.base),
            source: content(&f.head),
        })
        .collect();
    let mr = MrContext {
        iid: case.mr.iid,
        title: case.mr.title.clone(),
        source_branch: case.mr.source_branch.clone(),
        target_branch: case.mr.target_branch.clone(),
        author: case.mr.author.clone(),
        labels: case.mr.labels.clone(),
    };
    let outcome = compute_desired_state(ReviewInputs {
        policy_files: policy_files.to_vec(),
        policy_problems: Vec::new(),
        self_edit_sides: self_edit_sides_of_contents(&files),
        changed_files: Ok(files),
        mr,
        limits: Limits::default(),
    });
    let mut findings: Vec<(ExpectedFinding, String)> = outcome
        .desired
        .findings
        .iter()
        .map(|f| {
            let finding = ExpectedFinding {
                rule: f.slot.rule.clone(),
                subject: f.slot.subject.clone(),
                effect: f.effect,
            };
            (finding, f.message.clone())
        })
        .collect();
    findings.sort();
    let (findings, messages) = findings.into_iter().unzip();
    Actual {
        decision: unresolved_decision(&outcome.desired),
        findings,
        messages,
        evaluation_failures: outcome.evaluation_failures,
    }
}

/// Most lines of a rendered message shown under a finding.
const MAX_SHOWN_MESSAGE_LINES: usize = 6;

/// The lines that show the message a finding's thread would carry, indented under its
/// diff line: `  message: <first line>`, the next lines aligned below it (see
/// [`excerpt_lines`]; each line is cut again when printed).
pub fn message_lines(message: &str) -> Vec<String> {
    excerpt_lines(message, MAX_SHOWN_MESSAGE_LINES, MAX_MESSAGE_CHARS)
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let lead = if i == 0 { "  message: " } else { "           " };
            format!("{lead}{line}")
        })
        .collect()
}

/// The mismatch report of a case: empty when it passes. Each actual finding missing from
/// the expectation (a `+` line) is followed by the message its thread would carry.
pub fn mismatches(expect: Option<&Expect>, actual: &Actual) -> Vec<String> {
    let plus = |lines: &mut Vec<String>, j: usize| {
        lines.push(format!("+ {}", actual.findings[j].to_yaml()));
        if let Some(message) = actual.messages.get(j) {
            lines.extend(message_lines(message));
        }
    };
    let Some(expect) = expect else {
        let mut lines = vec![format!(
            "no `expect:` block (actual decision {}; `assent test --update` writes it)",
            actual.decision.as_str()
        )];
        if !actual.findings.is_empty() {
            lines.push("findings (+ actual):".to_owned());
            for j in 0..actual.findings.len() {
                plus(&mut lines, j);
            }
        }
        return lines;
    };
    let mut lines = Vec::new();
    if expect.decision != actual.decision {
        lines.push(format!(
            "decision: expected {}, got {}",
            expect.decision.as_str(),
            actual.decision.as_str()
        ));
    }
    let mut expected = expect.findings.clone();
    expected.sort();
    let (mut i, mut j) = (0, 0);
    let mut diff = Vec::new();
    while i < expected.len() || j < actual.findings.len() {
        let order = match (expected.get(i), actual.findings.get(j)) {
            (Some(e), Some(a)) => e.cmp(a),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Equal => {
                i += 1;
                j += 1;
            }
            Ordering::Less => {
                diff.push(format!("- {}", expected[i].to_yaml()));
                i += 1;
            }
            Ordering::Greater => {
                plus(&mut diff, j);
                j += 1;
            }
        }
    }
    if !diff.is_empty() {
        lines.push("findings (- expected, + actual):".to_owned());
        lines.extend(diff);
    }
    lines
}

/// The `expect:` block for `actual`, ending with a newline.
pub fn expect_block(actual: &Actual) -> String {
    let mut block = format!("expect:\n  decision: {}\n", actual.decision.as_str());
    if actual.findings.is_empty() {
        block.push_str("  findings: []\n");
    } else {
        block.push_str("  findings:\n");
        for finding in &actual.findings {
            block.push_str(&format!("    - {}\n", finding.to_yaml()));
        }
    }
    block
}

/// Replaces the top-level `expect:` block of `text` with `block` (or appends it). The block
/// runs from the `expect:` line to the next line that starts in column 0 with anything but a
/// comment; blank and column-0 comment lines right before that line stay outside the block.
pub fn replace_expect_block(text: &str, block: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let is_expect = |l: &str| {
        l.strip_prefix("expect")
            .and_then(|rest| rest.trim_start_matches([' ', '\t']).strip_prefix(':'))
            .is_some()
    };
    let Some(start) = lines.iter().position(|l| is_expect(l)) else {
        let mut out = text.to_owned();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(block);
        return out;
    };
    let top_level = |l: &str| {
        l.chars()
            .next()
            .is_some_and(|c| !c.is_whitespace() && c != '#')
    };
    let mut end = lines[start + 1..]
        .iter()
        .position(|l| top_level(l))
        .map_or(lines.len(), |p| start + 1 + p);
    while end > start + 1 && {
        let l = lines[end - 1];
        l.trim().is_empty() || l.starts_with('#')
    } {
        end -= 1;
    }
    let mut out: String = lines[..start].concat();
    out.push_str(block);
    out.push_str(&lines[end..].concat());
    out
}

/// A test file that cannot be read or parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenCase {
    /// The 1-based line of the problem, when known.
    pub line: Option<usize>,
    /// What is wrong, escaped and cut (it may quote the file).
    pub reason: String,
}

impl BrokenCase {
    /// `path:line: reason`, or `path: reason`.
    pub fn at(&self, shown: &str) -> String {
        match self.line {
            Some(line) => format!("{shown}:{line}: {}", self.reason),
            None => format!("{shown}: {}", self.reason),
        }
    }
}

/// Parses a case file's text.
pub fn parse_case(text: &str) -> Result<TestCase, BrokenCase> {
    serde_yaml::from_str::<TestCase>(text).map_err(|e| {
        let message = strip_location(&e.to_string());
        let hint = document::unknown_field(&message)
            .map(|(field, expected)| {
                let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
                suggest::hint(&field, &expected)
            })
            .unwrap_or_default();
        BrokenCase {
            line: e.location().map(|l| l.line()),
            // `serde_yaml` quotes the offending scalar or key in full.
            reason: sanitize_message(&format!("{message}{hint}")),
        }
    })
}

/// `serde_yaml` appends " at line L column C"; the line is printed in front instead.
fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
