//! Fault tolerance of `assent run` as real processes against the fake GitLab: SIGKILL at
//! every write, faults on reads and writes, and unserialized concurrent runs. Every case
//! asserts the forge state the runs leave, not only exit codes.
//!
//! The scenario (`support::process::Scenario::many_writes`) is built once by running the
//! binary and captured as a fake state; each case starts a fresh fake from it. The
//! reference is a clean run's final state with note ids normalised. The same scenario on an
//! MR that lists real diffs (`many_writes_on_diff_lines`: its threads are DiffNotes) is
//! killed at every write too.

use std::collections::BTreeSet;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use assent::core::marker::SummaryState;
use assent_test_support as support;
use fake_gitlab::{FakeGitLab, FaultAction, FaultRule, HoldApply, RouteKind, fixtures};
use support::process::{
    HEAD_A, Scenario, assent_run, check_invariants, describe, desired_slots_b, inventory,
    normalized_state, receipt, spawn_assent, wait_bounded,
};

use crate::ASSENT;

const WAIT: Duration = Duration::from_secs(20);

/// The many-writes scenario and a clean run's outcome on it.
struct Reference {
    scenario: Scenario,
    /// Writes of the clean run.
    writes: usize,
    /// Its final state, normalised.
    state: Vec<String>,
}

fn reference() -> &'static Reference {
    static REFERENCE: OnceLock<Reference> = OnceLock::new();
    REFERENCE.get_or_init(|| clean_run(Scenario::many_writes(ASSENT)))
}

/// The many-writes scenario on diff lines and a clean run's outcome on it.
fn diff_note_reference() -> &'static Reference {
    static REFERENCE: OnceLock<Reference> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let reference = clean_run(Scenario::many_writes_on_diff_lines(ASSENT));
        let on_lines = reference
            .state
            .iter()
            .filter(|line| line.contains(" at=topics/orders.yaml:"))
            .count();
        assert!(
            on_lines >= 4,
            "the threads sit on diff lines: {:#?}",
            reference.state
        );
        reference
    })
}

fn clean_run(scenario: Scenario) -> Reference {
    let fake = scenario.start();
    let dir = tempfile::tempdir().unwrap();
    let out = assent_run(ASSENT, &fake, dir.path(), scenario.head, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    check_invariants(&fake, &desired_slots_b(), scenario.head).unwrap();
    let r = receipt(dir.path());
    assert_eq!(r["rescan"]["verified"], true);
    let repairs = r["repairs"].as_array().unwrap();
    assert_eq!(
        repairs.len(),
        2,
        "one duplicate thread, one duplicate summary: {r}"
    );
    Reference {
        writes: fake.writes(),
        state: normalized_state(&fake),
        scenario,
    }
}

/// Reruns on `fake` until done: one run that must verify, then one that must write nothing.
fn rerun_converges(fake: &FakeGitLab, head: &str, case: &str) {
    rerun_converges_to(reference(), fake, head, case);
}

/// [`rerun_converges`] towards `reference`'s clean state.
fn rerun_converges_to(reference: &Reference, fake: &FakeGitLab, head: &str, case: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = assent_run(ASSENT, fake, dir.path(), head, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{case}: rerun\n{}",
        describe(&out)
    );
    assert_eq!(receipt(dir.path())["rescan"]["verified"], true, "{case}");
    assert_same_state(fake, &reference.state, case);
    check_invariants(fake, &desired_slots_b(), head).unwrap_or_else(|e| panic!("{case}: {e}"));
    let writes = fake.writes();
    let out = assent_run(ASSENT, fake, dir.path(), head, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{case}: third run\n{}",
        describe(&out)
    );
    assert_eq!(fake.writes(), writes, "{case}: third run wrote");
    assert!(
        fake.violations().is_empty(),
        "{case}: {:?}",
        fake.violations()
    );
}

/// The normalised state of `fake` equals `expected`; the message names only the lines that
/// differ.
fn assert_same_state(fake: &FakeGitLab, expected: &[String], case: &str) {
    let actual = normalized_state(fake);
    if actual != expected {
        let extra: Vec<_> = actual.iter().filter(|l| !expected.contains(l)).collect();
        let missing: Vec<_> = expected.iter().filter(|l| !actual.contains(l)).collect();
        panic!(
            "{case}: final state differs from a clean run's\nonly here:\n{extra:#?}\nonly in the clean run:\n{missing:#?}"
        );
    }
}

/// Writes the fake answered with 2xx (a held answer counts once released).
fn applied_writes(fake: &FakeGitLab) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.write && matches!(r.status, Some(200..=299)))
        .count()
}

