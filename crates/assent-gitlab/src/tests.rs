//! Loopback tests of the adapter against the fake GitLab (`fake_gitlab`), the one fake every
//! HTTP test uses. Its state answers as GitLab would; its fault rules give what a test needs
//! beyond that: statuses and refusals, the forms of `Retry-After`, header edits (pagination
//! headers stripped or lying, `RateLimit-*` on a successful write), closed connections, and
//! exact replies for JSON shapes the state cannot hold (fields missing or `null`). Its request
//! log is what the adapter sent. Certificate tests reach it through its HTTPS front
//! (`fake_gitlab::tls`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fake_gitlab::fixtures::{self, BOT_ID, HUMAN_ID, MR_IID, PROJECT_ID, PROJECT_PATH};
use fake_gitlab::tls::TlsFront;
use fake_gitlab::{
    DiffFile, Discussion, FakeGitLab, FaultAction, FaultRule, FileContent, LoggedRequest, Note,
    RouteKind, State,
};
use serde_json::{Value, json};

use super::*;
use assent_core::model::MergeRequestState;
use assent_forge::{Forge, ForgeError, Repository, RepositoryFiles, RequestCounts};

pub(crate) const TOKEN: &str = "glpat-SuperSecretToken123";

/// The fake's basic world (project `group/sub/proj` with open MR !7, the bot `assent-bot`)
/// with [`TOKEN`] as one of the bot's tokens.
pub(crate) fn world() -> State {
    let mut state = fixtures::basic();
    state
        .tokens
        .push(fake_gitlab::Token::new(TOKEN, BOT_ID, &["api"]));
    state
}

/// [`world`] whose MR lists `count` resolvable threads, note ids `1000..1000 + count`.
fn with_discussions(count: usize) -> State {
    let mut state = world();
    let mr = state.projects[0].mr_mut(MR_IID).unwrap();
    for i in 0..count {
        mr.discussions.push(Discussion {
            notes: vec![Note {
                id: 1000 + i as u64,
                note_type: Some("DiscussionNote".into()),
                body: format!("note {i}"),
                author_id: HUMAN_ID,
                resolvable: true,
                ..Default::default()
            }],
            ..Default::default()
        });
    }
    state
}

/// [`world`] with `content` at `path` in the tree of commit `sha`.
fn with_file(mut state: State, sha: &str, path: &str, content: &[u8]) -> State {
    state.projects[0]
        .files
        .entry(sha.into())
        .or_default()
        .insert(path.into(), FileContent(content.to_vec()));
    state
}

/// Exactly this answer: `status`, `headers` and `body`.
fn reply(status: u16, headers: &[(&str, &str)], body: &str) -> FaultAction {
    FaultAction::Reply {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        body: body.to_owned(),
    }
}

/// Exactly this JSON answer.
fn json_reply(status: u16, value: Value) -> FaultAction {
    reply(
        status,
        &[("Content-Type", "application/json")],
        &value.to_string(),
    )
}

/// GitLab's application limit refusing a request: 429 JSON, no header saying how long.
fn json_429() -> FaultAction {
    json_reply(
        429,
        json!({"message": "This endpoint has been requested too many times. Try again later."}),
    )
}

/// Edits the answer's headers: `remove` goes, `set` replaces.
fn headers(set: &[(&str, &str)], remove: &[&str]) -> FaultAction {
    FaultAction::Headers {
        set: set
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        remove: remove.iter().map(|h| (*h).to_owned()).collect(),
    }
}

/// Every header by which GitLab paginates.
const PAGINATION_HEADERS: &[&str] = &[
    "X-Page",
    "X-Per-Page",
    "X-Next-Page",
    "X-Prev-Page",
    "X-Total",
    "X-Total-Pages",
    "Link",
];

#[derive(Default)]
struct RecordingSleeper(Mutex<Vec<Duration>>);

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) {
        self.0.lock().unwrap().push(delay);
    }
}

impl RecordingSleeper {
    fn delays(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

/// The bot's connection to the fake's project, without a proxy.
pub(crate) fn config(fake: &FakeGitLab) -> GitLabConfig {
    let mut config = GitLabConfig::new(fake.base_url(), Token::new(TOKEN), PROJECT_PATH);
    config.proxy = ProxyConfig::Direct;
    config.connect_timeout = Duration::from_secs(2);
    config.request_timeout = Duration::from_secs(3);
    config
}

fn forge_with(config: GitLabConfig) -> (GitLabForge, Arc<RecordingSleeper>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    (
        GitLabForge::with_sleeper(config, MR_IID, sleeper.clone()).unwrap(),
        sleeper,
    )
}

fn forge(fake: &FakeGitLab) -> (GitLabForge, Arc<RecordingSleeper>) {
    forge_with(config(fake))
}

const MR: &str = "/api/v4/projects/group%2Fsub%2Fproj/merge_requests/7";

/// A request as sent: method, path and query.
fn line(request: &LoggedRequest) -> String {
    match request.query.as_str() {
        "" => format!("{} {}", request.method, request.path),
        query => format!("{} {}?{query}", request.method, request.path),
    }
}

#[derive(Clone, Copy, Debug)]
enum Paging {
    /// The fake's own pagination headers, as GitLab sends them.
    AsGitLab,
    /// The fake's own headers without totals (GitLab above 10,000 items).
    AsGitLabNoTotals,
    /// `X-Next-Page` (empty on the last page), with totals, and a lying `X-Total-Pages: 1`.
    NextPage,
    /// `X-Next-Page` without any totals (GitLab above 10,000 items).
    NextPageNoTotals,
    /// `Link` only, `rel="next"` on every full page (so a multiple of 100 ends on an empty page).
    LinkOnly,
}

/// The fake listing `total` discussions, paginated as `paging` says.
fn paged_fake(total: usize, paging: Paging) -> FakeGitLab {
    let fake = FakeGitLab::start(with_discussions(total));
    match paging {
        Paging::AsGitLab => {}
        Paging::AsGitLabNoTotals => fake.set_omit_totals(true),
        Paging::NextPage => {
            fake.inject(FaultRule::new(headers(
                &[("X-Total-Pages", "1")],
                &["Link"],
            )));
        }
        Paging::NextPageNoTotals => {
            fake.set_omit_totals(true);
            fake.inject(FaultRule::new(headers(&[], &["Link"])));
        }
        Paging::LinkOnly => {
            fake.set_link_pagination(true, None);
            fake.set_next_on_full_page(true);
        }
    }
    fake
}

#[test]
fn pagination_returns_every_item_for_edge_counts() {
    for paging in [
        Paging::AsGitLab,
        Paging::AsGitLabNoTotals,
        Paging::NextPage,
        Paging::NextPageNoTotals,
        Paging::LinkOnly,
    ] {
        for total in [0usize, 1, 100, 101, 200, 250] {
            let fake = paged_fake(total, paging);
            let (forge, sleeper) = forge(&fake);
            let listed = forge.list_discussions().unwrap();
            let ids: Vec<u64> = listed.iter().map(|d| d.notes[0].id).collect();
            let expected: Vec<u64> = (0..total as u64).map(|i| 1000 + i).collect();
            assert_eq!(ids, expected, "{paging:?} total {total}");
            assert!(listed.iter().all(|d| d.notes[0].author_id == HUMAN_ID));
            assert!(sleeper.delays().is_empty(), "{paging:?} total {total}");
            let seen = fake.requests();
            let pages = match paging {
                Paging::LinkOnly => total / 100 + 1,
                _ => total.div_ceil(100).max(1),
            };
            assert_eq!(seen.len(), pages, "{paging:?} total {total}: pages fetched");
            assert!(
                seen.iter()
                    .all(|s| s.query_param("per_page").as_deref() == Some("100"))
            );
            assert_eq!(
                forge.request_counts(),
                RequestCounts {
                    reads: pages as u64,
                    writes: 0
                }
            );
            assert_eq!(fake.violations(), Vec::<String>::new());
        }
    }
}

/// The discussions pages the adapter asked for.
fn discussion_pages(fake: &FakeGitLab) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.route == RouteKind::Discussions)
        .count()
}

#[test]
fn listing_order_does_not_matter_and_small_server_pages_are_followed() {
    let fake = FakeGitLab::start(with_discussions(7));
    fake.set_discussion_order(PROJECT_ID, MR_IID, fake_gitlab::DiscussionOrder::Reversed);
    fake.set_max_per_page(Some(3));
    fake.set_omit_totals(true);
    let (forge, _) = forge(&fake);
    let got: Vec<u64> = forge
        .list_discussions()
        .unwrap()
        .iter()
        .map(|d| d.notes[0].id)
        .collect();
    let reversed: Vec<u64> = (1000..1007).rev().collect();
    assert_eq!(got, reversed);
    assert_eq!(discussion_pages(&fake), 3);
}

