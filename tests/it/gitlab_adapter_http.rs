//! The GitLab adapter against the stateful fake GitLab over loopback HTTP, in whole runs
//! (`reconcile`): a listing that fails, rate limits on writes, lost acknowledgements, a full
//! run and its rerun, hostile servers; each run writes nothing it should not. The wire alone
//! (status mapping, pagination, headers, retries, redirects, redaction, proxies, DiffNote
//! requests) is tested in the adapter's own unit tests (`crates/assent-gitlab/src/tests.rs`).
//! See the `assent_test_support` crate for how the fake is started.

use std::time::Duration;

use assent::core::inventory::Inventory;
use assent::core::model::DesiredState;
use assent::engine::fixture::replay::fixture_pins;
use assent::engine::fixture::schema::FindingSpec;
use assent::engine::run::reconcile::{RunContext, reconcile};
use assent::forge::{Forge, ForgeError};
use assent::gitlab::ThreadSleeper;
use assent_test_support::{config_for, forge_for, forge_with, start_basic};
use fake_gitlab::{FakeGitLab, FaultAction, FaultRule, RouteKind, fixtures};

const P: u64 = fixtures::PROJECT_ID;
const MR: u64 = fixtures::MR_IID;

fn seed_threads(fake: &FakeGitLab, n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| {
            fake.post_thread(P, MR, fixtures::HUMAN_ID, &format!("thread {i}"))
                .1
        })
        .collect()
}

fn discussion_pages(fake: &FakeGitLab) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.route == RouteKind::Discussions)
        .count()
}

fn finding(yaml: &str) -> assent::core::model::Finding {
    serde_yaml::from_str::<FindingSpec>(yaml)
        .expect("finding spec")
        .to_finding()
}

fn desired() -> DesiredState {
    DesiredState::new(vec![
        finding(
            r#"{ rule: retention-shrink, subject: "topics/orders.yaml#/topics/orders.events.v1/retention_days", change: { kind: modify, old: 30, new: 7 } }"#,
        ),
        finding(
            r#"{ rule: topic-delete, effect: block, subject: "topics/payments.yaml#/topics/payments.v2", change: { kind: delete, old: 1 } }"#,
        ),
    ])
}

fn ctx() -> RunContext {
    RunContext {
        project: fixtures::PROJECT_PATH.into(),
        mr: MR,
        pins: fixture_pins(&assent_test_support::sha(fixtures::HEAD_SHA)),
        web_url: None,
        dry_run: false,
        mr_author_id: Some(assent::forge::memory::MR_AUTHOR_USER_ID),
        target: None,
        requests_before: Default::default(),
        previous_bot_users: Vec::new(),
    }
}

/// The bot's artifacts as a fresh adapter lists them.
fn inventory(fake: &FakeGitLab) -> Inventory {
    let (forge, _) = forge_for(fake);
    Inventory::from_listing(&forge.list_discussions().unwrap(), fixtures::BOT_ID)
}

fn assert_no_violations(fake: &FakeGitLab) {
    assert_eq!(fake.violations(), Vec::<String>::new());
}

// ---- pagination ---------------------------------------------------------------------------

#[test]
fn a_page_that_keeps_failing_fails_the_listing_and_the_run_writes_nothing() {
    let fake = start_basic();
    seed_threads(&fake, 150);
    fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .method("GET")
            .route(RouteKind::Discussions)
            .query_contains("&page=2"),
    );
    let (forge, sleeper) = forge_for(&fake);
    let err = forge.list_discussions().unwrap_err();
    // A request that still fails after its retries is a forge failure (exit 3), never a
    // listing "GitLab says is incomplete" that a run could publish a finding about.
    assert!(
        matches!(&err, ForgeError::Status { status: 500, message, .. } if message.contains("(page 2)")),
        "{err:?}"
    );
    // Page 1 once, page 2 as often as the read policy allows.
    let attempts = assent::gitlab::RetryPolicy::default().max_attempts as usize;
    assert_eq!(discussion_pages(&fake), 1 + attempts);
    assert_eq!(sleeper.delays().len(), attempts - 1);

    let result = reconcile(&forge, &desired(), &ctx());
    assert!(result.is_err(), "the run must abort");
    assert_eq!(fake.writes(), 0, "no write after an incomplete listing");
    assert_eq!(forge.request_counts().writes, 0);
    assert_no_violations(&fake);
}