/// Waits (bounded) until the log shows `k` applied writes; returns what it shows.
fn settle_applied(fake: &FakeGitLab, k: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    while applied_writes(fake) < k && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    applied_writes(fake)
}

#[test]
fn sigkill_after_every_write_then_a_rerun_converges_on_the_clean_state() {
    let reference = reference();
    let w = reference.writes;
    assert!(w >= 8, "scenario too small: {w} writes");
    for k in 0..w {
        let case = format!("SIGKILL after {k} of {w} writes");
        let fake = reference.scenario.start();
        // The (k+1)-th write never reaches the state; the process dies while waiting.
        fake.inject(
            FaultRule::new(FaultAction::Hold {
                apply: HoldApply::Never,
                timeout_ms: None,
            })
            .any_write()
            .nth(k as u64 + 1),
        );
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn_assent(ASSENT, &fake, dir.path(), reference.scenario.head);
        assert!(fake.wait_for_held(1, WAIT), "{case}: write never held");
        child.kill().unwrap();
        child.wait().unwrap();
        fake.release_holds();
        fake.clear_faults();
        assert_eq!(settle_applied(&fake, k), k, "{case}");
        assert!(
            !dir.path().join("assent-receipt.json").exists(),
            "{case}: a killed run left a receipt"
        );
        rerun_converges(&fake, reference.scenario.head, &case);
    }
}

/// Crash safety with DiffNotes: SIGKILL before every write, and after every write whose
/// answer is still held, on the scenario whose threads sit on diff lines. Every case
/// converges on the clean run's state, each thread on its line, none posted twice.
#[test]
fn diff_notes_sigkill_at_every_write_then_a_rerun_converges_on_the_clean_state() {
    let reference = diff_note_reference();
    let w = reference.writes;
    assert!(w >= 8, "scenario too small: {w} writes");
    for (apply, first, last) in [(HoldApply::Never, 0, w - 1), (HoldApply::After, 1, w)] {
        for k in first..=last {
            let case = format!("DiffNotes: SIGKILL at write {k} of {w} ({apply:?})");
            let fake = reference.scenario.start();
            let nth = if apply == HoldApply::Never { k + 1 } else { k };
            fake.inject(
                FaultRule::new(FaultAction::Hold {
                    apply,
                    timeout_ms: None,
                })
                .any_write()
                .nth(nth as u64),
            );
            let dir = tempfile::tempdir().unwrap();
            let mut child = spawn_assent(ASSENT, &fake, dir.path(), reference.scenario.head);
            assert!(fake.wait_for_held(1, WAIT), "{case}: write never held");
            child.kill().unwrap();
            child.wait().unwrap();
            fake.release_holds();
            fake.clear_faults();
            assert_eq!(settle_applied(&fake, k), k, "{case}");
            rerun_converges_to(reference, &fake, reference.scenario.head, &case);
        }
    }
}

#[test]
fn sigkill_while_an_applied_write_awaits_its_answer_then_a_rerun_converges() {
    let reference = reference();
    let w = reference.writes;
    for k in 1..=w {
        let case = format!("write {k} of {w} applied, answer held, SIGKILL");
        let fake = reference.scenario.start();
        fake.inject(
            FaultRule::new(FaultAction::Hold {
                apply: HoldApply::After,
                timeout_ms: None,
            })
            .any_write()
            .nth(k as u64),
        );
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn_assent(ASSENT, &fake, dir.path(), reference.scenario.head);
        assert!(fake.wait_for_held(1, WAIT), "{case}: write never held");
        child.kill().unwrap();
        child.wait().unwrap();
        fake.release_holds();
        fake.clear_faults();
        assert_eq!(settle_applied(&fake, k), k, "{case}");
        rerun_converges(&fake, reference.scenario.head, &case);
    }
}

