//! One unauthenticated `GET` of a service that runs beside GitLab (`assent serve`'s
//! `/readyz`), with the GitLab transport's TLS roots and proxy rules. The token is never
//! sent: the service is not GitLab, and a URL an operator mistyped must not receive it.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use url::Url;

use crate::transport::{build_proxy, select_proxy_with_source, tls_config};

/// How much of the answer's body is kept: a readiness answer is one short line.
const BODY_LIMIT: u64 = 4096;

/// A service's answer: its status and the start of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body's first 4 KiB, lossily decoded.
    pub body: String,
}

/// `GET url` without credentials, redirects refused, within `timeout`, trusting `ca_file`
/// beside the public roots and taking the proxy the environment names for `url`. `Err` says
/// why no answer came (connection refused, TLS, timeout, an unusable CA file or proxy).
pub fn get_health(
    url: &Url,
    ca_file: Option<&Path>,
    timeout: Duration,
) -> Result<HealthAnswer, String> {
    let env = |name: &str| std::env::var(name).ok();
    let proxy = match select_proxy_with_source(url, env) {
        Some((source, value)) => Some(build_proxy(source, &value).map_err(|e| e.to_string())?),
        None => None,
    };
    let tls = tls_config(ca_file).map_err(|e| e.to_string())?;
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(timeout))
        .user_agent(concat!("assent/", env!("CARGO_PKG_VERSION")))
        .proxy(proxy)
        .tls_config(tls)
        .build();
    let agent = ureq::Agent::new_with_config(config);
    let mut response = agent.get(url.as_str()).call().map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    // A body that cannot be read whole still has a status worth reporting.
    let _ = response
        .body_mut()
        .as_reader()
        .take(BODY_LIMIT)
        .read_to_end(&mut body);
    Ok(HealthAnswer {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// A one-shot server answering `answer` and handing back the request it read.
    fn serve_once(answer: &'static str) -> (Url, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/readyz", listener.local_addr().unwrap())).unwrap();
        let handle = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 4096];
            let n = stream.read(&mut request).unwrap();
            stream.write_all(answer.as_bytes()).unwrap();
            String::from_utf8_lossy(&request[..n]).into_owned()
        });
        (url, handle)
    }

    #[test]
    fn the_status_and_body_come_back_and_no_credential_is_sent() {
        let (url, server) =
            serve_once("HTTP/1.1 503 Service Unavailable\r\ncontent-length: 9\r\n\r\nnot ready");
        let answer = get_health(&url, None, Duration::from_secs(5)).unwrap();
        assert_eq!(answer.status, 503);
        assert_eq!(answer.body, "not ready");
        let request = server.join().unwrap().to_ascii_lowercase();
        assert!(request.starts_with("get /readyz "), "{request}");
        assert!(
            !request.contains("private-token") && !request.contains("authorization"),
            "{request}"
        );
    }

    #[test]
    fn a_redirect_is_an_answer_not_followed() {
        let (url, server) = serve_once(
            "HTTP/1.1 302 Found\r\nlocation: http://example.invalid/\r\ncontent-length: 0\r\n\r\n",
        );
        let answer = get_health(&url, None, Duration::from_secs(5)).unwrap();
        assert_eq!(answer.status, 302);
        server.join().unwrap();
    }

    #[test]
    fn nothing_listening_is_an_error() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/readyz", listener.local_addr().unwrap())).unwrap();
        drop(listener);
        assert!(get_health(&url, None, Duration::from_secs(5)).is_err());
    }
}
