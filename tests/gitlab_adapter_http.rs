//! The GitLab adapter against the stateful fake GitLab over loopback HTTP: pagination,
//! retries, lost acknowledgements, refused redirects, token hygiene, project paths and a
//! full reconcile run. See `tests/support/mod.rs` for how the fake is started.

mod support;

use std::time::Duration;

use assent::core::inventory::Inventory;
use assent::core::model::DesiredState;
use assent::fixture::runner::fixture_pins;
use assent::fixture::schema::FindingSpec;
use assent::forge::{Forge, ForgeError};
use assent::reconcile::{RunContext, reconcile};
use fake_gitlab::{FakeGitLab, FaultAction, FaultRule, RouteKind, fixtures};
use support::{config_for, forge_for, forge_with, start_basic};

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
        target: None,
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
fn discussions_are_listed_completely_across_pages() {
    for omit_totals in [false, true] {
        for n in [0usize, 1, 100, 101, 250] {
            let fake = start_basic();
            fake.set_omit_totals(omit_totals);
            let ids = seed_threads(&fake, n);
            let (forge, sleeper) = forge_for(&fake);
            let listed = forge.list_discussions().unwrap();
            let got: Vec<u64> = listed.iter().map(|d| d.notes[0].id).collect();
            assert_eq!(got, ids, "n={n} omit_totals={omit_totals}");
            assert!(
                listed
                    .iter()
                    .all(|d| d.notes[0].author_id == fixtures::HUMAN_ID)
            );
            let pages = n.div_ceil(100).max(1);
            assert_eq!(
                discussion_pages(&fake),
                pages,
                "n={n} omit_totals={omit_totals}"
            );
            assert_eq!(forge.request_counts().reads, pages as u64);
            assert!(sleeper.delays().is_empty());
            for request in fake.requests() {
                assert!(request.query.contains("per_page=100"), "{}", request.query);
            }
            assert_no_violations(&fake);
        }
    }
}

#[test]
fn listing_order_does_not_matter_and_small_server_pages_are_followed() {
    let fake = start_basic();
    let mut ids = seed_threads(&fake, 7);
    fake.set_discussion_order(P, MR, fake_gitlab::DiscussionOrder::Reversed);
    fake.set_max_per_page(Some(3));
    fake.set_omit_totals(true);
    let (forge, _) = forge_for(&fake);
    let got: Vec<u64> = forge
        .list_discussions()
        .unwrap()
        .iter()
        .map(|d| d.notes[0].id)
        .collect();
    ids.reverse();
    assert_eq!(got, ids);
    assert_eq!(discussion_pages(&fake), 3);
}

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

// ---- retries ------------------------------------------------------------------------------

#[test]
fn both_forms_of_429_are_retried_after_the_delay_they_ask_for() {
    let fake = start_basic();
    fake.inject(
        FaultRule::new(FaultAction::RateLimitText { retry_after: 7 })
            .route(RouteKind::User)
            .first_n(1),
    );
    fake.inject(
        FaultRule::new(FaultAction::RateLimitJson { retry_after: 3 })
            .route(RouteKind::MergeRequest)
            .first_n(2),
    );
    let (forge, sleeper) = forge_for(&fake);
    assert_eq!(forge.bot_user_id().unwrap(), fixtures::BOT_ID);
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(7)]);
    let mr = forge.merge_request().unwrap();
    assert_eq!(mr.head_sha, fixtures::HEAD_SHA);
    assert_eq!(
        sleeper.delays(),
        vec![
            Duration::from_secs(7),
            Duration::from_secs(3),
            Duration::from_secs(3)
        ]
    );
    assert_eq!(forge.request_counts().reads, 2 + 3);
    assert_eq!(fake.reads(), 5);
}

#[test]
fn server_errors_and_html_bad_gateways_are_retried_until_an_answer() {
    let fake = start_basic();
    seed_threads(&fake, 2);
    fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .route(RouteKind::Discussions)
            .nth(1),
    );
    fake.inject(
        FaultRule::new(FaultAction::BadGateway)
            .route(RouteKind::Discussions)
            .nth(2),
    );
    fake.inject(
        FaultRule::new(FaultAction::Unavailable)
            .route(RouteKind::Discussions)
            .nth(3),
    );
    let (forge, sleeper) = forge_for(&fake);
    assert_eq!(forge.list_discussions().unwrap().len(), 2);
    assert_eq!(sleeper.delays().len(), 3);
    assert_eq!(discussion_pages(&fake), 4);
    let statuses: Vec<Option<u16>> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![Some(500), Some(502), Some(503), Some(200)]);
}

#[test]
fn a_read_that_never_recovers_fails_after_the_bounded_retries() {
    let fake = start_basic();
    fake.inject(FaultRule::new(FaultAction::BadGateway).route(RouteKind::MergeRequest));
    let (forge, sleeper) = forge_for(&fake);
    let err = forge.merge_request().unwrap_err();
    assert!(
        matches!(err, ForgeError::Status { status: 502, .. }),
        "{err:?}"
    );
    let attempts = assent::gitlab::RetryPolicy::default().max_attempts as usize;
    assert_eq!(fake.reads(), attempts);
    assert_eq!(sleeper.delays().len(), attempts - 1);
}

