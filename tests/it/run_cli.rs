//! `assent run` as the MR pipeline runs it: the compiled binary against the fake GitLab.
//!
//! Every test checks the exit code, the key lines of stdout/stderr, the receipt, the fake's
//! final state (threads, resolution, note bodies) and its request log (writes, violations),
//! and that the token shows up nowhere but in the `PRIVATE-TOKEN` header.

use std::time::Duration;

use assent_test_support::run::{Invocation, ORDERS_BASE, RunResult, World, orders};
use fake_gitlab::{DiffFile, FaultAction, FaultRule, HoldApply, MrState, RouteKind, fixtures};
use serde_json::{Value, json};

use crate::ASSENT;

const RETENTION: &str = "retention-shrink";
const RETENTION_SUBJECT: &str = "topics/orders.yaml#/topics/orders.events.v1/retention_days";
/// A later push to the source branch.
const NEW_SHA: &str = "4444444444444444444444444444444444444444";
/// A push after that.
const NEWER_SHA: &str = "5555555555555555555555555555555555555555";

fn project() -> u64 {
    fixtures::PROJECT_ID
}

fn mr() -> u64 {
    fixtures::MR_IID
}

/// The receipt's top-level keys, in file order (docs/contract.md#receipt).
const RECEIPT_KEYS: [&str; 14] = [
    "apiVersion",
    "kind",
    "project",
    "mr",
    "pins",
    "outcome",
    "decision",
    "findings",
    "actions",
    "repairs",
    "warnings",
    "rescan",
    "approval",
    "requests",
];

#[track_caller]
fn assert_key_order(text: &str) {
    let positions: Vec<usize> = RECEIPT_KEYS
        .iter()
        .map(|k| {
            text.find(&format!("\"{k}\":"))
                .unwrap_or_else(|| panic!("no key {k} in {text}"))
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "receipt keys out of order: {text}"
    );
    assert!(text.starts_with("{\"apiVersion\":\"assent/v1\",\"kind\":\"PublicationReceipt\","));
}

/// The receipt of a designed no-write refusal.
#[track_caller]
fn assert_refusal(receipt: &Value, outcome: &str) {
    assert_eq!(receipt["outcome"], outcome);
    assert_eq!(receipt["decision"], Value::Null);
    for key in ["findings", "actions", "repairs", "warnings"] {
        assert_eq!(receipt[key], json!([]), "{key}");
    }
    assert_eq!(receipt["requests"]["writes"], 0);
}

// ---- 1, 2: first run and rerun ------------------------------------------------------------

#[test]
fn first_run_publishes_a_thread_and_a_verified_summary() {
    let w = World::new(ASSENT);
    let r = w.run(&[]);
    r.expect_code(0);
    assert_eq!(r.stderr, "", "a successful run is quiet on stderr");
    assert!(
        r.stdout
            .starts_with("assent: REVIEW for !7 at 22222222 (1 finding); published\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!(
            "create  challenge  {RETENTION} @ {RETENTION_SUBJECT}"
        )),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("requests: ") && r.stdout.contains(" 3 writes; rescan verified"),
        "{}",
        r.stdout
    );

    // The fake: one unresolved challenge thread and one verified summary, both the bot's.
    let thread = w.thread(RETENTION);
    assert_eq!(w.discussions().len(), 2, "{:#?}", w.discussions());
    assert!(!thread.resolved());
    assert_eq!(thread.notes.len(), 1);
    let note = &thread.notes[0];
    assert_eq!(note.author_id, fixtures::BOT_ID);
    assert!(note.body.starts_with(&format!(
        "<!-- assent:marker {{\"v\":1,\"kind\":\"finding\",\"rule\":\"{RETENTION}\",\"subject\":\"{RETENTION_SUBJECT}\",\"occurrence\":\"sha256:"
    )));
    assert!(
        note.body
            .contains("Retention of `orders.events.v1` shrinks from `30` to `7` days"),
        "{}",
        note.body
    );
    let summary = w.summary();
    let marker = summary.body.lines().next().unwrap();
    assert!(marker.contains("\"state\":\"verified\""), "{marker}");
    assert!(marker.contains(&format!("\"head\":\"{}\"", fixtures::HEAD_SHA)));
    assert!(summary.body.contains("## assent · REVIEW"));
    assert!(summary.body.contains(&format!("#note_{}", note.id)));
    insta::assert_snapshot!("first_run_summary", summary.body);

    // The receipt.
    let text = r.receipt_text.as_deref().unwrap();
    assert_key_order(text);
    assert!(text.ends_with("}\n"));
    let receipt = r.receipt();
    assert_eq!(receipt["project"], fixtures::PROJECT_PATH);
    assert_eq!(receipt["mr"], 7);
    assert_eq!(receipt["pins"]["sourceSha"], fixtures::HEAD_SHA);
    assert_eq!(receipt["pins"]["targetSha"], fixtures::TARGET_SHA);
    assert_eq!(receipt["pins"]["baseSha"], fixtures::BASE_SHA);
    assert!(
        receipt["pins"]["policyDigest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(receipt["outcome"], "published");
    assert_eq!(receipt["decision"], "REVIEW");
    let findings = receipt["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0]["rule"], RETENTION);
    assert_eq!(findings[0]["subject"], RETENTION_SUBJECT);
    assert_eq!(findings[0]["effect"], "challenge");
    assert_eq!(findings[0]["forgeId"], note.id);
    assert_eq!(findings[0]["resolved"], false);
    assert!(marker_occurrence(&note.body) == findings[0]["occurrence"]);
    assert_eq!(
        receipt["actions"],
        json!([{"rule": RETENTION, "subject": RETENTION_SUBJECT, "action": "create", "forgeId": note.id}])
    );
    assert_eq!(receipt["repairs"], json!([]));
    assert_eq!(receipt["warnings"], json!([]));
    assert_eq!(receipt["rescan"], json!({"verified": true}));
    // The whole receipt, as written: every field the asserts above do not name is pinned too.
    insta::assert_snapshot!("first_run_receipt", text);

    // The log: summary created (reconciling), thread posted, summary edited (verified).
    assert_eq!(
        write_shape(&w),
        vec![
            ("POST".to_owned(), RouteKind::Notes),
            ("POST".to_owned(), RouteKind::Discussions),
            ("PUT".to_owned(), RouteKind::Note),
        ]
    );
    assert_eq!(receipt["requests"]["writes"], 3);
    assert_eq!(
        receipt["requests"]["reads"],
        w.fake.reads() as u64,
        "the receipt counts every read the fake saw"
    );
    w.assert_no_violations();
    r.assert_no_token();
}

/// The writes the fake saw, as (method, route).
fn write_shape(w: &World) -> Vec<(String, RouteKind)> {
    w.writes()
        .into_iter()
        .map(|r| (r.method, r.route))
        .collect()
}

fn marker_occurrence(body: &str) -> Value {
    let marker = body.lines().next().unwrap();
    let json = marker
        .strip_prefix("<!-- assent:marker ")
        .and_then(|m| m.strip_suffix(" -->"))
        .unwrap();
    serde_json::from_str::<Value>(json).unwrap()["occurrence"].clone()
}

#[test]
fn fail_on_review_fails_the_job_on_an_unresolved_challenge() {
    let w = World::new(ASSENT);
    let r = w.run(&["--fail-on", "review"]);
    r.expect_code(1);
    let line = r.error_line();
    assert!(
        line.contains("REVIEW") && line.contains("--fail-on review"),
        "{line}"
    );
    // Published all the same, receipt written.
    assert_eq!(r.receipt()["outcome"], "published");
    assert_eq!(r.receipt()["decision"], "REVIEW");
    assert!(!w.thread(RETENTION).resolved());
    // `never` ignores the decision.
    w.run(&["--fail-on", "never"]).expect_code(0);
    r.assert_no_token();
}

#[test]
fn a_rerun_writes_nothing_and_its_receipt_is_byte_identical() {
    let w = World::new(ASSENT);
    let first = w.run(&[]);
    first.expect_code(0);
    let discussions = w.discussions();

    w.fake.reset_log();
    let second = w.run(&[]);
    second.expect_code(0);
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    assert!(w.fake.reads() > 0);
    assert_eq!(
        w.discussions(),
        discussions,
        "the fake's state did not change"
    );
    let receipt = second.receipt();
    assert_eq!(receipt["requests"]["writes"], 0);
    assert_eq!(
        receipt["actions"][0]["action"], "leave-untouched",
        "{receipt}"
    );
    assert!(
        second.stdout.contains(" 0 writes; rescan verified"),
        "{}",
        second.stdout
    );

    // Apart from the actions' verbs, the rerun's receipt says what the first one did.
    let mut a = first.receipt_without_requests();
    let mut b = second.receipt_without_requests();
    a["actions"][0]["action"] = Value::Null;
    b["actions"][0]["action"] = Value::Null;
    assert_eq!(a, b);

    // And a third run's receipt is byte-identical to the second's, request counts aside.
    let third = w.run(&[]);
    third.expect_code(0);
    assert_eq!(
        third.receipt_without_requests(),
        second.receipt_without_requests()
    );
    let strip = |text: &str| text[..text.find(",\"requests\":").unwrap()].to_owned();
    assert_eq!(
        strip(third.receipt_text.as_deref().unwrap()),
        strip(second.receipt_text.as_deref().unwrap())
    );
    assert_eq!(w.writes().len(), 0);
    w.assert_no_violations();
    third.assert_no_token();
}

// ---- 3: a human assents ---------------------------------------------------------------------

#[test]
fn a_resolved_challenge_is_preserved_and_only_the_summary_is_edited() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    let thread = w.thread(RETENTION);
    let summary_id = w.summary().id;
    w.fake
        .resolve(project(), mr(), &thread.id, fixtures::HUMAN_ID, true);

    w.fake.reset_log();
    let r = w.run(&["--fail-on", "review"]);
    r.expect_code(0);
    assert!(
        r.stdout.starts_with("assent: APPROVE for !7"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!(
            "preserve-resolution  challenge  {RETENTION} @ {RETENTION_SUBJECT}  (note {}; assented by alice)",
            thread.notes[0].id
        )),
        "{}",
        r.stdout
    );

    // Exactly one write: the summary edited in place.
    let writes = w.writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].method, "PUT");
    assert_eq!(writes[0].route, RouteKind::Note);
    assert!(writes[0].path.ends_with(&format!("/notes/{summary_id}")));

    let after = w.thread(RETENTION);
    assert!(after.resolved(), "never re-opened");
    assert_eq!(after.notes.len(), 1, "no reply");
    assert_eq!(after.notes[0].resolved_by, Some(fixtures::HUMAN_ID));
    let summary = w.summary();
    assert_eq!(summary.id, summary_id);
    assert!(
        summary.body.contains("## assent · APPROVE"),
        "{}",
        summary.body
    );
    assert!(
        summary
            .body
            .lines()
            .next()
            .unwrap()
            .contains("\"state\":\"verified\"")
    );

    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "APPROVE");
    assert_eq!(receipt["findings"][0]["resolved"], true);
    assert_eq!(receipt["actions"][0]["action"], "preserve-resolution");
    assert_eq!(receipt["actions"][0]["forgeId"], thread.notes[0].id);
    assert_eq!(receipt["requests"]["writes"], 1);

    // A rerun after that writes nothing at all.
    w.fake.reset_log();
    w.run(&[]).expect_code(0);
    assert_eq!(w.writes().len(), 0);
    w.assert_no_violations();
    r.assert_no_token();
}