#[test]
fn a_page_failing_after_retries_fails_the_whole_listing() {
    let fake = FakeGitLab::start(with_discussions(200));
    fake.inject(FaultRule::new(FaultAction::ServerError).query_contains("page=2"));
    let (forge, sleeper) = forge(&fake);
    let err = forge.list_discussions().unwrap_err();
    // A forge failure (exit 3), not "GitLab says the listing is incomplete".
    assert!(
        matches!(err, ForgeError::Status { status: 500, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("(page 2)"), "{err}");
    assert!(
        err.to_string().contains("500 Internal Server Error"),
        "{err}"
    );
    let seen = fake.requests();
    assert_eq!(seen.len(), 1 + 5);
    assert_eq!(seen[0].query_param("page"), None);
    assert!(
        seen[1..]
            .iter()
            .all(|s| s.query_param("page").as_deref() == Some("2"))
    );
    assert_eq!(sleeper.delays().len(), 4);
}

#[test]
fn a_full_page_without_pagination_headers_is_incomplete_but_a_short_one_is_last() {
    let full = FakeGitLab::start(with_discussions(100));
    full.inject(FaultRule::new(headers(&[], PAGINATION_HEADERS)));
    let err = forge(&full).0.list_discussions().unwrap_err();
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    let short = FakeGitLab::start(with_discussions(99));
    short.inject(FaultRule::new(headers(&[], PAGINATION_HEADERS)));
    assert_eq!(forge(&short).0.list_discussions().unwrap().len(), 99);
}

#[test]
fn a_next_link_to_another_origin_is_not_followed() {
    let other = FakeGitLab::start(world());
    let target = format!("{}/steal?page=2", other.base_url());
    let fake = FakeGitLab::start(with_discussions(200));
    fake.inject(FaultRule::new(headers(
        &[("Link", &format!("<{target}>; rel=\"next\""))],
        &["X-Next-Page"],
    )));
    let err = forge(&fake).0.list_discussions().unwrap_err();
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("another origin"), "{err}");
    assert!(other.requests().is_empty());
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn pagination_is_capped_and_loops_are_caught() {
    let fake = FakeGitLab::start(with_discussions(400));
    let mut config = config(&fake);
    config.max_pages = 3;
    let err = forge_with(config).0.list_discussions().unwrap_err();
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("more than 3 pages"), "{err}");
    assert_eq!(fake.requests().len(), 3);

    let looping = FakeGitLab::start(with_discussions(200));
    looping.inject(FaultRule::new(headers(&[("X-Next-Page", "1")], &["Link"])));
    let err = forge(&looping).0.list_discussions().unwrap_err();
    assert!(err.to_string().contains("loop"), "{err}");
}

#[test]
fn rate_limits_in_both_gitlab_forms_are_honoured() {
    // Rack::Attack's plain-text form with Retry-After, then a RateLimit-Reset without
    // Retry-After, then the JSON application-limit form without headers, then success.
    let reset = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 30;
    let fake = FakeGitLab::start(world());
    for (n, action) in [
        FaultAction::RateLimitText { retry_after: 7 },
        reply(
            429,
            &[("RateLimit-Reset", &reset.to_string())],
            "Retry later\n",
        ),
        json_429(),
    ]
    .into_iter()
    .enumerate()
    {
        fake.inject(
            FaultRule::new(action)
                .route(RouteKind::User)
                .nth(n as u64 + 1),
        );
    }
    let (forge, sleeper) = forge(&fake);
    assert_eq!(forge.bot_user_id().unwrap(), BOT_ID);
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 3);
    assert_eq!(delays[0], Duration::from_secs(7));
    assert!(
        delays[1] >= Duration::from_secs(27) && delays[1] <= Duration::from_secs(30),
        "{delays:?}"
    );
    // No server delay: full-jitter backoff under the third retry's ceiling (4 × 500 ms).
    assert!(delays[2] <= Duration::from_secs(2), "{delays:?}");
    assert_eq!(forge.request_counts().reads, 4);
    let statuses: Vec<Option<u16>> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(429), Some(429), Some(429), Some(200)]);

    // The JSON form with a Retry-After, twice in a row: each wait is the one it asks for.
    fake.inject(
        FaultRule::new(FaultAction::RateLimitJson { retry_after: 3 })
            .route(RouteKind::MergeRequest)
            .first_n(2),
    );
    let mr = forge.merge_request().unwrap();
    assert_eq!(mr.head_sha, fixtures::HEAD_SHA);
    assert_eq!(
        sleeper.delays()[3..],
        [Duration::from_secs(3), Duration::from_secs(3)]
    );
    assert_eq!(forge.request_counts().reads, 4 + 3);
    assert_eq!(fake.reads(), 4 + 3);
}

#[test]
fn retry_after_is_capped() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(reply(429, &[("Retry-After", "86400")], "Retry later")).nth(1));
    let (forge, sleeper) = forge(&fake);
    forge.bot_user_id().unwrap();
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(60)]);
}

#[test]
fn server_errors_and_html_502_are_retried_then_succeed() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(FaultAction::BadGateway).nth(1));
    fake.inject(
        FaultRule::new(json_reply(
            503,
            json!({"message": "503 Service Unavailable"}),
        ))
        .nth(2),
    );
    let (forge, sleeper) = forge(&fake);
    assert_eq!(forge.bot_user_id().unwrap(), BOT_ID);
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 2);
    let policy = RetryPolicy::default();
    for (retry, delay) in delays.iter().enumerate() {
        assert!(
            *delay <= policy.base_delay * 2u32.pow(retry as u32),
            "{delays:?}"
        );
    }
    // Cached: a second call makes no request.
    assert_eq!(forge.bot_user_id().unwrap(), BOT_ID);
    assert_eq!(fake.requests().len(), 3);
    assert_eq!(
        forge.request_counts(),
        RequestCounts {
            reads: 3,
            writes: 0
        }
    );
}

#[test]
fn server_errors_and_html_bad_gateways_are_retried_until_an_answer() {
    let fake = FakeGitLab::start(with_discussions(2));
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
    let (forge, sleeper) = forge(&fake);
    assert_eq!(forge.list_discussions().unwrap().len(), 2);
    assert_eq!(sleeper.delays().len(), 3);
    assert_eq!(discussion_pages(&fake), 4);
    let statuses: Vec<Option<u16>> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![Some(500), Some(502), Some(503), Some(200)]);
}

#[test]
fn a_dropped_connection_is_retried_for_reads() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(FaultAction::LostAck { close: true }).nth(1));
    let (forge, sleeper) = forge(&fake);
    assert_eq!(forge.bot_user_id().unwrap(), BOT_ID);
    assert_eq!(sleeper.delays().len(), 1);
    let statuses: Vec<Option<u16>> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [None, Some(200)],
        "closed unanswered, then answered"
    );
}

#[test]
fn a_write_whose_connection_drops_is_ambiguous_and_not_retried() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(FaultAction::LostAck { close: true }).any_write());
    let (forge, sleeper) = forge(&fake);
    let err = forge.create_thread("x", None).unwrap_err();
    assert!(err.is_ambiguous_write(), "{err:?}");
    assert!(
        !err.to_string().contains("timeout"),
        "a real drop, not a timeout: {err}"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST", "{requests:?}");
    assert_eq!(requests[0].status, None, "closed without an answer");
    assert_waited_for_the_write_to_settle(&sleeper.delays());
    assert_eq!(
        forge.request_counts(),
        RequestCounts {
            reads: 0,
            writes: 1
        }
    );
}