// ---- rate limits on writes (docs/contract.md#write-rate-limits) ---------------------------------------------------

/// The bot's thread POSTs in the fake's log, in order: (status, body).
fn thread_posts(fake: &FakeGitLab) -> Vec<(Option<u16>, String)> {
    fake.requests()
        .iter()
        .filter(|r| r.method == "POST" && r.route == RouteKind::Discussions)
        .map(|r| (r.status, r.body.clone()))
        .collect()
}

/// One thread per desired slot, each of the current occurrence, and one summary: what a
/// run that created nothing twice leaves.
fn assert_one_thread_per_slot(fake: &FakeGitLab) {
    let inv = inventory(fake);
    assert_eq!(inv.threads.len(), 2, "{:#?}", inv.threads);
    let slots: std::collections::BTreeSet<_> = inv.threads.iter().map(|t| t.slot.clone()).collect();
    assert_eq!(slots.len(), 2, "no duplicate thread");
    assert_eq!(inv.summaries.len(), 1);
}

#[test]
fn a_thread_post_refused_with_429_is_sent_again_after_the_wait_and_the_run_verifies() {
    let fake = start_basic();
    fake.inject(
        FaultRule::new(FaultAction::RateLimitText { retry_after: 60 })
            .method("POST")
            .route(RouteKind::Discussions)
            .nth(1),
    );
    fake.inject(
        FaultRule::new(FaultAction::RateLimitJson { retry_after: 60 })
            .method("POST")
            .route(RouteKind::Discussions)
            .nth(3),
    );
    let (forge, sleeper) = forge_for(&fake);
    let publication = reconcile(&forge, &desired(), &ctx()).expect("the run completes");
    assert!(publication.receipt.rescan.verified);
    // Both refusals waited what GitLab asked for, and nothing else was waited for: a 429 is
    // no ambiguous write, so no write-settle wait.
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(60); 2]);
    let posts = thread_posts(&fake);
    assert_eq!(posts.len(), 4, "{posts:#?}");
    assert_eq!(posts[0].0, Some(429));
    assert_eq!(posts[1].0, Some(201));
    assert_eq!(posts[0].1, posts[1].1, "the same write, sent again");
    assert_eq!(posts[2].0, Some(429));
    assert_eq!(posts[3].0, Some(201));
    assert_eq!(posts[2].1, posts[3].1, "the same write, sent again");
    // Sent again at once after the wait: no listing decided it.
    let log = fake.requests();
    for (i, r) in log.iter().enumerate() {
        if r.status == Some(429) {
            assert_eq!(log[i + 1].method, "POST", "{:?}", log[i + 1]);
            assert_eq!(log[i + 1].body, r.body);
        }
    }
    assert_one_thread_per_slot(&fake);
    assert_eq!(
        forge.client().rate_limits(),
        assent::gitlab::RateLimitTally {
            waited: Duration::from_secs(120),
            refused_writes: 2
        }
    );
    assert_no_violations(&fake);
}

#[test]
fn a_rate_limit_outlasting_the_budget_fails_the_run_with_the_summary_reconciling() {
    let fake = start_basic();
    fake.inject(
        FaultRule::new(FaultAction::RateLimitText { retry_after: 60 })
            .method("POST")
            .route(RouteKind::Discussions),
    );
    let mut config = config_for(
        &fake,
        fixtures::BOT_TOKEN,
        fixtures::PROJECT_PATH,
        fixtures::MR_IID,
    );
    config.retry.rate_limit_budget = Duration::from_secs(150);
    let (forge, sleeper) = forge_with(config);
    let err = reconcile(&forge, &desired(), &ctx()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("rate limited"), "{text}");
    assert!(text.contains("(120 s waited of 150 s)"), "{text}");
    assert!(
        matches!(
            err,
            assent::engine::run::reconcile::ReconcileError::Forge(ForgeError::RateLimited(_))
        ),
        "{err:?}"
    );
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(60); 2]);
    assert_eq!(thread_posts(&fake).len(), 3, "two waits fitted the budget");
    let inv = inventory(&fake);
    assert!(inv.threads.is_empty(), "{:#?}", inv.threads);
    assert_eq!(inv.summaries.len(), 1);
    assert_eq!(
        inv.summaries[0].state,
        assent::core::marker::SummaryState::Reconciling,
        "the summary does not claim verified"
    );
}

