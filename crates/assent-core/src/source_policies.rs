//! What a run checks of a policy MR's own `.assent/` (docs/policies.md, "What the run checks
//! on a policy MR"): the policies at the MR's source SHA must load exactly as `assent lint`
//! loads them, and its `.assent/tests/` cases must pass against them exactly as `assent test`
//! runs them. A broken or failing policy never reaches the target branch, where it would block
//! every merge request with `assent/policy-error`.
//!
//! Every problem is a `block` finding. The MR is still judged by the **target** branch's
//! policies; its own policies are only loaded and tested here, never used to judge it.
//!
//! With a central policy project (docs/contract.md#central-policies), the source-side
//! policies are loaded together with the central set, exactly as they will be loaded after
//! the merge, and the cases run against both (as `assent test --policy-project-dir` runs
//! them): a rule id the central project already defines is `assent/policy-broken` on the MR
//! (on the central file the clash shows at, naming the MR's file), never an
//! `assent/policy-error` on every merge request after it.
//!
//! | rule | subject | when |
//! | --- | --- | --- |
//! | `assent/policy-broken` | `<policy file>#` | a source-side policy file does not load (each problem with its line) |
//! | `assent/policy-test-failed` | `<test file>#` | a source-side case does not parse, or its result differs from its `expect:` |
//! | `assent/undecidable` | `<path>#` | a source-side policy or case file could not be read |
//!
//! Occurrences carry the problems (or the differences) as `new`, so a thread is superseded
//! exactly when what is wrong changes, and stays when the same problem is pushed again.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::desired_state::CENTRAL_POLICY_PREFIX;
use crate::inert;
use crate::model::{ChangeKind, Effect, Finding, Occurrence, Slot};
use crate::policy::{PolicyFile, PolicySet};
use crate::policy_cases::{mismatches, parse_case, run_case};

/// The rule of a source-side policy file that does not load.
pub const RULE_POLICY_BROKEN: &str = "assent/policy-broken";
/// The rule of a source-side case that fails.
pub const RULE_POLICY_TEST_FAILED: &str = "assent/policy-test-failed";

/// Most lines of problems or differences a finding lists; the occurrence covers them all.
const MAX_LISTED_LINES: usize = 40;

/// An MR's own `.assent/` at its source SHA, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourcePolicies {
    /// Every policy file under `.assent/policies` at the source SHA.
    pub policy_files: Vec<PolicyFile>,
    /// Every case file under `.assent/tests` at the source SHA.
    pub test_files: Vec<PolicyFile>,
    /// Files that could not be read, each with why: `(path, reason)`.
    pub unreadable: Vec<(String, String)>,
    /// The central policy project's files (paths from
    /// [`central_policy_path`](crate::desired_state::central_policy_path)) the source-side
    /// policies are loaded beside, as they will be after the merge; empty without one.
    pub central_files: Vec<PolicyFile>,
}

/// The findings of the check of `source`: none when its policies load and every case passes.
pub fn check_source_policies(source: &SourcePolicies) -> Vec<Finding> {
    let mut findings: Vec<Finding> = source
        .unreadable
        .iter()
        .map(|(path, reason)| {
            finding(
                crate::desired_state::RULE_UNDECIDABLE,
                path,
                json!([reason]),
                format!(
                    "assent cannot read this merge request's own {} at its head, so it cannot \
                     check that its policies load and its cases pass, and it blocks rather than \
                     guess: {}",
                    inert::code(path),
                    inert::code(reason)
                ),
            )
        })
        .collect();
    let mut loaded = source.policy_files.clone();
    loaded.extend(source.central_files.iter().cloned());
    if let Err(problems) = PolicySet::load(&loaded) {
        let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for problem in &problems {
            by_file
                .entry(problem.file.as_str())
                .or_default()
                .push(problem.to_string());
        }
        findings.extend(by_file.into_iter().map(|(file, problems)| {
            let message = if file.starts_with(CENTRAL_POLICY_PREFIX) {
                format!(
                    "This merge request's own policies do not load together with the central \
                     policy project's {}, so once merged every merge request would be blocked \
                     with `assent/policy-error`. Change this merge request's policies (a rule \
                     id the central project defines must not be defined again; run `assent \
                     lint --policy-project-dir` on the branch to see every problem):{}",
                    inert::code(file),
                    listed(&problems)
                )
            } else {
                format!(
                    "This merge request's own {} does not load, so once merged it would \
                     block every merge request with `assent/policy-error`. Fix it (run \
                     `assent lint` on the branch to see every problem):{}",
                    inert::code(file),
                    listed(&problems)
                )
            };
            finding(RULE_POLICY_BROKEN, file, json!(problems), message)
        }));
        // Cases cannot run against policies that do not load: the broken policy is the
        // one thing to fix.
        return findings;
    }
    for test in &source.test_files {
        let differences = match std::str::from_utf8(&test.bytes) {
            Err(_) => vec!["the case file is not valid UTF-8".to_owned()],
            Ok(text) => match parse_case(text) {
                Err(broken) => vec![format!(
                    "the case file does not parse: {}",
                    broken.at(&test.path)
                )],
                Ok(case) => {
                    let actual = run_case(&loaded, &case);
                    let lines = mismatches(case.expect.as_ref(), &actual);
                    if lines.is_empty() {
                        continue;
                    }
                    let name = case.name.clone().unwrap_or_else(|| test.path.clone());
                    std::iter::once(format!("case: {name}"))
                        .chain(lines)
                        .collect()
                }
            },
        };
        findings.push(finding(
            RULE_POLICY_TEST_FAILED,
            &test.path,
            json!(differences),
            format!(
                "A policy test of this merge request, {}, fails against the merge request's \
                 own policies, so its policies would not do what their tests say. Fix the \
                 policies or the case (run `assent test` on the branch):{}",
                inert::code(&test.path),
                listed(&differences)
            ),
        ));
    }
    findings
}

