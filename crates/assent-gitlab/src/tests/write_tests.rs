//! Writes against the fake GitLab: the requests each write sends, and a write that may have
//! happened (dropped connection, server error, undecodable answer) is ambiguous and never
//! sent again.

use super::*;

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
