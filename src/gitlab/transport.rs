//! The one HTTP transport every GitLab request goes through.
//!
//! One `ureq` agent per forge, configured once:
//!
//! * `http_status_as_error(false)`: every status comes back as a response and is classified by
//!   the retry layer ([`super::retry`]).
//! * `max_redirects(0)`: a 3xx answer is returned as is and turned into an error naming the
//!   `Location` target. The token never follows a redirect, not even to the same host.
//! * A response body limit ([`DEFAULT_BODY_LIMIT`], 64 MiB by default, applied after
//!   decompression); a larger body is an error, never a silently truncated value.
//! * Connect and global (whole request) timeouts.
//! * `User-Agent: assent/<version>`.
//! * Proxy: chosen once from the environment by [`ProxyConfig::FromEnv`] (see
//!   [`select_proxy`]: `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` by target scheme, `NO_PROXY`
//!   matched here rather than by ureq, whose matcher does not trim entries, treats
//!   `example.com` as exact-only and knows no CIDR ranges).
//! * TLS roots: Mozilla's public roots (ureq's default). With a CA file, the file's
//!   certificates (PEM, one or several) are trusted **in addition to** the public roots, so a
//!   self-managed GitLab with a private CA and a public proxy or SaaS host both verify.
//!
//! The token travels only in the `PRIVATE-TOKEN` header. It is never part of a URL, and every
//! error text built here passes through `Transport::redact`.

use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use gitlab::api::Endpoint;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use url::Url;

use super::GitLabConfigError;
use crate::forge::{ForgeError, RequestCounts};

/// Default response body limit: 64 MiB.
pub const DEFAULT_BODY_LIMIT: u64 = 64 * 1024 * 1024;
/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default whole-request timeout (connect, send, receive, body).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest excerpt of a non-JSON error body quoted in an error.
const EXCERPT_CHARS: usize = 200;

/// A GitLab access token. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> Self {
        Token(token.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where proxy settings come from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProxyConfig {
    /// `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` and `NO_PROXY` (see [`select_proxy`]).
    #[default]
    FromEnv,
    /// Connect directly, whatever the environment says.
    Direct,
    /// This proxy URL (e.g. `http://proxy:3128`), no `NO_PROXY` applied.
    Url(String),
}

/// An HTTP method the adapter uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Put,
}

impl Method {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
        }
    }

    pub(crate) fn is_read(self) -> bool {
        self == Method::Get
    }
}

