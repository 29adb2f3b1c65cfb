//! The one HTTP transport every GitLab request goes through.
//!
//! One `ureq` agent per forge, configured once:
//!
//! * `http_status_as_error(false)`: every status comes back as a response and is classified by
//!   the retry layer ([`super::retry`]).
//! * `max_redirects(0)`: a 3xx answer is returned as is and turned into an error naming the
//!   `Location` target. The token never follows a redirect, not even to the same host.
//! * A response body limit ([`DEFAULT_BODY_LIMIT`], 64 MiB by default, applied after
//!   decompression); a larger body is an error, never a silently truncated value. An
//!   uncompressed answer whose `Content-Length` already exceeds the limit fails before its
//!   body is read, so a listing page that must be asked again smaller costs no download.
//! * Connect and global (whole request) timeouts.
//! * `User-Agent: assent/<version>`.
//! * Proxy: chosen once from the environment by [`ProxyConfig::FromEnv`] (see
//!   [`select_proxy`]: `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` by target scheme, `NO_PROXY`
//!   matched here rather than by ureq, whose matcher does not trim entries, treats
//!   `example.com` as exact-only and knows no CIDR ranges). HTTP(S) CONNECT proxies and
//!   SOCKS4/4a/5/5h proxies are supported ([`SUPPORTED_PROXY_SCHEMES`]); any other value is a
//!   configuration error naming the variable it came from, never a panic at the first request.
//! * Cleartext: a plain `http://` API base to a host that is not loopback sends the token
//!   unencrypted; [`cleartext_warning`] says so once per process on stderr unless
//!   `ASSENT_ALLOW_HTTP=1`.
//! * TLS roots: Mozilla's public roots (ureq's default). With a CA file, the file's
//!   certificates (PEM, one or several) are trusted **in addition to** the public roots, so a
//!   self-managed GitLab with a private CA and a public proxy or SaaS host both verify.
//!
//! The token travels only in the `PRIVATE-TOKEN` header. It is never part of a URL, and every
//! error text built here passes through `Transport::redact`, which removes the token in every
//! form a server or a URL may echo it ([`redact_secret`]: exact, ASCII-case-folded,
//! percent-encoded).
//!
//! One concept per file: `redaction` (the token and texts cleaned of it), `proxy` (which
//! proxy, `NO_PROXY`, the value checked), `cleartext` (the plain-`http://` warning),
//! `tls` (the roots and a CA file), `request` and `response` (what is sent and what
//! came back), `failure` (why an attempt got no response) and `execute` (one attempt,
//! step by step). This file builds the agent from them.

mod cleartext;
mod execute;
mod failure;
mod proxy;
mod redaction;
mod request;
mod response;
mod tls;

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use url::Url;

use super::GitLabConfigError;
use assent_forge::RequestCounts;

pub use self::cleartext::{ALLOW_HTTP_VAR, allow_http, cleartext_warning, is_loopback_host};
pub(crate) use self::execute::{StreamFailure, StreamSink};
pub(crate) use self::failure::Failure;
pub(crate) use self::proxy::build_proxy;
pub use self::proxy::{
    ProxyConfig, SUPPORTED_PROXY_SCHEMES, no_proxy_matches, select_proxy, select_proxy_with_source,
};
use self::redaction::redact_userinfo;
pub use self::redaction::{Token, redact_secret};
pub(crate) use self::request::{Method, PreparedRequest};
pub(crate) use self::response::{RawResponse, error_message};
pub(crate) use self::tls::tls_config;

/// Default response body limit: 64 MiB.
pub const DEFAULT_BODY_LIMIT: u64 = 64 * 1024 * 1024;

/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default whole-request timeout (connect, send, receive, body).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Settings of the transport, taken from the forge configuration.
#[derive(Debug, Clone)]
pub(crate) struct TransportSettings<'a> {
    pub(crate) api_url: &'a str,
    pub(crate) token: &'a Token,
    pub(crate) ca_file: Option<&'a Path>,
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) body_limit: u64,
    pub(crate) proxy: &'a ProxyConfig,
}

/// The one agent, the API base, the token and the request counters.
pub(crate) struct Transport {
    agent: ureq::Agent,
    base: Url,
    token: Token,
    body_limit: u64,
    /// Covers the TCP connection and the TLS handshake (ureq's connect phase).
    connect_timeout: Duration,
    /// Requests go through a proxy: a failure to connect is the proxy's.
    proxied: bool,
    reads: AtomicU64,
    writes: AtomicU64,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("base", &self.base.as_str())
            .field("token", &self.token)
            .field("body_limit", &self.body_limit)
            .finish_non_exhaustive()
    }
}

