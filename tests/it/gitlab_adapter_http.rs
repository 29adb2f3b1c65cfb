//! The GitLab adapter against the stateful fake GitLab over loopback HTTP, in whole runs: a
//! listing that fails, rate limits on writes, lost acknowledgements, a full reconcile run,
//! hostile servers and DiffNotes. The wire alone (status mapping, pagination, headers,
//! retries, redaction) is tested in the adapter's own unit tests. See the
//! `assent_test_support` crate for how the fake is started.

use std::time::Duration;

use assent::core::inventory::Inventory;
use assent::core::model::DesiredState;
use assent::fixture::runner::fixture_pins;
use assent::fixture::schema::FindingSpec;
use assent::forge::{Forge, ForgeError};
use assent::gitlab::ThreadSleeper;
use assent::reconcile::{RunContext, reconcile};
use assent_test_support::{ForgeConfig, config_for, forge_for, forge_with, start_basic};
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
        pins: fixture_pins(fixtures::HEAD_SHA),
        web_url: None,
        dry_run: false,
        mr_author_id: Some(assent::forge::memory::MR_AUTHOR_USER_ID),
        target: None,
        requests_before: Default::default(),
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
            assent::reconcile::ReconcileError::Forge(ForgeError::RateLimited(_))
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
fn late_applied_thread_run(write_settle: Duration) -> (FakeGitLab, assent::reconcile::Publication) {
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

/// Seeds `n` human threads; the ones in `heavy` are listed with `text` repeated `times`
/// times after their body. Returns each thread's note id and full listed body.
fn seed_heavy_threads(
    fake: &FakeGitLab,
    n: usize,
    heavy: &[(std::ops::Range<usize>, &str, usize)],
) -> Vec<(u64, String)> {
    (0..n)
        .map(|i| {
            let body = format!("thread {i}");
            let id = fake.post_thread(P, MR, fixtures::HUMAN_ID, &body).1;
            match heavy.iter().find(|(range, _, _)| range.contains(&i)) {
                Some((_, text, times)) => {
                    fake.inflate_note(id, text, *times);
                    (id, format!("{body}{}", text.repeat(*times)))
                }
                None => (id, body),
            }
        })
        .collect()
}

#[test]
fn pages_over_the_body_limit_are_asked_again_smaller_and_nothing_is_skipped_or_repeated() {
    // Multi-byte characters, JSON escapes (a control character is six bytes on the wire, a
    // quote two) and a four-byte emoji: the limit is in bytes, notes are in characters.
    let heavy: &[(std::ops::Range<usize>, &str, usize)] = &[
        (40..70, "ü", 20_000),
        (150..151, "\u{1}", 12_000),
        (151..152, "\"", 30_000),
        (152..153, "😀", 15_000),
        (229..230, "x", 70_000),
    ];
    for (cap, omit_totals, link_only) in [
        (None, false, false),
        (None, true, false),
        (Some(30), false, false),
        (None, false, true),
    ] {
        let label = format!("cap={cap:?} omit_totals={omit_totals} link_only={link_only}");
        let fake = start_basic();
        fake.set_max_per_page(cap);
        fake.set_omit_totals(omit_totals);
        fake.set_link_pagination(link_only, None);
        let expected = seed_heavy_threads(&fake, 230, heavy);
        let mut config = config_for(&fake, fixtures::BOT_TOKEN, fixtures::PROJECT_PATH, MR);
        config.body_limit = 256 * 1024;
        let (forge, sleeper) = forge_with(config);
        let listed = forge
            .list_discussions()
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let got: Vec<(u64, String)> = listed
            .iter()
            .map(|d| (d.notes[0].id, d.notes[0].body.clone()))
            .collect();
        assert_eq!(got.len(), expected.len(), "{label}");
        assert!(
            got == expected,
            "{label}: an item was skipped, repeated or cut"
        );
        let sizes = discussion_page_sizes(&fake);
        let first_full = cap.unwrap_or(100);
        let smallest = *sizes.iter().min().unwrap();
        assert!(smallest < first_full, "{label}: {sizes:?}");
        // After the heavy pages the size grows back: the light tail is not read item by item.
        assert!(*sizes.last().unwrap() >= 4 * smallest, "{label}: {sizes:?}");
        assert!(
            sizes.len() < 30,
            "{label}: {} requests: {sizes:?}",
            sizes.len()
        );
        assert!(
            sleeper.delays().is_empty(),
            "{label}: an over-limit page is not retried as is"
        );
        assert_no_violations(&fake);
    }
}

#[test]
fn a_human_discussion_over_the_limit_even_alone_is_streamed_without_its_human_bodies() {
    let fake = start_basic();
    let expected = seed_heavy_threads(&fake, 3, &[(1..2, "ü", 40_000)]);
    // The bot's reply in the heavy thread is kept; the human bodies are not needed.
    let heavy = fake
        .discussions(P, MR)
        .into_iter()
        .find(|d| d.notes[0].id == expected[1].0)
        .unwrap();
    let reply = fake.reply(P, MR, &heavy.id, fixtures::BOT_ID, "the bot's reply");
    let mut config = config_for(&fake, fixtures::BOT_TOKEN, fixtures::PROJECT_PATH, MR);
    config.body_limit = 64 * 1024;
    let (forge, sleeper) = forge_with(config);
    let listed = forge.list_discussions().unwrap();
    let ids: Vec<u64> = listed.iter().map(|d| d.notes[0].id).collect();
    assert_eq!(ids, expected.iter().map(|(id, _)| *id).collect::<Vec<_>>());
    assert_eq!(
        listed[0].notes[0].body, expected[0].1,
        "light pages keep every body"
    );
    let streamed = &listed[1];
    assert_eq!(streamed.notes.len(), 2);
    assert_eq!(streamed.notes[0].author_id, fixtures::HUMAN_ID);
    assert_eq!(
        streamed.notes[0].body, "",
        "a human's body is dropped as it arrives"
    );
    assert_eq!(streamed.notes[1].id, reply);
    assert_eq!(streamed.notes[1].body, "the bot's reply");
    // Halved down to one discussion per page; the heavy second page asked at one, over the
    // limit, then the same page streamed; the third grows back.
    assert_eq!(
        discussion_page_sizes(&fake),
        [100, 50, 25, 12, 6, 3, 1, 1, 1, 2]
    );
    assert!(sleeper.delays().is_empty());
    assert_no_violations(&fake);
}

#[test]
fn bot_notes_over_the_limit_fail_naming_the_page_and_the_limit_and_the_run_writes_nothing() {
    let fake = start_basic();
    let expected = seed_heavy_threads(&fake, 3, &[]);
    assert_eq!(expected.len(), 3);
    // The bot's own notes are kept whole, so they must fit the limit.
    let second = fake
        .discussions(P, MR)
        .into_iter()
        .find(|d| d.notes[0].id == expected[1].0)
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
fn a_diff_listing_over_the_body_limit_is_asked_again_smaller() {
    let fake = start_basic();
    let files: Vec<fake_gitlab::DiffFile> = (0..120)
        .map(|i| {
            let mut file = fake_gitlab::DiffFile::modified(&format!("topics/t{i:03}.yaml"));
            if (10..30).contains(&i) {
                file.diff = format!(
                    "@@ -1 +1 @@\n-{}\n+{}\n",
                    "a".repeat(9_000),
                    "ä".repeat(9_000)
                );
            }
            file
        })
        .collect();
    fake.with_state(|s| {
        s.project_mut(P).unwrap().mr_mut(MR).unwrap().diffs = files;
    });
    let mut config = config_for(&fake, fixtures::BOT_TOKEN, fixtures::PROJECT_PATH, MR);
    config.body_limit = 128 * 1024;
    let (forge, _) = forge_with(config);
    let listed = assent::forge::Repository::changed_files(&forge).unwrap();
    let paths: Vec<String> = listed.iter().map(|f| f.new_path.clone()).collect();
    let expected: Vec<String> = (0..120).map(|i| format!("topics/t{i:03}.yaml")).collect();
    assert_eq!(paths, expected);
    let sizes: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Diffs)
        .filter_map(|r| form_urlencoded_value(&r.query, "per_page"))
        .collect();
    assert!(sizes.iter().any(|s| s != "100"), "{sizes:?}");
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

#[test]
fn socks_proxies_carry_every_request() {
    use assent::gitlab::{GitLabConfig, ProxyConfig, Token};
    let fake = start_basic();
    seed_threads(&fake, 120);
    let relay = fake_gitlab::SocksRelay::start(([127, 0, 0, 1], fake.port()).into());
    let fake_target = format!("127.0.0.1:{}", fake.port());
    // (proxy URL, API base, the target the relay must be asked for, user name given)
    let cases = [
        (
            format!("socks5://{}", relay.authority()),
            fake.base_url(),
            fake_target.clone(),
            None,
        ),
        (
            format!("socks5h://bot:pw@{}", relay.authority()),
            "http://gitlab.example.test/api/v4".to_owned(),
            "gitlab.example.test:80".to_owned(),
            Some("bot"),
        ),
        (
            format!("socks4a://{}", relay.authority()),
            "http://gitlab.example.test:8080/api/v4".to_owned(),
            "gitlab.example.test:8080".to_owned(),
            None,
        ),
        (
            format!("socks4://{}", relay.authority()),
            fake.base_url(),
            fake_target.clone(),
            None,
        ),
    ];
    for (created_before, (proxy, api, target, username)) in cases.into_iter().enumerate() {
        let before = relay.connects().len();
        let mut config =
            GitLabConfig::new(api, Token::new(fixtures::BOT_TOKEN), fixtures::PROJECT_PATH);
        config.proxy = ProxyConfig::Url(proxy.clone());
        config.request_timeout = Duration::from_secs(5);
        let (forge, _) = forge_with(ForgeConfig {
            gitlab: config,
            mr: MR,
        });
        // The seeded threads and the note each earlier case created.
        assert_eq!(
            forge.list_discussions().unwrap().len(),
            120 + created_before,
            "{proxy}"
        );
        let created = forge.create_note("through the proxy").unwrap();
        assert!(created > 0);
        let connects = relay.connects();
        let new = &connects[before..];
        assert!(!new.is_empty(), "{proxy}: the relay saw no CONNECT");
        for connect in new {
            assert_eq!(connect.target, target, "{proxy}");
            assert_eq!(connect.username.as_deref(), username, "{proxy}");
        }
    }
    assert_no_violations(&fake);
}

// ---- DiffNotes (docs/contract.md#diffnotes) ---------------------------------------------------------------

/// The basic world with a real diff for `topics/orders.yaml` (30 → 7 days on line 3).
fn start_with_diff() -> FakeGitLab {
    let mut state = fixtures::basic();
    state.projects[0].mr_mut(MR).unwrap().diffs = vec![fake_gitlab::DiffFile {
        diff: "@@ -1,3 +1,3 @@\n topics:\n   - name: orders.events.v1\n-    retention_days: 30\n+    retention_days: 7\n".into(),
        ..fake_gitlab::DiffFile::modified("topics/orders.yaml")
    }];
    FakeGitLab::start(state)
}

fn orders_position(line: assent::core::model::DiffLine) -> assent::core::model::DiffPosition {
    assent::core::model::DiffPosition {
        base_sha: fixtures::BASE_SHA.into(),
        start_sha: fixtures::BASE_SHA.into(),
        head_sha: fixtures::HEAD_SHA.into(),
        old_path: "topics/orders.yaml".into(),
        new_path: "topics/orders.yaml".into(),
        line,
    }
}

#[test]
fn the_adapter_reads_diff_refs_and_diffs_and_creates_a_diff_note_at_its_position() {
    use assent::core::model::DiffLine;
    use assent::forge::Repository;
    let fake = start_with_diff();
    let (forge, _) = forge_for(&fake);
    let mr = forge.merge_request().unwrap();
    assert_eq!(
        (
            mr.base_sha.as_deref(),
            mr.start_sha.as_deref(),
            mr.diff_head_sha.as_deref()
        ),
        (
            Some(fixtures::BASE_SHA),
            Some(fixtures::BASE_SHA),
            Some(fixtures::HEAD_SHA)
        )
    );
    let files = forge.changed_files().unwrap();
    assert!(
        files[0].diff.contains("+    retention_days: 7"),
        "{files:?}"
    );

    let added = forge
        .create_thread(
            "<!-- m -->\non the line",
            Some(&orders_position(DiffLine::New(3))),
        )
        .unwrap();
    let removed = forge
        .create_thread(
            "<!-- m -->\nwas here",
            Some(&orders_position(DiffLine::Old(3))),
        )
        .unwrap();
    let general = forge.create_thread("<!-- m -->\ngeneral", None).unwrap();
    let note = |id: u64| {
        fake.discussions(P, MR)
            .into_iter()
            .flat_map(|d| d.notes)
            .find(|n| n.id == id)
            .unwrap()
    };
    let on_line = note(added.note_id);
    assert_eq!(on_line.note_type.as_deref(), Some("DiffNote"));
    let position = on_line.position.unwrap();
    assert_eq!((position.old_line, position.new_line), (None, Some(3)));
    assert_eq!(
        (position.head_sha.as_str(), position.new_path.as_str()),
        (fixtures::HEAD_SHA, "topics/orders.yaml")
    );
    let position = note(removed.note_id).position.unwrap();
    assert_eq!((position.old_line, position.new_line), (Some(3), None));
    assert_eq!(note(general.note_id).position, None);
    assert_eq!(
        note(general.note_id).note_type.as_deref(),
        Some("DiscussionNote")
    );
    assert_no_violations(&fake);
}

#[test]
fn a_position_gitlab_refuses_is_a_400_refusal_that_wrote_nothing() {
    use assent::core::model::DiffLine;
    use assent::forge::ForgeErrorKind;
    let fake = start_with_diff();
    let (forge, _) = forge_for(&fake);
    let err = forge
        .create_thread("<!-- m -->\nx", Some(&orders_position(DiffLine::New(1))))
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.kind(), ForgeErrorKind::Refused);
    assert!(!err.is_ambiguous_write());
    assert!(
        err.to_string().contains("must be a valid line code"),
        "{err}"
    );
    assert!(fake.discussions(P, MR).is_empty());
}
