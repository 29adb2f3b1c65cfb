//! Forge failures that stop a run before its first write, and known problems kept as ignored tests.

use super::*;

// ---- 14: a listing that cannot be completed -------------------------------------------------

#[test]
fn a_discussion_listing_that_keeps_failing_aborts_before_any_write() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
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

// ---- known problems outside this file's reach (ignored until fixed) --------------------------

/// docs/contract.md#desired-state: "a request that still fails after its retries is a forge failure (exit 3, zero
/// writes when it happens before the first write)". Publishing an `assent/undecidable`
/// finding instead would resolve the pending challenge as "Outdated" on a guess.
#[test]
fn a_diff_listing_that_keeps_failing_is_a_forge_failure() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
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
    w.run(&[]).expect_code(1);
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
