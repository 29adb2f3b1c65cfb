//! Request counts of `assent run` (the compiled binary) against the fake GitLab, on generated
//! merge requests of a few sizes. Counts, not times: a change that adds a request per
//! discussion, per finding or per file fails here. The formulas and their derivation are in
//! `docs/performance-e2e.md`.

use std::path::Path;
use std::process::{Command, Output};

use assent_test_support::{self as support, perf_world};
use fake_gitlab::{FakeGitLab, LoggedRequest, RouteKind, fixtures};
use perf_world::{
    Expected, GROUP_ABOVE, Scenario, discussion_count, expected_first_run, expected_rerun, threads,
};

fn run(fake: &FakeGitLab, dir: &Path) -> Output {
    perf_world::pipeline_env(
        // What a run costs, not whether its job passes: most scenarios end at REVIEW.
        Command::new(env!("CARGO_BIN_EXE_assent"))
            .args(["run", "--fail-on", "never"])
            .current_dir(dir),
        &fake.base_url(),
    )
    .output()
    .unwrap()
}

/// What one run sent, from the fake's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    reads: u64,
    writes: u64,
    discussion_pages: u64,
}

fn seen(log: &[LoggedRequest]) -> Seen {
    Seen {
        reads: log.iter().filter(|r| !r.write).count() as u64,
        writes: log.iter().filter(|r| r.write).count() as u64,
        discussion_pages: log
            .iter()
            .filter(|r| r.method == "GET" && r.route == RouteKind::Discussions)
            .count() as u64,
    }
}

/// Runs assent once on a fresh log; checks exit 0 and that the receipt counts what the fake
/// saw.
fn run_and_count(fake: &FakeGitLab, dir: &Path, label: &str) -> (Seen, serde_json::Value) {
    fake.reset_log();
    let out = run(fake, dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{label}: stdout {}\nstderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = seen(&fake.requests());
    let receipt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("assent-receipt.json")).unwrap()).unwrap();
    assert_eq!(
        (
            receipt["requests"]["reads"].as_u64(),
            receipt["requests"]["writes"].as_u64()
        ),
        (Some(seen.reads), Some(seen.writes)),
        "{label}: the receipt's request tally differs from what the fake received"
    );
    (seen, receipt)
}

fn as_seen(e: Expected) -> Seen {
    Seen {
        reads: e.reads,
        writes: e.writes,
        discussion_pages: e.discussion_pages,
    }
}

fn check(scenario: Scenario) {
    let label = format!("{scenario:?}");
    let fake = support::start_basic();
    perf_world::seed(&fake, &scenario);
    let dir = tempfile::tempdir().unwrap();

    // First run: exactly one write per published finding (one for a grouped rule) plus the
    // summary's two.
    let (first, receipt) = run_and_count(&fake, dir.path(), &label);
    let published = threads(&scenario);
    assert_eq!(
        receipt["findings"].as_array().map(Vec::len),
        Some(published),
        "{label}: generated findings"
    );
    if scenario.findings > GROUP_ABOVE {
        assert_eq!(receipt["findings"][0]["subject"], "*", "{label}: grouped");
    }
    assert_eq!(
        first,
        as_seen(expected_first_run(&scenario)),
        "{label}: first run"
    );
    assert_eq!(first.writes, published as u64 + 2, "{label}");

    // Rerun on the unchanged MR: zero writes, one discussion listing.
    let d = discussion_count(&fake);
    assert_eq!(d, scenario.discussions + published + 1, "{label}");
    let (rerun, receipt) = run_and_count(&fake, dir.path(), &label);
    assert_eq!(
        rerun,
        as_seen(expected_rerun(&scenario, d)),
        "{label}: rerun"
    );
    assert_eq!(rerun.writes, 0, "{label}: a rerun on an unchanged MR wrote");
    assert!(
        rerun.discussion_pages <= 2 * d.div_ceil(100) as u64,
        "{label}: {} discussion pages for {d} discussions",
        rerun.discussion_pages
    );
    assert_eq!(receipt["rescan"]["verified"], true, "{label}");
    assert!(fake.violations().is_empty(), "{:?}", fake.violations());
}

fn scenario(discussions: usize, findings: usize, files: usize) -> Scenario {
    Scenario {
        discussions,
        findings,
        files,
        file_bytes: 2_000,
        rules: 1,
    }
}

#[test]
fn counts_with_no_other_discussions() {
    check(scenario(0, 1, 1));
    check(scenario(0, 3, 2));
    check(scenario(0, 120, 3));
}

/// At the threshold every finding is a thread; one more and the rule is one grouped thread,
/// whatever the number of findings: 3 writes for 26 findings and for 2,000.
#[test]
fn counts_at_and_above_the_grouping_threshold() {
    check(scenario(0, GROUP_ABOVE, 2));
    check(scenario(0, GROUP_ABOVE + 1, 2));
    check(scenario(150, 2_000, 4));
    assert_eq!(expected_first_run(&scenario(0, GROUP_ABOVE, 1)).writes, 27);
    assert_eq!(
        expected_first_run(&scenario(0, GROUP_ABOVE + 1, 1)).writes,
        3
    );
    assert_eq!(expected_first_run(&scenario(150, 2_000, 4)).writes, 3);
}

#[test]
fn counts_with_150_discussions() {
    check(scenario(150, 1, 1));
    check(scenario(150, 3, 3));
    check(scenario(150, 120, 2));
}

#[test]
fn counts_with_250_discussions() {
    check(scenario(250, 1, 2));
    check(scenario(250, 3, 1));
    check(scenario(250, 120, 5));
}

/// A rerun after a human resolves a challenge: the summary body changes, so exactly one
/// write (the summary edit, straight to verified), the head re-check before it, and the step-9
/// listing after it: still at most two listings of the discussions.
#[test]
fn a_resolution_between_runs_costs_one_summary_edit() {
    let s = scenario(150, 3, 1);
    let fake = support::start_basic();
    perf_world::seed(&fake, &s);
    let dir = tempfile::tempdir().unwrap();
    run_and_count(&fake, dir.path(), "first");
    let thread = fake
        .discussions(fixtures::PROJECT_ID, fixtures::MR_IID)
        .into_iter()
        .find(|d| d.notes[0].author_id == fixtures::BOT_ID && d.notes[0].resolvable)
        .unwrap();
    fake.resolve(
        fixtures::PROJECT_ID,
        fixtures::MR_IID,
        &thread.id,
        fixtures::HUMAN_ID,
        true,
    );
    let d = discussion_count(&fake);
    let (seen, _) = run_and_count(&fake, dir.path(), "after resolution");
    let rerun = expected_rerun(&s, d);
    assert_eq!(
        seen,
        Seen {
            // + the resolver's account (`GET /users/:id`, once per resolver), the head
            // re-check and the bot's role before the write + the rescan listing after it.
            reads: rerun.reads + 1 + 2 + perf_world::pages(d),
            writes: 1,
            discussion_pages: 2 * perf_world::pages(d),
        }
    );
}