/// Someone holding the bot's token (readable by every job of an MR pipeline when it is a plain
/// CI variable) edits the bot's resolved finding thread so its marker names the occurrence of
/// a new, worse change: the reviewer resolved "30 → 7" and never saw "30 → 1". GitLab reports
/// the note updated after its resolution, so that resolution does not count.
#[test]
fn a_resolved_thread_edited_with_the_bots_token_is_no_assent_to_the_new_change() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    let old = w.thread(RETENTION);
    w.fake.advance_time(Duration::from_secs(60));
    w.fake
        .resolve(project(), mr(), &old.id, fixtures::HUMAN_ID, true);
    w.fake.advance_time(Duration::from_secs(60));
    w.run(&["--fail-on", "review"]).expect_code(0);

    // 30 → 1 now. The attacker learns the new occurrence (the algorithm is public; here
    // from a dry run, which writes nothing) and puts it into the old thread's marker.
    w.push(NEW_SHA, &[("topics/orders.yaml", &orders(1))]);
    let planned = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .args(&["--dry-run", "--format", "json"])
        .run();
    planned.expect_code(0);
    let planned: Value = serde_json::from_str(&planned.stdout).unwrap();
    let new_occurrence = planned["findings"][0]["occurrence"]
        .as_str()
        .unwrap()
        .to_owned();
    let old_body = old.notes[0].body.clone();
    let old_occurrence = marker_occurrence(&old_body);
    let forged = old_body.replacen(old_occurrence.as_str().unwrap(), &new_occurrence, 1);
    assert_ne!(forged, old_body);
    w.fake.advance_time(Duration::from_secs(60));
    let (bots_token, _) = assent_test_support::forge_for(&w.fake);
    assent::forge::Forge::edit_note(&bots_token, old.notes[0].id, &forged).unwrap();
    assert!(
        w.thread(RETENTION).notes[0]
            .body
            .contains("shrinks from `30` to `7` days"),
        "the body still shows the change the reviewer saw"
    );

    w.fake.reset_log();
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .args(&["--fail-on", "review"])
        .run();
    r.expect_code(1);
    assert!(
        r.stdout.starts_with("assent: REVIEW for !7 at 44444444"),
        "{}",
        r.stdout
    );
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(receipt["actions"][0]["action"], "supersede");
    assert_eq!(receipt["findings"][0]["resolved"], false);
    assert_eq!(receipt["findings"][0]["assented"], false);
    let warning = format!("note {}: ", old.notes[0].id);
    assert!(
        receipt["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .starts_with(&warning)
            && w.as_str().unwrap().contains("does not count")),
        "{:#}",
        receipt["warnings"]
    );
    assert!(
        r.stdout.contains(&format!("warning: {warning}")),
        "{}",
        r.stdout
    );

    // A fresh thread shows the reviewer the change as it is; the edited one is left alone.
    let threads = w.threads_of(RETENTION);
    assert_eq!(threads.len(), 2, "{threads:#?}");
    let edited = threads.iter().find(|d| d.id == old.id).unwrap();
    let fresh = threads.iter().find(|d| d.id != old.id).unwrap();
    assert!(edited.resolved() && edited.notes.len() == 1);
    assert!(!fresh.resolved());
    assert!(
        fresh.notes[0]
            .body
            .contains("shrinks from `30` to `1` days")
    );
    assert_eq!(
        marker_occurrence(&fresh.notes[0].body),
        json!(new_occurrence)
    );
    assert_eq!(receipt["findings"][0]["forgeId"], fresh.notes[0].id);

    // A reviewer resolving the fresh thread assents; the rerun after that is quiet.
    w.fake.advance_time(Duration::from_secs(60));
    w.fake
        .resolve(project(), mr(), &fresh.id, fixtures::HUMAN_ID, true);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .args(&["--fail-on", "review"])
        .run();
    r.expect_code(0);
    assert_eq!(r.receipt()["findings"][0]["assented"], true);
    w.fake.reset_log();
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run()
        .expect_code(0);
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    w.assert_no_violations();
}

/// assent edits only its summary in place: across a run that creates, supersedes and
/// resolves threads, no write edits a finding thread's note.
#[test]
fn assent_never_edits_a_finding_threads_note() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    w.push(NEW_SHA, &[("topics/orders.yaml", &orders(3))]);
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run()
        .expect_code(0);
    w.push(NEWER_SHA, &[("topics/orders.yaml", ORDERS_BASE)]);
    w.fake.reset_log();
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEWER_SHA)
        .run()
        .expect_code(0);
    let summary = w.summary().id;
    let thread_notes: Vec<u64> = w
        .threads_of(RETENTION)
        .iter()
        .map(|d| d.notes[0].id)
        .collect();
    assert_eq!(thread_notes.len(), 2);
    let edits: Vec<_> = w
        .writes()
        .into_iter()
        .filter(|r| r.method == "PUT" && r.route == RouteKind::Note)
        .collect();
    assert!(!edits.is_empty());
    for edit in edits {
        assert!(
            edit.path.ends_with(&format!("/notes/{summary}")),
            "{edit:?}"
        );
        assert!(
            !thread_notes
                .iter()
                .any(|id| edit.path.ends_with(&format!("/notes/{id}")))
        );
    }
}

// ---- 3b: who may assent (docs/contract.md#who-may-assent) --------------------------------------------------------

#[test]
fn the_authors_own_resolution_is_not_assent_and_the_summary_says_why() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    let thread = w.thread(RETENTION);
    // GitLab lets the MR's author resolve the challenge on their own change.
    w.fake
        .resolve(project(), mr(), &thread.id, fixtures::AUTHOR_ID, true);

    w.fake.reset_log();
    let r = w.run(&["--fail-on", "review"]);
    r.expect_code(1);
    assert!(
        r.stdout.starts_with("assent: REVIEW for !7"),
        "{}",
        r.stdout
    );
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(receipt["findings"][0]["resolved"], true);
    assert_eq!(receipt["findings"][0]["assented"], false);
    assert_eq!(receipt["actions"][0]["action"], "preserve-resolution");
    // The text report never lets the kept resolution read as an assent.
    assert!(
        r.stdout.contains(&format!(
            "preserve-resolution  challenge  {RETENTION} @ {RETENTION_SUBJECT}  (note {}; resolved, but not an assent: still gating, see the summary)",
            thread.notes[0].id
        )),
        "{}",
        r.stdout
    );
    // Only the summary changes: the thread is never re-opened or replied to.
    let writes = w.writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].route, RouteKind::Note);
    let after = w.thread(RETENTION);
    assert!(after.resolved(), "never re-opened");
    assert_eq!(after.notes.len(), 1, "no reply");
    let summary = w.summary().body;
    assert!(summary.contains("## assent · REVIEW"), "{summary}");
    assert!(
        summary.contains("**Resolved without assent.**"),
        "{summary}"
    );
    assert!(
        summary.contains("resolved by `bob`, which does not count as assent: the merge request's author cannot assent to their own change."),
        "{summary}"
    );

    // A rerun with nothing new writes nothing and still fails the gate.
    w.fake.reset_log();
    w.run(&["--fail-on", "review"]).expect_code(1);
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());

    // A reviewer re-opens and resolves it: that is assent.
    w.fake
        .resolve(project(), mr(), &thread.id, fixtures::AUTHOR_ID, false);
    w.fake
        .resolve(project(), mr(), &thread.id, fixtures::HUMAN_ID, true);
    let r = w.run(&["--fail-on", "review"]);
    r.expect_code(0);
    assert_eq!(r.receipt()["findings"][0]["assented"], true);
    assert_eq!(r.receipt()["findings"][0]["assentedBy"], "alice");
    let summary = w.summary().body;
    assert!(!summary.contains("Resolved without assent"));
    assert!(summary.contains("· assented by `alice` |"), "{summary}");
}

const GATE_POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
assenters:
  min_role: maintainer
rules:
  - id: retention-review
    match:
      files: ["topics/*.yaml"]
      pointer: "/topics/*/retention_days"
      kinds: [modify]
    effect: challenge
    message: "Retention changes need a maintainer's assent."
"#;