#[test]
fn exhausted_retries_name_method_route_status_and_message() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(FaultAction::BadGateway));
    let (forge, sleeper) = forge(&fake);
    let err = forge.merge_request().unwrap_err();
    match &err {
        ForgeError::Status {
            method,
            route,
            status,
            message,
        } => {
            assert_eq!(method, "GET");
            assert_eq!(route, MR);
            assert_eq!(*status, 502);
            assert!(message.contains("502 Bad Gateway"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.requests().len(), 5);
    assert_eq!(sleeper.delays().len(), 4);
    let attempts = RetryPolicy::default().max_attempts as usize;
    assert_eq!(fake.reads(), attempts);
    assert_eq!(sleeper.delays().len(), attempts - 1);
}

#[test]
fn client_errors_are_not_retried() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(FaultAction::Forbidden));
    let (forge, sleeper) = forge(&fake);
    let err = forge.merge_request().unwrap_err();
    assert!(
        matches!(err, ForgeError::Status { status: 403, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("GET {MR}: HTTP 403: 403 Forbidden")
    );
    assert_eq!(fake.requests().len(), 1);
    assert!(sleeper.delays().is_empty());
}

/// One wait, and only the rest of [`RetryPolicy::write_settle`]: the write was sent a moment
/// ago, so almost all of it remains.
fn assert_waited_for_the_write_to_settle(delays: &[Duration]) {
    let settle = RetryPolicy::default().write_settle;
    assert_eq!(settle, DEFAULT_WRITE_SETTLE);
    assert_eq!(delays.len(), 1, "{delays:?}");
    assert!(
        delays[0] <= settle && delays[0] > settle - Duration::from_secs(5),
        "{delays:?}"
    );
}

#[test]
fn failed_writes_are_ambiguous_and_never_retried() {
    // 429 is not among them: GitLab refuses it before acting (see the rate-limit tests).
    for (label, failure) in [
        ("500", FaultAction::ServerError),
        ("502 html", FaultAction::BadGateway),
    ] {
        let fake = FakeGitLab::start(world());
        fake.inject(FaultRule::new(failure).any_write().nth(1));
        let (forge, sleeper) = forge(&fake);
        let err = forge
            .create_note("<!-- assent:marker {} -->\nsummary")
            .unwrap_err();
        assert!(err.is_ambiguous_write(), "{label}: {err:?}");
        let seen = fake.requests();
        assert_eq!(seen.len(), 1, "{label}: exactly one POST");
        assert_eq!(seen[0].method, "POST");
        assert_waited_for_the_write_to_settle(&sleeper.delays());
        assert_eq!(
            forge.request_counts(),
            RequestCounts {
                reads: 0,
                writes: 1
            },
            "{label}"
        );
    }
}

/// The fake, whose answers to writes follow `script` in order (the n-th write meets the n-th
/// action), then its state's.
fn scripted_writes(script: Vec<FaultAction>) -> FakeGitLab {
    let fake = FakeGitLab::start(world());
    for (n, action) in script.into_iter().enumerate() {
        fake.inject(FaultRule::new(action).any_write().nth(n as u64 + 1));
    }
    fake
}

fn posts(fake: &FakeGitLab) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count()
}

#[test]
fn a_write_refused_with_429_is_sent_again_after_the_wait_it_asks_for() {
    // Both of GitLab's forms: Rack::Attack's plain text, and the application limit's JSON
    // (note creation), each with Retry-After.
    for (label, refusal) in [
        (
            "text",
            reply(
                429,
                &[("Retry-After", "60"), ("Content-Type", "text/plain")],
                "Retry later\n",
            ),
        ),
        (
            "json",
            reply(
                429,
                &[
                    ("Content-Type", "application/json"),
                    ("Retry-After", "60"),
                ],
                &json!({"message": "This endpoint has been requested too many times. Try again later."})
                    .to_string(),
            ),
        ),
    ] {
        let fake = scripted_writes(vec![refusal]);
        let (forge, sleeper) = forge(&fake);
        let created = forge.create_thread("x", None).unwrap();
        let threads = fake.discussions(PROJECT_ID, MR_IID);
        assert_eq!(threads.len(), 1, "{label}: one thread");
        assert_eq!(created.note_id, threads[0].notes[0].id, "{label}");
        assert_eq!(posts(&fake), 2, "{label}: the same write, sent again once");
        let seen = fake.requests();
        assert_eq!(seen[0].body, seen[1].body, "{label}: the same write");
        assert_eq!(
            (seen[0].status, seen[1].status),
            (Some(429), Some(201)),
            "{label}"
        );
        // The wait GitLab asked for, and no write-settle wait: nothing was in flight.
        assert_eq!(sleeper.delays(), vec![Duration::from_secs(60)], "{label}");
        let tally = forge.client().rate_limits();
        assert_eq!(tally.refused_writes, 1, "{label}");
        assert_eq!(tally.waited, Duration::from_secs(60), "{label}");
        assert_eq!(forge.request_counts().writes, 2, "{label}");
    }
}

#[test]
fn a_429_without_a_delay_backs_off_boundedly_and_retry_after_zero_still_waits() {
    let fake = scripted_writes(vec![
        json_429(),
        json_429(),
        reply(429, &[("Retry-After", "0")], "Retry later"),
        reply(429, &[("Retry-After", "3600")], "Retry later"),
    ]);
    let (forge, sleeper) = forge(&fake);
    forge.create_note("summary").unwrap();
    assert_eq!(posts(&fake), 5);
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 4, "{delays:?}");
    // Backoff from 1 s doubling, over its upper half: never nothing.
    assert!(
        delays[0] >= Duration::from_millis(500) && delays[0] <= Duration::from_secs(1),
        "{delays:?}"
    );
    assert!(
        delays[1] >= Duration::from_secs(1) && delays[1] <= Duration::from_secs(2),
        "{delays:?}"
    );
    // Retry-After: 0 is taken as the shortest wait, an hour is capped at a minute.
    assert_eq!(delays[2], retry::MIN_WRITE_RATE_LIMIT_WAIT, "{delays:?}");
    assert_eq!(delays[3], Duration::from_secs(60), "{delays:?}");
}

#[test]
fn when_the_rate_limit_budget_is_spent_the_write_fails_as_rate_limited() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(reply(429, &[("Retry-After", "60")], "Retry later")).any_write());
    let mut config = config(&fake);
    config.retry.rate_limit_budget = Duration::from_secs(150);
    let (forge, sleeper) = forge_with(config);
    let err = forge.create_thread("x", None).unwrap_err();
    match &err {
        ForgeError::RateLimited(refusal) => {
            assert_eq!(refusal.method, "POST");
            assert_eq!(refusal.next_wait, Duration::from_secs(60));
            assert_eq!(refusal.waited, Duration::from_secs(120));
            assert_eq!(refusal.budget, Duration::from_secs(150));
        }
        other => panic!("{other:?}"),
    }
    assert!(!err.is_ambiguous_write(), "nothing was written: {err}");
    let text = err.to_string();
    assert!(text.contains("rate limited"), "{text}");
    assert!(text.contains("(120 s waited of 150 s)"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
    // Two waits fitted; the third would not, so it was not started.
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(60); 2]);
    assert_eq!(posts(&fake), 3);

    // The budget is the client's: a later write has none left to wait with.
    let err = forge.create_note("y").unwrap_err();
    assert!(err.is_rate_limited(), "{err:?}");
    assert_eq!(sleeper.delays().len(), 2);
    assert!(fake.discussions(PROJECT_ID, MR_IID).is_empty());
}

#[test]
fn a_zero_budget_gives_up_on_the_first_429() {
    let fake = scripted_writes(vec![reply(429, &[("Retry-After", "5")], "Retry later")]);
    let mut config = config(&fake);
    config.retry.rate_limit_budget = Duration::ZERO;
    let (forge, sleeper) = forge_with(config);
    let err = forge.create_note("x").unwrap_err();
    assert!(err.is_rate_limited(), "{err:?}");
    assert!(err.to_string().contains("(0 s waited of 0 s)"), "{err}");
    assert!(sleeper.delays().is_empty());
    assert_eq!(posts(&fake), 1);
}

#[test]
fn read_waits_for_429_count_against_the_same_budget() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(reply(429, &[("Retry-After", "7")], "Retry later")).first_n(2));
    let mut config = config(&fake);
    config.retry.rate_limit_budget = Duration::from_secs(10);
    let (forge, sleeper) = forge_with(config);
    let err = forge.bot_user_id().unwrap_err();
    assert!(err.is_rate_limited(), "{err:?}");
    assert!(err.to_string().contains("(7 s waited of 10 s)"), "{err}");
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(7)]);
    assert_eq!(fake.requests().len(), 2);
}

#[test]
fn server_errors_on_writes_stay_ambiguous_and_spend_no_rate_limit_budget() {
    let fake = scripted_writes(vec![json_reply(503, json!({"message": "busy"}))]);
    let (forge, _sleeper) = forge(&fake);
    assert!(
        forge
            .create_thread("x", None)
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert_eq!(posts(&fake), 1);
    assert_eq!(forge.client().rate_limits(), RateLimitTally::default());
}

#[test]
fn writes_are_paced_when_ratelimit_remaining_says_the_window_is_spent() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let limits = |remaining: u64, reset_in: u64| {
        headers(
            &[
                ("RateLimit-Limit", "10"),
                ("RateLimit-Remaining", &remaining.to_string()),
                ("RateLimit-Reset", &(now + reset_in).to_string()),
            ],
            &[],
        )
    };
    let fake = scripted_writes(vec![limits(5, 40), limits(0, 30), limits(9, 60)]);
    let (forge, sleeper) = forge(&fake);
    forge.create_thread("a", None).unwrap();
    forge.create_thread("b", None).unwrap();
    // Plenty left after the first: no wait before the second.
    assert!(sleeper.delays().is_empty(), "{:?}", sleeper.delays());
    // A read in between is not held.
    forge.bot_user_id().unwrap();
    assert!(sleeper.delays().is_empty(), "{:?}", sleeper.delays());
    forge.create_thread("c", None).unwrap();
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 1, "{delays:?}");
    assert!(
        delays[0] >= Duration::from_secs(28) && delays[0] <= Duration::from_secs(30),
        "the third write waits for the window to reset: {delays:?}"
    );
    forge.create_thread("d", None).unwrap();
    assert_eq!(
        sleeper.delays().len(),
        1,
        "the window reset: no more pacing"
    );
    assert_eq!(posts(&fake), 4, "pacing sends nothing twice");
    assert_eq!(fake.discussions(PROJECT_ID, MR_IID).len(), 4);
    assert_eq!(forge.client().rate_limits().waited, delays[0]);
    assert_eq!(forge.client().rate_limits().refused_writes, 0);
}

