//! `assent sweep` as a scheduled job runs it: the compiled binary against the fake GitLab.
//!
//! The sweep reads the real clock, so seeded timestamps are relative to the system time; the
//! fake's own clock is left running (or frozen in the past to play a crashed run).

use std::process::{Command, Output};
use std::time::Duration;

use assent::core::marker::{Marker, SummaryState, compose_body};
use assent::core::model::{DesiredState, Effect, Finding, Occurrence, Slot};
use assent::core::render::TargetBranch;
use assent::engine::fixture::replay::fixture_pins;
use assent::engine::run::reconcile::{RunContext, reconcile};
use assent::gitlab::{GitLabConfig, GitLabForge, Token};
use fake_gitlab::fixtures::{self, BOT_ID, BOT_TOKEN, HEAD_SHA, HUMAN_ID, PROJECT_ID};
use fake_gitlab::time::{format_ms, system_ms};
use fake_gitlab::{
    Discussion, FakeGitLab, FaultAction, FaultRule, MergeRequest, MrState, Note, RouteKind, State,
};

const OLD_SHA: &str = "4444444444444444444444444444444444444444";
const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

fn ago(ms: i64) -> String {
    format_ms(system_ms() - ms)
}

fn summary_body(state: SummaryState, head: &str) -> String {
    summary_body_for(state, head, Some("main"))
}

/// A bot summary body whose marker records `target` (none when `None`).
fn summary_body_for(state: SummaryState, head: &str, target: Option<&str>) -> String {
    compose_body(
        &Marker::Summary {
            occurrence: Occurrence::digest(head.as_bytes()),
            state,
            source_sha: assent_test_support::sha(head),
            target: target.map(str::to_owned),
        },
        "assent summary",
    )
}

fn note(author: u64, body: String, updated: &str) -> Discussion {
    Discussion {
        id: String::new(),
        individual_note: true,
        notes: vec![Note {
            body,
            author_id: author,
            created_at: updated.into(),
            updated_at: updated.into(),
            ..Default::default()
        }],
    }
}

/// An open MR `iid` at [`HEAD_SHA`], last updated `updated`, with these discussions.
fn mr(iid: u64, updated: &str, discussions: Vec<Discussion>) -> MergeRequest {
    let mut m = MergeRequest::new(iid, HUMAN_ID, HEAD_SHA, fixtures::BASE_SHA)
        .branches(&format!("feature-{iid}"), "main");
    m.created_at = ago(10 * 24 * HOUR);
    m.updated_at = updated.into();
    m.discussions = discussions;
    m
}

fn with_mrs(mrs: Vec<MergeRequest>) -> State {
    let mut state = fixtures::basic();
    state.projects[0].merge_requests = mrs;
    state
}