/// A request ready to send: method, full URL (no secrets in it), optional body.
#[derive(Debug, Clone)]
pub(crate) struct PreparedRequest {
    pub(crate) method: Method,
    pub(crate) url: Url,
    pub(crate) body: Option<(&'static str, Vec<u8>)>,
}

impl PreparedRequest {
    /// Builds the request an `Endpoint` describes, relative to the API base (which ends in
    /// `/`). Query parameters come from `parameters()`; a GET's form body (the crate's `Tree`
    /// puts its parameters there) is moved into the query string, since a GET carries no body.
    pub(crate) fn from_endpoint<E: Endpoint>(base: &Url, endpoint: &E) -> Result<Self, ForgeError> {
        let method_name = endpoint.method();
        let path = endpoint.endpoint();
        let route_hint = format!("{}{}", base.path(), path);
        let method = match method_name.as_str() {
            "GET" => Method::Get,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            other => {
                return Err(ForgeError::Decode {
                    method: other.to_owned(),
                    route: route_hint,
                    message: "method not supported by the adapter".into(),
                });
            }
        };
        let build_error = |message: String| ForgeError::Decode {
            method: method.as_str().to_owned(),
            route: route_hint.clone(),
            message,
        };
        let mut url = Url::parse(&format!("{}{}", base.as_str(), path))
            .map_err(|e| build_error(format!("cannot build the request URL: {e}")))?;
        endpoint.parameters().add_to_url(&mut url);
        let mut body = endpoint
            .body()
            .map_err(|e| build_error(format!("cannot encode the request body: {e}")))?;
        if method == Method::Get
            && let Some((mime, data)) = body.take()
        {
            if mime != "application/x-www-form-urlencoded" {
                return Err(build_error(format!("a GET cannot carry a {mime} body")));
            }
            let pairs: Vec<(String, String)> =
                url::form_urlencoded::parse(&data).into_owned().collect();
            if !pairs.is_empty() {
                url.query_pairs_mut().extend_pairs(pairs);
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        Ok(PreparedRequest { method, url, body })
    }

    /// The route named in errors: the URL path, no host, no query.
    pub(crate) fn route(&self) -> String {
        self.url.path().to_owned()
    }

    /// Sets (or replaces) one query parameter.
    pub(crate) fn set_query_param(&mut self, key: &str, value: &str) {
        let kept: Vec<(String, String)> = self
            .url
            .query_pairs()
            .filter(|(k, _)| k != key)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        self.url
            .query_pairs_mut()
            .clear()
            .extend_pairs(kept)
            .append_pair(key, value);
    }
}

/// A response as received: status, headers (names lowercase), whole body.
#[derive(Debug, Clone)]
pub(crate) struct RawResponse {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl RawResponse {
    /// The first value of a header (case-insensitive name).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a header, in order.
    pub(crate) fn header_all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why one attempt got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Nothing reached the server (name resolution, connect, proxy connect failed).
    NotSent(String),
    /// The request may have reached the server but no complete answer came back (reset,
    /// timeout, truncated or undecodable body).
    NoAnswer(String),
    /// The response body exceeded the limit.
    BodyTooLarge { status: u16, limit: u64 },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::NotSent(m) => write!(f, "not sent: {m}"),
            Failure::NoAnswer(m) => write!(f, "no answer: {m}"),
            Failure::BodyTooLarge { status, limit } => {
                write!(
                    f,
                    "HTTP {status}: response body exceeds the {limit}-byte limit"
                )
            }
        }
    }
}

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
        let proxy = match settings.proxy {
            ProxyConfig::Direct => None,
            ProxyConfig::Url(url) => Some(url.clone()),
            ProxyConfig::FromEnv => select_proxy(&base, |name| std::env::var(name).ok()),
        };
        let proxy =
            match proxy {
                Some(p) => Some(ureq::Proxy::new(&p).map_err(|e| {
                    GitLabConfigError::Proxy(format!("{}: {e}", redact_userinfo(&p)))
                })?),
                None => None,
            };
        let tls = match settings.ca_file {
            None => TlsConfig::builder().build(),
            Some(path) => TlsConfig::builder()
                .root_certs(roots_with_ca_file(path)?)
                .build(),
        };
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
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        })
    }

    /// The API base URL, ending in `/`.
    pub(crate) fn base(&self) -> &Url {
        &self.base
    }

    /// Requests attempted so far.
    pub(crate) fn counts(&self) -> RequestCounts {
        RequestCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }

    /// Removes the token from a text meant for an error or a log line.
    pub(crate) fn redact(&self, text: String) -> String {
        let secret = self.token.expose();
        if !secret.is_empty() && text.contains(secret) {
            text.replace(secret, "<redacted>")
        } else {
            text
        }
    }

    /// One attempt: sends the request once and reads the whole (limited) body. Counts the
    /// attempt. Never follows a redirect.
    pub(crate) fn execute(&self, request: &PreparedRequest) -> Result<RawResponse, Failure> {
        let counter = if request.method.is_read() {
            &self.reads
        } else {
            &self.writes
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let url = request.url.as_str();
        let token = self.token.expose();
        let result = match (request.method, &request.body) {
            (Method::Get, _) => self.agent.get(url).header("PRIVATE-TOKEN", token).call(),
            (Method::Post, None) => self
                .agent
                .post(url)
                .header("PRIVATE-TOKEN", token)
                .send_empty(),
            (Method::Put, None) => self
                .agent
                .put(url)
                .header("PRIVATE-TOKEN", token)
                .send_empty(),
            (Method::Post, Some((mime, data))) => self
                .agent
                .post(url)
                .header("PRIVATE-TOKEN", token)
                .header("Content-Type", *mime)
                .send(&data[..]),
            (Method::Put, Some((mime, data))) => self
                .agent
                .put(url)
                .header("PRIVATE-TOKEN", token)
                .header("Content-Type", *mime)
                .send(&data[..]),
        };
        let mut response = result.map_err(|e| self.classify_error(&e))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        // Sized from Content-Length (within the limit) so a 10 MB file is one allocation of
        // its size, not a doubling series ending at 16 MiB with copies on the way.
        let expected = response.body().content_length().unwrap_or(0);
        let mut body = Vec::with_capacity(expected.min(self.body_limit) as usize);
        let read = std::io::Read::read_to_end(
            &mut response
                .body_mut()
                .with_config()
                .limit(self.body_limit)
                .reader(),
            &mut body,
        )
        .map_err(ureq::Error::from);
        match read {
            Ok(_) => {}
            Err(ureq::Error::BodyExceedsLimit(_)) => {
                return Err(Failure::BodyTooLarge {
                    status,
                    limit: self.body_limit,
                });
            }
            Err(e) => {
                return Err(Failure::NoAnswer(
                    self.redact(format!("reading the response body: {e}")),
                ));
            }
        }
        Ok(RawResponse {
            status,
            headers,
            body,
        })
    }

    fn classify_error(&self, error: &ureq::Error) -> Failure {
        use ureq::Timeout;
        let message = self.redact(error.to_string());
        match error {
            ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::InvalidProxyUrl
            | ureq::Error::ConnectProxyFailed(_)
            | ureq::Error::Timeout(Timeout::Resolve | Timeout::Connect) => {
                Failure::NotSent(message)
            }
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                Failure::NotSent(message)
            }
            ureq::Error::BodyExceedsLimit(_) => Failure::BodyTooLarge {
                status: 0,
                limit: self.body_limit,
            },
            _ => Failure::NoAnswer(message),
        }
    }
}

