//! The client's configuration: errors that never show the token, CA files, and proxies (HTTP
//! and SOCKS) carrying every request, a dead one named as the cause.

use super::*;

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
