//! Hostile servers and transport edges: huge comments, proxies, cleartext, foreign next links.

use super::*;

// ---- hostile servers and transport edges ---------------------------------------------------

/// A SOCKS relay whose every CONNECT reaches `w`'s fake.
fn relay_to(w: &World) -> fake_gitlab::SocksRelay {
    fake_gitlab::SocksRelay::start(([127, 0, 0, 1], w.fake.port()).into())
}

/// The `per_page` of every discussions listing request logged so far.
fn discussion_page_sizes(w: &World) -> Vec<String> {
    w.fake
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.route == RouteKind::Discussions)
        .filter_map(|r| {
            r.query
                .split('&')
                .find_map(|pair| pair.strip_prefix("per_page="))
                .map(str::to_owned)
        })
        .collect()
}

/// Seventy comments of 999,000 characters by a Reporter push one 100-item discussions page
/// past the 64 MiB body limit: the page is asked again smaller and the run completes.
#[test]
fn seventy_comments_of_almost_a_million_characters_do_not_stop_the_run() {
    let w = World::new(ASSENT);
    for i in 0..70 {
        let (_, id) = w.fake.post_note(
            project(),
            mr(),
            fixtures::HUMAN_ID,
            &format!("comment {i} "),
        );
        w.fake.inflate_note(id, "x", 999_000);
    }
    // A job that passes on REVIEW (`--fail-on block`), so stderr has no gate line.
    let r = w.run(&["--fail-on", "block"]);
    r.expect_code(0);
    assert_eq!(r.stderr, "", "no warning and no error");
    assert_eq!(r.receipt()["rescan"]["verified"], true, "{}", r.stdout);
    assert_eq!(w.threads_of(RETENTION).len(), 1);
    assert!(w.summary().body.contains("verified"));
    let sizes = discussion_page_sizes(&w);
    assert!(sizes.iter().any(|s| s == "50"), "{sizes:?}");
    w.assert_no_violations();
    r.assert_no_token();

    // The rerun lists the same comments and writes nothing.
    w.fake.reset_log();
    let rerun = w.run(&[]);
    rerun.expect_code(1);
    assert_eq!(w.writes().len(), 0);
}

#[test]
fn a_socks_proxy_carries_the_run() {
    let w = World::new(ASSENT);
    let relay = relay_to(&w);
    for (var, scheme) in [
        ("ALL_PROXY", "socks5"),
        ("HTTP_PROXY", "socks5h"),
        ("http_proxy", "socks4a"),
    ] {
        let before = relay.connects().len();
        let r = w
            .invocation()
            .env(var, &format!("{scheme}://{}", relay.authority()))
            .args(&["--fail-on", "block"])
            .run();
        r.expect_code(0);
        assert_eq!(r.stderr, "", "{var}={scheme}://");
        assert!(
            relay.connects().len() > before,
            "{var}={scheme}:// did not go through the proxy"
        );
        r.assert_no_token();
    }
    assert_eq!(w.threads_of(RETENTION).len(), 1);
}

/// A proxy that cannot be reached refuses the connection: the `help:` line names the proxy
/// and `NO_PROXY`, whatever words the refusal itself uses.
#[test]
fn a_dead_proxy_is_named_in_the_help_line() {
    let w = World::new(ASSENT);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let r = w
        .invocation()
        .env("HTTP_PROXY", &format!("http://127.0.0.1:{port}"))
        .run();
    r.expect_code(3);
    let help = r
        .stderr
        .lines()
        .find(|l| l.starts_with("help: "))
        .unwrap_or_else(|| panic!("no help line: {}", r.stderr));
    assert!(
        help.starts_with(
            "help: the proxy from HTTPS_PROXY, HTTP_PROXY or ALL_PROXY could not be reached"
        ) && help.contains("NO_PROXY"),
        "{help}"
    );
    assert!(w.fake.requests().is_empty());
}