#[test]
fn a_policy_can_require_a_minimum_role_to_assent() {
    const CAROL: u64 = 400;
    let w = World::new(ASSENT);
    w.put_file(
        fixtures::TARGET_SHA,
        ".assent/policies/gate.yaml",
        GATE_POLICY,
    );
    w.fake.with_state(|s| {
        s.users.push(fake_gitlab::User::new(CAROL, "carol"));
        s.tokens
            .push(fake_gitlab::Token::new("glpat-carol", CAROL, &["api"]).access_level(40));
    });
    w.run(&[]).expect_code(0);
    let shrink = w.thread(RETENTION);
    let review = w.thread("retention-review");
    // alice (a developer) resolves both: enough for the default rule, not for this one.
    for t in [&shrink, &review] {
        w.fake
            .resolve(project(), mr(), &t.id, fixtures::HUMAN_ID, true);
    }
    w.fake.reset_log();
    let r = w.run(&["--fail-on", "review"]);
    r.expect_code(1);
    let receipt = r.receipt();
    let assented: Vec<(String, bool)> = receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["assented"] == true,
            )
        })
        .collect();
    assert_eq!(
        assented,
        [
            ("retention-review".to_owned(), false),
            (RETENTION.to_owned(), true)
        ]
    );
    let role_reads: Vec<String> = w
        .fake
        .requests()
        .iter()
        .filter(|r| r.path.contains("/members/all/"))
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        role_reads,
        [fixtures::HUMAN_ID, fixtures::BOT_ID]
            .map(|user| format!("/api/v4/projects/group%2Fsub%2Fproj/members/all/{user}")),
        "one role read for the resolver of the rule that needs it, one for the bot before the first write"
    );
    let summary = w.summary().body;
    assert!(
        summary.contains("resolved by `alice`, which does not count as assent: this rule's assent needs a maintainer or above; the resolver is a developer."),
        "{summary}"
    );

    // carol, a maintainer, re-resolves it: the gate opens.
    w.fake
        .resolve(project(), mr(), &review.id, fixtures::HUMAN_ID, false);
    w.fake.resolve(project(), mr(), &review.id, CAROL, true);
    let r = w.run(&["--fail-on", "review"]);
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "APPROVE");
}

// ---- 4: a push that changes the judged value ------------------------------------------------

#[test]
fn a_push_that_changes_the_judged_value_supersedes_a_resolved_thread() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    let old = w.thread(RETENTION);
    w.fake
        .resolve(project(), mr(), &old.id, fixtures::HUMAN_ID, true);
    w.run(&[]).expect_code(0);

    // 30 → 3 days now: a new occurrence of the same slot.
    w.push(NEW_SHA, &[("topics/orders.yaml", &orders(3))]);
    w.fake.reset_log();
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run();
    r.expect_code(0);
    assert!(
        r.stdout.starts_with("assent: REVIEW for !7 at 44444444"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("supersede"), "{}", r.stdout);

    let threads = w.threads_of(RETENTION);
    assert_eq!(threads.len(), 2, "{threads:#?}");
    let stale = threads.iter().find(|d| d.id == old.id).unwrap();
    let fresh = threads.iter().find(|d| d.id != old.id).unwrap();
    assert!(stale.resolved(), "the old thread stays resolved");
    assert_eq!(
        stale.notes.len(),
        1,
        "a resolved stale thread gets no reply"
    );
    assert_eq!(stale.notes[0].resolved_by, Some(fixtures::HUMAN_ID));
    assert!(!fresh.resolved(), "the fresh thread asks again");
    assert!(
        fresh.notes[0]
            .body
            .contains("shrinks from `30` to `3` days")
    );
    assert_ne!(
        marker_occurrence(&fresh.notes[0].body),
        marker_occurrence(&stale.notes[0].body)
    );
    assert!(fresh.notes[0].id > stale.notes[0].id);

    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(receipt["pins"]["sourceSha"], NEW_SHA);
    assert_eq!(receipt["actions"][0]["action"], "supersede");
    assert_eq!(receipt["actions"][0]["forgeId"], fresh.notes[0].id);
    assert_eq!(receipt["findings"][0]["forgeId"], fresh.notes[0].id);
    assert_eq!(receipt["findings"][0]["resolved"], false);
    let summary = w.summary();
    assert!(summary.body.lines().next().unwrap().contains(NEW_SHA));
    // Summary to reconciling, fresh thread, summary to verified.
    assert_eq!(w.writes().len(), 3, "{:#?}", w.writes());
    w.assert_no_violations();
    r.assert_no_token();
}

/// A SHA-256 repository: GitLab reports 64-hex SHAs, and every place a SHA is read (CI
/// variables, flags, the MR's head, the marker) takes them as it takes 40-hex ones.
#[test]
fn a_sha256_repository_is_gated_like_any_other() {
    let w = World::new(ASSENT);
    let sha256 = "5".repeat(64);
    w.push(&sha256, &[("topics/orders.yaml", &orders(3))]);
    let r = w
        .invocation()
        .env(
            "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA",
            &sha256.to_ascii_uppercase(),
        )
        .run();
    r.expect_code(0);
    assert!(
        r.stdout.starts_with("assent: REVIEW for !7 at 55555555"),
        "{}",
        r.stdout
    );
    assert_eq!(r.receipt()["pins"]["sourceSha"], sha256.as_str());
    let summary = w.summary();
    assert!(
        summary.body.contains(&format!("\"head\":\"{sha256}\"")),
        "{}",
        summary.body
    );
    // The rerun reads its own 64-hex marker back and writes nothing.
    w.fake.reset_log();
    w.invocation()
        .args(&["--source-sha", &sha256])
        .run()
        .expect_code(0);
    assert!(w.writes().is_empty(), "{:#?}", w.writes());
    w.assert_no_violations();
}

#[test]
fn a_push_that_changes_the_judged_value_retires_an_unresolved_thread() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    let old = w.thread(RETENTION);

    w.push(NEW_SHA, &[("topics/orders.yaml", &orders(3))]);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run();
    r.expect_code(0);
    let threads = w.threads_of(RETENTION);
    assert_eq!(threads.len(), 2);
    let stale = threads.iter().find(|d| d.id == old.id).unwrap();
    assert!(stale.resolved());
    assert_eq!(stale.notes.len(), 2);
    assert_eq!(stale.notes[1].author_id, fixtures::BOT_ID);
    assert!(
        stale.notes[1]
            .body
            .starts_with(&format!("Superseded as of {NEW_SHA}")),
        "{}",
        stale.notes[1].body
    );
    assert!(!threads.iter().find(|d| d.id != old.id).unwrap().resolved());
    assert_eq!(r.receipt()["decision"], "REVIEW");
    w.assert_no_violations();
}

// ---- 5: a revert ----------------------------------------------------------------------------

#[test]
fn a_revert_resolves_the_thread_as_outdated_and_approves() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    let thread = w.thread(RETENTION);

    // The content goes back to the base: the MR no longer changes the file.
    w.push(NEWER_SHA, &[("topics/orders.yaml", ORDERS_BASE)]);
    w.fake.reset_log();
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEWER_SHA)
        .args(&["--fail-on", "review"])
        .run();
    r.expect_code(0);
    assert!(
        r.stdout
            .starts_with("assent: APPROVE for !7 at 55555555 (0 findings)"),
        "{}",
        r.stdout
    );

    let after = w.thread(RETENTION);
    assert!(after.resolved());
    assert_eq!(after.notes.len(), 2);
    assert_eq!(after.notes[1].author_id, fixtures::BOT_ID);
    assert!(
        after.notes[1]
            .body
            .starts_with(&format!("Outdated as of {NEWER_SHA}")),
        "{}",
        after.notes[1].body
    );
    assert_eq!(after.notes[0].resolved_by, Some(fixtures::BOT_ID));
    assert_eq!(w.threads_of(RETENTION).len(), 1, "no new thread");

    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "APPROVE");
    assert_eq!(receipt["findings"], json!([]));
    assert_eq!(
        receipt["actions"],
        json!([{"rule": RETENTION, "subject": RETENTION_SUBJECT, "action": "resolve", "forgeId": thread.notes[0].id}])
    );
    let summary = w.summary();
    assert!(summary.body.contains("## assent · APPROVE"));
    assert!(summary.body.contains("No finding"), "{}", summary.body);
    // Summary to reconciling, reply, resolve, summary to verified.
    assert_eq!(
        write_shape(&w),
        vec![
            ("PUT".to_owned(), RouteKind::Note),
            ("POST".to_owned(), RouteKind::DiscussionNotes),
            ("PUT".to_owned(), RouteKind::Discussion),
            ("PUT".to_owned(), RouteKind::Note),
        ]
    );
    w.assert_no_violations();
    r.assert_no_token();
}

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
    r.expect_code(0);
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
    run_at_new(&w).expect_code(0);
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
    run_at_new(&w).expect_code(0);
    // alice is a developer: enough for the retention rule, not for a policy change.
    let r = resolve_both_and_run(&w, fixtures::HUMAN_ID);
    r.expect_code(0);
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
    run_at_new(&w).expect_code(0);
    w.fake.resolve(
        project(),
        mr(),
        &w.thread(SELF_EDIT).id,
        fixtures::AUTHOR_ID,
        true,
    );
    let r = run_at_new(&w);
    r.expect_code(0);
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
    run_at_new(&w).expect_code(0);
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
    r.expect_code(0);
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
fn an_incomplete_diff_listing_is_undecidable() {
    let w = World::new(ASSENT);
    w.set_diffs(vec![DiffFile {
        too_large: Some(true),
        diff: String::new(),
        ..DiffFile::modified("topics/orders.yaml")
    }]);
    let r = w.run(&[]);
    r.expect_code(1);
    let thread = w.thread("assent/undecidable");
    assert!(
        thread.notes[0]
            .body
            .contains("\"subject\":\"topics/orders.yaml#\""),
        "{}",
        thread.notes[0].body
    );
    assert!(
        w.threads_of(RETENTION).is_empty(),
        "no guess from a withheld diff"
    );
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK");
    assert_eq!(receipt["findings"][0]["rule"], "assent/undecidable");

    // Collapsed is the same.
    let w = World::new(ASSENT);
    w.set_diffs(vec![DiffFile {
        collapsed: Some(true),
        ..DiffFile::modified("topics/orders.yaml")
    }]);
    w.run(&[]).expect_code(1);
    w.thread("assent/undecidable");
    w.assert_no_violations();
}

// ---- 9: designed refusals -------------------------------------------------------------------