/// A sleeper that records each delay and really sleeps it: the fake's rate-limit window
/// runs on real time.
#[derive(Default)]
struct SleepingRecorder(std::sync::Mutex<Vec<Duration>>);

impl assent::gitlab::Sleeper for SleepingRecorder {
    fn sleep(&self, delay: Duration) {
        self.0.lock().unwrap().push(delay);
        std::thread::sleep(delay);
    }
}

/// A first run (three note creations: the summary, two threads) under a limit of `limit`
/// note creations per second.
fn window_limited_run(limit: u64, headers: bool) -> (FakeGitLab, Vec<Duration>) {
    let fake = start_basic();
    fake.inject(
        FaultRule::new(FaultAction::WindowLimit {
            limit,
            window_ms: 1_000,
            headers,
        })
        .note_creation(),
    );
    let sleeper = std::sync::Arc::new(SleepingRecorder::default());
    let config = config_for(
        &fake,
        fixtures::BOT_TOKEN,
        fixtures::PROJECT_PATH,
        fixtures::MR_IID,
    );
    let forge =
        assent::gitlab::GitLabForge::with_sleeper(config.gitlab, config.mr, sleeper.clone())
            .unwrap();
    let publication = reconcile(&forge, &desired(), &ctx()).expect("the run completes");
    assert!(publication.receipt.rescan.verified);
    assert_one_thread_per_slot(&fake);
    assert_no_violations(&fake);
    let delays = sleeper.0.lock().unwrap().clone();
    (fake, delays)
}

#[test]
fn a_note_creation_limit_without_headers_is_met_once_and_waited_out() {
    let (fake, delays) = window_limited_run(2, false);
    let refused: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.status == Some(429))
        .collect();
    assert_eq!(refused.len(), 1, "the third note creation: {refused:?}");
    assert_eq!(refused[0].fault.as_deref(), Some("window_limit"));
    assert_eq!(delays, vec![Duration::from_secs(1)], "Retry-After: 1");
    assert_eq!(thread_posts(&fake).len(), 3);
}

#[test]
fn writes_wait_only_when_ratelimit_remaining_says_the_window_is_nearly_spent() {
    // Three a second: the summary leaves two (no wait), the first thread one (wait), the
    // second thread opens a new window and leaves two again.
    let (fake, delays) = window_limited_run(3, true);
    assert!(fake.requests().iter().all(|r| r.status != Some(429)));
    assert_eq!(delays.len(), 1, "{delays:?}");
}

#[test]
fn writes_are_paced_by_ratelimit_remaining_and_meet_no_429() {
    let (fake, delays) = window_limited_run(2, true);
    assert!(
        fake.requests().iter().all(|r| r.status != Some(429)),
        "pacing kept every write inside the window"
    );
    // Each window's first note creation leaves one of two (at most PACE_AT_REMAINING), so
    // the next write waits for the reset: after the summary, after each thread.
    assert_eq!(delays.len(), 3, "{delays:?}");
    for d in &delays {
        assert!(
            *d > Duration::ZERO && *d <= Duration::from_secs(2),
            "{delays:?}"
        );
    }
    assert_eq!(thread_posts(&fake).len(), 2, "nothing sent twice");
}

// ---- lost acknowledgements ---------------------------------------------------------------