fn run_sweep(fake: &FakeGitLab, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_assent"))
        .arg("sweep")
        .args(["--api-url", &fake.base_url(), "--project", "42"])
        .args(args)
        .env_clear()
        .env("ASSENT_TOKEN", BOT_TOKEN)
        .env("ASSENT_WRITE_SETTLE_SECS", "0")
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains(BOT_TOKEN), "the token leaked: {all}");
    assert_eq!(fake.violations(), Vec::<String>::new());
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Stderr without the progress lines: errors and warnings.
fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone())
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("progress: "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The `progress: …` lines of stderr, without their times.
fn progress(out: &Output) -> Vec<String> {
    String::from_utf8(out.stderr.clone())
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .map(|l| l.rsplit_once(" [").map_or(l, |(text, _)| text).to_owned())
        .collect()
}

fn line_of(text: &str, iid: u64) -> String {
    let prefix = format!("!{iid} ");
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line for !{iid}: {text}"))
        .to_owned()
}

/// Paths requested, with their method.
fn requested(fake: &FakeGitLab) -> Vec<String> {
    fake.requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

fn pipelines_for(fake: &FakeGitLab) -> Vec<u64> {
    let mut iids: Vec<u64> = fake
        .pipelines(PROJECT_ID)
        .iter()
        .filter_map(|p| p.mr_iid)
        .collect();
    iids.sort();
    iids
}

/// One MR per classification, plus MRs the sweep must not touch.
fn every_classification() -> FakeGitLab {
    let bot = |state, head, updated: &str| note(BOT_ID, summary_body(state, head), updated);
    let mut stale = mr(
        2,
        &ago(3 * HOUR),
        vec![bot(SummaryState::Verified, OLD_SHA, &ago(20 * HOUR))],
    );
    stale.head_pipeline = None;
    let mut outside = mr(
        8,
        &ago(4 * 24 * HOUR),
        vec![bot(
            SummaryState::Reconciling,
            HEAD_SHA,
            &ago(4 * 24 * HOUR),
        )],
    );
    outside.title = "outside the window".into();
    let mut closed = mr(9, &ago(HOUR), vec![]);
    closed.state = MrState::Closed;
    let fake = FakeGitLab::start(with_mrs(vec![
        mr(
            1,
            &ago(2 * HOUR),
            vec![bot(SummaryState::Verified, HEAD_SHA, &ago(2 * HOUR))],
        ),
        stale,
        mr(
            3,
            &ago(2 * HOUR),
            vec![bot(SummaryState::Reconciling, HEAD_SHA, &ago(2 * HOUR))],
        ),
        mr(
            4,
            &ago(5 * MINUTE),
            vec![bot(SummaryState::Reconciling, HEAD_SHA, &ago(5 * MINUTE))],
        ),
        // A human's copy of a verified marker is invisible: the MR has no summary.
        mr(
            5,
            &ago(HOUR),
            vec![note(
                HUMAN_ID,
                summary_body(SummaryState::Verified, HEAD_SHA),
                &ago(HOUR),
            )],
        ),
        mr(6, &ago(30 * MINUTE), vec![]),
        outside,
        closed,
    ]));
    fake.set_head_pipeline(PROJECT_ID, 2, Some((4000, "success")));
    fake.set_head_pipeline(PROJECT_ID, 3, Some((4001, "canceled")));
    fake.set_head_pipeline(PROJECT_ID, 6, Some((4002, "running")));
    fake
}

#[test]
fn each_classification_gets_its_verdict_and_only_the_lost_ones_a_pipeline() {
    let fake = every_classification();
    let out = run_sweep(
        &fake,
        &[
            "--lookback",
            "48h",
            "--interval",
            "24h",
            "--stuck-after",
            "1h",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    // The whole text report: each MR's verdict, action and detail (none for the closed !8
    // and !9 outside the window), then the counts. The clock times are replaced.
    insta::assert_snapshot!("sweep_text_every_classification", stable_text(&text));
    assert_eq!(pipelines_for(&fake), vec![2, 3, 5]);

    // Costs: the single MR is read only for candidates; a closed MR gets no request of its
    // own, and one outside the window only its discussions, read for a REVIEW summary (it
    // has none: no line, nothing more).
    let paths = requested(&fake);
    let single = |iid: u64| format!("GET /api/v4/projects/42/merge_requests/{iid}");
    for iid in [2, 3, 5, 6] {
        assert!(paths.contains(&single(iid)), "{paths:?}");
    }
    for iid in [1, 4] {
        assert!(!paths.contains(&single(iid)), "{paths:?}");
    }
    let own = |iid: u64| -> Vec<&String> {
        let own = format!("/merge_requests/{iid}");
        paths.iter().filter(|p| p.contains(&own)).collect()
    };
    assert!(own(9).is_empty(), "{paths:?}");
    assert_eq!(
        own(8),
        ["GET /api/v4/projects/42/merge_requests/8/discussions"],
        "{paths:?}"
    );
    assert_eq!(fake.writes(), 3);
    let listing = fake
        .requests()
        .into_iter()
        .find(|r| r.route == RouteKind::MergeRequests)
        .unwrap();
    assert!(listing.query.contains("state=opened"), "{}", listing.query);
    // Every open MR: a resolution moves no `updated_at`, so no window is asked of GitLab.
    assert!(
        !listing.query.contains("updated_after="),
        "{}",
        listing.query
    );
}

/// `--metrics` writes the two counts as GitLab's metrics report reads them (one
/// `name value` line each, gitlabhq `doc/ci/testing/metrics_reports.md`), and `--report`
/// the JSON report, beside the text report on stdout.
#[test]
fn the_metrics_and_report_files_hold_the_counts() {
    let fake = every_classification();
    let dir = tempfile::tempdir().unwrap();
    let metrics = dir.path().join("assent-sweep.metrics.txt");
    let report = dir.path().join("assent-sweep.json");
    let out = run_sweep(
        &fake,
        &[
            "--lookback",
            "48h",
            "--interval",
            "24h",
            "--stuck-after",
            "1h",
            "--metrics",
            metrics.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).ends_with("\nrefreshed: 0\nhealed: 3\n"));
    assert_eq!(
        std::fs::read_to_string(&metrics).unwrap(),
        "assent_sweep_healed 3\nassent_sweep_refreshed 0\n# EOF\n"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        (doc["kind"].as_str(), doc["healed"].as_u64()),
        (Some("SweepReport"), Some(3))
    );
    // Nothing but the two files (no temporary file left behind).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn the_json_report_has_the_same_content() {
    let fake = every_classification();
    let out = run_sweep(
        &fake,
        &[
            "--lookback",
            "48h",
            "--interval",
            "24h",
            "--stuck-after",
            "1h",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kind"], "SweepReport");
    assert_eq!(doc["healed"], 3);
    assert_eq!(doc["refreshed"], 0);
    assert_eq!(doc["complete"], true);
    assert_eq!(doc["examined"], 6);
    assert_eq!(doc["window"]["lookback"], "48h");
    let rows: Vec<(u64, String, String)> = doc["mrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["iid"].as_u64().unwrap(),
                m["verdict"].as_str().unwrap().to_owned(),
                m["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut sorted = rows.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            (1, "verified".into(), "none".into()),
            (2, "verified-older-head".into(), "pipeline-created".into()),
            (3, "reconciling-stuck".into(), "pipeline-created".into()),
            (4, "reconciling-recent".into(), "none".into()),
            (5, "missing".into(), "pipeline-created".into()),
            (6, "pipeline-active".into(), "none".into()),
        ]
    );
    // Oldest update first.
    assert_eq!(rows[0].0, 2);
    assert_eq!(rows[5].0, 4);
    let created: Vec<u64> = doc["mrs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["pipelineId"].as_u64())
        .collect();
    assert_eq!(created.len(), 3);
    // The whole report: every field the asserts above do not name is pinned too.
    insta::assert_snapshot!(
        "sweep_report_every_classification",
        stable_report(&out.stdout)
    );
}

/// A sweep's text report with its clock times (RFC 3339, to the second or the millisecond)
/// replaced by a placeholder.
fn stable_text(text: &str) -> String {
    let time = regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z").unwrap();
    time.replace_all(text, "[time]").into_owned()
}

/// A sweep's JSON report with the clock times (`now`, `window.updatedAfter`) replaced by a
/// placeholder, pretty-printed for review.
fn stable_report(stdout: &[u8]) -> String {
    let mut doc: serde_json::Value = serde_json::from_slice(stdout).expect("one JSON document");
    for clock in ["/now", "/window/updatedAfter"] {
        let value = doc.pointer_mut(clock).expect("a clock time");
        assert!(value.is_string(), "{clock}: {value}");
        *value = serde_json::Value::from("[clock]");
    }
    serde_json::to_string_pretty(&doc).expect("JSON")
}

#[test]
fn a_dry_run_makes_zero_writes() {
    let fake = every_classification();
    let out = run_sweep(
        &fake,
        &["--lookback", "48h", "--interval", "24h", "--dry-run"],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(fake.writes(), 0);
    assert!(fake.pipelines(PROJECT_ID).is_empty());
    assert!(line_of(&text, 5).starts_with("!5 missing: would-create-pipeline"));
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    assert_eq!(
        tail,
        ["healed: 0", "refreshed: 0", "would heal: 3 (dry run)"],
        "the dry-run count comes before `healed: N`, which stays last: {text}"
    );
}

#[test]
fn the_window_must_be_wider_than_the_interval_or_nothing_starts() {
    let fake = every_classification();
    for (lookback, interval) in [("24h", "24h"), ("1d", "24h"), ("12h", "1d")] {
        let out = run_sweep(&fake, &["--lookback", lookback, "--interval", interval]);
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!(
                "error: --lookback {lookback} is not wider than --interval {interval}"
            )),
            "{err}"
        );
        assert!(stdout(&out).is_empty());
    }
    let out = run_sweep(&fake, &["--lookback", "2x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(fake.requests().is_empty(), "{:?}", requested(&fake));
}

#[test]
fn a_healthy_project_heals_nothing() {
    let verified = |iid, age| {
        mr(
            iid,
            &ago(age),
            vec![note(
                BOT_ID,
                summary_body(SummaryState::Verified, HEAD_SHA),
                &ago(age),
            )],
        )
    };
    let fake = FakeGitLab::start(with_mrs(vec![
        verified(1, HOUR),
        verified(2, 2 * HOUR),
        verified(3, 10 * MINUTE),
    ]));
    let out = run_sweep(&fake, &["--lookback", "3h", "--interval", "1h"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.contains(" verified: none"))
            .count(),
        3
    );
    assert_eq!(text.lines().last(), Some("healed: 0"));
    assert_eq!(fake.writes(), 0);
    // GET /user, the listing, and one discussions listing per MR: nothing else.
    assert_eq!(fake.reads(), 5, "{:?}", requested(&fake));
}

#[test]
fn a_quiet_project_costs_two_requests() {
    let fake = FakeGitLab::start(with_mrs(vec![mr(1, &ago(5 * 24 * HOUR), vec![])]));
    let out = run_sweep(&fake, &["--lookback", "3h", "--interval", "1h"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out).lines().last(), Some("healed: 0"));
    assert_eq!(fake.reads(), 2, "{:?}", requested(&fake));
}

#[test]
fn max_mrs_stops_early_with_a_clear_message() {
    let fake = FakeGitLab::start(with_mrs(
        (1..=5)
            .map(|i| mr(i, &ago(i as i64 * MINUTE), vec![]))
            .collect(),
    ));
    let out = run_sweep(
        &fake,
        &[
            "--lookback",
            "3h",
            "--interval",
            "1h",
            "--max-mrs",
            "2",
            "--dry-run",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // The two oldest updates.
    assert!(
        text.contains("!5 missing") && text.contains("!4 missing"),
        "{text}"
    );
    assert!(!text.contains("!3 "), "{text}");
    let err = stderr(&out);
    assert!(
        err.contains("stopped at --max-mrs 2: 3 more open MR(s) in the window were not examined"),
        "{err}"
    );
    assert!(
        !requested(&fake)
            .iter()
            .any(|p| p.contains("/merge_requests/3/")),
        "{:?}",
        requested(&fake)
    );
}

#[test]
fn a_forge_failure_exits_3_and_reports_the_progress_made() {
    let fake = every_classification();
    // Pipeline creation for !3 gets a 502: an ambiguous write, never retried.
    fake.inject(
        FaultRule::new(FaultAction::BadGateway)
            .method("POST")
            .path_contains("/merge_requests/3/pipelines"),
    );
    let out = run_sweep(
        &fake,
        &[
            "--lookback",
            "48h",
            "--interval",
            "24h",
            "--stuck-after",
            "1h",
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        line_of(&text, 3).starts_with("!3 reconciling-stuck: failed"),
        "{text}"
    );
    assert!(line_of(&text, 3).contains("outcome unknown"), "{text}");
    assert!(line_of(&text, 2).contains("pipeline-created"), "{text}");
    assert!(line_of(&text, 5).contains("pipeline-created"), "{text}");
    assert_eq!(text.lines().last(), Some("healed: 2"));
    let err = stderr(&out);
    assert_eq!(
        err.trim(),
        "error: sweep finished with forge failures on 1 MR(s): !3"
    );
    let posts = requested(&fake)
        .iter()
        .filter(|p| p.starts_with("POST") && p.contains("/merge_requests/3/"))
        .count();
    assert_eq!(posts, 1, "a write is never retried");
}

/// A pipeline creation refused with 429 is a refusal (docs/contract.md#write-rate-limits): sent again after the
/// wait; past `--rate-limit-wait` the sweep exits 3 with a line that says "rate limited".
#[test]
fn a_rate_limited_pipeline_creation_is_sent_again_or_fails_past_the_budget() {
    let window = [
        "--lookback",
        "48h",
        "--interval",
        "24h",
        "--stuck-after",
        "1h",
    ];
    let pipeline_posts = |fake: &FakeGitLab| {
        requested(fake)
            .iter()
            .filter(|p| p.starts_with("POST") && p.contains("/merge_requests/3/"))
            .count()
    };

    let fake = every_classification();
    fake.inject(
        FaultRule::new(FaultAction::RateLimitJson { retry_after: 1 })
            .method("POST")
            .path_contains("/merge_requests/3/pipelines")
            .first_n(1),
    );
    let out = run_sweep(&fake, &window);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(line_of(&stdout(&out), 3).contains("pipeline-created"));
    assert_eq!(pipeline_posts(&fake), 2, "refused once, sent again");
    assert_eq!(pipelines_for(&fake), vec![2, 3, 5]);

    let fake = every_classification();
    fake.inject(
        FaultRule::new(FaultAction::RateLimitJson { retry_after: 60 })
            .method("POST")
            .path_contains("/merge_requests/3/pipelines"),
    );
    let mut args = window.to_vec();
    args.extend(["--rate-limit-wait", "30s"]);
    let out = run_sweep(&fake, &args);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(line_of(&stdout(&out), 3).contains("rate limited"));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: sweep finished with forge failures on 1 MR(s): !3 (rate limited; "),
        "{err}"
    );
    assert!(err.contains("--rate-limit-wait"), "{err}");
    assert_eq!(
        pipeline_posts(&fake),
        1,
        "a wait that does not fit is not started"
    );

    // A bad budget is a usage error before any request.
    let fake = every_classification();
    let mut args = window.to_vec();
    args.extend(["--rate-limit-wait", "soon"]);
    let out = run_sweep(&fake, &args);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--rate-limit-wait"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fake.requests().len(), 0);
}

#[test]
fn the_sweep_reports_its_progress_on_stderr_unless_quiet_or_json() {
    let window = [
        "--lookback",
        "48h",
        "--interval",
        "24h",
        "--stuck-after",
        "1h",
    ];
    let fake = every_classification();
    let out = run_sweep(&fake, &window);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "no error or warning");
    assert_eq!(
        progress(&out),
        [
            "progress: listed 6 open merge requests in the window (1 request)",
            // Oldest update first: !2 (heals), !1, !3 (heals), !5 (heals), !6, !4.
            "progress: examined 1/6 merge requests, 1 needing a pipeline",
            "progress: examined 2/6 merge requests, 1 needing a pipeline",
            "progress: examined 3/6 merge requests, 2 needing a pipeline",
            "progress: examined 4/6 merge requests, 3 needing a pipeline",
            "progress: examined 5/6 merge requests, 3 needing a pipeline",
            "progress: examined 6/6 merge requests, 3 needing a pipeline",
        ]
    );
    // The report without its first line (which names the current time).
    let report = |out: &Output| stdout(out).lines().skip(1).collect::<Vec<_>>().join("\n");
    let text = report(&out);
    for extra in [&["--quiet"][..], &["--format", "json"][..]] {
        let fake = every_classification();
        let mut args = window.to_vec();
        args.extend(extra);
        let out = run_sweep(&fake, &args);
        assert_eq!(out.status.code(), Some(0), "{extra:?}");
        assert_eq!(progress(&out), Vec::<String>::new(), "{extra:?}");
        assert_eq!(stderr(&out), "", "{extra:?}");
        if extra == ["--quiet"] {
            assert_eq!(report(&out), text, "stdout is the report only");
        }
    }
}

#[test]
fn a_failed_listing_exits_3_with_the_reason() {
    let fake = every_classification();
    fake.inject(
        FaultRule::new(FaultAction::Redirect { location: None }).route(RouteKind::MergeRequests),
    );
    let out = run_sweep(&fake, &["--lookback", "48h", "--interval", "24h"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).starts_with("error: sweep stopped: cannot list the open merge requests"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out).lines().last(), Some("healed: 0"));
    assert_eq!(fake.writes(), 0);
}

fn desired() -> DesiredState {
    let finding = |rule: &str| Finding {
        slot: Slot {
            rule: rule.into(),
            subject: format!("topics/orders.yaml#/topics/{rule}"),
        },
        effect: Effect::Challenge,
        occurrence: Occurrence::digest(rule.as_bytes()),
        message: format!("{rule} fired"),
    };
    DesiredState::new(vec![finding("alpha"), finding("beta")])
}

fn run_context() -> RunContext {
    RunContext {
        project: PROJECT_ID.to_string(),
        mr: fixtures::MR_IID,
        pins: fixture_pins(&assent_test_support::sha(HEAD_SHA)),
        web_url: None,
        dry_run: false,
        mr_author_id: Some(assent::forge::memory::MR_AUTHOR_USER_ID),
        target: Some(TargetBranch {
            name: "main".into(),
            has_policies: true,
        }),
        requests_before: Default::default(),
        previous_bot_users: Vec::new(),
    }
}

fn forge(fake: &FakeGitLab) -> GitLabForge {
    let mut config = GitLabConfig::new(
        fake.base_url(),
        Token::new(BOT_TOKEN),
        PROJECT_ID.to_string(),
    );
    config.retry.max_attempts = 1;
    config.request_timeout = Duration::from_secs(5);
    // The fake never applies a write late: nothing to wait for after an ambiguous one.
    config.retry.write_settle = Duration::ZERO;
    GitLabForge::new(config, fixtures::MR_IID).unwrap()
}

#[test]
fn a_run_that_crashed_mid_way_is_healed_by_a_sweep_triggered_rerun() {
    let fake = FakeGitLab::start(fixtures::basic());
    // Two hours ago, `assent run` wrote its "reconciling" summary and then lost the forge on
    // every thread write: the job died with the summary left reconciling.
    fake.set_time(&ago(2 * HOUR));
    fake.inject(
        FaultRule::new(FaultAction::Reset)
            .method("POST")
            .route(RouteKind::Discussions),
    );
    assert!(reconcile(&forge(&fake), &desired(), &run_context()).is_err());
    fake.clear_faults();
    fake.with_state(|s| s.fixed_time = None);
    let summaries: Vec<Note> = fake
        .discussions(PROJECT_ID, fixtures::MR_IID)
        .into_iter()
        .flat_map(|d| d.notes)
        .filter(|n| n.author_id == BOT_ID)
        .collect();
    assert_eq!(summaries.len(), 1);
    assert!(summaries[0].body.contains(r#""state":"reconciling""#));

    // The scheduled sweep notices and starts a pipeline.
    fake.reset_log();
    let out = run_sweep(&fake, &["--lookback", "3h", "--interval", "1h"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        line_of(&text, 7).starts_with("!7 reconciling-stuck: pipeline-created 5000"),
        "{text}"
    );
    assert!(
        line_of(&text, 7).contains("reconciling 22222222 for 2h"),
        "{text}"
    );
    assert_eq!(text.lines().last(), Some("healed: 1"));
    assert_eq!(pipelines_for(&fake), vec![fixtures::MR_IID]);
    assert_eq!(
        fake.writes(),
        1,
        "the sweep writes nothing but the pipeline"
    );

    // While that pipeline waits for its runner, a second sweep leaves the MR alone.
    let out = run_sweep(&fake, &["--lookback", "3h", "--interval", "1h"]);
    assert!(
        line_of(&stdout(&out), 7).starts_with("!7 pipeline-active: none"),
        "{}",
        stdout(&out)
    );
    assert_eq!(stdout(&out).lines().last(), Some("healed: 0"));

    // The pipeline's job is the normal rerun: it repairs the MR and verifies its summary.
    let publication = reconcile(&forge(&fake), &desired(), &run_context()).unwrap();
    assert!(publication.receipt.rescan.verified);
    fake.set_head_pipeline(PROJECT_ID, fixtures::MR_IID, Some((5000, "success")));

    // The next sweep finds it healthy: N is back to 0.
    let out = run_sweep(&fake, &["--lookback", "3h", "--interval", "1h"]);
    let text = stdout(&out);
    assert!(line_of(&text, 7).starts_with("!7 verified: none"), "{text}");
    assert_eq!(text.lines().last(), Some("healed: 0"));
}

#[test]
fn the_ci_templates_run_one_sweep_at_a_time_on_schedules_with_a_valid_window() {
    use serde::Deserialize;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let text =
        std::fs::read_to_string(root.join("ci-templates/templates/assent/template.yml")).unwrap();
    let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&text)
        .map(serde_yaml::Value::deserialize)
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(docs.len(), 2, "a spec header and the jobs");
    // The default sweep arguments pass the window check (lookback wider than interval).
    let args = docs[0]["spec"]["inputs"]["sweep_args"]["default"]
        .as_str()
        .unwrap()
        .to_owned();
    let words: Vec<&str> = args.split_whitespace().collect();
    let value = |flag: &str| words[words.iter().position(|w| *w == flag).unwrap() + 1];
    let lookback: assent::core::time::SweepDuration = value("--lookback").parse().unwrap();
    let interval: assent::core::time::SweepDuration = value("--interval").parse().unwrap();
    assert!(assent::core::sweep_classification::check_window(lookback, interval).is_ok());
    for (form, job) in [
        ("component", docs[1]["assent-sweep"].clone()),
        ("classic", {
            let classic =
                std::fs::read_to_string(root.join("ci-templates/assent.gitlab-ci.yml")).unwrap();
            let value: serde_yaml::Value = serde_yaml::from_str(&classic).unwrap();
            value["assent-sweep"].clone()
        }),
    ] {
        assert_eq!(
            job["resource_group"].as_str(),
            Some("assent-sweep"),
            "{form}"
        );
        assert_eq!(
            job["variables"]["GIT_STRATEGY"].as_str(),
            Some("none"),
            "{form}"
        );
        let rule = job["rules"][0]["if"].as_str().unwrap();
        assert!(
            rule.contains(r#"$CI_PIPELINE_SOURCE == "schedule""#)
                && rule.contains("$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"),
            "{form}: a schedule of the default branch only: {rule}"
        );
        let script: Vec<&str> = job["script"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(|l| l.as_str())
            .collect();
        assert!(
            script.iter().any(|l| l.contains("assent sweep")),
            "{form}: {script:?}"
        );
    }
    assert!(!text.contains("--token"), "the token is never a flag");
}

// ---- hostile servers and transport edges ---------------------------------------------------

/// `assent sweep ARGS` against `api_url` with `env` added to the cleared environment.
fn run_sweep_with(api_url: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_assent"))
        .arg("sweep")
        .args(["--api-url", api_url, "--project", "42"])
        .args(args)
        .env_clear()
        .env("ASSENT_TOKEN", BOT_TOKEN)
        .env("ASSENT_WRITE_SETTLE_SECS", "0")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!all.contains(BOT_TOKEN), "the token leaked: {all}");
    out
}

#[test]
fn sweep_goes_through_a_socks_proxy_and_refuses_an_unusable_one() {
    let fake = FakeGitLab::start(with_mrs(vec![mr(7, &ago(HOUR), vec![])]));
    let relay = fake_gitlab::SocksRelay::start(([127, 0, 0, 1], fake.port()).into());
    let proxy = format!("socks5://{}", relay.authority());
    let out = run_sweep_with(&fake.base_url(), &[("ALL_PROXY", &proxy)], &["--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("healed: "), "{}", stdout(&out));
    assert_eq!(stderr(&out), "");
    assert!(
        !relay.connects().is_empty(),
        "the sweep did not use the proxy"
    );

    fake.reset_log();
    for (var, value) in [
        ("ALL_PROXY", "ftp://proxy.example:21"),
        ("http_proxy", "socks4://user:s3cret@127.0.0.1:1080"),
    ] {
        let out = run_sweep_with(&fake.base_url(), &[(var, value)], &[]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{var}={value}: {}",
            stderr(&out)
        );
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("{var}=")) && err.contains("supported proxy schemes"),
            "{err}"
        );
        assert!(!err.contains("s3cret"), "{err}");
    }
    assert!(
        fake.requests().is_empty(),
        "nothing is sent with an unusable proxy"
    );
}

#[test]
fn sweep_warns_on_stderr_about_a_plain_http_api_url_to_a_remote_host() {
    let fake = FakeGitLab::start(with_mrs(vec![mr(7, &ago(HOUR), vec![])]));
    let relay = fake_gitlab::SocksRelay::start(([127, 0, 0, 1], fake.port()).into());
    let proxy = format!("socks5h://{}", relay.authority());
    let api = "http://gitlab.example.test/api/v4";
    let out = run_sweep_with(
        api,
        &[("ALL_PROXY", &proxy)],
        &["--dry-run", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value =
        serde_json::from_str(&stdout(&out)).expect("stdout is only the report");
    assert!(report.is_object());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("warning: ")
            && err.contains("http://gitlab.example.test")
            && err.contains("ASSENT_ALLOW_HTTP=1"),
        "{err}"
    );
    let out = run_sweep_with(
        api,
        &[("ALL_PROXY", &proxy), ("ASSENT_ALLOW_HTTP", "1")],
        &["--dry-run", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

// ---- the target branch (docs/contract.md#pinned-target) and decision freshness (docs/contract.md#decision-freshness) -----------------------

/// A run context pinned to `branch`, whose policies exist or not.
fn run_context_for(branch: &str, has_policies: bool) -> RunContext {
    RunContext {
        target: Some(TargetBranch {
            name: branch.into(),
            has_policies,
        }),
        ..run_context()
    }
}

/// Two sweeps of MR !7, where only the author resolved: each classifies it verified with no
/// resolution that may count, heals nothing and creates no pipeline.
fn sweeps_leave_it_alone_twice(fake: &FakeGitLab) {
    for _ in 0..2 {
        let (line, tail) = sweep_mr7(fake);
        assert!(line.starts_with("!7 verified: none"), "{line}");
        assert!(
            line.contains("no thread is resolved by a user who may assent"),
            "{line}"
        );
        assert_eq!(tail, "refreshed: 0 / healed: 0");
    }
    assert!(fake.pipelines(PROJECT_ID).is_empty());
}

/// The author re-opens `thread` of MR !7 and a reviewer resolves it.
fn reviewer_resolves_instead(fake: &FakeGitLab, thread: &str) {
    fake.resolve(
        PROJECT_ID,
        fixtures::MR_IID,
        thread,
        fixtures::AUTHOR_ID,
        false,
    );
    fake.resolve(PROJECT_ID, fixtures::MR_IID, thread, HUMAN_ID, true);
}

/// One sweep with a window that covers `fixtures::basic()`'s MR; its line for !7 and the
/// report's last two lines, `refreshed: M / healed: N`.
fn sweep_mr7(fake: &FakeGitLab) -> (String, String) {
    let out = run_sweep(fake, &["--lookback", "3h", "--interval", "1h"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    (
        line_of(&text, fixtures::MR_IID),
        text.lines()
            .rev()
            .take(2)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join(" / "),
    )
}

/// What the pipeline the sweep created does once its job has run: the head pipeline is no
/// longer active.
fn pipeline_finished(fake: &FakeGitLab) {
    let id = fake.pipelines(PROJECT_ID).last().map_or(4999, |p| p.id);
    fake.set_head_pipeline(PROJECT_ID, fixtures::MR_IID, Some((id, "success")));
}

#[test]
fn a_summary_verified_for_another_target_branch_is_healed() {
    let fake = FakeGitLab::start(fixtures::basic());
    // Judged while the MR targeted a branch without policies: verified, nothing to review.
    fake.set_target_branch(PROJECT_ID, fixtures::MR_IID, "no-policies");
    let publication = reconcile(
        &forge(&fake),
        &DesiredState::default(),
        &run_context_for("no-policies", false),
    )
    .unwrap();
    assert!(publication.receipt.rescan.verified);
    pipeline_finished(&fake);
    let (line, healed) = sweep_mr7(&fake);
    assert!(line.starts_with("!7 verified: none"), "{line}");
    assert_eq!(healed, "refreshed: 0 / healed: 0");

    // Retargeted to `main`: nothing in the MR path notices, the sweep does.
    fake.set_target_branch(PROJECT_ID, fixtures::MR_IID, "main");
    fake.reset_log();
    let (line, healed) = sweep_mr7(&fake);
    assert!(
        line.starts_with("!7 verified-other-target: pipeline-created"),
        "{line}"
    );
    assert!(
        line.contains(r#"against "no-policies", but the MR now targets "main""#),
        "{line}"
    );
    assert_eq!(healed, "refreshed: 1 / healed: 0");
    assert_eq!(
        fake.writes(),
        1,
        "the sweep writes nothing but the pipeline"
    );

    // The pipeline's job judges it for `main`; the next sweep finds it healthy.
    reconcile(&forge(&fake), &desired(), &run_context_for("main", true)).unwrap();
    pipeline_finished(&fake);
    let (line, healed) = sweep_mr7(&fake);
    assert!(line.starts_with("!7 verified: none"), "{line}");
    assert_eq!(healed, "refreshed: 0 / healed: 0");
}

#[test]
fn a_summary_without_a_target_is_healed_once() {
    let fake = FakeGitLab::start(fixtures::basic());
    // A verified summary written before targets were recorded.
    fake.post_note(
        PROJECT_ID,
        fixtures::MR_IID,
        BOT_ID,
        &summary_body_for(SummaryState::Verified, HEAD_SHA, None),
    );
    fake.set_head_pipeline(PROJECT_ID, fixtures::MR_IID, Some((4000, "success")));
    let (line, healed) = sweep_mr7(&fake);
    assert!(
        line.starts_with("!7 verified-no-target: pipeline-created"),
        "{line}"
    );
    assert!(line.contains("no target branch recorded"), "{line}");
    assert_eq!(healed, "refreshed: 0 / healed: 1");

    reconcile(&forge(&fake), &desired(), &run_context()).unwrap();
    pipeline_finished(&fake);
    for _ in 0..2 {
        let (line, healed) = sweep_mr7(&fake);
        assert!(line.starts_with("!7 verified: none"), "{line}");
        assert_eq!(healed, "refreshed: 0 / healed: 0");
    }
    assert_eq!(pipelines_for(&fake), vec![fixtures::MR_IID], "one pipeline");
}

/// What a run whose decision stays `REVIEW` writes once it has seen the current resolutions
/// (a resolution that does not count as assent, docs/contract.md#who-may-assent): a verified `REVIEW` summary whose
/// gate line carries the fingerprint of the current listing.
fn rerun_keeping_review(fake: &FakeGitLab) {
    use assent::core::inventory::Inventory;
    use assent::core::render::{SummaryContext, summary_body as render_summary};
    use assent::core::review_state::finding_statuses;
    use assent::forge::Forge;
    let forge = forge(fake);
    let inventory = Inventory::from_listing(&forge.list_discussions().unwrap(), BOT_ID);
    let desired = desired();
    let facts = assent::core::who_assents::AssentFacts::default();
    let statuses: Vec<_> = finding_statuses(&desired, &inventory, &facts)
        .into_iter()
        .map(|mut status| {
            status.resolved = false;
            status.assent = assent::core::who_assents::Assent::Open;
            status
        })
        .collect();
    let ctx = run_context();
    let body = render_summary(
        SummaryContext {
            pins: &ctx.pins,
            web_url: None,
            target: ctx.target.as_ref(),
            listing: Some(&inventory),
        },
        &desired,
        &statuses,
        SummaryState::Verified,
    );
    assert!(
        body.contains(r#"<!-- assent:gate {"decision":"REVIEW""#),
        "{body}"
    );
    forge
        .edit_note(inventory.canonical_summary().unwrap().note_id, &body)
        .unwrap();
}

#[test]
fn review_is_healed_once_per_change_of_resolutions_that_may_count() {
    let fake = FakeGitLab::start(fixtures::basic());
    reconcile(&forge(&fake), &desired(), &run_context()).unwrap();
    pipeline_finished(&fake);
    // REVIEW with open challenges: nothing changed since the summary.
    let (line, healed) = sweep_mr7(&fake);
    assert!(line.starts_with("!7 verified: none"), "{line}");
    assert_eq!(healed, "refreshed: 0 / healed: 0");

    // The MR's author resolves both challenges: the summary still says REVIEW, and no
    // resolution there can ever count, so no pipeline, not even once.
    let threads = challenge_threads(&fake);
    assert_eq!(threads.len(), 2);
    for id in &threads {
        fake.resolve(PROJECT_ID, fixtures::MR_IID, id, fixtures::AUTHOR_ID, true);
    }
    sweeps_leave_it_alone_twice(&fake);

    // A reviewer resolves one instead: a change of resolutions that may count, healed once.
    reviewer_resolves_instead(&fake, &threads[0]);
    let (line, healed) = sweep_mr7(&fake);
    assert!(
        line.starts_with("!7 review-resolved: pipeline-created"),
        "{line}"
    );
    assert_eq!(healed, "refreshed: 1 / healed: 0");

    // That pipeline's run keeps REVIEW for the resolutions it saw (here: written as a run
    // that does not count them would). No sweep after it creates a pipeline, however many run.
    rerun_keeping_review(&fake);
    pipeline_finished(&fake);
    for _ in 0..3 {
        let (line, healed) = sweep_mr7(&fake);
        assert!(line.starts_with("!7 verified: none"), "{line}");
        assert!(line.contains("no resolution changed"), "{line}");
        assert_eq!(healed, "refreshed: 0 / healed: 0");
    }
    assert_eq!(fake.pipelines(PROJECT_ID).len(), 1);

    // The reviewer re-opens it and resolves it again: the same resolutions, no pipeline.
    fake.resolve(PROJECT_ID, fixtures::MR_IID, &threads[0], HUMAN_ID, false);
    let (line, _) = sweep_mr7(&fake);
    assert!(line.starts_with("!7 verified: none"), "{line}");
    fake.resolve(PROJECT_ID, fixtures::MR_IID, &threads[0], HUMAN_ID, true);
    let (line, healed) = sweep_mr7(&fake);
    assert!(line.starts_with("!7 verified: none"), "{line}");
    assert_eq!(healed, "refreshed: 0 / healed: 0");

    // Another reviewer resolves the second one: a new change, healed again.
    fake.ensure_user(400, "carol");
    fake.resolve(
        PROJECT_ID,
        fixtures::MR_IID,
        &threads[1],
        fixtures::AUTHOR_ID,
        false,
    );
    fake.resolve(PROJECT_ID, fixtures::MR_IID, &threads[1], 400, true);
    let (line, healed) = sweep_mr7(&fake);
    assert!(
        line.starts_with("!7 review-resolved: pipeline-created"),
        "{line}"
    );
    assert_eq!(healed, "refreshed: 1 / healed: 0");
    assert_eq!(fake.pipelines(PROJECT_ID).len(), 2);
}

#[test]
fn the_json_report_names_the_new_verdicts() {
    let other_target = mr(
        1,
        &ago(HOUR),
        vec![note(
            BOT_ID,
            summary_body_for(SummaryState::Verified, HEAD_SHA, Some("release")),
            &ago(HOUR),
        )],
    );
    let no_target = mr(
        2,
        &ago(2 * HOUR),
        vec![note(
            BOT_ID,
            summary_body_for(SummaryState::Verified, HEAD_SHA, None),
            &ago(2 * HOUR),
        )],
    );
    let fake = FakeGitLab::start(with_mrs(vec![other_target, no_target]));
    // The text report names them, and still ends with `healed: N`.
    let out = run_sweep(
        &fake,
        &["--lookback", "3h", "--interval", "1h", "--dry-run"],
    );
    let text = stdout(&out);
    assert!(
        line_of(&text, 1).starts_with("!1 verified-other-target: would-create-pipeline"),
        "{text}"
    );
    assert!(
        line_of(&text, 2).starts_with("!2 verified-no-target: would-create-pipeline"),
        "{text}"
    );
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    assert_eq!(
        tail,
        ["healed: 0", "refreshed: 0", "would heal: 2 (dry run)"],
        "{text}"
    );
    let out = run_sweep(
        &fake,
        &["--lookback", "3h", "--interval", "1h", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdicts: Vec<(u64, &str, &str)> = doc["mrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["iid"].as_u64().unwrap(),
                m["verdict"].as_str().unwrap(),
                m["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        vec![
            (2, "verified-no-target", "pipeline-created"),
            (1, "verified-other-target", "pipeline-created"),
        ]
    );
    // A retarget is a human action: its pipeline is a refresh, not a repair.
    assert_eq!((&doc["refreshed"], &doc["healed"]), (&1.into(), &1.into()));
}

// ---- silent resolutions (docs/contract.md#silent-resolutions), head pipelines and refusals (docs/contract.md#pipeline-creation) ----

/// The bot's resolvable threads on MR !7.
fn challenge_threads(fake: &FakeGitLab) -> Vec<String> {
    fake.discussions(PROJECT_ID, fixtures::MR_IID)
        .into_iter()
        .filter(|d| d.resolvable())
        .map(|d| d.id)
        .collect()
}

/// A reviewer resolves one challenge of two on an MR last updated days ago: GitLab moves no
/// `updated_at` and sends nothing, and the sweep still sees it, once. The MR's author
/// resolving one never causes a pipeline.
#[test]
fn one_thread_of_several_resolved_outside_the_window_is_refreshed_once() {
    let fake = FakeGitLab::start(fixtures::basic());
    fake.set_time(&ago(5 * 24 * HOUR));
    reconcile(&forge(&fake), &desired(), &run_context()).unwrap();
    pipeline_finished(&fake);
    let threads = challenge_threads(&fake);
    assert_eq!(threads.len(), 2);
    let updated = fake.mr(PROJECT_ID, fixtures::MR_IID).updated_at;

    // The MR's author resolves one: no resolution that can count, no pipeline, sweep after
    // sweep.
    fake.set_time(&ago(4 * 24 * HOUR));
    fake.resolve(
        PROJECT_ID,
        fixtures::MR_IID,
        &threads[0],
        fixtures::AUTHOR_ID,
        true,
    );
    assert_eq!(fake.mr(PROJECT_ID, fixtures::MR_IID).updated_at, updated);
    sweeps_leave_it_alone_twice(&fake);

    // A reviewer resolves it instead, the other thread stays open: still nothing moves.
    reviewer_resolves_instead(&fake, &threads[0]);
    assert_eq!(fake.mr(PROJECT_ID, fixtures::MR_IID).updated_at, updated);
    fake.reset_log();
    let (line, tail) = sweep_mr7(&fake);
    assert!(
        line.starts_with("!7 review-resolved: pipeline-created"),
        "{line}"
    );
    assert_eq!(tail, "refreshed: 1 / healed: 0");
    assert_eq!(pipelines_for(&fake), vec![fixtures::MR_IID]);
    // GET /user, the listing, the discussions, the single MR; one write.
    assert_eq!(
        (fake.reads(), fake.writes()),
        (4, 1),
        "{:?}",
        requested(&fake)
    );

    // The next sweep, while that pipeline is coming: none.
    let (line, tail) = sweep_mr7(&fake);
    assert!(line.starts_with("!7 pipeline-active: none"), "{line}");
    assert_eq!(tail, "refreshed: 0 / healed: 0");
    // Its run keeps REVIEW (the other thread is open) for the resolutions it saw: none again.
    rerun_keeping_review(&fake);
    pipeline_finished(&fake);
    let (line, tail) = sweep_mr7(&fake);
    assert!(line.starts_with("!7 verified: none"), "{line}");
    assert!(line.contains("no resolution changed"), "{line}");
    assert_eq!(tail, "refreshed: 0 / healed: 0");
    assert_eq!(fake.pipelines(PROJECT_ID).len(), 1);
}

/// Outside the window, an MR whose summary does not say `REVIEW` is read and left alone, and
/// one without user notes is not even read.
#[test]
fn outside_the_window_only_an_mr_at_review_gets_a_line() {
    let fake = FakeGitLab::start(with_mrs(vec![
        mr(
            1,
            &ago(5 * 24 * HOUR),
            vec![note(
                BOT_ID,
                summary_body(SummaryState::Reconciling, HEAD_SHA),
                &ago(5 * 24 * HOUR),
            )],
        ),
        mr(2, &ago(5 * 24 * HOUR), vec![]),
    ]));
    let out = run_sweep(
        &fake,
        &["--lookback", "3h", "--interval", "1h", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["mrs"], serde_json::json!([]));
    assert_eq!(
        (&doc["listed"], &doc["readOutsideWindow"]),
        (&0.into(), &1.into())
    );
    assert!(
        requested(&fake)
            .iter()
            .any(|p| p.ends_with("/merge_requests/1/discussions")),
        "{:?}",
        requested(&fake)
    );
    assert!(
        !requested(&fake)
            .iter()
            .any(|p| p.contains("/merge_requests/2/")),
        "{:?}",
        requested(&fake)
    );
    assert_eq!(fake.writes(), 0);
}

/// `head_pipeline` is the MR's latest pipeline: after a push it can be the previous head's,
/// still running. That is no job for the head, so the sweep creates one.
#[test]
fn a_running_pipeline_of_the_previous_head_is_not_the_heads() {
    let fake = FakeGitLab::start(with_mrs(vec![mr(
        1,
        &ago(HOUR),
        vec![note(
            BOT_ID,
            summary_body(SummaryState::Verified, HEAD_SHA),
            &ago(HOUR),
        )],
    )]));
    fake.set_head_pipeline(PROJECT_ID, 1, Some((4000, "running")));
    fake.set_head(PROJECT_ID, 1, OLD_SHA);
    let out = run_sweep(&fake, &["--lookback", "3h", "--interval", "1h"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let line = line_of(&text, 1);
    assert!(
        line.starts_with("!1 verified-older-head: pipeline-created"),
        "{line}"
    );
    assert!(
        line.contains("head pipeline is running for 22222222, not the head"),
        "{line}"
    );
    assert_eq!(pipelines_for(&fake), vec![1]);
}

/// GitLab refuses the pipeline and creates none: the MR's line says so, the pass goes on and
/// the sweep exits 0.
#[test]
fn a_refused_pipeline_is_reported_and_the_sweep_goes_on() {
    let mut empty = mr(1, &ago(2 * HOUR), vec![]);
    empty.has_no_commits = true;
    let fake = FakeGitLab::start(with_mrs(vec![empty, mr(2, &ago(HOUR), vec![])]));
    let out = run_sweep(&fake, &["--lookback", "3h", "--interval", "1h"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let line = line_of(&text, 1);
    assert!(line.starts_with("!1 missing: pipeline-refused ("), "{line}");
    assert!(
        line.contains("GitLab refused the pipeline and created none (HTTP 405"),
        "{line}"
    );
    assert!(
        line_of(&text, 2).starts_with("!2 missing: pipeline-created"),
        "{text}"
    );
    assert_eq!(text.lines().last(), Some("healed: 1"));
    assert_eq!(pipelines_for(&fake), vec![2]);
    assert_eq!(stderr(&out), "");
    let out = run_sweep(
        &fake,
        &["--lookback", "3h", "--interval", "1h", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["refused"], 1);
    assert_eq!(doc["complete"], true);
}