#[test]
fn a_stale_pipeline_writes_nothing() {
    let w = World::new(ASSENT);
    w.fake.set_head(project(), mr(), NEW_SHA);
    let r = w.run(&[]);
    r.expect_code(0);
    assert_eq!(r.stderr, "");
    assert!(
        r.stdout.starts_with(
            "assent: stale pipeline: the MR head moved past 22222222; nothing written"
        ),
        "{}",
        r.stdout
    );
    assert_eq!(w.writes().len(), 0);
    assert!(w.discussions().is_empty());
    let receipt = r.receipt();
    assert_refusal(&receipt, "stale-pipeline");
    assert_eq!(receipt["pins"]["sourceSha"], fixtures::HEAD_SHA);
    assert_key_order(r.receipt_text.as_deref().unwrap());
    r.assert_no_token();
}

#[test]
fn a_closed_or_merged_mr_writes_nothing() {
    for state in [MrState::Closed, MrState::Merged] {
        let w = World::new(ASSENT);
        w.fake.set_mr_state(project(), mr(), state);
        let r = w.run(&["--fail-on", "review"]);
        r.expect_code(0);
        assert!(
            r.stdout
                .starts_with("assent: the merge request is not open; nothing written"),
            "{}",
            r.stdout
        );
        assert_eq!(w.writes().len(), 0);
        assert!(w.discussions().is_empty());
        assert_refusal(&r.receipt(), "mr-not-open");
    }
}

// ---- 10: dry run and JSON -------------------------------------------------------------------

#[test]
fn a_dry_run_prints_the_plan_and_writes_nothing() {
    let w = World::new(ASSENT);
    let r = w.run(&["--dry-run"]);
    r.expect_code(0);
    assert!(
        r.stdout
            .starts_with("assent: REVIEW for !7 at 22222222 (1 finding); would publish\n"),
        "{}",
        r.stdout
    );
    // Each planned thread shows the message it would carry, on the line below its plan line.
    let plan = format!("create  challenge  {RETENTION} @ {RETENTION_SUBJECT}  (new)\n");
    let at = r
        .stdout
        .find(&plan)
        .unwrap_or_else(|| panic!("{}", r.stdout));
    let message = r.stdout[at + plan.len()..].lines().next().unwrap();
    assert!(
        message.starts_with("      message: ") && message.contains("`orders.events.v1`"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(" 0 writes; rescan not performed"),
        "{}",
        r.stdout
    );
    assert_eq!(w.writes().len(), 0);
    assert!(w.discussions().is_empty());
    let receipt = r.receipt();
    assert_eq!(receipt["outcome"], "dry-run");
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(receipt["actions"][0]["action"], "create");
    assert_eq!(receipt["actions"][0]["forgeId"], Value::Null);
    assert_eq!(receipt["findings"][0]["forgeId"], Value::Null);
    assert_eq!(receipt["rescan"]["verified"], false);

    // After a real run, a dry run of an MR a human changed shows what would happen.
    w.run(&[]).expect_code(0);
    let thread = w.thread(RETENTION);
    w.fake
        .resolve(project(), mr(), &thread.id, fixtures::HUMAN_ID, true);
    w.fake.reset_log();
    let r = w.run(&["--dry-run"]);
    r.expect_code(0);
    assert!(r.stdout.starts_with("assent: APPROVE"), "{}", r.stdout);
    // Who assented is known from the listing, so the dry run's receipt names them too.
    assert_eq!(r.receipt()["findings"][0]["assentedBy"], "alice");
    assert!(
        r.stdout.contains(&format!(
            "preserve-resolution  challenge  {RETENTION} @ {RETENTION_SUBJECT}  (note {}; assented by alice)",
            thread.notes[0].id
        )),
        "{}",
        r.stdout
    );
    assert_eq!(w.writes().len(), 0);
    assert!(
        w.summary().body.contains("## assent · REVIEW"),
        "the summary is untouched"
    );
    r.assert_no_token();
}

#[test]
fn format_json_prints_exactly_the_receipt() {
    let w = World::new(ASSENT);
    for args in [
        &["--format", "json"][..],
        &["--format", "json", "--dry-run"][..],
        &["--format", "json", "--fail-on", "review"][..],
    ] {
        let r = w.run(args);
        let receipt = r.receipt_text.as_deref().unwrap();
        assert_eq!(r.stdout, receipt, "{args:?}");
        let parsed: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(parsed["apiVersion"], "assent/v1");
        assert_eq!(parsed["kind"], "PublicationReceipt");
        r.assert_no_token();
    }
    // The refusals too.
    w.fake.set_head(project(), mr(), NEW_SHA);
    let r = w.run(&["--format", "json"]);
    r.expect_code(0);
    assert_eq!(r.stdout, r.receipt_text.clone().unwrap());
    assert_refusal(&r.receipt(), "stale-pipeline");
}

#[test]
fn the_receipt_goes_where_receipt_says() {
    let w = World::new(ASSENT);
    let path = w.dir.path().join("out/receipt.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let r = w.run(&["--receipt", path.to_str().unwrap()]);
    r.expect_code(0);
    assert!(r.receipt_text.is_none(), "no receipt at the default path");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(r.stdout.contains(&path.display().to_string()));
    assert_key_order(&text);
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
}

// ---- 11, 12: configuration and credentials --------------------------------------------------

#[test]
fn a_missing_token_is_a_usage_error_before_any_request() {
    let w = World::new(ASSENT);
    let r = w.invocation().without("ASSENT_TOKEN").run();
    r.expect_code(2);
    let line = r.error_line();
    assert!(line.contains("ASSENT_TOKEN"), "{line}");
    // In a merge request pipeline the likely causes are GitLab's variable rules.
    assert!(
        line.contains("Protect variable") && line.contains("forks"),
        "{line}"
    );
    assert_eq!(r.stdout, "");
    assert!(r.receipt_text.is_none());
    assert!(w.fake.requests().is_empty(), "{:#?}", w.fake.requests());

    // GITLAB_TOKEN is the fallback.
    let r = w
        .invocation()
        .without("ASSENT_TOKEN")
        .env("GITLAB_TOKEN", fixtures::BOT_TOKEN)
        .run();
    r.expect_code(0);
    r.assert_no_token();
}

/// API URL, project and token all missing: one error names all three, so one attempt shows
/// everything there is to set.
#[test]
fn every_missing_connection_input_is_named_in_one_error() {
    let w = World::new(ASSENT);
    let r = w
        .invocation()
        .without("CI_API_V4_URL")
        .without("CI_PROJECT_ID")
        .without("CI_MERGE_REQUEST_PROJECT_ID")
        .without("ASSENT_TOKEN")
        .run();
    r.expect_code(2);
    let line = r.error_line();
    assert!(line.starts_with("error: 3 problems with the inputs: (1) no GitLab API URL: pass --api-url or set CI_API_V4_URL"), "{line}");
    assert!(
        line.contains(
            "(2) no project: pass --project or set CI_MERGE_REQUEST_PROJECT_ID or CI_PROJECT_ID"
        ),
        "{line}"
    );
    assert!(
        line.contains("(3) no token: set ASSENT_TOKEN (or GITLAB_TOKEN)"),
        "{line}"
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(w.fake.requests().is_empty());
}

#[test]
fn missing_or_malformed_inputs_are_usage_errors_before_any_request() {
    let w = World::new(ASSENT);
    let bad_sha = "not-a-sha-but-close-0000000000000000000000";
    let cases: Vec<(Invocation<'_>, &str)> = vec![
        (
            w.invocation().without("CI_MERGE_REQUEST_IID"),
            "CI_MERGE_REQUEST_IID",
        ),
        (
            w.invocation().without("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"),
            "--source-sha",
        ),
        (w.invocation().without("CI_API_V4_URL"), "CI_API_V4_URL"),
        (w.invocation().without("CI_PROJECT_ID"), "CI_PROJECT_ID"),
        (
            w.invocation()
                .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", bad_sha),
            "40 or 64 hex digits",
        ),
        (
            w.invocation().args(&["--source-sha", "abc123"]),
            "40 or 64 hex digits",
        ),
        (w.invocation().args(&["--base-sha", "zz"]), "base SHA"),
        (
            w.invocation()
                .env("CI_MERGE_REQUEST_TARGET_BRANCH_SHA", "1234"),
            "target SHA",
        ),
        (
            w.invocation().env("CI_MERGE_REQUEST_IID", "seven"),
            "CI_MERGE_REQUEST_IID",
        ),
    ];
    for (invocation, needle) in cases {
        let r = invocation.run();
        r.expect_code(2);
        let line = r.error_line();
        assert!(line.contains(needle), "{needle}: {line}");
        assert!(r.receipt_text.is_none());
        r.assert_no_token();
    }
    // An unknown flag value is a usage error too (clap's own message).
    let r = w.run(&["--fail-on", "sometimes"]);
    r.expect_code(2);
    assert!(w.fake.requests().is_empty(), "{:#?}", w.fake.requests());
}

#[test]
fn a_wrong_token_is_a_forge_failure_with_one_line() {
    let w = World::new(ASSENT);
    let r = w
        .invocation()
        .env("ASSENT_TOKEN", "glpat-wrong-token")
        .run();
    r.expect_code(3);
    let line = r.error_line();
    assert!(line.contains("401"), "{line}");
    assert!(!line.contains("glpat-wrong-token"), "{line}");
    assert!(!r.stdout.contains("glpat-wrong-token"));
    assert!(!r.stderr.contains("glpat-wrong-token"));
    // The line after the error says what to do.
    let help = r
        .stderr
        .lines()
        .find(|l| l.starts_with("help: "))
        .unwrap_or_else(|| panic!("no help line: {}", r.stderr));
    assert!(
        help.contains("ASSENT_TOKEN") && help.contains("assent doctor"),
        "{help}"
    );
    assert!(r.receipt_text.is_none());
    assert_eq!(w.writes().len(), 0);
    assert!(w.fake.requests().len() <= 2, "a 401 is not retried");
}

/// `CI_JOB_TOKEN` cannot post notes: given as the token, it is refused before any request,
/// with the token to use instead.
#[test]
fn a_ci_job_token_is_refused_before_any_request() {
    let w = World::new(ASSENT);
    for (token, job) in [
        ("glcbt-64_0123456789abcdef", ""),
        ("job-token-value", "job-token-value"),
    ] {
        let r = w
            .invocation()
            .env("ASSENT_TOKEN", token)
            .env("CI_JOB_TOKEN", job)
            .run();
        r.expect_code(2);
        let line = r.error_line();
        assert!(line.contains("CI job token"), "{line}");
        assert!(line.contains("project access token"), "{line}");
        assert!(!r.stderr.contains(token), "{}", r.stderr);
        assert!(r.receipt_text.is_none());
    }
    assert!(w.fake.requests().is_empty(), "{:#?}", w.fake.requests());
}

/// A Reporter can create threads but not resolve them: the run reads the bot's role once
/// before its first write and stops with nothing written, instead of leaving the summary and
/// some threads behind a 403. A rerun with nothing to write costs no such read.
#[test]
fn a_reporter_token_is_refused_before_the_first_write() {
    let set_bot_level = |w: &World, level: u32| {
        w.fake.with_state(|s| {
            for t in s
                .tokens
                .iter_mut()
                .filter(|t| t.user_id == fixtures::BOT_ID)
            {
                t.access_level = level;
            }
        })
    };
    let w = World::new(ASSENT);
    set_bot_level(&w, 20);
    let r = w.run(&[]);
    r.expect_code(3);
    let line = r.error_line();
    for part in [
        "Reporter role",
        "Developer or higher",
        "nothing was written",
        "run `assent doctor`",
    ] {
        assert!(line.contains(part), "{part:?} in {line}");
    }
    assert_eq!(
        r.stderr.lines().filter(|l| l.starts_with("error:")).count(),
        1
    );
    r.assert_no_token();
    assert!(r.receipt_text.is_none());
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    assert!(w.discussions().is_empty());

    // With the Developer role the same run publishes; its rerun writes nothing and does
    // not read the role again.
    set_bot_level(&w, 30);
    w.run(&[]).expect_code(0);
    w.fake.reset_log();
    w.run(&[]).expect_code(0);
    assert_eq!(w.writes().len(), 0);
    assert!(
        !w.fake
            .requests()
            .iter()
            .any(|r| r.path.contains("/members/all/")),
        "{:#?}",
        w.fake.requests()
    );
}

/// A role that cannot be read is no refusal: the run goes on, as before the check existed.
#[test]
fn a_role_that_cannot_be_read_does_not_stop_the_run() {
    let w = World::new(ASSENT);
    w.fake.inject(
        FaultRule::new(FaultAction::Forbidden)
            .method("GET")
            .route(RouteKind::ProjectMember),
    );
    w.run(&[]).expect_code(0);
    assert!(!w.discussions().is_empty());
}

// ---- 14: a listing that cannot be completed -------------------------------------------------

#[test]
fn a_discussion_listing_that_keeps_failing_aborts_before_any_write() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    // A human assents, so the next run has a write to make; then the discussions listing
    // answers 500 to every attempt.
    let thread = w.thread(RETENTION);
    w.fake
        .resolve(project(), mr(), &thread.id, fixtures::HUMAN_ID, true);
    let summary = w.summary();
    w.fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .method("GET")
            .route(RouteKind::Discussions),
    );
    w.fake.reset_log();
    let r = w.run(&[]);
    r.expect_code(3);
    let line = r.error_line();
    assert!(
        line.starts_with("error: ") && line.contains("discussions") && line.contains("500"),
        "{line}"
    );
    assert!(r.receipt_text.is_none());
    assert_eq!(r.stdout, "");
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    let attempts = w
        .fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Discussions && r.fault.is_some())
        .count();
    assert!(attempts >= 2, "the read was retried ({attempts} attempts)");
    assert_eq!(w.summary(), summary, "the summary is untouched");
    r.assert_no_token();

    // Once GitLab answers again, the next run completes.
    w.fake.clear_faults();
    w.run(&[]).expect_code(0);
    assert!(w.summary().body.contains("## assent · APPROVE"));
}

