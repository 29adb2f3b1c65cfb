//! Pushes that change, or revert, the judged value.

use super::*;

// ---- 4: a push that changes the judged value ------------------------------------------------

#[test]
fn a_push_that_changes_the_judged_value_supersedes_a_resolved_thread() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
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
    r.expect_code(1);
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
    r.expect_code(1);
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
        .expect_code(1);
    assert!(w.writes().is_empty(), "{:#?}", w.writes());
    w.assert_no_violations();
}

#[test]
fn a_push_that_changes_the_judged_value_retires_an_unresolved_thread() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
    let old = w.thread(RETENTION);

    w.push(NEW_SHA, &[("topics/orders.yaml", &orders(3))]);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run();
    r.expect_code(1);
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
    w.run(&[]).expect_code(1);
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