#[test]
fn pacing_that_does_not_fit_the_budget_lets_gitlab_decide() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let fake = scripted_writes(vec![headers(
        &[
            ("RateLimit-Remaining", "0"),
            ("RateLimit-Reset", &(now + 50).to_string()),
        ],
        &[],
    )]);
    let mut config = config(&fake);
    config.retry.rate_limit_budget = Duration::from_secs(20);
    let (forge, sleeper) = forge_with(config);
    forge.create_note("a").unwrap();
    forge.create_note("b").unwrap();
    assert!(sleeper.delays().is_empty(), "{:?}", sleeper.delays());
    assert_eq!(posts(&fake), 2);
}

#[test]
fn every_write_kind_is_ambiguous_on_a_server_error() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(json_reply(500, json!({"message": "boom"}))));
    let (forge, _) = forge(&fake);
    assert!(
        forge
            .create_thread("x", None)
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert!(
        forge
            .reply_to_thread("abc", "x")
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert!(
        forge
            .resolve_thread("abc")
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert!(forge.edit_note(5, "x").unwrap_err().is_ambiguous_write());
    let methods: Vec<String> = fake.requests().into_iter().map(|r| r.method).collect();
    assert_eq!(methods, ["POST", "POST", "PUT", "PUT"]);
    assert_eq!(
        forge.request_counts(),
        RequestCounts {
            reads: 0,
            writes: 4
        }
    );
}

#[test]
fn refused_writes_are_status_errors() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(FaultAction::Refuse {
        status: 400,
        body: json!({"message": {"body": ["is too long (maximum is 1000000 characters)"]}}),
    }));
    let (forge, _) = forge(&fake);
    let err = forge.create_note("x").unwrap_err();
    match &err {
        ForgeError::Status {
            method,
            status: 400,
            message,
            ..
        } => {
            assert_eq!(method, "POST");
            assert!(message.contains("is too long"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_write_that_could_not_connect_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut config = GitLabConfig::new(
        format!("http://127.0.0.1:{port}/api/v4"),
        Token::new(TOKEN),
        "1",
    );
    config.proxy = ProxyConfig::Direct;
    let (forge, _) = forge_with(config);
    let err = forge.create_note("x").unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::Transport {
                cause: assent_forge::TransportFailure::ConnectFailed,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.to_string().contains(TOKEN));
}

#[test]
fn redirects_are_refused_and_never_followed() {
    let fake = FakeGitLab::start(world());
    let elsewhere = format!("{}/elsewhere?x=1", fake.root_url());
    fake.inject(FaultRule::new(FaultAction::Redirect {
        location: Some(elsewhere),
    }));
    let (forge, sleeper) = forge(&fake);
    let err = forge.bot_user_id().unwrap_err();
    match &err {
        ForgeError::Status {
            status: 301,
            message,
            ..
        } => {
            assert!(
                message.contains(&format!("{}/elsewhere", fake.root_url())),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    let seen = fake.requests();
    assert_eq!(seen.len(), 1);
    assert!(seen.iter().all(|s| s.path != "/elsewhere"));
    assert!(sleeper.delays().is_empty());
    // Writes too.
    assert!(matches!(
        forge.create_note("x").unwrap_err(),
        ForgeError::Status { status: 301, .. }
    ));
    assert!(fake.requests().iter().all(|s| s.path != "/elsewhere"));
    assert!(fake.discussions(PROJECT_ID, MR_IID).is_empty());

    // The fake's own redirect target, on one route: refused, said so, not retried.
    let fake = FakeGitLab::start(world());
    fake.inject(
        FaultRule::new(FaultAction::Redirect { location: None }).route(RouteKind::MergeRequest),
    );
    let (mr_forge, sleeper) = self::forge(&fake);
    let err = mr_forge.merge_request().unwrap_err();
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

#[test]
fn the_token_is_only_ever_a_header() {
    // The server echoes the token back in error bodies, the worst case for error texts: by
    // turns a 401 naming it, an HTML 500 holding it, and a 200 whose id is the token.
    let fake = FakeGitLab::start(world());
    for n in 0..6u64 {
        let echo = match n % 3 {
            0 => json_reply(
                401,
                json!({"message": format!("401 Unauthorized: bad token {TOKEN}")}),
            ),
            1 => reply(500, &[], &format!("<html>{TOKEN}</html>")),
            _ => json_reply(200, json!({"id": TOKEN})),
        };
        fake.inject(FaultRule::new(echo).nth(n + 1));
    }
    let mut config = config(&fake);
    config.retry.max_attempts = 1;
    let (forge, _) = forge_with(config.clone());
    let mut errors = vec![
        forge.bot_user_id().unwrap_err(),
        forge.merge_request().unwrap_err(),
        forge.create_note("x").unwrap_err(),
        forge.list_discussions().unwrap_err(),
        forge.create_thread("x", None).unwrap_err(),
    ];
    errors.push(forge.reply_to_thread("abc", "x").unwrap_err());
    for err in &errors {
        assert!(!err.to_string().contains(TOKEN), "{err}");
        assert!(!format!("{err:?}").contains(TOKEN), "{err:?}");
    }
    assert!(!format!("{config:?}").contains(TOKEN));
    assert!(!format!("{forge:?}").contains(TOKEN));
    let seen = fake.requests();
    assert_eq!(seen.len(), 6);
    for s in &seen {
        assert!(!line(s).contains(TOKEN), "{}", line(s));
        assert_eq!(s.header("PRIVATE-TOKEN"), Some(TOKEN));
        assert_eq!(
            s.header("User-Agent"),
            Some(concat!("assent/", env!("CARGO_PKG_VERSION")))
        );
    }
    assert_eq!(fake.violations(), Vec::<String>::new());
}

#[test]
fn the_token_appears_in_no_error_and_no_request_url() {
    let fake = FakeGitLab::start(with_discussions(101));
    let mut errors: Vec<ForgeError> = Vec::new();
    let (forge, _) = forge(&fake);

    // A redirect whose target carries the token in its path, query and userinfo.
    fake.inject(
        FaultRule::new(FaultAction::Redirect {
            location: Some(format!(
                "http://user:{TOKEN}@127.0.0.1:9/{TOKEN}/api?private_token={TOKEN}"
            )),
        })
        .route(RouteKind::MergeRequest)
        .first_n(1),
    );
    errors.push(forge.merge_request().unwrap_err());
    // A read that keeps failing, a listing that cannot complete, a lost write.
    fake.inject(FaultRule::new(FaultAction::BadGateway).route(RouteKind::MergeRequest));
    errors.push(forge.merge_request().unwrap_err());
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
    let mut elsewhere = config(&fake);
    elsewhere.project = "no/such/project".into();
    errors.push(forge_with(elsewhere).0.merge_request().unwrap_err());
    let mut wrong = config(&fake);
    wrong.token = Token::new("glpat-wrong");
    errors.push(forge_with(wrong).0.bot_user_id().unwrap_err());
    // A server that is gone.
    let gone = config(&FakeGitLab::start(world()));
    errors.push(forge_with(gone).0.bot_user_id().unwrap_err());

    assert_eq!(errors.len(), 9);
    for err in &errors {
        let shown = format!("{err}");
        let debug = format!("{err:?}");
        assert!(!shown.contains(TOKEN), "{shown}");
        assert!(!debug.contains(TOKEN), "{debug}");
    }
    assert!(!format!("{forge:?}").contains(TOKEN));
    let requests = fake.requests();
    assert!(requests.len() > 10);
    for request in &requests {
        assert!(!request.path.contains(TOKEN), "{}", request.path);
        assert!(!request.query.contains(TOKEN), "{}", request.query);
    }
    assert_eq!(fake.violations(), Vec::<String>::new());
}

#[test]
fn a_token_echoed_case_folded_or_percent_encoded_is_redacted() {
    let upper = TOKEN.to_ascii_uppercase();
    let encoded: String = TOKEN.bytes().map(|b| format!("%{b:02X}")).collect();
    let fake = FakeGitLab::start(world());
    let (forge, _) = forge(&fake);
    for location in [
        format!("http://127.0.0.1:9/{upper}/api"),
        format!("http://127.0.0.1:9/{encoded}/api"),
        format!("http://127.0.0.1:9/%67lpat{}/api", &TOKEN[5..]),
        format!("http://{TOKEN}.example/api"),
    ] {
        fake.clear_faults();
        fake.inject(
            FaultRule::new(FaultAction::Redirect {
                location: Some(location.clone()),
            })
            .route(RouteKind::MergeRequest),
        );
        let err = forge.merge_request().unwrap_err();
        for shown in [format!("{err}"), format!("{err:?}")] {
            let folded = shown.to_ascii_lowercase();
            assert!(
                !folded.contains(&TOKEN.to_ascii_lowercase()),
                "{location}: {shown}"
            );
            assert!(!folded.contains(&encoded.to_ascii_lowercase()), "{shown}");
            assert!(!folded.contains("%67lpat"), "{shown}");
            assert!(shown.contains("<redacted>"), "{shown}");
        }
    }
}

#[test]
fn a_nested_project_path_is_one_percent_encoded_segment() {
    let fake = FakeGitLab::start(world());
    let (forge, _) = forge(&fake);
    assert_eq!(forge.merge_request().unwrap().head_sha, fixtures::HEAD_SHA);
    forge.create_thread("a thread", None).unwrap();
    assert_eq!(forge.list_discussions().unwrap().len(), 1);
    let api_requests: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.route != RouteKind::User)
        .collect();
    assert_eq!(api_requests.len(), 3);
    for request in api_requests {
        assert!(request.path.starts_with(MR), "{}", request.path);
        assert_eq!(request.status, Some(if request.write { 201 } else { 200 }));
    }
    // The numeric id reaches the same project.
    let mut by_id = config(&fake);
    by_id.project = PROJECT_ID.to_string();
    assert_eq!(forge_with(by_id).0.list_discussions().unwrap().len(), 1);
}

#[test]
fn project_and_file_paths_are_single_encoded_segments() {
    let mut state = with_file(
        world(),
        "abc123",
        "topics/a b/orders.yaml",
        b"retention: 7\n",
    );
    state.projects[0]
        .branches
        .insert("release/2.0".into(), "c0ffee".into());
    let fake = FakeGitLab::start(state);
    let (forge, _) = forge(&fake);
    let bytes = forge
        .read_file("abc123", "topics/a b/orders.yaml")
        .unwrap()
        .unwrap();
    assert_eq!(bytes, b"retention: 7\n");
    assert_eq!(forge.branch_head("release/2.0").unwrap(), "c0ffee");
    let seen = fake.requests();
    assert_eq!(
        seen[0].path,
        "/api/v4/projects/group%2Fsub%2Fproj/repository/files/topics%2Fa%20b%2Forders.yaml/raw"
    );
    assert_eq!(seen[0].query_param("ref").as_deref(), Some("abc123"));
    assert_eq!(
        seen[1].path,
        "/api/v4/projects/group%2Fsub%2Fproj/repository/branches/release%2F2.0"
    );
}

#[test]
fn the_body_limit_is_enforced() {
    let state = with_file(world(), "abc", "big.yaml", "x".repeat(5000).as_bytes());
    let fake = FakeGitLab::start(with_file(state, "abc", "f", "x".repeat(4096).as_bytes()));
    let mut config = config(&fake);
    config.body_limit = 4096;
    let (forge, sleeper) = forge_with(config.clone());
    let err = forge.read_file("abc", "big.yaml").unwrap_err();
    assert!(matches!(err, ForgeError::Decode { .. }), "{err:?}");
    assert!(err.to_string().contains("4096-byte limit"), "{err}");
    assert_eq!(
        fake.requests().len(),
        1,
        "an over-limit body is not retried"
    );
    assert!(sleeper.delays().is_empty());
    // At the limit exactly is fine.
    assert_eq!(
        forge_with(config)
            .0
            .read_file("abc", "f")
            .unwrap()
            .unwrap()
            .len(),
        4096
    );
}

/// Every discussions request's `per_page`, in order.
fn discussion_page_sizes(fake: &FakeGitLab) -> Vec<u64> {
    fake.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.route == RouteKind::Discussions)
        .map(|r| {
            r.query_param("per_page")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        })
        .collect()
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
            let id = fake.post_thread(PROJECT_ID, MR_IID, HUMAN_ID, &body).1;
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
        let fake = FakeGitLab::start(world());
        fake.set_max_per_page(cap);
        fake.set_omit_totals(omit_totals);
        fake.set_link_pagination(link_only, None);
        let expected = seed_heavy_threads(&fake, 230, heavy);
        let mut config = config(&fake);
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
        assert_eq!(fake.violations(), Vec::<String>::new());
    }
}

#[test]
fn a_human_discussion_over_the_limit_even_alone_is_streamed_without_its_human_bodies() {
    let fake = FakeGitLab::start(world());
    let expected = seed_heavy_threads(&fake, 3, &[(1..2, "ü", 40_000)]);
    // The bot's reply in the heavy thread is kept; the human bodies are not needed.
    let heavy = fake
        .discussions(PROJECT_ID, MR_IID)
        .into_iter()
        .find(|d| d.notes[0].id == expected[1].0)
        .unwrap();
    let reply = fake.reply(PROJECT_ID, MR_IID, &heavy.id, BOT_ID, "the bot's reply");
    let mut config = config(&fake);
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
    assert_eq!(streamed.notes[0].author_id, HUMAN_ID);
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
    assert_eq!(fake.violations(), Vec::<String>::new());
}

#[test]
fn a_diff_listing_over_the_body_limit_is_asked_again_smaller() {
    let fake = FakeGitLab::start(world());
    let files: Vec<DiffFile> = (0..120)
        .map(|i| {
            let mut file = DiffFile::modified(&format!("topics/t{i:03}.yaml"));
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
        s.project_mut(PROJECT_ID)
            .unwrap()
            .mr_mut(MR_IID)
            .unwrap()
            .diffs = files;
    });
    let mut config = config(&fake);
    config.body_limit = 128 * 1024;
    let (forge, _) = forge_with(config);
    let listed = Repository::changed_files(&forge).unwrap();
    let paths: Vec<String> = listed.iter().map(|f| f.new_path.clone()).collect();
    let expected: Vec<String> = (0..120).map(|i| format!("topics/t{i:03}.yaml")).collect();
    assert_eq!(paths, expected);
    let sizes: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Diffs)
        .filter_map(|r| r.query_param("per_page"))
        .collect();
    assert!(sizes.iter().any(|s| s != "100"), "{sizes:?}");
}

#[test]
fn budgeted_reads_take_what_fits_ask_for_lfs_objects_and_stop_once_spent() {
    use assent_forge::{BudgetedRead, ContentBudget};
    let state = with_file(world(), "abc", "big.yaml", "x".repeat(5000).as_bytes());
    let state = with_file(state, "abc", "six.yaml", b"123456");
    let fake = FakeGitLab::start(with_file(state, "abc", "four.yaml", b"1234"));
    let (forge, _) = forge(&fake);
    let raw_reads = || {
        fake.requests()
            .into_iter()
            .filter(|r| r.route == RouteKind::FileRaw)
            .collect::<Vec<LoggedRequest>>()
    };

    // A 500 first: an error's body is not content, so the retried read and the next one fit
    // exactly (6 + 4 = 10).
    fake.inject(
        FaultRule::new(FaultAction::ServerError)
            .path_contains("six.yaml")
            .nth(1),
    );
    let budget = ContentBudget::new(10);
    let read = |path| forge.read_file_within("abc", path, &budget).unwrap();
    assert_eq!(read("six.yaml"), BudgetedRead::Present(b"123456".to_vec()));
    assert_eq!(read("absent.yaml"), BudgetedRead::Absent);
    assert_eq!(read("four.yaml"), BudgetedRead::Present(b"1234".to_vec()));
    assert!(!budget.is_spent());
    assert!(
        raw_reads()
            .iter()
            .all(|r| r.query_param("lfs").as_deref() == Some("true")),
        "every raw read asks for an LFS file's object"
    );

    // A body announced larger than what is left is refused unread and spends the budget: no
    // later read is sent.
    let budget = ContentBudget::new(100);
    let before = raw_reads().len();
    let read = |path| forge.read_file_within("abc", path, &budget).unwrap();
    assert_eq!(read("big.yaml"), BudgetedRead::OverBudget);
    assert_eq!(raw_reads().len(), before + 1, "not retried");
    assert_eq!(read("four.yaml"), BudgetedRead::OverBudget);
    assert_eq!(raw_reads().len(), before + 1, "nothing sent once spent");
    // A read without a budget is as before.
    assert_eq!(
        forge.read_file("abc", "big.yaml").unwrap().unwrap().len(),
        5000
    );
}

#[test]
fn changes_count_and_modes_come_from_gitlabs_answers() {
    let mut state = world();
    let mr = state.projects[0].mr_mut(MR_IID).unwrap();
    mr.diffs = vec![
        DiffFile::modified("topics/orders.yaml").modes("100644", "120000"),
        DiffFile::added("topics/sub").modes("0", "160000"),
    ];
    mr.overflow = true;
    let fake = FakeGitLab::start(state);
    let (forge, _) = forge(&fake);
    assert_eq!(
        forge.merge_request().unwrap().changes_count.as_deref(),
        Some("2+")
    );
    let modes: Vec<(assent_forge::FileMode, assent_forge::FileMode)> = forge
        .changed_files()
        .unwrap()
        .into_iter()
        .map(|f| (f.old_mode, f.new_mode))
        .collect();
    use assent_forge::FileMode::*;
    assert_eq!(modes, [(Regular, Symlink), (Absent, Submodule)]);
    fake.with_state(|st| {
        st.project_mut(PROJECT_ID)
            .unwrap()
            .mr_mut(MR_IID)
            .unwrap()
            .changes_count = Some(String::new())
    });
    assert_eq!(forge.merge_request().unwrap().changes_count, None, "null");
}

#[test]
fn discussions_map_to_listed_notes_with_defaults() {
    // Shapes the fake's state never lists (a note without `updated_at`, a plain note without
    // `resolvable`, `resolved: null`), answered as they are.
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(json_reply(
            200,
            json!([
                {"id": "aaa", "individual_note": false, "notes": [
                    {"id": 11, "body": "first", "author": {"id": 5}, "system": false, "resolvable": true, "resolved": true,
                     "updated_at": "2024-05-01T10:00:00.000Z"},
                    {"id": 12, "body": "reply", "author": {"id": 6}, "system": false, "resolvable": true, "resolved": true}
                ]},
                {"id": "bbb", "individual_note": true, "notes": [
                    {"id": 13, "body": "plain", "author": {"id": 5}, "system": false}
                ]},
                {"id": "ccc", "individual_note": true, "notes": [
                    {"id": 14, "body": "resolved all threads", "author": {"id": 5}, "system": true, "resolvable": false, "resolved": null}
                ]}
            ]),
        ))
        .route(RouteKind::Discussions),
    );
    let (forge, _) = forge(&fake);
    let listed = forge.list_discussions().unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].id, "aaa");
    assert!(!listed[0].individual_note);
    let first = &listed[0].notes[0];
    assert_eq!(
        (
            first.id,
            first.author_id,
            first.system,
            first.resolvable,
            first.resolved
        ),
        (11, 5, false, true, true)
    );
    assert_eq!(first.body, "first");
    assert_eq!(
        first.updated_at.as_deref(),
        Some("2024-05-01T10:00:00.000Z")
    );
    assert_eq!(listed[0].notes[1].updated_at, None);
    let plain = &listed[1].notes[0];
    assert!(listed[1].individual_note && !plain.resolvable && !plain.resolved);
    assert!(listed[2].notes[0].system);
    assert_eq!(fake.requests()[0].path, format!("{MR}/discussions"));
}

#[test]
fn writes_send_the_documented_requests() {
    let fake = FakeGitLab::start(world());
    let (forge, _) = forge(&fake);
    let created = forge
        .create_thread("<!-- m -->\nRetention & days", None)
        .unwrap();
    let thread = fake
        .discussion(PROJECT_ID, MR_IID, &created.discussion_id)
        .unwrap();
    assert_eq!(created.note_id, thread.notes[0].id);
    let reply = forge
        .reply_to_thread(&created.discussion_id, "outdated as of abc")
        .unwrap();
    forge.resolve_thread(&created.discussion_id).unwrap();
    let summary = forge.create_note("summary").unwrap();
    forge.edit_note(summary, "summary v2").unwrap();

    let thread = fake
        .discussion(PROJECT_ID, MR_IID, &created.discussion_id)
        .unwrap();
    let bodies: Vec<&str> = thread.notes.iter().map(|n| n.body.as_str()).collect();
    assert_eq!(
        bodies,
        ["<!-- m -->\nRetention & days", "outdated as of abc"]
    );
    assert_eq!(thread.notes[1].id, reply);
    assert!(thread.resolved());
    let note = fake.note(PROJECT_ID, MR_IID, summary).unwrap();
    assert_eq!(note.body, "summary v2");

    let seen = fake.requests();
    let id = &created.discussion_id;
    let lines: Vec<String> = seen.iter().map(line).collect();
    assert_eq!(
        lines,
        [
            format!("POST {MR}/discussions"),
            format!("POST {MR}/discussions/{id}/notes"),
            format!("PUT {MR}/discussions/{id}?resolved=true"),
            format!("POST {MR}/notes"),
            format!("PUT {MR}/notes/{summary}"),
        ]
    );
    assert_eq!(
        seen[0].form(),
        vec![(
            "body".to_string(),
            "<!-- m -->\nRetention & days".to_string()
        )]
    );
    assert_eq!(
        seen[0].header("Content-Type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        seen[1].form(),
        vec![("body".to_string(), "outdated as of abc".to_string())]
    );
    assert_eq!(seen[2].query_param("resolved").as_deref(), Some("true"));
    assert_eq!(
        seen[4].form(),
        vec![("body".to_string(), "summary v2".to_string())]
    );
    assert_eq!(
        forge.request_counts(),
        RequestCounts {
            reads: 0,
            writes: 5
        }
    );
}

#[test]
fn an_undecodable_write_answer_is_ambiguous() {
    let fake = FakeGitLab::start(world());
    fake.inject(FaultRule::new(reply(201, &[], "<html>created?</html>")));
    let (forge, _) = forge(&fake);
    assert!(
        forge
            .create_thread("x", None)
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn merge_request_info_is_mapped() {
    let fake = FakeGitLab::start(world());
    fake.set_head_pipeline(PROJECT_ID, MR_IID, Some((3, "running")));
    let (forge, _) = forge(&fake);
    let mr = forge.merge_request().unwrap();
    assert_eq!(mr.state, MergeRequestState::Opened);
    assert_eq!(mr.head_sha, fixtures::HEAD_SHA);
    assert_eq!(mr.base_sha.as_deref(), Some(fixtures::BASE_SHA));
    assert_eq!(mr.target_branch, "main");
    assert_eq!(mr.head_pipeline_status.as_deref(), Some("running"));
    assert_eq!(
        mr.web_url.as_deref(),
        Some("https://gitlab.example.com/group/sub/proj/-/merge_requests/7")
    );

    // What the state always has, absent: no diff refs, no pipeline, no web URL.
    let bare = FakeGitLab::start(world());
    bare.inject(FaultRule::new(json_reply(
            200,
            json!({"state": "merged", "sha": "ABCDEF0123456789ABCDEF0123456789ABCDEF01", "diff_refs": null, "target_branch": "main", "head_pipeline": null}),
        )),
    );
    let mr = forge_with(config(&bare)).0.merge_request().unwrap();
    assert_eq!(mr.state, MergeRequestState::Merged);
    // GitLab spells SHAs in lowercase; the one parser normalises a head given otherwise.
    assert_eq!(mr.head_sha, "abcdef0123456789abcdef0123456789abcdef01");
    assert_eq!(
        (mr.base_sha, mr.head_pipeline_status, mr.web_url),
        (None, None, None)
    );
}

#[test]
fn changed_files_mark_withheld_diffs() {
    let mut state = world();
    state.projects[0].mr_mut(MR_IID).unwrap().diffs = vec![
        DiffFile {
            diff: "@@".into(),
            ..DiffFile::modified("a.yaml")
        },
        DiffFile {
            too_large: Some(true),
            diff: String::new(),
            ..DiffFile::added("b.yaml")
        },
        DiffFile {
            collapsed: Some(true),
            ..DiffFile::renamed("c.yaml", "d.yaml")
        },
    ];
    let fake = FakeGitLab::start(state);
    let (forge, _) = forge(&fake);
    let files = forge.changed_files().unwrap();
    assert_eq!(files.len(), 3);
    assert!(!files[0].withheld);
    assert!(files[1].withheld && files[1].new_file);
    assert!(files[2].withheld && files[2].renamed_file && files[2].new_path == "d.yaml");
    let seen = fake.requests();
    assert_eq!(seen[0].path, format!("{MR}/diffs"));
    assert_eq!(seen[0].query_param("per_page").as_deref(), Some("100"));
}

#[test]
fn tree_lists_blobs_and_a_missing_dir_is_empty() {
    // A listing with a subtree and a submodule (which the fake's state cannot hold), then
    // GitLab's two 404s: a path that is not there, and a project that is not. Commit `t1`
    // exists, so the empty listing is believed once GitLab shows it (`lfs_and_refs_tests`
    // has a ref GitLab does not know).
    let mut state = world();
    state.projects[0].files.entry("t1".into()).or_default();
    let fake = FakeGitLab::start(state);
    for (n, answer) in [
        json_reply(
            200,
            json!([
                {"id": "1", "name": "a.yaml", "type": "blob", "path": ".assent/policies/a.yaml", "mode": "100644"},
                {"id": "2", "name": "sub", "type": "tree", "path": ".assent/policies/sub", "mode": "040000"},
                {"id": "3", "name": "b.yml", "type": "blob", "path": ".assent/policies/sub/b.yml", "mode": "100644"},
                {"id": "4", "name": "mod", "type": "commit", "path": ".assent/policies/mod", "mode": "160000"}
            ]),
        ),
        json_reply(404, json!({"message": "404 Tree Not Found"})),
        json_reply(404, json!({"message": "404 Project Not Found"})),
    ]
    .into_iter()
    .enumerate()
    {
        fake.inject(FaultRule::new(answer)
                .route(RouteKind::Tree)
                .nth(n as u64 + 1),
        );
    }
    let (forge, _) = forge(&fake);
    assert_eq!(
        forge.list_tree("t1", "/.assent/policies/").unwrap(),
        vec![
            ".assent/policies/a.yaml".to_string(),
            ".assent/policies/sub/b.yml".to_string()
        ]
    );
    let seen = fake.requests();
    assert_eq!(
        seen[0].path,
        "/api/v4/projects/group%2Fsub%2Fproj/repository/tree"
    );
    assert_eq!(
        seen[0].query_param("path").as_deref(),
        Some(".assent/policies")
    );
    assert_eq!(seen[0].query_param("ref").as_deref(), Some("t1"));
    assert_eq!(seen[0].query_param("recursive").as_deref(), Some("true"));
    assert_eq!(seen[0].body, "", "a GET carries no body");
    assert!(forge.list_tree("t1", "gone").unwrap().is_empty());
    // A project that is not there is an error, not an empty tree.
    assert!(forge.list_tree("t1", "other").is_err());
    let paths: Vec<Option<String>> = fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Tree)
        .map(|r| r.query_param("path"))
        .collect();
    let commits: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.route == RouteKind::Commit)
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        commits,
        ["/api/v4/projects/group%2Fsub%2Fproj/repository/commits/t1"],
        "only the empty listing asks for its commit"
    );
    assert_eq!(
        paths,
        [
            Some(".assent/policies".to_string()),
            Some("gone".to_string()),
            Some("other".to_string())
        ]
    );
}

#[test]
fn missing_files_are_none_but_missing_projects_are_errors() {
    let mut state = world();
    state.projects[0].files.entry("s".into()).or_default();
    let fake = FakeGitLab::start(state);
    let (forge, _) = forge(&fake);
    assert_eq!(forge.read_file("s", "absent.yaml").unwrap(), None);
    let mut elsewhere = config(&fake);
    elsewhere.project = "group/gone".into();
    let err = forge_with(elsewhere)
        .0
        .read_file("s", "x.yaml")
        .unwrap_err();
    assert!(
        matches!(err, ForgeError::Status { status: 404, .. }),
        "{err:?}"
    );
    let statuses: Vec<Option<u16>> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Some(404), Some(404)]);
}

