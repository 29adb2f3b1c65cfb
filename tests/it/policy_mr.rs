//! A policy MR's own `.assent/` at its head: its policies must load and its cases pass
//! (docs/policies.md, "What the run checks on a policy MR"), against the fake GitLab.

use assent_test_support::run::{RunResult, World, orders};
use fake_gitlab::{FaultAction, FaultRule};
use serde_json::{Value, json};

use crate::ASSENT;

const NEW_SHA: &str = "4444444444444444444444444444444444444444";
const POLICY: &str = ".assent/policies/topics.yaml";
const CASE: &str = ".assent/tests/shrink.yaml";

/// The example's retention rule, as the MR's own policy file.
const SHRINK: &str = "apiVersion: assent/v1\nkind: Policy\nidentities:\n  \"topics/*.yaml\": { \"/topics\": name }\nrules:\n  - id: retention-shrink\n    match:\n      files: [\"topics/*.yaml\"]\n      pointer: \"/topics/*/retention_days\"\n      kinds: [modify]\n    when: \"int(new) < int(old)\"\n    effect: challenge\n    message: \"Retention shrinks.\"\n";

/// A case of that rule: a shrink is challenged.
const SHRINK_CASE: &str = "name: a shrink is challenged\nfiles:\n  - path: topics/a.yaml\n    base: \"topics:\\n  - name: a\\n    retention_days: 30\\n\"\n    head: \"topics:\\n  - name: a\\n    retention_days: 7\\n\"\nexpect:\n  decision: REVIEW\n  findings:\n    - { rule: retention-shrink, subject: \"topics/a.yaml#/topics/a/retention_days\", effect: challenge }\n";

fn policy_mr(files: &[(&str, &str)]) -> World {
    let w = World::new(ASSENT);
    w.push(NEW_SHA, files);
    w
}

fn run(w: &World) -> RunResult {
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run()
}

fn slots(receipt: &Value) -> Vec<(String, String, String)> {
    receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["subject"].as_str().unwrap().to_owned(),
                f["effect"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn slot(rule: &str, subject: &str, effect: &str) -> (String, String, String) {
    (rule.into(), subject.into(), effect.into())
}

#[test]
fn own_policies_that_load_and_pass_their_cases_are_only_a_self_edit() {
    let w = policy_mr(&[(POLICY, SHRINK), (CASE, SHRINK_CASE)]);
    let r = run(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(
        slots(&receipt),
        [
            slot(
                "assent/self-edit",
                ".assent/policies/topics.yaml#",
                "challenge"
            ),
            slot(
                "assent/self-edit",
                ".assent/tests/shrink.yaml#",
                "challenge"
            ),
        ]
    );
    r.assert_no_token();
}

#[test]
fn an_own_policy_that_does_not_load_blocks_naming_file_and_line() {
    let broken = SHRINK.replace("effect: challenge", "effect: maybe");
    let w = policy_mr(&[(POLICY, &broken), (CASE, SHRINK_CASE)]);
    let r = run(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK");
    assert!(
        slots(&receipt).contains(&slot(
            "assent/policy-broken",
            ".assent/policies/topics.yaml#",
            "block"
        )),
        "{receipt}"
    );
    let body = w.thread("assent/policy-broken").notes[0].body.clone();
    assert!(body.contains(".assent/policies/topics.yaml:12:"), "{body}");
    assert!(body.contains("maybe"), "{body}");
    // The target's policies still judge the MR: they load, so no policy-error.
    assert!(!slots(&receipt).iter().any(|s| s.0 == "assent/policy-error"));
}

#[test]
fn an_own_case_that_fails_blocks_naming_the_case_and_the_difference() {
    let weaker = SHRINK.replace("int(new) < int(old)", "int(new) < 5");
    let w = policy_mr(&[(POLICY, &weaker), (CASE, SHRINK_CASE)]);
    let r = run(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK");
    assert!(
        slots(&receipt).contains(&slot(
            "assent/policy-test-failed",
            ".assent/tests/shrink.yaml#",
            "block"
        )),
        "{receipt}"
    );
    let body = w.thread("assent/policy-test-failed").notes[0].body.clone();
    assert!(body.contains("case: a shrink is challenged"), "{body}");
    assert!(
        body.contains("decision: expected REVIEW, got APPROVE"),
        "{body}"
    );
    // Fixed on a later push: the finding goes, its thread resolved as outdated.
    w.push(
        "5555555555555555555555555555555555555555",
        &[(POLICY, SHRINK), (CASE, SHRINK_CASE)],
    );
    let fixed = w
        .invocation()
        .env(
            "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA",
            "5555555555555555555555555555555555555555",
        )
        .run();
    fixed.expect_code(1);
    assert_eq!(fixed.receipt()["decision"], "REVIEW");
    assert!(w.thread("assent/policy-test-failed").resolved());
}

#[test]
fn an_own_policy_file_that_cannot_be_read_is_undecidable() {
    let w = policy_mr(&[(POLICY, SHRINK), (CASE, SHRINK_CASE)]);
    w.fake.inject(
        FaultRule::new(FaultAction::Refuse {
            status: 403,
            body: json!({"message": "403 Forbidden"}),
        })
        .path_contains("shrink.yaml/raw"),
    );
    let r = run(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    assert!(
        slots(&receipt).contains(&slot(
            "assent/undecidable",
            ".assent/tests/shrink.yaml#",
            "block"
        )),
        "{receipt}"
    );
}

#[test]
fn an_mr_that_weakens_a_rule_and_relies_on_it_is_judged_by_the_targets_rule() {
    // The MR's own policy no longer challenges shrinks, its case agrees, and it shrinks a
    // retention: the target's rule still judges the shrink.
    let weaker = SHRINK.replace("int(new) < int(old)", "false");
    let case = SHRINK_CASE
        .replace("decision: REVIEW", "decision: APPROVE")
        .replace(
            "  findings:\n    - { rule: retention-shrink, subject: \"topics/a.yaml#/topics/a/retention_days\", effect: challenge }\n",
            "  findings: []\n",
        );
    let w = policy_mr(&[
        (POLICY, &weaker),
        (CASE, &case),
        ("topics/orders.yaml", &orders(1)),
    ]);
    let r = run(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    let rules: Vec<String> = slots(&receipt).into_iter().map(|s| s.0).collect();
    assert!(rules.contains(&"retention-shrink".to_owned()), "{rules:?}");
    assert!(
        !rules.iter().any(|r| r == "assent/policy-test-failed"),
        "{rules:?}"
    );
}