/// Parses and normalises the API base: http(s), no credentials, no query or fragment, path
/// ending in `/`.
pub(crate) fn parse_api_base(api_url: &str) -> Result<Url, GitLabConfigError> {
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

/// The public roots plus every certificate of a PEM file.
fn roots_with_ca_file(path: &Path) -> Result<RootCerts, GitLabConfigError> {
    let ca_error = |m: String| GitLabConfigError::CaFile(format!("{}: {m}", path.display()));
    let pem = std::fs::read(path).map_err(|e| ca_error(e.to_string()))?;
    let mut custom = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item.map_err(|e| ca_error(format!("invalid PEM: {e}")))? {
            PemItem::Certificate(cert) => custom.push(cert),
            _ => continue,
        }
    }
    if custom.is_empty() {
        return Err(ca_error("no PEM certificate found".into()));
    }
    let public = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .map(|der| Certificate::from_der(der.as_ref()));
    Ok(RootCerts::from(public.chain(custom)))
}

/// Replaces the user-info of a URL-like text (proxy credentials) before it is quoted.
fn redact_userinfo(text: &str) -> String {
    match Url::parse(text) {
        Ok(mut url) if !url.username().is_empty() || url.password().is_some() => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.to_string()
        }
        Ok(_) => text.to_owned(),
        Err(_) if text.contains('@') => "<proxy URL with credentials>".into(),
        Err(_) => text.to_owned(),
    }
}