#[test]
fn note_endpoint_reads_one_note() {
    let fake = FakeGitLab::start(world());
    fake.ensure_user(3, "carol");
    fake.post_with_id(PROJECT_ID, MR_IID, 3, "b", false, 42)
        .unwrap();
    let (forge, _) = forge(&fake);
    let note = forge.note(42).unwrap();
    assert_eq!((note.id, note.author_id, note.resolvable), (42, 3, false));
    assert_eq!(fake.requests()[0].path, format!("{MR}/notes/42"));
}

#[test]
fn configuration_errors_never_show_the_token() {
    let bad = |f: &dyn Fn(&mut GitLabConfig)| {
        let mut config = GitLabConfig::new("https://gl.example/api/v4", Token::new(TOKEN), "g/p");
        f(&mut config);
        let err = GitLabForge::new(config, 1).unwrap_err();
        assert!(!err.to_string().contains(TOKEN), "{err}");
        err
    };
    assert!(matches!(
        bad(&|c| c.api_url = "not a url".into()),
        GitLabConfigError::ApiUrl(_)
    ));
    assert!(matches!(
        bad(&|c| c.token = Token::new(format!("{TOKEN}\r\nX: y"))),
        GitLabConfigError::Token(_)
    ));
    assert!(matches!(
        bad(&|c| c.project = " ".into()),
        GitLabConfigError::Project(_)
    ));
    assert!(matches!(
        bad(&|c| c.ca_file = Some("/nonexistent/ca.pem".into())),
        GitLabConfigError::CaFile(_)
    ));
}