#[test]
fn writes_are_never_retried() {
    let fake = start_basic();
    fake.inject(FaultRule::new(FaultAction::ServerError).method("POST"));
    let (forge, sleeper) = forge_for(&fake);
    let err = forge.create_note("hello").unwrap_err();
    assert!(err.is_ambiguous_write(), "{err:?}");
    assert_eq!(fake.writes(), 1);
    assert!(sleeper.delays().is_empty());
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

// ---- redirects ----------------------------------------------------------------------------

#[test]
fn a_redirect_is_refused_and_its_target_never_requested() {
    let fake = start_basic();
    fake.inject(
        FaultRule::new(FaultAction::Redirect { location: None }).route(RouteKind::MergeRequest),
    );
    let (forge, sleeper) = forge_for(&fake);
    let err = forge.merge_request().unwrap_err();
    assert!(
        matches!(&err, ForgeError::Status { status: 301, message, .. } if message.contains("refused")),
        "{err:?}"
    );
    assert_eq!(fake.reads(), 1, "not retried");
    assert!(sleeper.delays().is_empty());
    assert!(
        fake.requests()
            .iter()
            .all(|r| !r.path.starts_with("/moved")),
        "{:?}",
        fake.requests()
    );
}

// ---- the token ----------------------------------------------------------------------------

#[test]
fn the_token_appears_in_no_error_and_no_request_url() {
    let token = fixtures::BOT_TOKEN;
    let fake = start_basic();
    let mut errors: Vec<ForgeError> = Vec::new();
    let (forge, _) = forge_for(&fake);

    // A redirect whose target carries the token in its path, query and userinfo.
    fake.inject(
        FaultRule::new(FaultAction::Redirect {
            location: Some(format!(
                "http://user:{token}@127.0.0.1:9/{token}/api?private_token={token}"
            )),
        })
        .route(RouteKind::MergeRequest)
        .first_n(1),
    );
    errors.push(forge.merge_request().unwrap_err());
    // A read that keeps failing, a listing that cannot complete, a lost write.
    fake.inject(FaultRule::new(FaultAction::BadGateway).route(RouteKind::MergeRequest));
    errors.push(forge.merge_request().unwrap_err());
    seed_threads(&fake, 101);
    fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .route(RouteKind::Discussions)
            .method("GET")
            .query_contains("&page=2"),
    );
    errors.push(forge.list_discussions().unwrap_err());
    fake.inject(
        FaultRule::new(FaultAction::LostAck { close: true })
            .method("POST")
            .route(RouteKind::Notes),
    );
    errors.push(forge.create_note("summary").unwrap_err());
    fake.inject(FaultRule::new(FaultAction::Reset).method("PUT"));
    errors.push(forge.edit_note(1, "x").unwrap_err());
    // Refusals: an unknown note, an unknown project, a wrong token.
    fake.clear_faults();
    errors.push(forge.edit_note(999_999, "x").unwrap_err());
    let (elsewhere, _) = forge_with(config_for(&fake, token, "no/such/project", 7));
    errors.push(elsewhere.merge_request().unwrap_err());
    let (wrong, _) = forge_with(config_for(&fake, "glpat-wrong", fixtures::PROJECT_PATH, MR));
    errors.push(wrong.bot_user_id().unwrap_err());
    // A server that is gone.
    let gone_url = {
        let gone = start_basic();
        config_for(&gone, token, fixtures::PROJECT_PATH, MR)
    };
    let (gone, _) = forge_with(gone_url);
    errors.push(gone.bot_user_id().unwrap_err());

    assert_eq!(errors.len(), 9);
    for err in &errors {
        let shown = format!("{err}");
        let debug = format!("{err:?}");
        assert!(!shown.contains(token), "{shown}");
        assert!(!debug.contains(token), "{debug}");
    }
    assert!(!format!("{forge:?}").contains(token));
    let requests = fake.requests();
    assert!(requests.len() > 10);
    for request in &requests {
        assert!(!request.path.contains(token), "{}", request.path);
        assert!(!request.query.contains(token), "{}", request.query);
    }
    assert_no_violations(&fake);
}

// ---- project paths ------------------------------------------------------------------------

#[test]
fn a_nested_project_path_is_one_percent_encoded_segment() {
    let fake = start_basic();
    let (forge, _) = forge_for(&fake);
    assert_eq!(forge.merge_request().unwrap().head_sha, fixtures::HEAD_SHA);
    forge.create_thread("a thread").unwrap();
    assert_eq!(forge.list_discussions().unwrap().len(), 1);
    let api_requests: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.route != RouteKind::User)
        .collect();
    assert_eq!(api_requests.len(), 3);
    for request in api_requests {
        assert!(
            request
                .path
                .starts_with("/api/v4/projects/group%2Fsub%2Fproj/merge_requests/7"),
            "{}",
            request.path
        );
        assert_eq!(request.status, Some(if request.write { 201 } else { 200 }));
    }
    // The numeric id reaches the same project.
    let (by_id, _) = forge_with(config_for(&fake, fixtures::BOT_TOKEN, "42", MR));
    assert_eq!(by_id.list_discussions().unwrap().len(), 1);
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