#[test]
fn a_lost_ack_during_reconcile_leaves_no_duplicate_after_the_run_and_a_rerun() {
    for close in [false, true] {
        for (method, route, nth) in [
            ("POST", RouteKind::Discussions, 1),
            ("POST", RouteKind::Discussions, 2),
            ("POST", RouteKind::Notes, 1),
            ("PUT", RouteKind::Note, 1),
        ] {
            let fake = start_basic();
            // That write is applied, then its answer is lost.
            fake.inject(
                FaultRule::new(FaultAction::LostAck { close })
                    .method(method)
                    .route(route)
                    .nth(nth),
            );
            let label = format!("close={close} {method} {route:?} #{nth}");
            let (forge, _) = forge_for(&fake);
            let first =
                reconcile(&forge, &desired(), &ctx()).unwrap_or_else(|e| panic!("{label}: {e}"));
            assert!(first.receipt.rescan.verified, "{label}");
            let lost = fake
                .requests()
                .iter()
                .filter(|r| r.fault.as_deref() == Some("lost_ack"))
                .count();
            assert_eq!(lost, 1, "{label}: the fault fired once");

            let check = |when: &str| {
                let inv = inventory(&fake);
                assert_eq!(inv.summaries.len(), 1, "{label} {when}: summaries");
                assert_eq!(inv.threads.len(), 2, "{label} {when}: threads");
                let slots: std::collections::BTreeSet<_> =
                    inv.threads.iter().map(|t| t.slot.clone()).collect();
                assert_eq!(slots.len(), 2, "{label} {when}: one thread per slot");
            };
            check("after the run");

            let writes_before = fake.writes();
            let (rerun_forge, _) = forge_for(&fake);
            let rerun = reconcile(&rerun_forge, &desired(), &ctx()).unwrap();
            assert_eq!(rerun.receipt.requests.writes, 0, "{label}");
            assert_eq!(fake.writes(), writes_before, "{label}: rerun writes");
            check("after the rerun");
            assert_no_violations(&fake);
        }
    }
}

/// docs/contract.md#reconciliation's matching, against a write GitLab applies late: the thread POST is held past
/// the client's timeout and applied afterwards, as GitLab does when Puma finishes a request
/// whose client gave up. `write_settle` (GitLab's request timeout plus margin, scaled down
/// here) makes the ambiguous write wait until the server is done with it, so the listing
/// that decides sees the late thread and nothing is created twice.
fn late_applied_thread_run(
    write_settle: Duration,
) -> (FakeGitLab, assent::engine::run::reconcile::Publication) {
    let fake = start_basic();
    fake.inject(
        FaultRule::new(FaultAction::Hold {
            apply: fake_gitlab::HoldApply::Before,
            timeout_ms: Some(1_500),
        })
        .method("POST")
        .route(RouteKind::Discussions)
        .nth(1),
    );
    let mut config = config_for(
        &fake,
        fixtures::BOT_TOKEN,
        fixtures::PROJECT_PATH,
        fixtures::MR_IID,
    );
    config.request_timeout = Duration::from_millis(500);
    config.retry.write_settle = write_settle;
    let forge = assent::gitlab::GitLabForge::with_sleeper(
        config.gitlab,
        config.mr,
        std::sync::Arc::new(ThreadSleeper),
    )
    .unwrap();
    let publication = reconcile(&forge, &desired(), &ctx()).expect("the run completes");
    // Whatever the run did, wait until the held POST has been applied before judging.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while fake
        .requests()
        .iter()
        .any(|r| r.write && r.status.is_none())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the held POST never completed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (fake, publication)
}

#[test]
fn a_thread_gitlab_applies_after_the_client_timed_out_is_not_created_twice() {
    let (fake, publication) = late_applied_thread_run(Duration::from_secs(3));
    assert!(publication.receipt.rescan.verified);
    let inv = inventory(&fake);
    assert_eq!(inv.threads.len(), 2, "{:#?}", inv.threads);
    let slots: std::collections::BTreeSet<_> = inv.threads.iter().map(|t| t.slot.clone()).collect();
    assert_eq!(slots.len(), 2, "one thread per slot");
    let posts = fake
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.route == RouteKind::Discussions)
        .count();
    assert_eq!(posts, 2, "the late thread was adopted, not posted again");
    assert_no_violations(&fake);
}

/// The hazard the settle closes: deciding at once, from a listing taken while GitLab still
/// works on the write, posts the thread again and the late copy lands after "verified".
#[test]
fn without_the_write_settle_a_late_thread_would_be_duplicated() {
    let (fake, publication) = late_applied_thread_run(Duration::ZERO);
    assert!(
        publication.receipt.rescan.verified,
        "the run believed it was done"
    );
    let inv = inventory(&fake);
    assert_eq!(inv.threads.len(), 3, "{:#?}", inv.threads);
}

// ---- a full run -----------------------------------------------------------------------------