// ---- 15: the head moves while the run is under way -------------------------------------------

/// Runs assent with its first discussions listing held (after the first head check, before
/// any write), lets `meanwhile` change the MR, then lets the run go on.
fn run_changed_before_first_write(w: &World, meanwhile: impl FnOnce(&World)) -> RunResult {
    w.fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: HoldApply::Before,
            timeout_ms: Some(20_000),
        })
        .method("GET")
        .route(RouteKind::Discussions)
        .nth(1),
    );
    let running = w.invocation().spawn();
    assert!(
        w.fake.wait_for_held(1, Duration::from_secs(30)),
        "the run never listed the discussions"
    );
    meanwhile(w);
    w.fake.release_holds();
    running.wait()
}

#[test]
fn a_head_that_moves_before_the_first_write_stops_the_run_without_writing() {
    let w = World::new(ASSENT);
    let r = run_changed_before_first_write(&w, |w| w.fake.set_head(project(), mr(), NEW_SHA));
    r.expect_code(0);
    assert!(
        r.stdout.starts_with("assent: stale pipeline"),
        "{}",
        r.stdout
    );
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    assert!(w.discussions().is_empty());
    assert_refusal(&r.receipt(), "stale-pipeline");
    let mr_reads = w
        .fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::MergeRequest)
        .count();
    assert_eq!(
        mr_reads, 2,
        "the head is checked at start and before the first write"
    );
    r.assert_no_token();
}

#[test]
fn an_mr_merged_before_the_first_write_is_not_written_to() {
    let w = World::new(ASSENT);
    let r = run_changed_before_first_write(&w, |w| {
        w.fake.set_mr_state(project(), mr(), MrState::Merged)
    });
    r.expect_code(0);
    assert_eq!(w.writes().len(), 0);
    assert_refusal(&r.receipt(), "mr-not-open");
}

// ---- known problems outside this file's reach (ignored until fixed) --------------------------

/// docs/contract.md#desired-state: "a request that still fails after its retries is a forge failure (exit 3, zero
/// writes when it happens before the first write)". Publishing an `assent/undecidable`
/// finding instead would resolve the pending challenge as "Outdated" on a guess.
#[test]
fn a_diff_listing_that_keeps_failing_is_a_forge_failure() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    w.fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .method("GET")
            .route(RouteKind::Diffs),
    );
    w.fake.reset_log();
    let r = w.run(&[]);
    r.expect_code(3);
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    assert!(!w.thread(RETENTION).resolved());
    w.fake.clear_faults();
    let r = w.run(&[]);
    assert_eq!(r.receipt()["decision"], "REVIEW");
}

/// A revert resolves the challenge as "Outdated" (resolved by the bot); pushing the same
/// change back brings the same occurrence. The bot's own resolution is not a human's
/// assent: the old thread is retired and a fresh challenge asks again (REVIEW).
#[test]
fn a_revert_then_reapply_asks_again() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    w.push(NEW_SHA, &[("topics/orders.yaml", ORDERS_BASE)]);
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run()
        .expect_code(0);
    w.push(NEWER_SHA, &[("topics/orders.yaml", &orders(7))]);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEWER_SHA)
        .run();
    assert_eq!(r.receipt()["decision"], "REVIEW", "{}", r.stdout);
    assert!(w.threads_of(RETENTION).iter().any(|d| !d.resolved()));
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
    r.expect_code(0);
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

// ---- the bot's approval (--approve, docs/contract.md#approvals) ----------------------------------------------

const APPROVAL_ROUTES: [RouteKind; 3] = [
    RouteKind::MrApprovals,
    RouteKind::Approve,
    RouteKind::Unapprove,
];

/// The MR no longer changes anything at `NEW_SHA`: the decision there is `APPROVE`.
fn revert_to_base(w: &World) {
    w.push(NEW_SHA, &[("topics/orders.yaml", ORDERS_BASE)]);
}

fn run_at_with(w: &World, head: &str, args: &[&str]) -> RunResult {
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", head)
        .args(args)
        .run()
}

fn approvals(w: &World) -> Vec<u64> {
    w.fake.approvals(project(), mr())
}

fn approval_requests(w: &World) -> Vec<fake_gitlab::LoggedRequest> {
    w.fake
        .requests()
        .into_iter()
        .filter(|r| APPROVAL_ROUTES.contains(&r.route))
        .collect()
}