/// The `block` finding of `rule` on `<path>#`, its occurrence carrying `details`.
fn finding(rule: &str, path: &str, details: Value, message: String) -> Finding {
    let subject = format!("{path}#");
    Finding {
        occurrence: Occurrence::of(rule, &subject, ChangeKind::Modify, None, Some(&details)),
        slot: Slot {
            rule: rule.to_owned(),
            subject,
        },
        effect: Effect::Block,
        message,
    }
}

/// `lines` as a Markdown list of inert code spans, at most [`MAX_LISTED_LINES`] of them.
fn listed(lines: &[String]) -> String {
    let mut out: String = lines
        .iter()
        .take(MAX_LISTED_LINES)
        .map(|line| format!("\n- {}", inert::code(line)))
        .collect();
    if lines.len() > MAX_LISTED_LINES {
        out.push_str(&format!(
            "\n- and {} more lines",
            lines.len() - MAX_LISTED_LINES
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: shrink\n    match:\n      files: [\"t/*.yaml\"]\n      pointer: \"/days\"\n      kinds: [modify]\n    when: \"int(new) < int(old)\"\n    effect: challenge\n";
    const CASE_PASS: &str = "name: a shrink is challenged\nfiles:\n  - path: t/a.yaml\n    base: \"days: 30\"\n    head: \"days: 7\"\nexpect:\n  decision: REVIEW\n  findings:\n    - { rule: shrink, subject: \"t/a.yaml#/days\", effect: challenge }\n";

    fn file(path: &str, text: &str) -> PolicyFile {
        PolicyFile {
            path: path.into(),
            bytes: text.as_bytes().to_vec(),
        }
    }

    fn source(policy: &str, case: &str) -> SourcePolicies {
        SourcePolicies {
            policy_files: vec![file(".assent/policies/p.yaml", policy)],
            test_files: vec![file(".assent/tests/c.yaml", case)],
            unreadable: vec![],
            central_files: vec![],
        }
    }

    fn rules(findings: &[Finding]) -> Vec<(&str, &str)> {
        findings
            .iter()
            .map(|f| (f.slot.rule.as_str(), f.slot.subject.as_str()))
            .collect()
    }

    #[test]
    fn policies_that_load_and_cases_that_pass_give_nothing() {
        assert_eq!(check_source_policies(&source(POLICY, CASE_PASS)), vec![]);
    }

    #[test]
    fn a_policy_that_does_not_load_is_broken_with_its_line_and_no_case_runs() {
        let broken = POLICY.replace("effect: challenge", "effect: maybe");
        let findings = check_source_policies(&source(&broken, CASE_PASS));
        assert_eq!(
            rules(&findings),
            [(RULE_POLICY_BROKEN, ".assent/policies/p.yaml#")]
        );
        assert!(
            findings[0].message.contains(".assent/policies/p.yaml:10:"),
            "{}",
            findings[0].message
        );
        assert_eq!(findings[0].effect, Effect::Block);
    }

    #[test]
    fn a_failing_case_is_named_with_what_differed() {
        let weaker = POLICY.replace("int(new) < int(old)", "int(new) < 5");
        let findings = check_source_policies(&source(&weaker, CASE_PASS));
        assert_eq!(
            rules(&findings),
            [(RULE_POLICY_TEST_FAILED, ".assent/tests/c.yaml#")]
        );
        let message = &findings[0].message;
        assert!(
            message.contains("case: a shrink is challenged"),
            "{message}"
        );
        assert!(
            message.contains("decision: expected REVIEW, got APPROVE"),
            "{message}"
        );
        // The same failure pushed again keeps its occurrence; another one changes it.
        assert_eq!(
            check_source_policies(&source(&weaker, CASE_PASS))[0].occurrence,
            findings[0].occurrence
        );
        let other = check_source_policies(&source(&weaker, &CASE_PASS.replace("REVIEW", "BLOCK")));
        assert_ne!(other[0].occurrence, findings[0].occurrence);
    }

    #[test]
    fn a_case_that_does_not_parse_fails_and_an_unreadable_file_is_undecidable() {
        let mut s = source(POLICY, "files: [\n");
        s.unreadable
            .push((".assent/tests/d.yaml".into(), "403 Forbidden".into()));
        let findings = check_source_policies(&s);
        assert_eq!(
            rules(&findings),
            [
                (
                    crate::desired_state::RULE_UNDECIDABLE,
                    ".assent/tests/d.yaml#"
                ),
                (RULE_POLICY_TEST_FAILED, ".assent/tests/c.yaml#"),
            ]
        );
        assert!(
            findings[1].message.contains("does not parse"),
            "{}",
            findings[1].message
        );
    }

    #[test]
    fn contributor_text_stays_inert() {
        let case = CASE_PASS.replace("a shrink is challenged", "\"@all [x](http://e) <b>\"");
        let weaker = POLICY.replace("int(new) < int(old)", "false");
        let message = &check_source_policies(&source(&weaker, &case))[0].message;
        assert!(
            message.contains("`case: @all [x](http://e) <b>`"),
            "{message}"
        );
    }
}