#[test]
fn an_unusable_proxy_is_a_usage_error_naming_the_variable_and_never_a_panic() {
    let w = World::new(ASSENT);
    for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
        for value in [
            "ftp://proxy.example:21",
            "socks4://user:s3cret@127.0.0.1:1080",
            "garbage with spaces",
            "http://:8080",
            "socks6://127.0.0.1:1080",
        ] {
            let r = w.invocation().env(var, value).run();
            r.expect_code(2);
            let line = r.error_line();
            assert!(
                line.starts_with("error: ")
                    && line.contains(&format!("{var}="))
                    && line.contains("socks5h://"),
                "{var}={value}: {line}"
            );
            assert!(!line.contains("s3cret"), "{line}");
        }
    }
    // HTTPS_PROXY applies to an https:// API base.
    let r = w
        .invocation()
        .env("CI_API_V4_URL", "https://127.0.0.1:1/api/v4")
        .env("HTTPS_PROXY", "ftp://proxy.example:21")
        .run();
    r.expect_code(2);
    assert!(r.error_line().contains("HTTPS_PROXY="), "{}", r.stderr);
    assert!(
        w.fake.requests().is_empty(),
        "nothing is sent with an unusable proxy"
    );

    // Usable values that lead nowhere: a forge failure, never a panic.
    for value in [
        "http://user:s3cret@127.0.0.1:1",
        "SOCKS5H://user:s3cret@127.0.0.1:1",
    ] {
        let r = w.invocation().env("ALL_PROXY", value).run();
        r.expect_code(3);
        assert!(!r.stderr.contains("s3cret"), "{}", r.stderr);
    }
}

#[test]
fn a_plain_http_api_url_to_a_remote_host_warns_once_on_stderr_only() {
    let w = World::new(ASSENT);
    let relay = relay_to(&w);
    let remote = |allow: Option<&str>| {
        let mut invocation = w
            .invocation()
            .env("CI_API_V4_URL", "http://gitlab.example.test/api/v4")
            .env("ALL_PROXY", &format!("socks5h://{}", relay.authority()))
            .args(&["--format", "json", "--fail-on", "block"]);
        if let Some(value) = allow {
            invocation = invocation.env("ASSENT_ALLOW_HTTP", value);
        }
        invocation.run()
    };
    let r = remote(None);
    r.expect_code(0);
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one warning: {}", r.stderr);
    assert!(
        lines[0].starts_with("warning: ")
            && lines[0].contains("http://gitlab.example.test")
            && lines[0].contains("unencrypted")
            && lines[0].contains("ASSENT_ALLOW_HTTP=1"),
        "{}",
        lines[0]
    );
    let stdout: Value = serde_json::from_str(&r.stdout).expect("stdout is only the receipt");
    assert_eq!(stdout, r.receipt());
    r.assert_no_token();

    for allow in ["1", " 1 "] {
        let r = remote(Some(allow));
        r.expect_code(0);
        assert_eq!(r.stderr, "", "ASSENT_ALLOW_HTTP={allow:?}");
    }
    let r = remote(Some("0"));
    assert_eq!(r.stderr.lines().count(), 1, "only 1 allows: {}", r.stderr);
}

#[test]
fn a_next_link_with_user_info_aborts_the_run_before_any_write() {
    let w = World::new(ASSENT);
    for i in 0..120 {
        w.fake
            .post_thread(project(), mr(), fixtures::HUMAN_ID, &format!("thread {i}"));
    }
    w.fake.set_link_pagination(true, Some("assent:s3cret"));
    let r = w.run(&[]);
    r.expect_code(3);
    let line = r.error_line();
    assert!(
        line.contains("discussions") && line.contains("user-info"),
        "{line}"
    );
    assert!(
        !line.contains("s3cret") && !line.contains("assent:"),
        "{line}"
    );
    assert!(r.receipt_text.is_none());
    assert_eq!(w.writes().len(), 0, "{:#?}", w.writes());
    for request in w.fake.requests() {
        assert!(
            request
                .headers
                .iter()
                .all(|(k, _)| !k.eq_ignore_ascii_case("authorization")),
            "{request:?}"
        );
    }
    r.assert_no_token();
}
