//! The first run, its rerun, and what a rescan must see before a run claims "verified".

use super::*;

// ---- 1, 2: first run and rerun ------------------------------------------------------------

#[test]
fn first_run_publishes_a_thread_and_a_verified_summary() {
    let w = World::new(ASSENT);
    // A job that passes on REVIEW (`--fail-on block`), so stderr has no gate line.
    let r = w.run(&["--fail-on", "block"]);
    r.expect_code(0);
    assert_eq!(r.stderr, "", "a successful run is quiet on stderr");
    // The whole text report: the decision line, each action, the request counts and the
    // rescan.
    insta::assert_snapshot!("first_run_text", r.stdout);

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

/// docs/contract.md#run-inputs: `--fail-on` defaults to `review`, so a hand-written job
/// that leaves it out never lets a `REVIEW` pass; `block` must be asked for.
#[test]
fn without_fail_on_a_review_decision_fails_the_job() {
    let w = World::new(ASSENT);
    let r = w.run(&[]);
    r.expect_code(1);
    let line = r.error_line();
    assert!(
        line.contains("REVIEW") && line.contains("--fail-on review"),
        "{line}"
    );
    assert_eq!(r.receipt()["outcome"], "published");
    assert_eq!(r.receipt()["decision"], "REVIEW");
    w.run(&["--fail-on", "block"]).expect_code(0);
}

#[test]
fn a_rerun_writes_nothing_and_its_receipt_is_byte_identical() {
    let w = World::new(ASSENT);
    let first = w.run(&[]);
    first.expect_code(1);
    let discussions = w.discussions();

    w.fake.reset_log();
    let second = w.run(&[]);
    second.expect_code(1);
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
    // The rerun's text report: every action left untouched, zero writes, verified.
    insta::assert_snapshot!("rerun_text", second.stdout);

    // Apart from the actions' verbs, the rerun's receipt says what the first one did.
    let mut a = first.receipt_without_requests();
    let mut b = second.receipt_without_requests();
    a["actions"][0]["action"] = Value::Null;
    b["actions"][0]["action"] = Value::Null;
    assert_eq!(a, b);

    // And a third run's receipt is byte-identical to the second's, request counts aside.
    let third = w.run(&[]);
    third.expect_code(1);
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

// ---- a bot thread of an undesired slot appears after a summary-only write ----------------

#[test]
fn a_foreign_open_thread_after_a_summary_only_write_is_not_verified() {
    use assent::core::model::{Effect, Finding, Occurrence, Slot};
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
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