/// After a converged run on `fake`: the reference state, the invariants, and a rerun that
/// writes nothing.
fn assert_converged(fake: &FakeGitLab, case: &str) {
    let reference = reference();
    let head = reference.scenario.head;
    assert_same_state(fake, &reference.state, case);
    check_invariants(fake, &desired_slots_b(), head).unwrap_or_else(|e| panic!("{case}: {e}"));
    let writes = fake.writes();
    let dir = tempfile::tempdir().unwrap();
    let out = assent_run(ASSENT, fake, dir.path(), head, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{case}: rerun\n{}",
        describe(&out)
    );
    assert_eq!(fake.writes(), writes, "{case}: rerun wrote");
    assert!(
        fake.violations().is_empty(),
        "{case}: {:?}",
        fake.violations()
    );
}

/// No write was sent twice without a listing in between: after every write that failed
/// (fault fired, or no 2xx), the next request is a GET.
fn assert_no_blind_write_retry(fake: &FakeGitLab, case: &str) {
    let log = fake.requests();
    for (i, request) in log.iter().enumerate() {
        let failed = request.fault.is_some() || !matches!(request.status, Some(200..=299));
        if request.write && failed {
            let next = log.get(i + 1);
            assert!(
                next.is_none_or(|n| n.method == "GET"),
                "{case}: after failed write #{} ({} {}) came {:?} without a listing",
                request.seq,
                request.method,
                request.path,
                next.map(|n| (&n.method, &n.path))
            );
        }
    }
}

/// Transient read faults: every kind on several reads. The run retries within its bounds,
/// publishes, and leaves the clean state.
#[test]
fn transient_read_faults_are_retried_and_the_run_leaves_the_clean_state() {
    let reference = reference();
    let hold_then_drop = FaultAction::Hold {
        apply: HoldApply::Never,
        timeout_ms: Some(200),
    };
    let cases: Vec<(&str, FaultRule, usize)> = vec![
        (
            "429 text (Retry-After: 0) x2 on the listing",
            FaultRule::new(FaultAction::RateLimitText { retry_after: 0 })
                .method("GET")
                .route(RouteKind::Discussions)
                .first_n(2),
            2,
        ),
        (
            "429 JSON (Retry-After: 1) on the MR",
            FaultRule::new(FaultAction::RateLimitJson { retry_after: 1 })
                .method("GET")
                .route(RouteKind::MergeRequest)
                .first_n(1),
            1,
        ),
        (
            "500 on a file read",
            FaultRule::new(FaultAction::ServerError)
                .method("GET")
                .path_contains("repository/files")
                .first_n(1),
            1,
        ),
        (
            "HTML 502 on the diffs",
            FaultRule::new(FaultAction::BadGateway)
                .method("GET")
                .route(RouteKind::Diffs)
                .first_n(1),
            1,
        ),
        (
            "HTML 503 on /user",
            FaultRule::new(FaultAction::Unavailable)
                .method("GET")
                .route(RouteKind::User)
                .first_n(1),
            1,
        ),
        (
            "connection reset on the listing",
            FaultRule::new(FaultAction::Reset)
                .method("GET")
                .route(RouteKind::Discussions)
                .first_n(1),
            1,
        ),
        (
            "silent server, then connection dropped, on the listing",
            FaultRule::new(hold_then_drop)
                .method("GET")
                .route(RouteKind::Discussions)
                .first_n(1),
            1,
        ),
        (
            "500 on the rescan listing (after the writes)",
            FaultRule::new(FaultAction::ServerError)
                .method("GET")
                .route(RouteKind::Discussions)
                .nth(2),
            1,
        ),
    ];
    for (case, rule, fired) in cases {
        let fake = reference.scenario.start();
        fake.inject(rule);
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = assent_run(ASSENT, &fake, dir.path(), reference.scenario.head, &[]);
        assert_eq!(out.status.code(), Some(0), "{case}\n{}", describe(&out));
        let faulted: Vec<_> = fake
            .requests()
            .into_iter()
            .filter(|r| r.fault.is_some())
            .collect();
        assert_eq!(faulted.len(), fired, "{case}: {faulted:?}");
        assert!(faulted.iter().all(|r| !r.write), "{case}");
        if case.contains("Retry-After: 1") {
            assert!(started.elapsed() >= Duration::from_secs(1), "{case}");
        }
        assert_eq!(fake.writes(), reference.writes, "{case}: writes");
        assert_converged(&fake, case);
    }
}