/// Chooses the proxy for requests to `target` from environment-style variables.
///
/// * https targets: `HTTPS_PROXY`/`https_proxy`, else `ALL_PROXY`/`all_proxy`; http targets:
///   `http_proxy`/`HTTP_PROXY`, else `ALL_PROXY`/`all_proxy`. Empty values count as unset.
/// * `NO_PROXY`/`no_proxy`: comma- (or space-) separated entries, case-insensitive, trimmed.
///   `*` bypasses every host; `example.com`, `.example.com` and `*.example.com` all match
///   `example.com` and its subdomains (on a label boundary, so not `badexample.com`); an
///   entry may end in `:port` to match that port only; IP literals match exactly and CIDR
///   ranges (`10.0.0.0/8`, `fd00::/8`) match addresses inside them. Hostnames are not
///   resolved to be matched against ranges.
pub fn select_proxy(target: &Url, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    let get = |names: &[&str]| {
        names.iter().find_map(|n| {
            lookup(n)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        })
    };
    let proxy = if target.scheme() == "https" {
        get(&["HTTPS_PROXY", "https_proxy"]).or_else(|| get(&["ALL_PROXY", "all_proxy"]))
    } else {
        get(&["http_proxy", "HTTP_PROXY"]).or_else(|| get(&["ALL_PROXY", "all_proxy"]))
    }?;
    let host = target.host_str()?;
    let port = target.port_or_known_default().unwrap_or(0);
    match get(&["NO_PROXY", "no_proxy"]) {
        Some(no_proxy) if no_proxy_matches(&no_proxy, host, port) => None,
        _ => Some(proxy),
    }
}

/// True when `host:port` matches a `NO_PROXY` list (see [`select_proxy`]).
pub fn no_proxy_matches(no_proxy: &str, host: &str, port: u16) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let host_ip: Option<IpAddr> = host.parse().ok();
    no_proxy
        .split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            let entry = entry.to_ascii_lowercase();
            // IP, CIDR range, bracketed IPv6 with port.
            if let Some(ip) = host_ip {
                if let Some((net, bits)) = entry.split_once('/')
                    && let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u8>())
                {
                    return ip_in_range(ip, net, bits);
                }
                let (addr, entry_port) = split_port(&entry);
                if let Ok(addr) = addr
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                {
                    return addr == ip && entry_port.is_none_or(|p| p == port);
                }
                if let Ok(addr) = entry.parse::<IpAddr>() {
                    return addr == ip;
                }
                return false;
            }
            let (name, entry_port) = split_port(&entry);
            if entry_port.is_some_and(|p| p != port) {
                return false;
            }
            let name = name
                .trim_start_matches('*')
                .trim_start_matches('.')
                .trim_end_matches('.');
            !name.is_empty()
                && (host == name
                    || host
                        .strip_suffix(name)
                        .is_some_and(|rest| rest.ends_with('.')))
        })
}