#[test]
fn a_full_run_then_a_rerun_over_http_converges_with_zero_writes() {
    let fake = start_basic();
    let (forge, sleeper) = forge_for(&fake);
    let first = reconcile(&forge, &desired(), &ctx()).unwrap();
    assert!(first.receipt.rescan.verified);
    // summary "reconciling", two threads, summary "verified"
    assert_eq!(first.receipt.requests.writes, 4);
    assert_eq!(fake.writes(), 4);

    let (rerun_forge, _) = forge_for(&fake);
    let rerun = reconcile(&rerun_forge, &desired(), &ctx()).unwrap();
    assert_eq!(rerun.receipt.requests.writes, 0);
    assert_eq!(fake.writes(), 4, "the rerun wrote");
    assert_eq!(rerun.receipt.decision, first.receipt.decision);

    let inv = inventory(&fake);
    assert_eq!(inv.summaries.len(), 1, "exactly one summary");
    assert_eq!(inv.threads.len(), 2);
    assert!(inv.warnings.is_empty());
    // The summary is a plain note, the findings resolvable threads, all by the bot.
    let discussions = fake.discussions(P, MR);
    assert_eq!(discussions.len(), 3);
    let plain: Vec<_> = discussions.iter().filter(|d| d.individual_note).collect();
    assert_eq!(plain.len(), 1);
    assert!(!plain[0].resolvable());
    assert!(
        discussions
            .iter()
            .flat_map(|d| &d.notes)
            .all(|n| n.author_id == fixtures::BOT_ID && !n.system)
    );
    assert!(sleeper.delays().is_empty());
    assert_no_violations(&fake);
}

// ---- hostile servers and transport edges --------------------------------------------------

/// Every discussions request's `per_page`, in order.
fn discussion_page_sizes(fake: &FakeGitLab) -> Vec<u64> {
    fake.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.route == RouteKind::Discussions)
        .map(|r| {
            form_urlencoded_value(&r.query, "per_page")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        })
        .collect()
}

fn form_urlencoded_value(query: &str, key: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_owned())
}

#[test]
fn bot_notes_over_the_limit_fail_naming_the_page_and_the_limit_and_the_run_writes_nothing() {
    let fake = start_basic();
    let expected = seed_threads(&fake, 3);
    assert_eq!(expected.len(), 3);
    // The bot's own notes are kept whole, so they must fit the limit.
    let second = fake
        .discussions(P, MR)
        .into_iter()
        .find(|d| d.notes[0].id == expected[1])
        .unwrap();
    let big = fake.reply(P, MR, &second.id, fixtures::BOT_ID, "bot");
    fake.inflate_note(big, "ü", 40_000);
    let mut config = config_for(&fake, fixtures::BOT_TOKEN, fixtures::PROJECT_PATH, MR);
    config.body_limit = 64 * 1024;
    let (forge, _) = forge_with(config.clone());
    let err = forge.list_discussions().unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ForgeError::Decode { .. }), "{err:?}");
    for part in [
        "discussions of merge request 7",
        "(from item 2)",
        "65536-byte",
        "per_page=1",
        "page 2",
    ] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
    assert_eq!(discussion_page_sizes(&fake).last(), Some(&1));

    let (forge, _) = forge_with(config);
    assert!(
        reconcile(&forge, &desired(), &ctx()).is_err(),
        "the run must abort"
    );
    assert_eq!(
        fake.writes(),
        0,
        "no write after a listing that cannot complete"
    );
}

#[test]
fn a_next_link_with_user_info_is_refused_and_never_requested() {
    let fake = start_basic();
    seed_threads(&fake, 150);
    fake.set_link_pagination(true, Some("assent:s3cret"));
    let (forge, _) = forge_for(&fake);
    let err = forge.list_discussions().unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    assert!(text.contains("user-info"), "{text}");
    assert!(
        !text.contains("s3cret") && !text.contains("assent:"),
        "{text}"
    );
    assert_eq!(discussion_pages(&fake), 1, "the link was not followed");
    for request in fake.requests() {
        assert!(
            request
                .headers
                .iter()
                .all(|(k, _)| !k.eq_ignore_ascii_case("authorization")),
            "{request:?}"
        );
    }
    let result = reconcile(&forge, &desired(), &ctx());
    assert!(result.is_err());
    assert_eq!(fake.writes(), 0);

    // The same Link pagination without credentials is followed to the end.
    fake.set_link_pagination(true, None);
    let (forge, _) = forge_for(&fake);
    assert_eq!(forge.list_discussions().unwrap().len(), 150);
}
