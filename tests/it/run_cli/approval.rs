//! The bot's approval (`--approve`, docs/contract.md#approvals).

use super::*;

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
    w.run(&["--approve"]).expect_code(1);
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

// ---- an approval already so (docs/contract.md#approvals-already-so) ------------------------------

/// The fake's version profiles: GitLab 18 answers an approval already so with 304, earlier
/// GitLab with 401 (approve) or 404 (unapprove), `lib/api/merge_request_approvals.rb`.
const ALREADY_SO_PROFILES: [(&str, u16, u16); 2] = [("18.6.0", 304, 304), ("17.11.0", 401, 404)];

/// Runs `assent run --approve --fail-on review` at `head` with the approval write of `route`
/// held until `meanwhile` (what another actor does between the run's read and its write) has
/// run.
fn race_approval_write(
    w: &World,
    head: &str,
    route: RouteKind,
    meanwhile: impl FnOnce(&World),
) -> RunResult {
    w.fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: HoldApply::Before,
            timeout_ms: Some(20_000),
        })
        .method("POST")
        .route(route)
        .nth(1),
    );
    let running = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", head)
        .args(&["--approve", "--fail-on", "review"])
        .spawn();
    assert!(
        w.fake.wait_for_held(1, Duration::from_secs(30)),
        "the run never sent the approval write"
    );
    meanwhile(w);
    w.fake.release_holds();
    running.wait()
}

#[test]
fn an_approval_that_is_already_there_when_it_is_sent_settles_under_both_profiles() {
    for (version, approve_status, _) in ALREADY_SO_PROFILES {
        let w = World::new(ASSENT);
        w.fake.with_state(|s| s.version = version.into());
        revert_to_base(&w);
        // Another run of the bot approves between this run's read and its write.
        let r = race_approval_write(&w, NEW_SHA, RouteKind::Approve, |w| {
            w.fake.set_approved(project(), mr(), fixtures::BOT_ID, true)
        });
        r.expect_code(0);
        let receipt = r.receipt();
        assert_eq!(receipt["outcome"], "published", "{version}");
        assert_eq!(receipt["approval"], "unchanged", "{version}");
        let answers: Vec<(RouteKind, Option<u16>)> = approval_requests(&w)
            .iter()
            .map(|q| (q.route, q.status))
            .collect();
        assert_eq!(
            answers,
            [
                (RouteKind::MrApprovals, Some(200)),
                (RouteKind::Approve, Some(approve_status)),
                (RouteKind::MrApprovals, Some(200)),
            ],
            "{version}: read, approve (already so), read; nothing resent"
        );
        assert_eq!(approvals(&w), vec![fixtures::BOT_ID]);
        assert!(r.stdout.contains("approval: unchanged"), "{}", r.stdout);
        let marker = w.summary().body.lines().next().unwrap().to_owned();
        assert!(marker.contains("\"state\":\"verified\""), "{marker}");
    }
}

#[test]
fn an_approval_that_is_already_gone_when_withdrawn_settles_under_both_profiles() {
    for (version, _, unapprove_status) in ALREADY_SO_PROFILES {
        let w = World::new(ASSENT);
        w.fake.with_state(|s| {
            s.version = version.into();
            s.projects[0].approvals.reset_approvals_on_push = false;
        });
        revert_to_base(&w);
        run_at_with(&w, NEW_SHA, &["--approve"]).expect_code(0);
        w.push(NEWER_SHA, &[("topics/orders.yaml", &orders(7))]);
        w.fake.reset_log();
        // A person withdraws the bot's approval between this run's read and its write.
        let r = race_approval_write(&w, NEWER_SHA, RouteKind::Unapprove, |w| {
            w.fake
                .set_approved(project(), mr(), fixtures::BOT_ID, false)
        });
        r.expect_code(1);
        let receipt = r.receipt();
        assert_eq!(receipt["decision"], "REVIEW", "{version}");
        assert_eq!(receipt["approval"], "unchanged", "{version}");
        let answers: Vec<(RouteKind, Option<u16>)> = approval_requests(&w)
            .iter()
            .map(|q| (q.route, q.status))
            .collect();
        assert_eq!(
            answers,
            [
                (RouteKind::MrApprovals, Some(200)),
                (RouteKind::Unapprove, Some(unapprove_status)),
                (RouteKind::MrApprovals, Some(200)),
            ],
            "{version}"
        );
        assert!(approvals(&w).is_empty());
        let marker = w.summary().body.lines().next().unwrap().to_owned();
        assert!(marker.contains("\"state\":\"verified\""), "{marker}");
    }
}
