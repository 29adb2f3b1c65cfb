//! Reads that GitLab refuses for a while, against the fake GitLab: rate limits in both forms
//! (`Retry-After` and GitLab's JSON 429), server errors and HTML bad gateways retried until
//! an answer, dropped connections, and client errors never retried.

use super::*;

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
