//! The built-in block findings: policies that do not load, files that do not parse, identity keys that cannot tell entries apart; a withheld diff is none of them.

use super::*;

// ---- 6, 7, 8: built-in block findings --------------------------------------------------------

#[test]
fn policies_that_do_not_load_on_the_target_block_with_file_and_line() {
    let w = World::new(ASSENT);
    w.put_file(
        fixtures::TARGET_SHA,
        ".assent/policies/broken.yaml",
        "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: x\n    match: {files: [\"**\"]}\n    effect: explode\n",
    );
    let r = w.run(&[]);
    r.expect_code(1);
    assert!(r.stdout.starts_with("assent: BLOCK for !7"), "{}", r.stdout);
    r.error_line();
    let thread = w.thread("assent/policy-error");
    let body = &thread.notes[0].body;
    assert!(body.contains(".assent/policies/broken.yaml:6"), "{body}");
    assert!(body.contains("explode"), "{body}");
    // No policy is evaluated while they do not load.
    assert!(w.threads_of(RETENTION).is_empty());
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK");
    assert_eq!(receipt["findings"].as_array().unwrap().len(), 1);
    assert_eq!(receipt["findings"][0]["rule"], "assent/policy-error");
    assert_eq!(receipt["findings"][0]["effect"], "block");
    w.assert_no_violations();
}

#[test]
fn an_unparseable_governed_file_blocks_naming_file_and_line() {
    let w = World::new(ASSENT);
    w.push(
        NEW_SHA,
        &[(
            "topics/orders.yaml",
            "topics:\n  - name: orders.events.v1\n    retention_days: [7\n",
        )],
    );
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run();
    r.expect_code(1);
    let thread = w.thread("assent/parse-error");
    let body = &thread.notes[0].body;
    assert!(
        body.contains("\"subject\":\"topics/orders.yaml#\""),
        "{body}"
    );
    assert!(body.contains("topics/orders.yaml:"), "{body}");
    assert!(body.contains("(at the source SHA)"), "{body}");
    let line = body
        .split("topics/orders.yaml:")
        .nth(1)
        .unwrap()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap();
    assert!(line.parse::<u32>().unwrap() >= 3, "{body}");
    assert_eq!(r.receipt()["decision"], "BLOCK");
    assert!(
        w.threads_of(RETENTION).is_empty(),
        "a file that does not parse is not diffed"
    );
    w.assert_no_violations();
}

#[test]
fn a_withheld_diff_is_judged_from_contents_never_undecidable() {
    // GitLab withholds a diff by size (docs/contract.md#withheld-diffs): the file is in the
    // repository at both SHAs all the same, and is judged from there.
    let judged = |r: &RunResult| -> Vec<(String, String, String)> {
        r.receipt()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                let field = |k: &str| f[k].as_str().unwrap_or_default().to_owned();
                (field("rule"), field("subject"), field("occurrence"))
            })
            .collect()
    };
    let shown = World::new(ASSENT);
    let expected = judged(&shown.run(&[]));
    assert!(
        expected.iter().any(|(rule, _, _)| rule == RETENTION),
        "{expected:?}"
    );
    let withheld = [
        DiffFile {
            too_large: Some(true),
            diff: String::new(),
            ..DiffFile::modified("topics/orders.yaml")
        },
        DiffFile {
            collapsed: Some(true),
            diff: String::new(),
            ..DiffFile::modified("topics/orders.yaml")
        },
    ];
    for diff in withheld {
        let w = World::new(ASSENT);
        w.set_diffs(vec![diff.clone()]);
        let r = w.run(&[]);
        assert_eq!(judged(&r), expected, "{diff:?}");
        assert_eq!(r.receipt()["decision"], "REVIEW");
        assert!(w.threads_of("assent/undecidable").is_empty());
        w.thread(RETENTION);
        w.assert_no_violations();
    }
}

// ---- identity keys fail closed (docs/contract.md#identity-keys) ---------------------------------------------

const AMBIGUOUS: &str = "assent/ambiguous-identity";
const TOPICS_LIST_SUBJECT: &str = "topics/orders.yaml#/topics";

/// A base registry in the example repository's style; `orders.audit.v1` keeps the cluster's
/// default retention (no `retention_days`).
const REGISTRY_BASE: &str = "topics:\n  - name: orders.events.v1\n    retention_days: 30\n    partitions: 12\n  - name: orders.audit.v1\n    partitions: 12\n";

/// The walk-around: a verbatim copy of `orders.audit.v1` is added, and `orders.events.v1`
/// shrinks from 30 to 1 day. Compared by position, the shrunk entry sits where the base has
/// `orders.audit.v1` (an added field, no rule) and the copy is an added entry without
/// retention: nothing fires and the MR was approved.
const REGISTRY_COPIED_AND_SHRUNK: &str = "topics:\n  - name: orders.audit.v1\n    partitions: 12\n  - name: orders.events.v1\n    retention_days: 1\n    partitions: 12\n  - name: orders.audit.v1\n    partitions: 12\n";

