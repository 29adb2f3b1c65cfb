//! Writes refused with 429 or paced by `RateLimit-*` headers, against the fake GitLab
//! (docs/contract.md#write-rate-limits): sent again only after the wait GitLab asks for,
//! within one budget of waiting per client.

use super::*;

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