impl Transport {
    pub(crate) fn new(settings: &TransportSettings<'_>) -> Result<Self, GitLabConfigError> {
        let base = parse_api_base(settings.api_url)?;
        let token = settings.token.clone();
        if token.expose().is_empty() {
            return Err(GitLabConfigError::Token("the token is empty".into()));
        }
        if !token.expose().bytes().all(|b| b.is_ascii_graphic()) {
            return Err(GitLabConfigError::Token(
                "the token contains whitespace or non-printable characters".into(),
            ));
        }
        let env = |name: &str| std::env::var(name).ok();
        let proxy = proxy::chosen_proxy(settings.proxy, &base, env)?;
        let proxied = proxy.is_some();
        cleartext::warn_once(&base, env);
        let tls = tls_config(settings.ca_file)?;
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .https_only(base.scheme() == "https")
            .timeout_connect(Some(settings.connect_timeout))
            .timeout_global(Some(settings.request_timeout))
            .user_agent(concat!("assent/", env!("CARGO_PKG_VERSION")))
            .proxy(proxy)
            .tls_config(tls)
            .build();
        Ok(Transport {
            agent: ureq::Agent::new_with_config(config),
            base,
            token,
            body_limit: settings.body_limit,
            connect_timeout: settings.connect_timeout,
            proxied,
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        })
    }

    /// The API base URL, ending in `/`.
    pub(crate) fn base(&self) -> &Url {
        &self.base
    }

    /// The API base's `host:port` (the scheme's port when none is written), as an error
    /// about the connection names the server.
    pub(crate) fn host_port(&self) -> String {
        let host = self.base.host_str().unwrap_or_default();
        match self.base.port_or_known_default() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }
    }

    /// Requests attempted so far.
    pub(crate) fn counts(&self) -> RequestCounts {
        RequestCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }

    /// Removes the token from a text meant for an error or a log line, in every form
    /// [`redact_secret`] knows.
    pub(crate) fn redact(&self, text: String) -> String {
        redact_secret(&text, self.token.expose())
    }

    /// The response body limit in bytes.
    pub(crate) fn body_limit(&self) -> u64 {
        self.body_limit
    }
}

/// Parses and normalises the API base: http(s), no credentials, no query or fragment, path
/// ending in `/`.
pub(crate) fn parse_api_base(api_url: &str) -> Result<Url, GitLabConfigError> {
    // `gitlab.example.com/api/v4` is "a relative URL without a base" to the parser, and
    // `gitlab.example.com:443/api/v4` parses with the host as its scheme: name the mistake.
    if !api_url.contains("://") {
        let shown = redact_userinfo(api_url.trim());
        return Err(GitLabConfigError::ApiUrl(format!(
            "{shown}: no scheme; write the URL in full, e.g. https://{shown}"
        )));
    }
    let mut url = Url::parse(api_url.trim())
        .map_err(|e| GitLabConfigError::ApiUrl(format!("{}: {e}", redact_userinfo(api_url))))?;
    if url.scheme() != "https" && url.scheme() != "http" {
        return Err(GitLabConfigError::ApiUrl(format!(
            "{}: scheme must be http or https",
            url.scheme()
        )));
    }
    if url.host_str().is_none() {
        return Err(GitLabConfigError::ApiUrl("the API URL has no host".into()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(GitLabConfigError::ApiUrl(
            "the API URL must not carry credentials".into(),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(GitLabConfigError::ApiUrl(
            "the API URL must not carry a query or fragment".into(),
        ));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_base_gets_a_trailing_slash_and_rejects_credentials() {
        assert_eq!(
            parse_api_base("https://gl.example/api/v4")
                .unwrap()
                .as_str(),
            "https://gl.example/api/v4/"
        );
        assert!(parse_api_base("https://u:p@gl.example/api/v4").is_err());
        assert!(parse_api_base("ftp://gl.example/").is_err());
        assert!(parse_api_base("https://gl.example/api/v4?private_token=x").is_err());
    }

    #[test]
    fn an_api_url_without_a_scheme_says_so_and_how_to_write_it() {
        for (given, shown) in [
            ("gitlab.example.com/api/v4", "gitlab.example.com/api/v4"),
            (
                "gitlab.example.com:443/api/v4",
                "gitlab.example.com:443/api/v4",
            ),
            (
                "u:secret@gitlab.example.com/api/v4",
                "gitlab.example.com/api/v4",
            ),
        ] {
            let error = parse_api_base(given).unwrap_err().to_string();
            assert_eq!(
                error,
                format!(
                    "invalid GitLab API URL: {shown}: no scheme; write the URL in full, e.g. https://{shown}"
                ),
            );
            assert!(!error.contains("secret"), "{error}");
        }
    }
}
