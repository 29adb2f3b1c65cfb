//! An `https://` API base that reaches a server speaking something else: a plain-HTTP
//! GitLab (or its nginx) answers the TLS hello with a plain-text `400`, which the TLS
//! library reads as a record of no known content type; a server that accepts and never
//! answers the hello leaves the handshake to time out. Neither is GitLab being slow, and
//! neither is a name that did not resolve: the first is final at once, the second says
//! the TLS handshake timed out.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use super::*;

/// A listener on a loopback port that, on every connection, runs `answer` with what the
/// client sent first; returns its `host:port` and how many connections it took.
fn listener(answer: fn(&mut std::net::TcpStream)) -> (String, Arc<AtomicUsize>) {
    let socket = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = socket.local_addr().unwrap().to_string();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    thread::spawn(move || {
        for stream in socket.incoming() {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            thread::spawn(move || answer(&mut stream));
        }
    });
    (address, connections)
}

/// What nginx on a plain-HTTP port answers a TLS hello (or anything it cannot parse).
fn plain_400(stream: &mut std::net::TcpStream) {
    let mut hello = [0u8; 512];
    let _ = stream.read(&mut hello);
    let _ = stream.write_all(
        b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nContent-Length: 11\r\nConnection: close\r\n\r\nBad Request",
    );
}

/// Takes the hello and says nothing, as a plain-HTTP server waiting for the rest of a
/// request line does.
fn silent(stream: &mut std::net::TcpStream) {
    let mut hello = [0u8; 512];
    let _ = stream.read(&mut hello);
    thread::sleep(Duration::from_secs(30));
}

fn https_forge(address: &str, attempts: u32) -> (GitLabForge, Arc<RecordingSleeper>) {
    let mut config = GitLabConfig::new(
        format!("https://{address}/api/v4"),
        Token::new(TOKEN),
        PROJECT_PATH,
    );
    config.proxy = ProxyConfig::Direct;
    config.connect_timeout = Duration::from_secs(1);
    config.request_timeout = Duration::from_secs(2);
    config.retry.max_attempts = attempts;
    forge_with(config)
}

#[test]
fn a_plain_http_answer_to_the_tls_hello_is_final_at_once_and_says_to_use_http() {
    let (address, connections) = listener(plain_400);
    let (forge, sleeper) = https_forge(&address, 5);
    let error = forge.client().current_user_id().unwrap_err();
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "one connection, not retried: {error}"
    );
    assert!(sleeper.delays().is_empty(), "{:?}", sleeper.delays());
    let ForgeError::Transport { cause, message, .. } = &error else {
        panic!("a transport failure: {error:?}");
    };
    assert_eq!(*cause, assent_forge::TransportFailure::PlainHttp);
    assert!(
        message.contains(&format!(
            "{address} answered in plain HTTP, not TLS: use http:// (and ASSENT_ALLOW_HTTP) or the HTTPS port"
        )),
        "{message}"
    );
    assert!(!message.to_lowercase().contains("dns"), "{message}");
    assert!(!message.contains(TOKEN), "{message}");
}

#[test]
fn a_server_that_never_answers_the_hello_is_a_tls_handshake_timeout() {
    let (address, _) = listener(silent);
    let (forge, _) = https_forge(&address, 1);
    let error = forge.client().current_user_id().unwrap_err();
    let ForgeError::Transport { cause, message, .. } = &error else {
        panic!("a transport failure: {error:?}");
    };
    assert_eq!(*cause, assent_forge::TransportFailure::ConnectFailed);
    assert!(
        message.contains(&format!(
            "{address}: no TCP connection or TLS handshake within the 1 s connect timeout"
        )),
        "{message}"
    );
    assert!(!message.to_lowercase().contains("dns"), "{message}");
}