/// Every fault that leaves a write's outcome unknown, on the first, a middle and the last
/// write. A write is never retried blindly: the run lists again, plans again, and finishes
/// with the clean state, with no duplicate thread, summary or reply. (A 429 is not among
/// them: GitLab refuses it before acting, see the next test.)
#[test]
fn write_faults_send_the_run_back_to_the_listing_and_never_duplicate() {
    let reference = reference();
    let w = reference.writes as u64;
    let kinds: Vec<(&str, FaultAction)> = vec![
        ("500", FaultAction::ServerError),
        ("HTML 502", FaultAction::BadGateway),
        ("HTML 503", FaultAction::Unavailable),
        ("reset", FaultAction::Reset),
        (
            "silent then dropped, not applied",
            FaultAction::Hold {
                apply: HoldApply::Never,
                timeout_ms: Some(200),
            },
        ),
        (
            "lost ack (applied, 500)",
            FaultAction::LostAck { close: false },
        ),
        (
            "lost ack (applied, closed)",
            FaultAction::LostAck { close: true },
        ),
    ];
    for (name, action) in kinds {
        for n in [1, w / 2, w] {
            let case = format!("{name} on write {n} of {w}");
            let fake = reference.scenario.start();
            fake.inject(FaultRule::new(action.clone()).any_write().nth(n));
            let dir = tempfile::tempdir().unwrap();
            let out = assent_run(ASSENT, &fake, dir.path(), reference.scenario.head, &[]);
            assert_eq!(out.status.code(), Some(0), "{case}\n{}", describe(&out));
            assert_eq!(receipt(dir.path())["rescan"]["verified"], true, "{case}");
            assert_no_blind_write_retry(&fake, &case);
            assert_converged(&fake, &case);
        }
    }
}

/// A write refused with 429 (both of GitLab's forms) on the first, a middle and the last
/// write: a refusal, not an ambiguity (docs/contract.md#write-rate-limits). The same write is sent again after the
/// wait, with no listing in between, and the run verifies with the clean state.
#[test]
fn a_write_refused_with_429_is_sent_again_after_the_wait_and_the_run_verifies() {
    let reference = reference();
    let w = reference.writes as u64;
    let kinds: Vec<(&str, FaultAction)> = vec![
        ("429 text", FaultAction::RateLimitText { retry_after: 1 }),
        ("429 JSON", FaultAction::RateLimitJson { retry_after: 1 }),
    ];
    for (name, action) in kinds {
        for n in [1, w / 2, w] {
            let case = format!("{name} on write {n} of {w}");
            let fake = reference.scenario.start();
            fake.inject(FaultRule::new(action.clone()).any_write().nth(n));
            let dir = tempfile::tempdir().unwrap();
            let started = Instant::now();
            let out = assent_run(ASSENT, &fake, dir.path(), reference.scenario.head, &[]);
            assert_eq!(out.status.code(), Some(0), "{case}\n{}", describe(&out));
            assert!(
                started.elapsed() >= Duration::from_secs(1),
                "{case}: Retry-After waited"
            );
            assert_eq!(receipt(dir.path())["rescan"]["verified"], true, "{case}");
            let log = fake.requests();
            let refused: Vec<usize> = (0..log.len())
                .filter(|&i| log[i].status == Some(429))
                .collect();
            assert_eq!(refused.len(), 1, "{case}");
            let (first, again) = (&log[refused[0]], &log[refused[0] + 1]);
            assert_eq!(
                (&again.method, &again.path, &again.body),
                (&first.method, &first.path, &first.body),
                "{case}: the same write, next"
            );
            assert!(matches!(again.status, Some(200..=299)), "{case}");
            assert_eq!(
                fake.writes(),
                reference.writes + 1,
                "{case}: one write sent twice"
            );
            assert_converged(&fake, &case);
        }
    }
}

