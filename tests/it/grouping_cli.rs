//! A grouped thread hides none of its members (docs/contract.md#grouping, docs/reliability.md): the compiled
//! binary against the fake GitLab, on the MR an attacker would write: 110 harmless retention
//! shrinks in a scratch registry that sort before the one that matters, 30 → 1 day on
//! `orders.events.v1`. Resolving the grouped thread assents to every member, so the risky one
//! must be named in the thread, the receipt and the Code Quality report.

use assent_test_support::run::{World, orders};
use fake_gitlab::fixtures;
use serde_json::Value;

use crate::ASSENT;

const PUSH_SHA: &str = "7777777777777777777777777777777777777777";
const SCRATCH: &str = "topics/a-scratch.yaml";
const RISKY: &str = "topics/orders.yaml#/topics/orders.events.v1/retention_days";

/// A registry of 110 scratch topics, each kept for `days`.
fn scratch(days: u32) -> String {
    let mut out = String::from("topics:\n");
    for i in 0..110 {
        out.push_str(&format!(
            "  - name: scratch.{i:03}\n    retention_days: {days}\n"
        ));
    }
    out
}

#[test]
fn the_risky_member_of_a_grouped_thread_is_named_in_the_thread_the_receipt_and_code_quality() {
    let w = World::new(ASSENT);
    w.put_file(fixtures::BASE_SHA, SCRATCH, &scratch(30));
    w.push(
        PUSH_SHA,
        &[(SCRATCH, &scratch(29)), ("topics/orders.yaml", &orders(1))],
    );
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", PUSH_SHA)
        .args(&["--codequality", "cq.json"])
        .run();
    r.expect_code(1);

    // The thread: one grouped thread listing all 111, the risky one among them.
    let threads = w.threads_of("retention-shrink");
    assert_eq!(threads.len(), 1, "one grouped thread");
    let body = &threads[0].notes[0].body;
    assert!(body.contains("**This rule fired 111 times**"), "{body}");
    assert!(
        body.contains(&format!("- `{RISKY}`: `30` → `1`")),
        "the risky member is listed: {body}"
    );
    assert_eq!(
        body.lines().filter(|l| l.starts_with("- `topics/")).count(),
        111,
        "every member has its line"
    );
    assert!(!body.contains("more, not listed"), "{body}");

    // The receipt: the grouped finding carries every member, the risky one with its kind and
    // its own occurrence.
    let receipt = r.receipt();
    let findings = receipt["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["subject"], "*");
    let members = findings[0]["members"].as_array().unwrap();
    assert_eq!(members.len(), 111);
    let risky: Vec<&Value> = members.iter().filter(|m| m["subject"] == RISKY).collect();
    assert_eq!(risky.len(), 1, "{members:?}");
    assert_eq!(risky[0]["kind"], "modify");
    assert_eq!(risky[0]["effect"], "challenge");
    let expected = assent::core::model::Occurrence::of(
        "retention-shrink",
        RISKY,
        assent::core::model::ChangeKind::Modify,
        Some(&serde_json::json!(30)),
        Some(&serde_json::json!(1)),
    );
    assert_eq!(risky[0]["occurrence"], expected.as_str());

    // Code Quality: one entry per member, the risky one at its own file and line.
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(w.dir.path().join("cq.json")).unwrap())
            .unwrap();
    let entries = report.as_array().unwrap();
    assert_eq!(entries.len(), 111);
    let fingerprint = &expected.as_str()["sha256:".len()..];
    let entry = entries
        .iter()
        .find(|e| e["fingerprint"] == fingerprint)
        .expect("the risky member has its own entry");
    assert_eq!(entry["location"]["path"], "topics/orders.yaml");
    assert_eq!(entry["location"]["lines"]["begin"], 3);
    assert_eq!(entry["severity"], "major");
    assert!(
        entry["description"]
            .as_str()
            .unwrap()
            .contains("`orders.events.v1` shrinks from `30` to `1` days"),
        "{entry}"
    );
    let mut fingerprints: Vec<&str> = entries
        .iter()
        .map(|e| e["fingerprint"].as_str().unwrap())
        .collect();
    fingerprints.sort_unstable();
    fingerprints.dedup();
    assert_eq!(fingerprints.len(), 111, "one fingerprint per member");
    w.assert_no_violations();
}
