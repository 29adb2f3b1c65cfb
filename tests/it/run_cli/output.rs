//! What the run prints: the dry run's plan, the receipt as JSON, progress on stderr.

use super::*;

// ---- 10: dry run and JSON -------------------------------------------------------------------

#[test]
fn a_dry_run_prints_the_plan_and_writes_nothing() {
    let w = World::new(ASSENT);
    let r = w.run(&["--dry-run"]);
    r.expect_code(1);
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
    w.run(&[]).expect_code(1);
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
    r.expect_code(1);
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
    // A job that passes on REVIEW (`--fail-on block`), so stderr has no gate line.
    let r = w.run(&["--fail-on", "block"]);
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
    again.expect_code(1);
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
    // Jobs that pass on REVIEW (`--fail-on block`), so stderr has no gate line.
    let loud = World::new(ASSENT).run(&["--fail-on", "block"]);
    loud.expect_code(0);
    assert!(!loud.progress.is_empty());

    let quiet = World::new(ASSENT).run(&["--quiet", "--fail-on", "block"]);
    quiet.expect_code(0);
    assert_eq!(quiet.progress, Vec::<String>::new());
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.stdout, loud.stdout, "progress never reaches stdout");

    let json = World::new(ASSENT).run(&["--format", "json", "--fail-on", "block"]);
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