#[test]
fn approve_on_approve_approves_at_the_pinned_head_after_the_verified_summary() {
    let w = World::new(ASSENT);
    revert_to_base(&w);
    let r = run_at_with(&w, NEW_SHA, &["--approve", "--fail-on", "review"]);
    r.expect_code(0);
    assert!(
        r.stdout.starts_with("assent: APPROVE for !7 at 44444444"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("approval: approved (the bot approved the merge request)"),
        "{}",
        r.stdout
    );
    assert_eq!(approvals(&w), vec![fixtures::BOT_ID]);
    let receipt = r.receipt();
    assert_eq!(receipt["outcome"], "published");
    assert_eq!(receipt["approval"], "approved");
    assert_key_order(r.receipt_text.as_deref().unwrap());

    // The summary is written (verified) first; the approval, pinned to the head, is last.
    let writes = w.writes();
    assert_eq!(
        write_shape(&w),
        vec![
            ("POST".to_owned(), RouteKind::Notes),
            ("POST".to_owned(), RouteKind::Approve),
        ]
    );
    assert!(
        writes[0].body.contains("%22state%22%3A%22verified%22"),
        "the summary says verified before the approval: {}",
        writes[0].body
    );
    assert_eq!(writes[1].body, format!("sha={NEW_SHA}"));
    assert_eq!(writes[1].status, Some(201));
    assert_eq!(receipt["requests"]["writes"], 2);
    assert_eq!(receipt["requests"]["reads"], w.fake.reads() as u64);
    w.assert_no_violations();
    r.assert_no_token();
}

#[test]
fn the_approval_follows_the_verified_edit_when_threads_are_retired() {
    let w = World::new(ASSENT);
    w.run(&["--approve"]).expect_code(0);
    assert!(approvals(&w).is_empty(), "REVIEW is not approved");
    revert_to_base(&w);
    w.fake.reset_log();
    let r = run_at_with(&w, NEW_SHA, &["--approve"]);
    r.expect_code(0);
    assert_eq!(
        write_shape(&w),
        vec![
            ("PUT".to_owned(), RouteKind::Note),
            ("POST".to_owned(), RouteKind::DiscussionNotes),
            ("PUT".to_owned(), RouteKind::Discussion),
            ("PUT".to_owned(), RouteKind::Note),
            ("POST".to_owned(), RouteKind::Approve),
        ]
    );
    let writes = w.writes();
    assert!(writes[0].body.contains("%22state%22%3A%22reconciling%22"));
    assert!(writes[3].body.contains("%22state%22%3A%22verified%22"));
    // The approval state is read after the verified edit, never before it.
    let log = w.fake.requests();
    let verified_at = log.iter().position(|q| q.seq == writes[3].seq).unwrap();
    let first_read = log
        .iter()
        .position(|q| q.route == RouteKind::MrApprovals)
        .unwrap();
    assert!(first_read > verified_at, "{log:#?}");
    assert_eq!(r.receipt()["approval"], "approved");
}

#[test]
fn an_approved_rerun_makes_zero_writes() {
    let w = World::new(ASSENT);
    revert_to_base(&w);
    run_at_with(&w, NEW_SHA, &["--approve"]).expect_code(0);
    w.fake.reset_log();
    let second = run_at_with(&w, NEW_SHA, &["--approve"]);
    second.expect_code(0);
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    let receipt = second.receipt();
    assert_eq!(receipt["approval"], "unchanged");
    assert_eq!(receipt["requests"]["writes"], 0);
    assert!(
        second.stdout.contains("approval: unchanged"),
        "{}",
        second.stdout
    );
    assert_eq!(
        approval_requests(&w).len(),
        1,
        "one read of the approval state, nothing else"
    );
    let third = run_at_with(&w, NEW_SHA, &["--approve"]);
    assert_eq!(third.receipt_text, second.receipt_text, "byte-identical");
    assert_eq!(approvals(&w), vec![fixtures::BOT_ID]);
}

#[test]
fn a_push_that_makes_it_review_withdraws_the_approval() {
    let w = World::new(ASSENT);
    // A project that keeps approvals on push: only assent takes the approval back.
    w.fake
        .with_state(|s| s.projects[0].approvals.reset_approvals_on_push = false);
    revert_to_base(&w);
    run_at_with(&w, NEW_SHA, &["--approve"]).expect_code(0);
    w.push(NEWER_SHA, &[("topics/orders.yaml", &orders(7))]);
    assert_eq!(approvals(&w), vec![fixtures::BOT_ID], "survived the push");
    w.fake.reset_log();
    let r = run_at_with(&w, NEWER_SHA, &["--approve", "--fail-on", "review"]);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "REVIEW");
    assert_eq!(r.receipt()["approval"], "unapproved");
    assert!(approvals(&w).is_empty());
    let shape = write_shape(&w);
    assert_eq!(
        shape.last(),
        Some(&("POST".to_owned(), RouteKind::Unapprove)),
        "{shape:?}"
    );
    assert!(r.stdout.contains("approval: unapproved"), "{}", r.stdout);
}

#[test]
fn with_gitlabs_default_reset_a_push_leaves_nothing_to_withdraw() {
    let w = World::new(ASSENT);
    revert_to_base(&w);
    run_at_with(&w, NEW_SHA, &["--approve"]).expect_code(0);
    w.push(NEWER_SHA, &[("topics/orders.yaml", &orders(7))]);
    assert!(approvals(&w).is_empty(), "GitLab removed it on push");
    w.fake.reset_log();
    let r = run_at_with(&w, NEWER_SHA, &["--approve"]);
    assert_eq!(r.receipt()["approval"], "unchanged");
    assert!(
        !w.writes()
            .iter()
            .any(|q| APPROVAL_ROUTES.contains(&q.route)),
        "{:#?}",
        w.writes()
    );
}

#[test]
fn a_head_that_moves_before_the_approval_is_a_stale_pipeline() {
    let w = World::new(ASSENT);
    revert_to_base(&w);
    // Hold the approval read (the step after the verified summary) and push meanwhile.
    w.fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: HoldApply::Before,
            timeout_ms: Some(20_000),
        })
        .method("GET")
        .route(RouteKind::MrApprovals),
    );
    let running = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .args(&["--approve", "--fail-on", "review"])
        .spawn();
    assert!(
        w.fake.wait_for_held(1, Duration::from_secs(30)),
        "the run never read the approval"
    );
    w.push(NEWER_SHA, &[("topics/orders.yaml", &orders(7))]);
    w.fake.release_holds();
    let r = running.wait();
    r.expect_code(0);
    assert!(
        r.stdout.starts_with(
            "assent: stale pipeline: the MR head moved past 44444444 before the approval"
        ),
        "{}",
        r.stdout
    );
    let approve = w
        .writes()
        .into_iter()
        .find(|q| q.route == RouteKind::Approve)
        .expect("the approval was sent");
    assert_eq!(approve.status, Some(409));
    assert!(approvals(&w).is_empty());
    let receipt = r.receipt();
    assert_eq!(receipt["outcome"], "stale-pipeline");
    assert_eq!(receipt["decision"], Value::Null);
    assert_eq!(receipt["approval"], Value::Null);
    for key in ["findings", "actions", "repairs"] {
        assert_eq!(receipt[key], json!([]), "{key}");
    }
    assert!(
        receipt["warnings"][0]
            .as_str()
            .unwrap()
            .contains(&format!("moved past {NEW_SHA} before the approval")),
        "{receipt}"
    );
    assert_eq!(receipt["requests"]["writes"], w.writes().len() as u64);
    r.assert_no_token();
}

#[test]
fn without_approve_the_approval_is_never_touched() {
    let w = World::new(ASSENT);
    revert_to_base(&w);
    let r = run_at_with(&w, NEW_SHA, &[]);
    r.expect_code(0);
    assert_eq!(r.receipt()["approval"], Value::Null);
    assert!(!r.stdout.contains("approval:"), "{}", r.stdout);
    assert!(
        approval_requests(&w).is_empty(),
        "{:#?}",
        approval_requests(&w)
    );
    assert!(approvals(&w).is_empty());

    // Not even a standing approval of the bot is withdrawn on REVIEW.
    w.fake.set_approved(project(), mr(), fixtures::BOT_ID, true);
    w.run(&[]).expect_code(0);
    assert_eq!(approvals(&w), vec![fixtures::BOT_ID]);
    assert!(approval_requests(&w).is_empty());

    // A dry run with --approve reads nothing of the approval and writes nothing.
    let r = w.run(&["--approve", "--dry-run"]);
    r.expect_code(0);
    assert_eq!(r.receipt()["approval"], Value::Null);
    assert!(approval_requests(&w).is_empty());
}

#[test]
fn assent_approve_in_the_environment_is_an_on_off_value() {
    let w = World::new(ASSENT);
    revert_to_base(&w);
    // CI users write 1, true and yes alike.
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .env("ASSENT_APPROVE", "1")
        .run();
    r.expect_code(0);
    assert_eq!(r.receipt()["approval"], "approved");

    w.fake.reset_log();
    let r = w.invocation().env("ASSENT_APPROVE", "ture").run();
    r.expect_code(2);
    assert!(
        r.error_line()
            .contains("ASSENT_APPROVE is neither on nor off: \"ture\""),
        "the error names the variable: {}",
        r.stderr
    );
    assert_eq!(w.fake.requests().len(), 0, "nothing sent");
    assert!(r.receipt_text.is_none());

    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .env("ASSENT_APPROVE", "no")
        .run();
    r.expect_code(0);
    assert_eq!(r.receipt()["approval"], Value::Null);
}

#[test]
fn a_lost_approval_answer_is_settled_by_reading_again_not_by_resending() {
    let w = World::new(ASSENT);
    revert_to_base(&w);
    w.fake.inject(
        FaultRule::new(FaultAction::LostAck { close: false })
            .method("POST")
            .route(RouteKind::Approve),
    );
    let r = run_at_with(&w, NEW_SHA, &["--approve"]);
    r.expect_code(0);
    assert_eq!(r.receipt()["approval"], "approved");
    let sent: Vec<RouteKind> = approval_requests(&w).iter().map(|q| q.route).collect();
    assert_eq!(
        sent,
        [
            RouteKind::MrApprovals,
            RouteKind::Approve,
            RouteKind::MrApprovals
        ],
        "read, approve (answer lost), read: approved, nothing resent"
    );
    assert_eq!(approvals(&w), vec![fixtures::BOT_ID]);
}

#[test]
fn an_approval_gitlab_did_not_take_is_sent_again_after_a_read() {
    let w = World::new(ASSENT);
    revert_to_base(&w);
    w.fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .method("POST")
            .route(RouteKind::Approve)
            .nth(1),
    );
    let r = run_at_with(&w, NEW_SHA, &["--approve"]);
    r.expect_code(0);
    assert_eq!(r.receipt()["approval"], "approved");
    let sent: Vec<RouteKind> = approval_requests(&w).iter().map(|q| q.route).collect();
    assert_eq!(
        sent,
        [
            RouteKind::MrApprovals,
            RouteKind::Approve,
            RouteKind::MrApprovals,
            RouteKind::Approve
        ]
    );
    assert_eq!(approvals(&w), vec![fixtures::BOT_ID]);
}

#[test]
fn a_refused_approval_is_a_forge_failure_and_the_summary_is_not_left_verified() {
    let w = World::new(ASSENT);
    // The bot's token as a Reporter: it may post notes but not approve (403).
    w.fake.with_state(|s| {
        s.tokens.push(
            fake_gitlab::Token::new("glpat-bot-reporter", fixtures::BOT_ID, &["api"])
                .access_level(20),
        )
    });
    revert_to_base(&w);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .env("ASSENT_TOKEN", "glpat-bot-reporter")
        .args(&["--approve"])
        .run();
    r.expect_code(3);
    let line = r.error_line();
    assert!(
        line.contains("approval") && line.contains("APPROVE") && line.contains("403"),
        "{line}"
    );
    assert!(approvals(&w).is_empty());
    let marker = w.summary().body.lines().next().unwrap().to_owned();
    assert!(
        marker.contains("\"state\":\"reconciling\""),
        "a run that exits 3 leaves no verified summary: {marker}"
    );
    assert!(!r.stderr.contains("glpat-bot-reporter"));
}

// ---- hostile servers and transport edges ---------------------------------------------------