/// GitLab's rate limit outlasts `--rate-limit-wait`: exit 3 with one line that says "rate
/// limited" and how long the run waited; the summary says "reconciling", never "verified";
/// nothing is duplicated; the next run, once the limit lifts, repairs.
#[test]
fn a_rate_limit_past_the_wait_budget_exits_3_and_the_next_run_repairs() {
    let reference = reference();
    let head = reference.scenario.head;
    for (case, budget) in [
        (
            "--rate-limit-wait 30s, GitLab asks for 60 s",
            &["--rate-limit-wait", "30s"][..],
        ),
        ("--rate-limit-wait 0", &["--rate-limit-wait", "0"][..]),
    ] {
        let fake = reference.scenario.start();
        fake.inject(
            FaultRule::new(FaultAction::RateLimitText { retry_after: 60 })
                .method("POST")
                .route(RouteKind::Discussions),
        );
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = assent_run(ASSENT, &fake, dir.path(), head, budget);
        assert_eq!(out.status.code(), Some(3), "{case}\n{}", describe(&out));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{case}: a wait that cannot fit is not started"
        );
        assert_one_clear_line(&out, "rate limited", case);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("(0 s waited of "), "{case}: {stderr}");
        assert!(
            stderr.contains("--rate-limit-wait"),
            "{case}: the fix: {stderr}"
        );
        assert!(!dir.path().join("assent-receipt.json").exists(), "{case}");
        // The canonical summary says "reconciling" for this head; none says "verified" for
        // it (the scenario's duplicate summary, which the run had not reached yet, is still
        // the old head's).
        let inventory = support::process::inventory(&fake);
        let canonical = inventory.canonical_summary().expect("a summary");
        assert_eq!(canonical.state, SummaryState::Reconciling, "{case}");
        assert_eq!(canonical.source_sha, head, "{case}");
        assert!(
            inventory
                .summaries
                .iter()
                .all(|s| s.state != SummaryState::Verified || s.source_sha != head),
            "{case}: a summary claims verified"
        );
        let posts = fake
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.route == RouteKind::Discussions)
            .count();
        assert_eq!(posts, 1, "{case}: given up at the first refusal");
        fake.clear_faults();
        rerun_converges(&fake, head, case);
    }

    // The environment variable sets the same budget; a bad value is a usage error.
    let fake = reference.scenario.start();
    let dir = tempfile::tempdir().unwrap();
    let out = support::process::assent_command(ASSENT, &fake, dir.path(), head, &[])
        .env("ASSENT_RATE_LIMIT_WAIT", "soon")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert_one_clear_line(&out, "ASSENT_RATE_LIMIT_WAIT", "bad env");
    assert_eq!(fake.writes(), 0);
}

/// One clear line on stderr naming the cause, beside the progress lines (and a `help:` line
/// saying what to do, when one follows).
fn assert_one_clear_line(out: &std::process::Output, needle: &str, case: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<_> = stderr
        .lines()
        .filter(|l| !l.starts_with("progress: ") && !l.starts_with("help: "))
        .collect();
    assert_eq!(lines.len(), 1, "{case}: {stderr}");
    assert!(
        lines[0].starts_with("error: ") && lines[0].contains(needle),
        "{case}: {stderr}"
    );
}