fn split_port(entry: &str) -> (&str, Option<u16>) {
    // `[v6]:port`, `host:port`; a bare IPv6 address (several colons) has no port.
    if let Some(rest) = entry.strip_prefix('[') {
        if let Some((addr, tail)) = rest.split_once(']') {
            return (addr, tail.strip_prefix(':').and_then(|p| p.parse().ok()));
        }
        return (entry, None);
    }
    match entry.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => match port.parse() {
            Ok(p) => (name, Some(p)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

fn ip_in_range(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// GitLab's own explanation of an error response: the JSON `message` (a string, or compact
/// JSON when it is an object such as a validation map) or `error` (with its
/// `error_description`), else a short whitespace-collapsed excerpt of the body.
pub(crate) fn error_message(body: &[u8]) -> String {
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(body) {
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Some(message) = map.get("message") {
            return excerpt(&text(message));
        }
        if let Some(error) = map.get("error") {
            return match map.get("error_description") {
                Some(d) => excerpt(&format!("{}: {}", text(error), text(d))),
                None => excerpt(&text(error)),
            };
        }
    }
    let text = String::from_utf8_lossy(body);
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.is_empty() {
        "(empty body)".into()
    } else {
        excerpt(&collapsed)
    }
}

fn excerpt(text: &str) -> String {
    if text.chars().count() <= EXCERPT_CHARS {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(EXCERPT_CHARS).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn token_debug_and_display_are_redacted() {
        let t = Token::new("glpat-SECRET");
        assert!(!format!("{t:?}").contains("SECRET"));
        assert!(!format!("{t}").contains("SECRET"));
    }

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
    fn proxy_is_chosen_by_scheme_and_no_proxy() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let https = url("https://gitlab.corp.example/api/v4/");
        let http = url("http://gitlab.corp.example/api/v4/");
        let vars: &[(&str, &str)] = &[
            ("HTTPS_PROXY", "http://secure:3128"),
            ("HTTP_PROXY", "http://plain:3128"),
        ];
        assert_eq!(
            select_proxy(&https, env(vars)).as_deref(),
            Some("http://secure:3128")
        );
        assert_eq!(
            select_proxy(&http, env(vars)).as_deref(),
            Some("http://plain:3128")
        );
        let vars: &[(&str, &str)] = &[("HTTPS_PROXY", ""), ("ALL_PROXY", "http://all:1")];
        assert_eq!(
            select_proxy(&https, env(vars)).as_deref(),
            Some("http://all:1")
        );
        let vars: &[(&str, &str)] = &[
            ("HTTPS_PROXY", "http://p:1"),
            ("NO_PROXY", "localhost, .example"),
        ];
        assert_eq!(select_proxy(&https, env(vars)), None);
        let vars: &[(&str, &str)] = &[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "other.example")];
        assert!(select_proxy(&https, env(vars)).is_some());
        assert_eq!(select_proxy(&https, env(&[])), None);
    }

    #[test]
    fn no_proxy_matching_rules() {
        assert!(no_proxy_matches("*", "anything", 443));
        assert!(no_proxy_matches("example.com", "example.com", 443));
        assert!(no_proxy_matches("example.com", "gitlab.Example.com", 443));
        assert!(no_proxy_matches(
            " .example.com ",
            "gitlab.example.com",
            443
        ));
        assert!(no_proxy_matches("*.example.com", "example.com", 443));
        assert!(!no_proxy_matches("example.com", "badexample.com", 443));
        assert!(no_proxy_matches("example.com:443", "example.com", 443));
        assert!(!no_proxy_matches("example.com:8443", "example.com", 443));
        assert!(no_proxy_matches("10.0.0.0/8", "10.1.2.3", 443));
        assert!(!no_proxy_matches("10.0.0.0/8", "11.1.2.3", 443));
        assert!(no_proxy_matches("127.0.0.1", "127.0.0.1", 80));
        assert!(no_proxy_matches("::1", "[::1]", 80));
        assert!(no_proxy_matches("[::1]:80", "[::1]", 80));
        assert!(no_proxy_matches("fd00::/8", "[fd12::1]", 80));
        assert!(!no_proxy_matches("", "example.com", 443));
        assert!(!no_proxy_matches("10.0.0.0/8", "ten.example", 443));
    }

    #[test]
    fn error_message_prefers_gitlab_fields() {
        assert_eq!(
            error_message(br#"{"message":"404 Not found"}"#),
            "404 Not found"
        );
        assert_eq!(
            error_message(br#"{"message":{"body":["is too long"]}}"#),
            r#"{"body":["is too long"]}"#
        );
        assert_eq!(
            error_message(br#"{"error":"invalid_token","error_description":"Token was revoked."}"#),
            "invalid_token: Token was revoked."
        );
        assert_eq!(
            error_message(b"<html>\n<body>502   Bad Gateway</body></html>"),
            "<html> <body>502 Bad Gateway</body></html>"
        );
        assert_eq!(error_message(b""), "(empty body)");
        assert!(error_message("x".repeat(1000).as_bytes()).chars().count() <= EXCERPT_CHARS + 1);
    }

    #[test]
    fn redirect_free_get_puts_form_body_in_the_query() {
        let base = url("https://gl.example/api/v4/");
        let tree = gitlab::api::projects::repository::Tree::builder()
            .project("group/sub/proj")
            .path("dir/a b")
            .ref_("abc")
            .recursive(true)
            .build()
            .unwrap();
        let req = PreparedRequest::from_endpoint(&base, &tree).unwrap();
        assert_eq!(req.method, Method::Get);
        assert!(req.body.is_none());
        assert_eq!(
            req.url.path(),
            "/api/v4/projects/group%2Fsub%2Fproj/repository/tree"
        );
        let q: Vec<(String, String)> = req.url.query_pairs().into_owned().collect();
        assert!(q.contains(&("path".into(), "dir/a b".into())));
        assert!(q.contains(&("recursive".into(), "true".into())));
    }
}