/// The same shrink without the copy.
const REGISTRY_SHRUNK: &str = "topics:\n  - name: orders.audit.v1\n    partitions: 12\n  - name: orders.events.v1\n    retention_days: 1\n    partitions: 12\n";

/// A world whose base holds [`REGISTRY_BASE`], with the source pushed at `NEW_SHA`.
fn registry_world(source: &str) -> World {
    let w = World::new(ASSENT);
    w.put_file(fixtures::BASE_SHA, "topics/orders.yaml", REGISTRY_BASE);
    w.push(NEW_SHA, &[("topics/orders.yaml", source)]);
    w
}

fn run_at(w: &World, sha: &str) -> RunResult {
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", sha)
        .run()
}

#[test]
fn a_copied_topic_entry_blocks_instead_of_hiding_a_retention_shrink() {
    let w = registry_world(REGISTRY_COPIED_AND_SHRUNK);
    let r = run_at(&w, NEW_SHA);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK", "{}", r.stdout);
    r.expect_code(1);
    let findings = receipt["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["rule"], AMBIGUOUS);
    assert_eq!(findings[0]["subject"], TOPICS_LIST_SUBJECT);
    assert_eq!(findings[0]["effect"], "block");

    let thread = w.thread(AMBIGUOUS);
    let body = &thread.notes[0].body;
    assert!(
        body.contains(&format!("\"subject\":\"{TOPICS_LIST_SUBJECT}\"")),
        "{body}"
    );
    assert!(
        body.contains(
            "at the source SHA: `orders.audit.v1` is the `name` of 2 entries: \
             `topics/orders.yaml:2`, `topics/orders.yaml:7`"
        ),
        "{body}"
    );
    assert!(
        w.threads_of(RETENTION).is_empty(),
        "nothing inside the ambiguous list is judged"
    );
    w.assert_no_violations();

    // Once the copy is gone, the shrink is judged by name.
    w.push(NEWER_SHA, &[("topics/orders.yaml", REGISTRY_SHRUNK)]);
    let r = run_at(&w, NEWER_SHA);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "REVIEW", "{}", r.stdout);
    let shrink = w.thread(RETENTION);
    assert!(!shrink.resolved());
    assert!(
        shrink.notes[0]
            .body
            .contains("Retention of `orders.events.v1` shrinks from `30` to `1` days"),
        "{}",
        shrink.notes[0].body
    );
    assert!(
        w.thread(AMBIGUOUS).resolved(),
        "the ambiguity thread is resolved as outdated"
    );
    w.assert_no_violations();
}

#[test]
fn a_duplicate_already_on_the_target_branch_blocks_naming_the_base_side() {
    let w = World::new(ASSENT);
    let base = "topics:\n  - name: orders.events.v1\n    retention_days: 30\n  - name: orders.events.v1\n    retention_days: 1\n";
    w.put_file(fixtures::BASE_SHA, "topics/orders.yaml", base);
    // The MR "fixes" the duplicate by keeping the 1-day entry: a shrink from 30, or no change?
    w.push(NEW_SHA, &[("topics/orders.yaml", &orders(1))]);
    let r = run_at(&w, NEW_SHA);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "BLOCK");
    let body = &w.thread(AMBIGUOUS).notes[0].body;
    assert!(
        body.contains(
            "at the base SHA: `orders.events.v1` is the `name` of 2 entries: \
             `topics/orders.yaml:2`, `topics/orders.yaml:4`"
        ),
        "{body}"
    );
    assert!(!body.contains("at the source SHA"), "{body}");
    w.assert_no_violations();
}

#[test]
fn an_ambiguity_keeps_its_thread_when_a_push_only_moves_lines() {
    let w = registry_world(REGISTRY_COPIED_AND_SHRUNK);
    run_at(&w, NEW_SHA).expect_code(1);
    let first = w.thread(AMBIGUOUS);
    let moved = format!("# Topics of the orders domain.\n\n{REGISTRY_COPIED_AND_SHRUNK}");
    w.push(NEWER_SHA, &[("topics/orders.yaml", &moved)]);
    let r = run_at(&w, NEWER_SHA);
    r.expect_code(1);
    let actions = r.receipt()["actions"].clone();
    assert_eq!(
        actions,
        json!([{"rule": AMBIGUOUS, "subject": TOPICS_LIST_SUBJECT, "action": "leave-untouched", "forgeId": first.notes[0].id}])
    );
    assert_eq!(w.threads_of(AMBIGUOUS).len(), 1, "no second thread");
    w.assert_no_violations();
}
