//! The designed refusals: a stale pipeline, a closed MR, a head that moves or a retarget before the first write.

use super::*;

// ---- 9: designed refusals -------------------------------------------------------------------

#[test]
fn a_stale_pipeline_writes_nothing() {
    let w = World::new(ASSENT);
    w.fake.set_head(project(), mr(), NEW_SHA);
    let r = w.run(&[]);
    r.expect_code(0);
    assert_eq!(r.stderr, "");
    // The whole text report of the refusal: what moved, and that nothing was written.
    insta::assert_snapshot!("stale_pipeline_text", r.stdout);
    assert_eq!(w.writes().len(), 0);
    assert!(w.discussions().is_empty());
    let receipt = r.receipt();
    assert_refusal(&receipt, "stale-pipeline");
    assert_eq!(receipt["pins"]["sourceSha"], fixtures::HEAD_SHA);
    assert_eq!(receipt["pins"]["targetSha"], fixtures::TARGET_SHA);
    assert_eq!(receipt["pins"]["baseSha"], fixtures::BASE_SHA);
    assert_eq!(receipt["pins"]["policyDigest"], "", "no policy was read");
    assert_key_order(r.receipt_text.as_deref().unwrap());
    r.assert_no_token();
}

/// A run refused at its start keeps every key of `pins`: a target the pipeline did not pin is
/// `""` (nothing was read to learn it), the base is the MR's own diff base
/// (docs/contract.md#receipt).
#[test]
fn a_stale_pipeline_that_pinned_no_target_writes_it_empty() {
    let w = World::new(ASSENT);
    w.fake.set_head(project(), mr(), NEW_SHA);
    let r = w
        .invocation()
        .without("CI_MERGE_REQUEST_TARGET_BRANCH_SHA")
        .without("CI_MERGE_REQUEST_DIFF_BASE_SHA")
        .run();
    r.expect_code(0);
    let receipt = r.receipt();
    assert_refusal(&receipt, "stale-pipeline");
    assert_eq!(
        receipt["pins"],
        json!({
            "sourceSha": fixtures::HEAD_SHA,
            "targetSha": "",
            "baseSha": fixtures::BASE_SHA,
            "policyDigest": ""
        })
    );
    assert_eq!(w.writes().len(), 0);
}

/// A SHA no diff version of the MR ever had as its head (`GET …/versions`,
/// `head_commit_sha` of each: gitlabhq `lib/api/merge_request_diffs.rb`) is no stale
/// pipeline: the job is not this MR's. Exit 2 (configuration, not retried), both SHAs named,
/// nothing written, no receipt; an earlier head stays the quiet stale pipeline above.
#[test]
fn a_source_sha_that_was_never_a_head_is_a_configuration_error() {
    const STRANGER: &str = "9999999999999999999999999999999999999999";
    let w = World::new(ASSENT);
    w.push(NEW_SHA, &[("topics/orders.yaml", ORDERS_BASE)]);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", STRANGER)
        .run();
    r.expect_code(2);
    assert!(
        r.stderr.contains(&format!(
            "the pinned source SHA {STRANGER} was never a head of merge request !{}",
            mr()
        )) && r.stderr.contains(&format!("its head is {NEW_SHA}"))
            && r.stderr.contains("not the merge request's pipeline"),
        "{}",
        r.stderr
    );
    assert_eq!(w.writes().len(), 0);
    assert!(
        r.receipt_text.is_none(),
        "no receipt of a run that is not the MR's"
    );
    let versions = w
        .fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Versions)
        .count();
    assert_eq!(versions, 1);
    r.assert_no_token();
    // The head it replaced (the fixture's first head) was one: a quiet stale pipeline.
    let r = w.run(&[]);
    r.expect_code(0);
    assert_refusal(&r.receipt(), "stale-pipeline");
    assert_eq!(w.writes().len(), 0);
}

/// A versions listing that cannot be read whole fails closed: exit 3, nothing written,
/// never a guess either way.
#[test]
fn an_unreadable_versions_listing_fails_closed() {
    let w = World::new(ASSENT);
    w.fake.set_head(project(), mr(), NEW_SHA);
    w.fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .method("GET")
            .route(RouteKind::Versions),
    );
    let r = w.run(&[]);
    r.expect_code(3);
    assert!(r.stderr.contains("versions"), "{}", r.stderr);
    assert_eq!(w.writes().len(), 0);
    assert!(r.receipt_text.is_none());
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
    r.expect_code(1);
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
    pinned().expect_code(1);
    let summary = w.summary();
    assert_eq!(marker_target(&summary.body).as_deref(), Some("main"));
    let gate = summary.body.lines().last().unwrap();
    assert!(
        gate.starts_with(r#"<!-- assent:gate {"decision":"REVIEW","resolutions":"sha256:"#),
        "the gate line is last: {gate}"
    );
    w.fake.reset_log();
    let r = pinned();
    r.expect_code(1);
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