/// A SOCKS relay whose every CONNECT reaches `w`'s fake.
fn relay_to(w: &World) -> fake_gitlab::SocksRelay {
    fake_gitlab::SocksRelay::start(([127, 0, 0, 1], w.fake.port()).into())
}

/// The `per_page` of every discussions listing request logged so far.
fn discussion_page_sizes(w: &World) -> Vec<String> {
    w.fake
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.route == RouteKind::Discussions)
        .filter_map(|r| {
            r.query
                .split('&')
                .find_map(|pair| pair.strip_prefix("per_page="))
                .map(str::to_owned)
        })
        .collect()
}

/// Seventy comments of 999,000 characters by a Reporter push one 100-item discussions page
/// past the 64 MiB body limit: the page is asked again smaller and the run completes.
#[test]
fn seventy_comments_of_almost_a_million_characters_do_not_stop_the_run() {
    let w = World::new(ASSENT);
    for i in 0..70 {
        let (_, id) = w.fake.post_note(
            project(),
            mr(),
            fixtures::HUMAN_ID,
            &format!("comment {i} "),
        );
        w.fake.inflate_note(id, "x", 999_000);
    }
    let r = w.run(&[]);
    r.expect_code(0);
    assert_eq!(r.stderr, "", "no warning and no error");
    assert_eq!(r.receipt()["rescan"]["verified"], true, "{}", r.stdout);
    assert_eq!(w.threads_of(RETENTION).len(), 1);
    assert!(w.summary().body.contains("verified"));
    let sizes = discussion_page_sizes(&w);
    assert!(sizes.iter().any(|s| s == "50"), "{sizes:?}");
    w.assert_no_violations();
    r.assert_no_token();

    // The rerun lists the same comments and writes nothing.
    w.fake.reset_log();
    let rerun = w.run(&[]);
    rerun.expect_code(0);
    assert_eq!(w.writes().len(), 0);
}

#[test]
fn a_socks_proxy_carries_the_run() {
    let w = World::new(ASSENT);
    let relay = relay_to(&w);
    for (var, scheme) in [
        ("ALL_PROXY", "socks5"),
        ("HTTP_PROXY", "socks5h"),
        ("http_proxy", "socks4a"),
    ] {
        let before = relay.connects().len();
        let r = w
            .invocation()
            .env(var, &format!("{scheme}://{}", relay.authority()))
            .run();
        r.expect_code(0);
        assert_eq!(r.stderr, "", "{var}={scheme}://");
        assert!(
            relay.connects().len() > before,
            "{var}={scheme}:// did not go through the proxy"
        );
        r.assert_no_token();
    }
    assert_eq!(w.threads_of(RETENTION).len(), 1);
}

/// A proxy that cannot be reached refuses the connection: the `help:` line names the proxy
/// and `NO_PROXY`, whatever words the refusal itself uses.
#[test]
fn a_dead_proxy_is_named_in_the_help_line() {
    let w = World::new(ASSENT);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let r = w
        .invocation()
        .env("HTTP_PROXY", &format!("http://127.0.0.1:{port}"))
        .run();
    r.expect_code(3);
    let help = r
        .stderr
        .lines()
        .find(|l| l.starts_with("help: "))
        .unwrap_or_else(|| panic!("no help line: {}", r.stderr));
    assert!(
        help.starts_with(
            "help: the proxy from HTTPS_PROXY, HTTP_PROXY or ALL_PROXY could not be reached"
        ) && help.contains("NO_PROXY"),
        "{help}"
    );
    assert!(w.fake.requests().is_empty());
}

#[test]
fn an_unusable_proxy_is_a_usage_error_naming_the_variable_and_never_a_panic() {
    let w = World::new(ASSENT);
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
        for value in [
            "ftp://proxy.example:21",
            "socks4://user:s3cret@127.0.0.1:1080",
            "garbage with spaces",
            "http://:8080",
            "socks6://127.0.0.1:1080",
        ] {
            let r = w.invocation().env(var, value).run();
            r.expect_code(2);
            let line = r.error_line();
            assert!(
                line.starts_with("error: ")
                    && line.contains(&format!("{var}="))
                    && line.contains("socks5h://"),
                "{var}={value}: {line}"
            );
            assert!(!line.contains("s3cret"), "{line}");
        }
    }
    // HTTPS_PROXY applies to an https:// API base.
    let r = w
        .invocation()
        .env("CI_API_V4_URL", "https://127.0.0.1:1/api/v4")
        .env("HTTPS_PROXY", "ftp://proxy.example:21")
        .run();
    r.expect_code(2);
    assert!(r.error_line().contains("HTTPS_PROXY="), "{}", r.stderr);
    assert!(
        w.fake.requests().is_empty(),
        "nothing is sent with an unusable proxy"
    );

    // Usable values that lead nowhere: a forge failure, never a panic.
    for value in [
        "http://user:s3cret@127.0.0.1:1",
        "SOCKS5H://user:s3cret@127.0.0.1:1",
    ] {
        let r = w.invocation().env("ALL_PROXY", value).run();
        r.expect_code(3);
        assert!(!r.stderr.contains("s3cret"), "{}", r.stderr);
    }
}

#[test]
fn a_plain_http_api_url_to_a_remote_host_warns_once_on_stderr_only() {
    let w = World::new(ASSENT);
    let relay = relay_to(&w);
    let remote = |allow: Option<&str>| {
        let mut invocation = w
            .invocation()
            .env("CI_API_V4_URL", "http://gitlab.example.test/api/v4")
            .env("ALL_PROXY", &format!("socks5h://{}", relay.authority()))
            .args(&["--format", "json"]);
        if let Some(value) = allow {
            invocation = invocation.env("ASSENT_ALLOW_HTTP", value);
        }
        invocation.run()
    };
    let r = remote(None);
    r.expect_code(0);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one warning: {}", r.stderr);
    assert!(
        lines[0].starts_with("warning: ")
            && lines[0].contains("http://gitlab.example.test")
            && lines[0].contains("unencrypted")
            && lines[0].contains("ASSENT_ALLOW_HTTP=1"),
        "{}",
        lines[0]
    );
    let stdout: Value = serde_json::from_str(&r.stdout).expect("stdout is only the receipt");
    assert_eq!(stdout, r.receipt());
    r.assert_no_token();

    for allow in ["1", " 1 "] {
        let r = remote(Some(allow));
        r.expect_code(0);
        assert_eq!(r.stderr, "", "ASSENT_ALLOW_HTTP={allow:?}");
    }
    let r = remote(Some("0"));
    assert_eq!(r.stderr.lines().count(), 1, "only 1 allows: {}", r.stderr);
}

#[test]
fn a_next_link_with_user_info_aborts_the_run_before_any_write() {
    let w = World::new(ASSENT);
    for i in 0..120 {
        w.fake
            .post_thread(project(), mr(), fixtures::HUMAN_ID, &format!("thread {i}"));
    }
    w.fake.set_link_pagination(true, Some("assent:s3cret"));
    let r = w.run(&[]);
    r.expect_code(3);
    let line = r.error_line();
    assert!(
        line.contains("discussions") && line.contains("user-info"),
        "{line}"
    );
    assert!(
        !line.contains("s3cret") && !line.contains("assent:"),
        "{line}"
    );
    assert!(r.receipt_text.is_none());
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    for request in w.fake.requests() {
        assert!(
            request
                .headers
                .iter()
                .all(|(k, _)| !k.eq_ignore_ascii_case("authorization")),
            "{request:?}"
        );
    }
    r.assert_no_token();
}

// ---- 16: the target branch is pinned (docs/contract.md#pinned-target) ---------------------------------------------

/// A branch whose tree has the registry but no `.assent/policies/`.
const BARE_BRANCH: &str = "no-policies";
const BARE_SHA: &str = "6666666666666666666666666666666666666666";

/// Adds [`BARE_BRANCH`] at [`BARE_SHA`]: the base's registry, no policies.
fn add_bare_branch(w: &World) {
    w.put_file(BARE_SHA, "topics/orders.yaml", ORDERS_BASE);
    w.fake.with_state(|s| {
        s.project_mut(project())
            .unwrap()
            .branches
            .insert(BARE_BRANCH.into(), BARE_SHA.into());
    });
}

/// The summary marker's `target`, `None` when it records none.
fn marker_target(body: &str) -> Option<String> {
    let marker = body.lines().next().unwrap();
    let json = marker
        .strip_prefix("<!-- assent:marker ")
        .and_then(|m| m.strip_suffix(" -->"))
        .unwrap();
    serde_json::from_str::<Value>(json).unwrap()["target"]
        .as_str()
        .map(str::to_owned)
}

#[track_caller]
fn assert_retargeted_refusal(r: &RunResult, pinned: &str, current: &str) {
    r.expect_code(0);
    assert!(
        r.stdout.starts_with(
            "assent: stale pipeline: the merge request was retargeted; nothing written"
        ),
        "{}",
        r.stdout
    );
    let warning = format!(
        "the merge request now targets `{current}`, not `{pinned}` as this pipeline pinned: stale pipeline, nothing written (a pipeline for the new target publishes)"
    );
    assert!(
        r.stdout.contains(&format!("warning: {warning}\n")),
        "{}",
        r.stdout
    );
    let receipt = r.receipt();
    assert_eq!(receipt["outcome"], "stale-pipeline");
    assert_eq!(receipt["decision"], Value::Null);
    for key in ["findings", "actions", "repairs"] {
        assert_eq!(receipt[key], json!([]), "{key}");
    }
    assert_eq!(receipt["warnings"], json!([warning]));
    assert_eq!(receipt["requests"]["writes"], 0);
    assert_key_order(r.receipt_text.as_deref().unwrap());
}

