//! Certificate failures told apart by type, against the fake GitLab behind its HTTPS front
//! (`fake_gitlab::tls`): classified from rustls's and webpki's error types, never from
//! their wording.

use super::*;

const TLS_CA: &str = include_str!("../../testdata/tls/ca.pem");
const TLS_LEAF: &str = include_str!("../../testdata/tls/leaf.pem");
const TLS_LEAF_KEY: &str = include_str!("../../testdata/tls/leaf.key");
const TLS_SELF_CA: &str = include_str!("../../testdata/tls/selfca.pem");
const TLS_SELF_CA_KEY: &str = include_str!("../../testdata/tls/selfca.key");
const TLS_SELF_LEAF: &str = include_str!("../../testdata/tls/selfleaf.pem");
const TLS_SELF_LEAF_KEY: &str = include_str!("../../testdata/tls/selfleaf.key");

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