/// Retries that run out: exit 3 with one line; before the first write nothing is written,
/// after it the summary says "reconciling"; either way the next run repairs.
#[test]
fn when_retries_run_out_the_run_exits_3_and_the_next_run_repairs() {
    let reference = reference();
    let head = reference.scenario.head;

    let case = "listing rate-limited on every attempt";
    let fake = reference.scenario.start();
    fake.inject(
        FaultRule::new(FaultAction::RateLimitText { retry_after: 0 })
            .method("GET")
            .route(RouteKind::Discussions),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = assent_run(ASSENT, &fake, dir.path(), head, &[]);
    assert_eq!(out.status.code(), Some(3), "{case}\n{}", describe(&out));
    assert_one_clear_line(&out, "429", case);
    assert_eq!(fake.writes(), 0, "{case}: wrote");
    let attempts = fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Discussions)
        .count();
    assert_eq!(attempts, 5, "{case}: bounded attempts");
    assert!(!dir.path().join("assent-receipt.json").exists(), "{case}");
    fake.clear_faults();
    rerun_converges(&fake, head, case);

    let case = "rescan listing fails on every attempt";
    let dir = tempfile::tempdir().unwrap();
    let fake = reference.scenario.start();
    fake.inject(
        FaultRule::new(FaultAction::RateLimitJson { retry_after: 0 })
            .method("GET")
            .route(RouteKind::Discussions)
            .from_nth(2),
    );
    let out = assent_run(ASSENT, &fake, dir.path(), head, &[]);
    assert_eq!(out.status.code(), Some(3), "{case}\n{}", describe(&out));
    assert_one_clear_line(&out, "429", case);
    assert!(!dir.path().join("assent-receipt.json").exists(), "{case}");
    let summary = support::process::inventory(&fake).summaries[0].clone();
    assert_eq!(summary.state.as_str(), "reconciling", "{case}");
    fake.clear_faults();
    rerun_converges(&fake, head, case);

    let case = "every write from the third on fails";
    let dir = tempfile::tempdir().unwrap();
    let fake = reference.scenario.start();
    fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .any_write()
            .from_nth(3),
    );
    let out = assent_run(ASSENT, &fake, dir.path(), head, &[]);
    assert_eq!(out.status.code(), Some(3), "{case}\n{}", describe(&out));
    assert_one_clear_line(&out, "ambiguous", case);
    assert_no_blind_write_retry(&fake, case);
    assert_eq!(applied_writes(&fake), 2, "{case}");
    assert!(!dir.path().join("assent-receipt.json").exists(), "{case}");
    fake.clear_faults();
    rerun_converges(&fake, head, case);
}

/// Bot threads that are not the lowest id among those sharing a slot and occurrence and
/// are unresolved, and bot summaries but the lowest: what a run must repair.
fn expected_repairs(fake: &FakeGitLab) -> BTreeSet<(u64, u64, String)> {
    let inventory = support::process::inventory(fake);
    let mut repairs = BTreeSet::new();
    for thread in &inventory.threads {
        let canonical = inventory
            .threads
            .iter()
            .filter(|t| t.slot == thread.slot && t.occurrence == thread.occurrence)
            .map(|t| t.forge_id)
            .min()
            .unwrap();
        if canonical != thread.forge_id && !thread.resolved {
            repairs.insert((thread.forge_id, canonical, "resolve".to_owned()));
        }
    }
    if let Some((first, rest)) = inventory.summaries.split_first() {
        for summary in rest {
            repairs.insert((summary.note_id, first.note_id, "collapse".to_owned()));
        }
    }
    repairs
}