#[test]
fn a_ca_file_with_several_certificates_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    // Two real roots from the public set, re-encoded as PEM.
    let pem: String = webpki_root_certs::TLS_SERVER_ROOT_CERTS[..2]
        .iter()
        .map(|der| pem_encode(der.as_ref()))
        .collect();
    std::fs::write(&path, pem).unwrap();
    let mut config = GitLabConfig::new("https://gl.example/api/v4", Token::new(TOKEN), "g/p");
    config.ca_file = Some(path.clone());
    GitLabForge::new(config.clone(), 1).unwrap();
    std::fs::write(&path, "no certificates here").unwrap();
    assert!(matches!(
        GitLabForge::new(config, 1).unwrap_err(),
        GitLabConfigError::CaFile(_)
    ));
}

fn pem_encode(der: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in der.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    let lines: Vec<String> = out
        .as_bytes()
        .chunks(64)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    )
}

#[test]
fn the_forge_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<GitLabForge>();
}

#[test]
fn a_configured_proxy_carries_the_requests() {
    // The fake as the proxy: it logs what reaches it and answers nothing a proxy would.
    let proxy = FakeGitLab::start(State::default());
    let mut config = GitLabConfig::new("http://gitlab.invalid/api/v4", Token::new(TOKEN), "g/p");
    config.proxy = ProxyConfig::Url(proxy.root_url());
    config.retry.max_attempts = 1;
    let (forge, _) = forge_with(config);
    assert!(forge.bot_user_id().is_err());
    let requests: Vec<String> = proxy.requests().iter().map(line).collect();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].starts_with("CONNECT gitlab.invalid:80")
            || requests[0].starts_with("GET http://gitlab.invalid/api/v4/user"),
        "{requests:?}"
    );
}

