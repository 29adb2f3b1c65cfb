//! A change of the policies themselves: the self-edit challenge and its owners.

use super::*;

// ---- policy owners: the self-edit challenge --------------------------------------------------

const SELF_EDIT: &str = "assent/self-edit";
const EXTRA_POLICY: &str = ".assent/policies/extra.yaml";
const EXTRA_POLICY_TEXT: &str = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: extra\n    match: { files: [\"other/*.yaml\"] }\n    effect: comment\n";
/// carol: a project maintainer, neither the author nor the bot.
const CAROL: u64 = 400;

/// The MR shrinks a retention and adds a policy file, at `NEW_SHA`; carol is a maintainer and
/// bob (the author) holds `author_level`.
fn policy_mr(author_level: u32) -> World {
    let w = World::new(ASSENT);
    w.fake.with_state(|s| {
        s.users.push(fake_gitlab::User::new(CAROL, "carol"));
        s.tokens
            .push(fake_gitlab::Token::new("glpat-carol", CAROL, &["api"]).access_level(40));
        s.tokens.push(
            fake_gitlab::Token::new("glpat-bob", fixtures::AUTHOR_ID, &["api"])
                .access_level(author_level),
        );
    });
    w.push(
        NEW_SHA,
        &[
            ("topics/orders.yaml", &orders(7)),
            (EXTRA_POLICY, EXTRA_POLICY_TEXT),
        ],
    );
    w
}

fn run_at_new(w: &World) -> RunResult {
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run()
}

/// Both threads resolved by `by`, then a run.
fn resolve_both_and_run(w: &World, by: u64) -> RunResult {
    for rule in [SELF_EDIT, RETENTION] {
        w.fake
            .resolve(project(), mr(), &w.thread(rule).id, by, true);
    }
    run_at_new(w)
}

/// (rule, assented, assentedBy) of each finding of a receipt.
fn assents(receipt: &Value) -> Vec<(String, bool, Option<String>)> {
    receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["assented"] == true,
                f.get("assentedBy").map(|b| b.as_str().unwrap().to_owned()),
            )
        })
        .collect()
}

#[test]
fn an_mr_that_edits_its_own_policies_gets_a_self_edit_challenge() {
    let w = policy_mr(30);
    let r = run_at_new(&w);
    r.expect_code(1);
    assert!(
        r.stdout.starts_with("assent: REVIEW for !7"),
        "{}",
        r.stdout
    );

    let thread = w.thread(SELF_EDIT);
    assert!(!thread.resolved(), "a challenge waits for a policy owner");
    assert!(
        thread.notes[0]
            .body
            .contains("\"subject\":\".assent/policies/extra.yaml#\""),
        "{}",
        thread.notes[0].body
    );
    assert!(thread.notes[0].body.contains("**⏳ challenge**"));
    assert!(
        thread.notes[0]
            .body
            .contains("_A policy owner other than the merge request's author assents"),
        "{}",
        thread.notes[0].body
    );
    // The MR's other change is still judged under the target's policies.
    w.thread(RETENTION);

    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    let rules: Vec<&str> = receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, vec![SELF_EDIT, RETENTION], "sorted by rule");
    assert_eq!(receipt["findings"][0]["effect"], "challenge");
    w.assert_no_violations();
    r.assert_no_token();
}

#[test]
fn a_maintainer_other_than_the_author_assents_to_a_policy_change_on_the_record() {
    let w = policy_mr(30);
    run_at_new(&w).expect_code(1);
    let r = resolve_both_and_run(&w, CAROL);
    r.expect_code(0);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "APPROVE");
    assert_eq!(
        assents(&receipt),
        [
            (SELF_EDIT.to_owned(), true, Some("carol".to_owned())),
            (RETENTION.to_owned(), true, Some("carol".to_owned())),
        ]
    );
    let text = std::fs::read_to_string(w.receipt_path()).unwrap();
    assert!(
        text.contains("\"resolved\":true,\"assented\":true,\"assentedBy\":\"carol\"}"),
        "assentedBy right after assented: {text}"
    );
    let summary = w.summary().body;
    assert!(summary.contains("## assent · APPROVE"), "{summary}");
    assert!(summary.contains("· assented by `carol` |"), "{summary}");
    assert!(!summary.contains("@carol"), "never a mention: {summary}");
    w.assert_no_violations();
    r.assert_no_token();
}

#[test]
fn a_developers_resolution_of_a_policy_change_does_not_count() {
    let w = policy_mr(30);
    run_at_new(&w).expect_code(1);
    // alice is a developer: enough for the retention rule, not for a policy change.
    let r = resolve_both_and_run(&w, fixtures::HUMAN_ID);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(
        assents(&receipt),
        [
            (SELF_EDIT.to_owned(), false, None),
            (RETENTION.to_owned(), true, Some("alice".to_owned())),
        ]
    );
    assert_eq!(receipt["findings"][0]["resolved"], true);
    assert!(w.thread(SELF_EDIT).resolved(), "never re-opened");
    let summary = w.summary().body;
    assert!(
        summary.contains("resolved by `alice`, which does not count as assent: a change to the policies needs a policy owner's assent (a maintainer or above); the resolver is a developer."),
        "{summary}"
    );
}

#[test]
fn the_author_never_assents_to_their_own_policy_change_even_as_a_maintainer() {
    let w = policy_mr(40);
    run_at_new(&w).expect_code(1);
    w.fake.resolve(
        project(),
        mr(),
        &w.thread(SELF_EDIT).id,
        fixtures::AUTHOR_ID,
        true,
    );
    let r = run_at_new(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(assents(&receipt)[0], (SELF_EDIT.to_owned(), false, None));
    let summary = w.summary().body;
    assert!(
        summary.contains("resolved by `bob`, which does not count as assent: the merge request's author cannot assent to their own change."),
        "{summary}"
    );
}

#[test]
fn the_targets_policy_owners_replace_the_default() {
    let w = policy_mr(30);
    // Only alice (a developer) owns the policies; carol, a maintainer, does not.
    w.put_file(
        fixtures::TARGET_SHA,
        ".assent/policies/owners.yaml",
        "apiVersion: assent/v1\nkind: Policy\npolicy_owners:\n  users: [alice]\nrules:\n  - id: owners-noop\n    match: { files: [\"none/*.yaml\"] }\n    effect: comment\n",
    );
    run_at_new(&w).expect_code(1);
    let self_edit = w.thread(SELF_EDIT);
    w.fake.resolve(project(), mr(), &self_edit.id, CAROL, true);
    w.fake.resolve(
        project(),
        mr(),
        &w.thread(RETENTION).id,
        fixtures::HUMAN_ID,
        true,
    );
    let r = run_at_new(&w);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "REVIEW");
    assert_eq!(
        assents(&r.receipt())[0],
        (SELF_EDIT.to_owned(), false, None)
    );
    assert!(
        w.summary()
            .body
            .contains("resolved by `carol`, which does not count as assent: a change to the policies needs a policy owner's assent (one of alice); the resolver is not listed."),
        "{}",
        w.summary().body
    );
    // alice re-resolves it: she is the named owner.
    w.fake.resolve(project(), mr(), &self_edit.id, CAROL, false);
    w.fake
        .resolve(project(), mr(), &self_edit.id, fixtures::HUMAN_ID, true);
    let r = run_at_new(&w);
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "APPROVE");
    assert_eq!(
        assents(&r.receipt())[0],
        (SELF_EDIT.to_owned(), true, Some("alice".to_owned()))
    );
}