/// 2, 3 and 4 unserialized runs at once on one MR (fresh, and the many-writes scenario),
/// then one more run: exactly one summary, at most one unresolved thread per desired slot,
/// every duplicate resolved, and the last run's `repairs` list exactly the duplicates the
/// racing runs left unrepaired.
#[test]
fn concurrent_unserialized_runs_converge_after_one_more_run() {
    let reference = reference();
    let starts = [
        (
            "fresh MR",
            Scenario::fresh(),
            support::process::desired_slots_a(),
        ),
        (
            "many-writes scenario",
            reference.scenario.clone(),
            desired_slots_b(),
        ),
    ];
    for (name, scenario, desired) in &starts {
        for n in 2..=4 {
            let case = format!("{n} concurrent runs on the {name}");
            let fake = scenario.start();
            // A little latency on every request so the runs interleave.
            fake.inject(FaultRule::new(FaultAction::Latency { ms: 15 }));
            let dirs: Vec<_> = (0..n).map(|_| tempfile::tempdir().unwrap()).collect();
            let mut children: Vec<_> = dirs
                .iter()
                .map(|d| spawn_assent(ASSENT, &fake, d.path(), scenario.head))
                .collect();
            let codes: Vec<_> = children
                .iter_mut()
                .map(|c| wait_bounded(c, WAIT).code())
                .collect();
            assert!(
                codes.iter().all(|c| matches!(c, Some(0) | Some(3))),
                "{case}: exit codes {codes:?}"
            );
            fake.clear_faults();

            let expected = expected_repairs(&fake);
            let dir = tempfile::tempdir().unwrap();
            let out = assent_run(ASSENT, &fake, dir.path(), scenario.head, &[]);
            assert_eq!(out.status.code(), Some(0), "{case}\n{}", describe(&out));
            let r = receipt(dir.path());
            assert_eq!(r["rescan"]["verified"], true, "{case}");
            let repairs: BTreeSet<(u64, u64, String)> = r["repairs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| {
                    (
                        x["repairedForgeId"].as_u64().unwrap(),
                        x["canonicalForgeId"].as_u64().unwrap(),
                        x["action"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            assert_eq!(repairs, expected, "{case}: repairs of the last run");
            check_invariants(&fake, desired, scenario.head)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            let writes = fake.writes();
            let out = assent_run(ASSENT, &fake, dir.path(), scenario.head, &[]);
            assert_eq!(out.status.code(), Some(0), "{case}\n{}", describe(&out));
            assert_eq!(fake.writes(), writes, "{case}: a further run wrote");
            assert!(fake.violations().is_empty(), "{case}");
        }
    }
}

/// Client-side timeouts. The binary's request timeout is 60 s, too long for this suite, so
/// these cases run the same code path (`run_review` over the real HTTP adapter) in process
/// with a 1 s timeout and a sleeper that does not sleep.
#[test]
fn client_timeouts_on_reads_and_writes() {
    use assent::core::commit_sha::CommitSha;
    use assent::core::semantic_diff::Limits;
    use assent::engine::run::review::{RunRequest, run_review};
    use fake_gitlab::fixtures;

    let reference = reference();
    let head = reference.scenario.head;
    let request = RunRequest {
        project: fixtures::PROJECT_PATH.to_owned(),
        mr: fixtures::MR_IID,
        source_sha: CommitSha::parse(head).unwrap(),
        target_sha: Some(CommitSha::parse(fixtures::TARGET_SHA).unwrap()),
        base_sha: Some(CommitSha::parse(fixtures::BASE_SHA).unwrap()),
        target_branch: None,
        dry_run: false,
        approve: false,
        limits: Limits::default(),
        policy_project: None,
        previous_bot_users: Vec::new(),
    };
    let adapter = |fake: &FakeGitLab| {
        let mut config = support::config_for(
            fake,
            fixtures::BOT_TOKEN,
            fixtures::PROJECT_PATH,
            fixtures::MR_IID,
        );
        config.request_timeout = Duration::from_secs(1);
        support::forge_with(config)
    };
    let slow = |apply| FaultAction::Hold {
        apply,
        timeout_ms: Some(1_600),
    };

    let case = "the listing times out once";
    let fake = reference.scenario.start();
    fake.inject(
        FaultRule::new(slow(HoldApply::Before))
            .method("GET")
            .route(RouteKind::Discussions)
            .first_n(1),
    );
    let (forge, sleeper) = adapter(&fake);
    let report = run_review(&forge, &forge, &request).unwrap_or_else(|e| panic!("{case}: {e}"));
    assert!(report.publication.receipt.rescan.verified, "{case}");
    assert_eq!(sleeper.delays().len(), 1, "{case}: one retry");
    assert_converged(&fake, case);

    let case = "a thread create is applied but its answer times out";
    let fake = reference.scenario.start();
    fake.inject(
        FaultRule::new(slow(HoldApply::After))
            .method("POST")
            .route(RouteKind::Discussions)
            .nth(1),
    );
    let (forge, _) = adapter(&fake);
    let report = run_review(&forge, &forge, &request).unwrap_or_else(|e| panic!("{case}: {e}"));
    assert!(report.publication.receipt.rescan.verified, "{case}");
    assert_no_blind_write_retry(&fake, case);
    assert_converged(&fake, case);

    // The server applies a timed-out create only after the run listed again and created the
    // thread itself: a duplicate no single run can prevent. The next run repairs it.
    let case = "a thread create times out and is applied late";
    let fake = reference.scenario.start();
    fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: HoldApply::Before,
            timeout_ms: None,
        })
        .method("POST")
        .route(RouteKind::Discussions)
        .nth(1),
    );
    let (forge, _) = adapter(&fake);
    let report = run_review(&forge, &forge, &request).unwrap_or_else(|e| panic!("{case}: {e}"));
    assert!(report.publication.receipt.rescan.verified, "{case}");
    fake.release_holds();
    let deadline = Instant::now() + WAIT;
    while fake
        .requests()
        .iter()
        .any(|r| r.write && r.fault.is_some() && r.status.is_none())
    {
        assert!(Instant::now() < deadline, "{case}: held write never landed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = expected_repairs(&fake);
    assert_eq!(before.len(), 1, "{case}: the late create is one duplicate");
    let dir = tempfile::tempdir().unwrap();
    let out = assent_run(ASSENT, &fake, dir.path(), head, &[]);
    assert_eq!(out.status.code(), Some(0), "{case}\n{}", describe(&out));
    assert_eq!(receipt(dir.path())["repairs"].as_array().unwrap().len(), 1);
    check_invariants(&fake, &desired_slots_b(), head).unwrap_or_else(|e| panic!("{case}: {e}"));
    let writes = fake.writes();
    let out = assent_run(ASSENT, &fake, dir.path(), head, &[]);
    assert_eq!(out.status.code(), Some(0), "{case}\n{}", describe(&out));
    assert_eq!(fake.writes(), writes, "{case}: a further run wrote");
}

/// The canonical bot summary's state as the fake holds it.
fn summary_state(fake: &FakeGitLab) -> SummaryState {
    let inventory = inventory(fake);
    assert_eq!(inventory.summaries.len(), 1, "one summary");
    inventory.summaries[0].state
}

/// Holds the run's first summary edit (`PUT …/notes/:id`) after applying it; while it is
/// held, a racing publisher's unresolved copy of a finding thread appears; then the run's
/// listing after the "verified" edit must see it, set the summary back to "reconciling" and
/// exit 3 (docs/contract.md#verified-means-verified). One more run repairs and verifies.
fn race_after_the_verified_edit(fake: &FakeGitLab, head: &str, case: &str) {
    fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: HoldApply::After,
            timeout_ms: None,
        })
        .method("PUT")
        .path_contains("/notes/")
        .nth(1),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_assent(ASSENT, fake, dir.path(), head);
    assert!(
        fake.wait_for_held(1, WAIT),
        "{case}: summary edit never held"
    );
    assert_eq!(
        summary_state(fake),
        SummaryState::Verified,
        "{case}: the held edit is the verified one"
    );
    let thread = fake
        .discussions(fixtures::PROJECT_ID, fixtures::MR_IID)
        .into_iter()
        .find(|d| d.notes[0].body.contains("\"rule\":\"retention-shrink\""))
        .expect("a retention thread");
    fake.clone_discussion(fixtures::PROJECT_ID, fixtures::MR_IID, &thread.id);
    fake.release_holds();
    fake.clear_faults();
    let status = wait_bounded(&mut child, WAIT);
    assert_eq!(
        status.code(),
        Some(3),
        "{case}: the rescan mismatch fails the run"
    );
    assert_eq!(
        summary_state(fake),
        SummaryState::Reconciling,
        "{case}: a failed run never leaves `verified` behind"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = assent_run(ASSENT, fake, dir.path(), head, &[]);
    assert_eq!(out.status.code(), Some(0), "{case}: {}", describe(&out));
    assert_eq!(summary_state(fake), SummaryState::Verified, "{case}");
    assert_eq!(
        receipt(dir.path())["repairs"].as_array().unwrap().len(),
        1,
        "{case}"
    );
}

#[test]
fn a_race_after_the_verified_edit_sets_the_summary_back_to_reconciling() {
    // A first run: its last write is the "verified" edit after the thread writes.
    let fake = Scenario::fresh().start();
    race_after_the_verified_edit(&fake, HEAD_A, "first run");

    // A summary-only rerun (a reviewer resolved a challenge): the summary goes straight to
    // "verified", and the rescan after it is what must catch the race.
    let fake = Scenario::fresh().start();
    let dir = tempfile::tempdir().unwrap();
    let out = assent_run(ASSENT, &fake, dir.path(), HEAD_A, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let challenge = fake
        .discussions(fixtures::PROJECT_ID, fixtures::MR_IID)
        .into_iter()
        .find(|d| {
            d.notes[0]
                .body
                .contains("\"rule\":\"cleanup-policy-change\"")
        })
        .expect("a cleanup thread");
    fake.resolve(
        fixtures::PROJECT_ID,
        fixtures::MR_IID,
        &challenge.id,
        fixtures::HUMAN_ID,
        true,
    );
    fake.reset_log();
    race_after_the_verified_edit(&fake, HEAD_A, "summary-only rerun");
}
