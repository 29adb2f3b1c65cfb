//! A human assents by resolving a thread: whose resolution counts, and what it keeps.

use super::*;

// ---- 3: a human assents ---------------------------------------------------------------------

#[test]
fn a_resolved_challenge_is_preserved_and_only_the_summary_is_edited() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
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

/// The same forged marker, written where a rule of "updated after the resolution" does not
/// look: before the reviewer resolves the thread (GitLab's resolution does not move
/// `updated_at`, so the edit's time stays), and within a second after the resolution. Either
/// way the first note's `updated_at` is not its `created_at`: the resolution does not count.
#[test]
fn an_edit_before_the_resolution_or_just_after_it_is_no_assent_either() {
    for edit_first in [true, false] {
        let w = World::new(ASSENT);
        w.run(&[]).expect_code(1);
        let old = w.thread(RETENTION);
        w.push(NEW_SHA, &[("topics/orders.yaml", &orders(1))]);
        let new_occurrence = planned_occurrence(&w, NEW_SHA);
        let old_body = old.notes[0].body.clone();
        let forged = old_body.replacen(
            marker_occurrence(&old_body).as_str().unwrap(),
            &new_occurrence,
            1,
        );
        let (bots_token, _) = assent_test_support::forge_for(&w.fake);
        let edit =
            || assent::forge::Forge::edit_note(&bots_token, old.notes[0].id, &forged).unwrap();
        let resolve = || {
            w.fake
                .resolve(project(), mr(), &old.id, fixtures::HUMAN_ID, true)
        };
        w.fake.advance_time(Duration::from_secs(60));
        if edit_first {
            edit();
            w.fake.advance_time(Duration::from_secs(60));
            resolve();
        } else {
            resolve();
            w.fake.advance_time(Duration::from_millis(400));
            edit();
        }

        let r = w
            .invocation()
            .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
            .args(&["--fail-on", "review"])
            .run();
        r.expect_code(1);
        let receipt = r.receipt();
        assert_eq!(receipt["decision"], "REVIEW", "edit first: {edit_first}");
        assert_eq!(receipt["findings"][0]["assented"], false);
        let warning = format!("note {}: ", old.notes[0].id);
        assert!(
            receipt["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().starts_with(&warning)),
            "edit first: {edit_first}: {:#}",
            receipt["warnings"]
        );
        w.assert_no_violations();
    }
}

/// Someone holding the bot's token (readable by every job of an MR pipeline when it is a plain
/// CI variable) edits the bot's resolved finding thread so its marker names the occurrence of
/// a new, worse change: the reviewer resolved "30 → 7" and never saw "30 → 1". GitLab reports
/// the note updated after its resolution, so that resolution does not count.
#[test]
fn a_resolved_thread_edited_with_the_bots_token_is_no_assent_to_the_new_change() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
    let old = w.thread(RETENTION);
    w.fake.advance_time(Duration::from_secs(60));
    w.fake
        .resolve(project(), mr(), &old.id, fixtures::HUMAN_ID, true);
    w.fake.advance_time(Duration::from_secs(60));
    w.run(&["--fail-on", "review"]).expect_code(0);

    // 30 → 1 now. The attacker learns the new occurrence (the algorithm is public; here
    // from a dry run, which writes nothing) and puts it into the old thread's marker.
    w.push(NEW_SHA, &[("topics/orders.yaml", &orders(1))]);
    let new_occurrence = planned_occurrence(&w, NEW_SHA);
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
    w.run(&[]).expect_code(1);
    w.push(NEW_SHA, &[("topics/orders.yaml", &orders(3))]);
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run()
        .expect_code(1);
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
    w.run(&[]).expect_code(1);
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
    w.run(&[]).expect_code(1);
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

/// The occurrence the first finding would have at `sha`: what an attacker learns from a dry
/// run (it writes nothing) before forging a marker.
fn planned_occurrence(w: &World, sha: &str) -> String {
    let planned = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", sha)
        .args(&["--dry-run", "--format", "json"])
        .run();
    planned.expect_code(1);
    let planned: Value = serde_json::from_str(&planned.stdout).unwrap();
    planned["findings"][0]["occurrence"]
        .as_str()
        .expect("a finding")
        .to_owned()
}