#[test]
fn a_retargeted_mr_is_a_stale_pipeline_that_writes_nothing() {
    let w = World::new(ASSENT);
    add_bare_branch(&w);
    // The pipeline ran for `main`; the MR has since been retargeted.
    w.fake.set_target_branch(project(), mr(), BARE_BRANCH);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main")
        .run();
    assert_retargeted_refusal(&r, "main", BARE_BRANCH);
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    assert!(w.discussions().is_empty());
    // Refused at the start: no policy, diff or file was read, and no listing taken.
    let routes: Vec<RouteKind> = w.fake.requests().iter().map(|r| r.route).collect();
    assert!(
        !routes.contains(&RouteKind::Discussions) && !routes.contains(&RouteKind::Diffs),
        "{routes:?}"
    );
    r.assert_no_token();

    // The flag wins over the environment, as for every input.
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", BARE_BRANCH)
        .args(&["--target-branch", "main"])
        .run();
    assert_retargeted_refusal(&r, "main", BARE_BRANCH);
    assert_eq!(w.writes().len(), 0);
    w.assert_no_violations();
}

#[test]
fn a_retarget_between_the_first_check_and_the_first_write_stops_the_run_without_writing() {
    let w = World::new(ASSENT);
    add_bare_branch(&w);
    // No target in the environment: the run pins the MR's `target_branch` read at start.
    let r = run_changed_before_first_write(&w, |w| {
        w.fake.set_target_branch(project(), mr(), BARE_BRANCH)
    });
    assert_retargeted_refusal(&r, "main", BARE_BRANCH);
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    assert!(w.discussions().is_empty());
    let mr_reads = w
        .fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::MergeRequest)
        .count();
    assert_eq!(
        mr_reads, 2,
        "the target is checked at start and before the first write"
    );
    r.assert_no_token();
}

#[test]
fn a_target_without_policies_is_stated_in_the_summary_and_judged_again_after_a_retarget() {
    let w = World::new(ASSENT);
    add_bare_branch(&w);
    w.fake.set_target_branch(project(), mr(), BARE_BRANCH);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", BARE_BRANCH)
        .env("CI_MERGE_REQUEST_TARGET_BRANCH_SHA", BARE_SHA)
        .args(&["--fail-on", "review"])
        .run();
    // Nothing governs that branch, so nothing gates; but the summary says why.
    r.expect_code(0);
    let warning = format!(
        "no policies on `{BARE_BRANCH}`: the target branch has no .assent/policies/, so no policy judged this merge request"
    );
    assert!(
        r.stdout.contains(&format!("warning: {warning}\n")),
        "{}",
        r.stdout
    );
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "APPROVE");
    assert_eq!(receipt["pins"]["targetSha"], BARE_SHA);
    assert_eq!(receipt["warnings"], json!([warning]));
    let summary = w.summary();
    assert!(
        summary
            .body
            .contains(&format!("**No policies on `{BARE_BRANCH}`.**")),
        "{}",
        summary.body
    );
    assert!(
        summary.body.contains("no policy judged this merge request"),
        "{}",
        summary.body
    );
    assert_eq!(marker_target(&summary.body).as_deref(), Some(BARE_BRANCH));
    assert!(w.threads_of(RETENTION).is_empty());

    // Retargeted to `main`, the next pipeline judges it under main's policies.
    w.fake.set_target_branch(project(), mr(), "main");
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main")
        .run();
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "REVIEW");
    assert_eq!(r.receipt()["warnings"], json!([]));
    let summary = w.summary();
    assert!(!summary.body.contains("No policies"), "{}", summary.body);
    assert_eq!(marker_target(&summary.body).as_deref(), Some("main"));
    w.thread(RETENTION);
    w.assert_no_violations();
}

#[test]
fn the_summary_records_the_pinned_target_and_a_rerun_stays_at_zero_writes() {
    let w = World::new(ASSENT);
    let pinned = || {
        w.invocation()
            .env("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main")
            .run()
    };
    pinned().expect_code(0);
    let summary = w.summary();
    assert_eq!(marker_target(&summary.body).as_deref(), Some("main"));
    let gate = summary.body.lines().last().unwrap();
    assert!(
        gate.starts_with(r#"<!-- assent:gate {"decision":"REVIEW","resolutions":"sha256:"#),
        "the gate line is last: {gate}"
    );
    w.fake.reset_log();
    let r = pinned();
    r.expect_code(0);
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    assert_eq!(w.summary().body, summary.body);

    // A resolution changes the gate line's fingerprint: the summary is edited, once.
    let thread = w.thread(RETENTION);
    w.fake
        .resolve(project(), mr(), &thread.id, fixtures::HUMAN_ID, true);
    pinned().expect_code(0);
    let edited = w.summary();
    assert_ne!(edited.body.lines().last(), Some(gate));
    w.fake.reset_log();
    pinned().expect_code(0);
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    assert_eq!(w.summary().body, edited.body);
}

// ---- progress on stderr (docs/contract.md#progress) --------------------------------------------------------

/// The progress lines without their `[… s]` times.
fn phases(r: &RunResult) -> Vec<String> {
    r.progress
        .iter()
        .map(|l| {
            let (text, time) = l.rsplit_once(" [").expect("a time");
            assert!(time.ends_with(" s]"), "{l}");
            text.to_owned()
        })
        .collect()
}

#[test]
fn a_run_with_writes_says_each_phase_on_stderr_in_order() {
    let w = World::new(ASSENT);
    let r = w.run(&[]);
    r.expect_code(0);
    assert_eq!(r.stderr, "", "no error or warning");
    assert_eq!(
        phases(&r),
        [
            "progress: inputs read: 2 policy files, 1 changed file (6 requests)",
            "progress: desired state: 1 finding of 1 rule",
            "progress: listed 0 discussions (1 request)",
            "progress: plan: 2 writes, then 1 to mark the summary verified",
            "progress: writes 1/2",
            "progress: writes 2/2",
            "progress: rescan listed 2 discussions (1 request)",
            "progress: confirmation listed 2 discussions (1 request)",
            "progress: verified at 22222222",
        ]
    );
    assert_eq!(
        r.receipt()["requests"]["writes"],
        3,
        "the plan's 2 writes and the verified edit, as the plan line says"
    );
    r.assert_no_token();

    // A rerun: nothing to write, and it says so.
    let again = w.run(&[]);
    again.expect_code(0);
    assert_eq!(
        phases(&again)[3..],
        [
            "progress: plan: nothing to write",
            "progress: verified at 22222222"
        ]
    );
}

#[test]
fn quiet_and_json_runs_print_no_progress_and_stdout_is_unchanged() {
    let loud = World::new(ASSENT).run(&[]);
    loud.expect_code(0);
    assert!(!loud.progress.is_empty());

    let quiet = World::new(ASSENT).run(&["--quiet"]);
    quiet.expect_code(0);
    assert_eq!(quiet.progress, Vec::<String>::new());
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.stdout, loud.stdout, "progress never reaches stdout");

    let json = World::new(ASSENT).run(&["--format", "json"]);
    json.expect_code(0);
    assert_eq!(json.progress, Vec::<String>::new());
    assert_eq!(json.stderr, "");
    assert_eq!(
        json.stdout,
        json.receipt_text.clone().unwrap(),
        "stdout is exactly the receipt"
    );
}

#[test]
fn a_json_run_still_reports_its_error_on_stderr() {
    let w = World::new(ASSENT);
    w.fake.inject(
        FaultRule::new(FaultAction::RateLimitJson { retry_after: 60 })
            .method("POST")
            .route(RouteKind::Discussions),
    );
    let r = w.run(&["--format", "json", "--rate-limit-wait", "10s"]);
    r.expect_code(3);
    assert_eq!(r.progress, Vec::<String>::new());
    let line = r.error_line();
    assert!(line.starts_with("error: POST "), "{line}");
    assert!(line.contains("rate limited"), "{line}");
    assert!(line.contains("(0 s waited of 10 s)"), "{line}");
    assert!(line.contains("--rate-limit-wait"), "{line}");
    assert_eq!(r.stdout, "");
}

// ---- a bot thread of an undesired slot appears after a summary-only write ----------------

#[test]
fn a_foreign_open_thread_after_a_summary_only_write_is_not_verified() {
    use assent::core::model::{Effect, Finding, Occurrence, Slot};
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(0);
    // A human assents: the next run's only write is the summary (REVIEW → APPROVE), which
    // goes straight to "verified"; the rescan that follows is the only check.
    let thread = w.thread(RETENTION);
    w.fake
        .resolve(project(), mr(), &thread.id, fixtures::HUMAN_ID, true);
    w.fake.reset_log();
    w.fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: HoldApply::Before,
            timeout_ms: Some(20_000),
        })
        .method("GET")
        .route(RouteKind::Discussions)
        .nth(2),
    );
    let running = w.invocation().spawn();
    assert!(
        w.fake.wait_for_held(1, Duration::from_secs(30)),
        "the run never listed the discussions again"
    );
    // Meanwhile a concurrent, unserialized run posts a thread of a slot this run does not
    // want (one an older head desired).
    let foreign = Finding {
        slot: Slot {
            rule: "retention-shrink".into(),
            subject: "topics/orders.yaml#/topics/gone.v1/retention_days".into(),
        },
        effect: Effect::Challenge,
        occurrence: Occurrence::digest(b"an older head"),
        message: "Retention shrinks".into(),
    };
    let body = assent::core::render::finding_thread_body(&foreign);
    let (foreign_id, _) = w.fake.post_thread(project(), mr(), fixtures::BOT_ID, &body);
    w.fake.release_holds();
    let r = running.wait();

    r.expect_code(3);
    assert!(
        r.stderr.contains("which is not desired, is unresolved"),
        "{}",
        r.stderr
    );
    let marker = w.summary().body.lines().next().unwrap().to_owned();
    assert!(
        marker.contains("\"state\":\"reconciling\""),
        "the summary must not say verified: {marker}"
    );
    assert!(
        w.writes()
            .iter()
            .any(|q| q.method == "PUT" && q.route == RouteKind::Note),
        "the summary was set back"
    );

    // The next run resolves the stray thread as outdated and verifies.
    w.fake.clear_faults();
    let r = w.run(&[]);
    r.expect_code(0);
    assert!(r.stdout.contains("rescan verified"), "{}", r.stdout);
    let stray = w
        .discussions()
        .into_iter()
        .find(|d| d.id == foreign_id)
        .unwrap();
    assert!(stray.resolved(), "{stray:#?}");
    assert!(w.summary().body.contains("\"state\":\"verified\""));
    w.assert_no_violations();
}