#[test]
fn socks_proxies_carry_every_request() {
    let fake = FakeGitLab::start(with_discussions(120));
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
        let mut config = GitLabConfig::new(api, Token::new(TOKEN), PROJECT_PATH);
        config.proxy = ProxyConfig::Url(proxy.clone());
        config.request_timeout = Duration::from_secs(5);
        let (forge, _) = forge_with(config);
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
    assert_eq!(fake.violations(), Vec::<String>::new());
}

#[test]
fn a_dead_configured_proxy_is_named_as_the_cause() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut config = GitLabConfig::new("http://gitlab.invalid/api/v4", Token::new(TOKEN), "g/p");
    config.proxy = ProxyConfig::Url(format!("http://127.0.0.1:{port}"));
    config.retry.max_attempts = 1;
    let (forge, _) = forge_with(config);
    let err = forge.bot_user_id().unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::Transport {
                cause: assent_forge::TransportFailure::Proxy,
                ..
            }
        ),
        "{err:?}"
    );
}

// ---- TLS: certificate failures told apart by type -------------------------------------------

const TLS_CA: &str = include_str!("../testdata/tls/ca.pem");
const TLS_LEAF: &str = include_str!("../testdata/tls/leaf.pem");
const TLS_LEAF_KEY: &str = include_str!("../testdata/tls/leaf.key");
const TLS_SELF_CA: &str = include_str!("../testdata/tls/selfca.pem");
const TLS_SELF_CA_KEY: &str = include_str!("../testdata/tls/selfca.key");
const TLS_SELF_LEAF: &str = include_str!("../testdata/tls/selfleaf.pem");
const TLS_SELF_LEAF_KEY: &str = include_str!("../testdata/tls/selfleaf.key");

