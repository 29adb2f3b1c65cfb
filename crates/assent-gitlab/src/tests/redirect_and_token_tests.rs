//! The token stays a header, against the fake GitLab: redirects are refused and never
//! followed, and the token (in any case or encoding) appears in no URL and no error.

use super::*;

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
