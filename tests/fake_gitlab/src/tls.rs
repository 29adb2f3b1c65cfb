//! An HTTPS front for the fake (cargo feature `tls`), for the tests of certificate handling.
//!
//! The fake itself speaks plain HTTP; [`TlsFront`] terminates TLS with the certificate a test
//! gives and relays each request to the fake's port, so a client verifying (or refusing) a
//! certificate still talks to the same stateful fake, with its log and fault rules, as every
//! other test. A handshake the client refuses just ends that connection.
//!
//! One request per connection: the front asks the fake to close after answering
//! (`Connection: close`) and relays the answer until then. The fake builds pagination `Link`
//! URLs from the `Host` header with `http://`, so a listing longer than one page is not
//! followed through the front.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::FakeGitLab;

/// How long one relayed exchange may take before the front gives up on the connection.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest request head the front reads before giving up on a connection.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// An HTTPS listener on `127.0.0.1` relaying to one fake. Stops on drop.
pub struct TlsFront {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl TlsFront {
    /// Serves TLS on `127.0.0.1:0` presenting the PEM certificate chain `cert_pem` (the
    /// server's certificate first) with the PEM private key `key_pem`, relaying to `fake`.
    /// Panics on unusable PEM or when no port can be bound.
    pub fn start(fake: &FakeGitLab, cert_pem: &str, key_pem: &str) -> TlsFront {
        let certs = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("certificate PEM");
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("private key PEM");
        let config = Arc::new(
            rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("certificate and key"),
        );
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local address");
        let upstream = SocketAddr::from(([127, 0, 0, 1], fake.port()));
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                for tcp in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(tcp) = tcp else { continue };
                    let config = config.clone();
                    std::thread::spawn(move || {
                        let _ = relay(config, tcp, upstream);
                    });
                }
            })
        };
        TlsFront {
            addr,
            stop,
            accept: Some(accept),
        }
    }

    /// `https://localhost:PORT/api/v4`: the test certificates name `localhost`.
    pub fn base_url(&self) -> String {
        format!("https://localhost:{}/api/v4", self.addr.port())
    }

    /// The port the front listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Unblock accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

/// One connection: the TLS handshake, one request relayed to the fake, its answer relayed
/// back, then `close_notify`.
fn relay(
    config: Arc<rustls::ServerConfig>,
    tcp: TcpStream,
    upstream: SocketAddr,
) -> io::Result<()> {
    tcp.set_read_timeout(Some(EXCHANGE_TIMEOUT))?;
    tcp.set_write_timeout(Some(EXCHANGE_TIMEOUT))?;
    let conn = rustls::ServerConnection::new(config).map_err(io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let request = read_request(&mut tls)?;
    let mut fake = TcpStream::connect(upstream)?;
    fake.set_read_timeout(Some(EXCHANGE_TIMEOUT))?;
    fake.write_all(&request)?;
    let mut answer = Vec::new();
    fake.read_to_end(&mut answer)?;
    tls.write_all(&answer)?;
    tls.conn.send_close_notify();
    tls.flush()
}

/// Reads one request (head and `Content-Length` body) and rewrites it to ask the fake to
/// close the connection after answering.
fn read_request(stream: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if bytes.len() > MAX_HEAD_BYTES {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "head too long"));
        }
        match stream.read(&mut buf)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => bytes.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    let mut lines: Vec<&str> = head
        .split("\r\n")
        .filter(|line| {
            !line
                .split_once(':')
                .is_some_and(|(name, _)| name.trim().eq_ignore_ascii_case("connection"))
        })
        .collect();
    let length: usize = lines
        .iter()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0);
    lines.push("Connection: close");
    let mut body = bytes[head_end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut buf)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => body.extend_from_slice(&buf[..n]),
        }
    }
    let mut request = lines.join("\r\n").into_bytes();
    request.extend_from_slice(b"\r\n\r\n");
    request.extend_from_slice(&body);
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_rewritten_to_close_and_keeps_its_body() {
        let sent = b"POST /api/v4/x HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nbody=";
        let request = read_request(&mut &sent[..]).unwrap();
        assert_eq!(
            String::from_utf8(request).unwrap(),
            "POST /api/v4/x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbody="
        );
    }
}