/// The fake behind its HTTPS front presenting `cert` with `key`.
fn fake_over_tls(cert: &str, key: &str) -> (FakeGitLab, TlsFront) {
    let fake = FakeGitLab::start(world());
    let front = TlsFront::start(&fake, cert, key);
    (fake, front)
}

/// `GET /user` against `api_url`, trusting the public roots plus `ca` when given.
fn user_over_tls(api_url: &str, ca: Option<&str>) -> Result<u64, ForgeError> {
    let dir = tempfile::tempdir().unwrap();
    let mut config = GitLabConfig::new(api_url, Token::new(TOKEN), "g/p");
    config.proxy = ProxyConfig::Direct;
    config.retry.max_attempts = 1;
    config.request_timeout = Duration::from_secs(5);
    if let Some(ca) = ca {
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, ca).unwrap();
        config.ca_file = Some(path);
    }
    GitLabClient::new(&config).unwrap().current_user_id()
}

fn certificate_failure_of(result: Result<u64, ForgeError>) -> assent_forge::CertificateFailure {
    match result {
        Err(ForgeError::Transport {
            cause: assent_forge::TransportFailure::Certificate(failure),
            ref message,
            ..
        }) => {
            assert!(!message.contains(TOKEN));
            failure
        }
        other => panic!("not a certificate failure: {other:?}"),
    }
}

#[test]
fn tls_a_private_ca_given_as_the_ca_file_verifies_its_server() {
    let (fake, front) = fake_over_tls(TLS_LEAF, TLS_LEAF_KEY);
    assert_eq!(
        user_over_tls(&front.base_url(), Some(TLS_CA)).unwrap(),
        BOT_ID
    );
    let seen = fake.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("PRIVATE-TOKEN"), Some(TOKEN));
}

#[test]
fn tls_a_certificate_from_an_unknown_ca_is_unknown_issuer() {
    use assent_forge::CertificateFailure::UnknownIssuer;
    let (fake, front) = fake_over_tls(TLS_LEAF, TLS_LEAF_KEY);
    assert_eq!(
        certificate_failure_of(user_over_tls(&front.base_url(), None)),
        UnknownIssuer
    );
    // Another CA in the file does not help.
    assert_eq!(
        certificate_failure_of(user_over_tls(&front.base_url(), Some(TLS_SELF_LEAF))),
        UnknownIssuer
    );
    assert!(
        fake.requests().is_empty(),
        "nothing sent past the handshake"
    );
}

#[test]
fn tls_a_self_signed_ca_certificate_as_the_server_certificate_is_ca_used_as_end_entity() {
    use assent_forge::CertificateFailure::CaUsedAsEndEntity;
    // The server's own certificate given as the CA file: the TLS library still refuses a CA
    // certificate (CA:TRUE) presented as the server's.
    let (fake, front) = fake_over_tls(TLS_SELF_CA, TLS_SELF_CA_KEY);
    assert_eq!(
        certificate_failure_of(user_over_tls(&front.base_url(), Some(TLS_SELF_CA))),
        CaUsedAsEndEntity
    );
    assert!(
        fake.requests().is_empty(),
        "nothing sent past the handshake"
    );
}

#[test]
fn tls_a_self_signed_end_entity_certificate_is_its_own_trust_anchor() {
    // CA:FALSE, self-signed: given as the CA file, it verifies (the advice for the CA:TRUE
    // case relies on this).
    let (_fake, front) = fake_over_tls(TLS_SELF_LEAF, TLS_SELF_LEAF_KEY);
    assert_eq!(
        user_over_tls(&front.base_url(), Some(TLS_SELF_LEAF)).unwrap(),
        BOT_ID
    );
    assert_eq!(
        certificate_failure_of(user_over_tls(&front.base_url(), None)),
        assent_forge::CertificateFailure::UnknownIssuer
    );
}

#[test]
fn the_outdated_diff_threads_setting_is_read_and_unknown_is_on() {
    let fake = FakeGitLab::start(world());
    let (forge, _) = forge(&fake);
    assert!(!forge.resolves_outdated_diff_threads().unwrap());
    fake.with_state(|s| s.projects[0].resolve_outdated_diff_discussions = true);
    assert!(forge.resolves_outdated_diff_threads().unwrap());
    // A project answer without the field: no DiffNote resolution may count on a guess.
    fake.inject(
        FaultRule::new(json_reply(200, json!({"id": PROJECT_ID, "name": "proj"})))
            .route(RouteKind::Project),
    );
    assert!(forge.resolves_outdated_diff_threads().unwrap());
}

#[test]
fn listed_notes_carry_resolved_at_and_whether_they_are_diff_notes() {
    let fake = FakeGitLab::start(world());
    fake.set_time("2026-01-01T10:00:00.000Z");
    let (forge, _) = forge(&fake);
    let created = forge.create_thread("x", None).unwrap();
    fake.set_time("2026-01-01T10:01:00.000Z");
    fake.resolve(PROJECT_ID, MR_IID, &created.discussion_id, HUMAN_ID, true);
    let listed = forge.list_discussions().unwrap();
    let note = &listed
        .iter()
        .find(|d| d.id == created.discussion_id)
        .unwrap()
        .notes[0];
    assert_eq!(
        note.resolved_at.as_deref(),
        Some("2026-01-01T10:01:00.000Z")
    );
    // GitLab resolves a discussion with `update_all`: the note's `updated_at` stays at its
    // creation, which the listing carries too.
    assert_eq!(note.created_at.as_deref(), Some("2026-01-01T10:00:00.000Z"));
    assert_eq!(note.updated_at.as_deref(), Some("2026-01-01T10:00:00.000Z"));
    assert!(!note.diff_note, "a general thread");
}

/// The basic world with a real diff for `topics/orders.yaml` (30 → 7 days on line 3).
fn start_with_diff() -> FakeGitLab {
    let mut state = world();
    state.projects[0].mr_mut(MR_IID).unwrap().diffs = vec![DiffFile {
        diff: "@@ -1,3 +1,3 @@\n topics:\n   - name: orders.events.v1\n-    retention_days: 30\n+    retention_days: 7\n".into(),
        ..DiffFile::modified("topics/orders.yaml")
    }];
    FakeGitLab::start(state)
}

fn orders_position(line: assent_core::model::DiffLine) -> assent_core::model::DiffPosition {
    assent_core::model::DiffPosition {
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
    use assent_core::model::DiffLine;
    let fake = start_with_diff();
    let (forge, _) = forge(&fake);
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
        fake.discussions(PROJECT_ID, MR_IID)
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
    assert_eq!(fake.violations(), Vec::<String>::new());
}

#[test]
fn a_position_gitlab_refuses_is_a_400_refusal_that_wrote_nothing() {
    use assent_core::model::DiffLine;
    use assent_forge::ForgeErrorKind;
    let fake = start_with_diff();
    let (forge, _) = forge(&fake);
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
    assert!(fake.discussions(PROJECT_ID, MR_IID).is_empty());
}

mod lfs_and_refs_tests;
mod tls_to_plain_http_tests;
mod token_and_users_tests;

/// A SHA GitLab reports in a form that is no commit SHA (a merge request's `sha`, its
/// `diff_head_sha` in lib/api/entities/merge_request_basic.rb, or one of its `diff_refs`) is
/// a decode error naming the field: the run never pins, compares or marks a head it could
/// not read.
#[test]
fn a_malformed_sha_from_gitlab_is_a_decode_error_naming_the_field() {
    let good = fixtures::HEAD_SHA;
    for (field, body) in [
        (
            "`sha`",
            json!({"state": "opened", "sha": "not-a-sha", "diff_refs": null, "target_branch": "main", "head_pipeline": null}),
        ),
        (
            "`diff_refs.base_sha`",
            json!({"state": "opened", "sha": good, "diff_refs": {"base_sha": "1234", "start_sha": good, "head_sha": good}, "target_branch": "main", "head_pipeline": null}),
        ),
        (
            "`diff_refs.start_sha`",
            json!({"state": "opened", "sha": good, "diff_refs": {"base_sha": good, "start_sha": "g".repeat(40), "head_sha": good}, "target_branch": "main", "head_pipeline": null}),
        ),
        (
            "`diff_refs.head_sha`",
            json!({"state": "opened", "sha": good, "diff_refs": {"base_sha": good, "start_sha": good, "head_sha": format!("{good} ")}, "target_branch": "main", "head_pipeline": null}),
        ),
    ] {
        let fake = FakeGitLab::start(world());
        fake.inject(FaultRule::new(json_reply(200, body)));
        let error = forge_with(config(&fake)).0.merge_request().unwrap_err();
        assert!(
            matches!(error, ForgeError::Decode { .. }),
            "{field}: {error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(field), "{field}: {message}");
        assert!(
            message.contains("is not a commit SHA"),
            "{field}: {message}"
        );
    }
}
