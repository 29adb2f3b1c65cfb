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

use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use gitlab::api::Endpoint;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use url::{Host, Url};

use super::GitLabConfigError;
use assent_forge::{
    CertificateFailure, ContentBudget, ForgeError, RequestCounts, TransportFailure,
};

/// Default response body limit: 64 MiB.
pub const DEFAULT_BODY_LIMIT: u64 = 64 * 1024 * 1024;
/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default whole-request timeout (connect, send, receive, body).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest excerpt of a non-JSON error body quoted in an error.
const EXCERPT_CHARS: usize = 200;

/// The proxy URL schemes the transport can use, as named in a refusal.
pub const SUPPORTED_PROXY_SCHEMES: &str =
    "http://, https:// (CONNECT), socks4://, socks4a://, socks5:// (or socks://), socks5h://";

/// The variable that lets a plain-`http://` API base to a remote host go without a warning.
pub const ALLOW_HTTP_VAR: &str = "ASSENT_ALLOW_HTTP";

/// Set once the cleartext warning has been printed: one line per process, however many
/// transports the command builds.
static CLEARTEXT_WARNED: AtomicBool = AtomicBool::new(false);

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

    /// `text` with this token removed in every form [`redact_secret`] knows: for texts
    /// built outside the transport that might quote a forge's answer.
    pub fn redact(&self, text: &str) -> String {
        redact_secret(text, &self.0)
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
    /// Nothing reached the server (name resolution, connect, proxy connect or certificate
    /// verification failed).
    NotSent(String, TransportFailure),
    /// The request may have reached the server but no complete answer came back (reset,
    /// timeout, truncated or undecodable body).
    NoAnswer(String, TransportFailure),
    /// The response body exceeded the limit.
    BodyTooLarge { status: u16, limit: u64 },
    /// A successful answer's body did not fit in the run's content budget: it was not read
    /// (or not past the point it stopped fitting), and nothing of it stays taken.
    OverBudget { limit: u64 },
}

impl Failure {
    /// What the transport could tell of the failure.
    pub(crate) fn cause(&self) -> TransportFailure {
        match self {
            Failure::NotSent(_, cause) | Failure::NoAnswer(_, cause) => *cause,
            Failure::BodyTooLarge { .. } | Failure::OverBudget { .. } => TransportFailure::Other,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::NotSent(m, _) => write!(f, "not sent: {m}"),
            Failure::NoAnswer(m, _) => write!(f, "no answer: {m}"),
            Failure::BodyTooLarge { status, limit } => {
                write!(
                    f,
                    "HTTP {status}: response body exceeds the {limit}-byte limit"
                )
            }
            Failure::OverBudget { limit } => {
                write!(
                    f,
                    "the response body does not fit in the run's {limit}-byte content budget"
                )
            }
        }
    }
}

/// Reads a 2xx body as it arrives ([`Transport::execute_streamed`]).
pub(crate) type StreamSink<'s, R> =
    &'s mut dyn FnMut(&mut dyn std::io::Read) -> Result<R, StreamFailure>;

/// Why a streamed body could not be read to its end.
#[derive(Debug)]
pub(crate) enum StreamFailure {
    /// The connection failed while the body arrived (reset, timeout, truncated).
    Io(std::io::Error),
    /// What the sink must keep of the body exceeds its bound.
    TooLarge,
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
        let proxy = match settings.proxy {
            ProxyConfig::Direct => None,
            ProxyConfig::Url(url) => Some(("the configured proxy", url.clone())),
            ProxyConfig::FromEnv => select_proxy_with_source(&base, env),
        };
        let proxy = match proxy {
            Some((source, value)) => Some(build_proxy(source, &value)?),
            None => None,
        };
        let proxied = proxy.is_some();
        if let Some(warning) = cleartext_warning(&base, allow_http(env))
            && !CLEARTEXT_WARNED.swap(true, Ordering::Relaxed)
        {
            // Printed where it is decided, once per process, for every command alike (run,
            // sweep, doctor, serve); an exception to the workspace's no-printing lint.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("warning: {warning}");
            }
        }
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
            proxied,
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

    /// Removes the token from a text meant for an error or a log line, in every form
    /// [`redact_secret`] knows.
    pub(crate) fn redact(&self, text: String) -> String {
        redact_secret(&text, self.token.expose())
    }

    /// One attempt: sends the request once and reads the whole (limited) body. Counts the
    /// attempt. Never follows a redirect.
    pub(crate) fn execute(&self, request: &PreparedRequest) -> Result<RawResponse, Failure> {
        self.execute_with::<()>(request, None, None)
            .map(|(response, _)| response)
    }

    /// [`Transport::execute`] taking a successful answer's body from `budget`: nothing is
    /// sent once it is spent, a body announced larger than what is left is refused unread,
    /// and a body of unannounced length is taken as it arrives and stops where it no longer
    /// fits. Only the bytes of an answer returned stay taken.
    pub(crate) fn execute_within(
        &self,
        request: &PreparedRequest,
        budget: Option<&ContentBudget>,
    ) -> Result<RawResponse, Failure> {
        self.execute_with::<()>(request, budget, None)
            .map(|(response, _)| response)
    }

    /// [`Transport::execute`], except that a 2xx body is not buffered: `sink` reads it as it
    /// arrives, without the body limit (the sink keeps its own bounds), and the response comes
    /// back with an empty body beside what the sink made of it. Any other status is read as
    /// [`Transport::execute`] reads it, so its error message is GitLab's.
    pub(crate) fn execute_streamed<R>(
        &self,
        request: &PreparedRequest,
        sink: StreamSink<'_, R>,
    ) -> Result<(RawResponse, Option<R>), Failure> {
        self.execute_with(request, None, Some(sink))
    }

    fn execute_with<R>(
        &self,
        request: &PreparedRequest,
        budget: Option<&ContentBudget>,
        sink: Option<StreamSink<'_, R>>,
    ) -> Result<(RawResponse, Option<R>), Failure> {
        if let Some(budget) = budget
            && budget.is_spent()
        {
            return Err(Failure::OverBudget {
                limit: budget.limit(),
            });
        }
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
        if let Some(sink) = sink
            && (200..300).contains(&status)
        {
            let mut reader = response.body_mut().as_reader();
            return match sink(&mut reader) {
                Ok(value) => Ok((
                    RawResponse {
                        status,
                        headers,
                        body: Vec::new(),
                    },
                    Some(value),
                )),
                Err(StreamFailure::TooLarge) => Err(Failure::BodyTooLarge {
                    status,
                    limit: self.body_limit,
                }),
                Err(StreamFailure::Io(e)) => Err(Failure::NoAnswer(
                    self.redact(format!("reading the response body: {e}")),
                    TransportFailure::Other,
                )),
            };
        }
        // Sized from Content-Length (within the limit) so a 10 MB file is one allocation of
        // its size, not a doubling series ending at 16 MiB with copies on the way.
        let expected = response.body().content_length().unwrap_or(0);
        // An uncompressed body announced larger than the limit is refused unread (the
        // connection is dropped with the response): a listing asks again with a smaller
        // page instead of downloading up to the limit first. A compressed body is judged
        // after decompression, by the reader below.
        let uncompressed = response
            .headers()
            .get("content-encoding")
            .is_none_or(|v| v.as_bytes().eq_ignore_ascii_case(b"identity"));
        if uncompressed && expected > self.body_limit {
            return Err(Failure::BodyTooLarge {
                status,
                limit: self.body_limit,
            });
        }
        // Only a successful answer is content; an error's short message is not taken.
        let budget = budget.filter(|_| (200..300).contains(&status));
        let mut taken = 0;
        if let Some(budget) = budget
            && uncompressed
            && expected > 0
        {
            if !budget.try_take(expected) {
                return Err(Failure::OverBudget {
                    limit: budget.limit(),
                });
            }
            taken = expected;
        }
        let mut body = Vec::with_capacity(expected.min(self.body_limit) as usize);
        let mut reader = response
            .body_mut()
            .with_config()
            .limit(self.body_limit)
            .reader();
        let read = match budget {
            None => std::io::Read::read_to_end(&mut reader, &mut body).map(drop),
            Some(budget) => read_within(&mut reader, &mut body, budget, &mut taken),
        }
        .map_err(ureq::Error::from);
        if read.is_err()
            && let Some(budget) = budget
        {
            budget.give_back(taken);
        }
        match read {
            Ok(()) => {}
            Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                return Err(Failure::OverBudget {
                    limit: budget.map_or(0, ContentBudget::limit),
                });
            }
            Err(ureq::Error::BodyExceedsLimit(_)) => {
                return Err(Failure::BodyTooLarge {
                    status,
                    limit: self.body_limit,
                });
            }
            Err(e) => {
                return Err(Failure::NoAnswer(
                    self.redact(format!("reading the response body: {e}")),
                    TransportFailure::Other,
                ));
            }
        }
        Ok((
            RawResponse {
                status,
                headers,
                body,
            },
            None,
        ))
    }

    /// The response body limit in bytes.
    pub(crate) fn body_limit(&self) -> u64 {
        self.body_limit
    }

    fn classify_error(&self, error: &ureq::Error) -> Failure {
        use ureq::Timeout;
        let message = self.redact(error.to_string());
        let connecting = match error {
            ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::InvalidProxyUrl
            | ureq::Error::ConnectProxyFailed(_)
            | ureq::Error::Timeout(Timeout::Resolve | Timeout::Connect) => true,
            ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::ConnectionRefused,
            _ => false,
        };
        if connecting {
            // Through a proxy, every connect-phase failure is the proxy's to report: the
            // runner only ever connects to the proxy itself.
            let cause = if self.proxied {
                TransportFailure::Proxy
            } else if matches!(
                error,
                ureq::Error::HostNotFound | ureq::Error::Timeout(Timeout::Resolve)
            ) {
                TransportFailure::UnknownHost
            } else {
                TransportFailure::ConnectFailed
            };
            return Failure::NotSent(message, cause);
        }
        if let ureq::Error::BodyExceedsLimit(_) = error {
            return Failure::BodyTooLarge {
                status: 0,
                limit: self.body_limit,
            };
        }
        match rustls_error(error) {
            // A certificate is verified during the handshake, before any byte of the request.
            Some(rustls::Error::InvalidCertificate(problem)) => Failure::NotSent(
                message,
                TransportFailure::Certificate(certificate_failure(problem)),
            ),
            Some(_) => Failure::NoAnswer(message, TransportFailure::Tls),
            None if matches!(error, ureq::Error::Tls(_)) => {
                Failure::NoAnswer(message, TransportFailure::Tls)
            }
            None if matches!(error, ureq::Error::Timeout(_)) => {
                Failure::NoAnswer(message, TransportFailure::Timeout)
            }
            None => Failure::NoAnswer(message, TransportFailure::Other),
        }
    }
}

/// Reads `reader` to its end into `body`, taking from `budget` every byte beyond the
/// `taken` already taken for it (the announced length); a byte that does not fit stops the
/// read with [`std::io::ErrorKind::FileTooLarge`].
fn read_within(
    reader: &mut impl std::io::Read,
    body: &mut Vec<u8>,
    budget: &ContentBudget,
    taken: &mut u64,
) -> std::io::Result<()> {
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let needed = (body.len() + n) as u64;
        if needed > *taken {
            if !budget.try_take(needed - *taken) {
                return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
            }
            *taken = needed;
        }
        body.extend_from_slice(&chunk[..n]);
    }
}

/// The TLS library's own error inside `error`: ureq reports a failed handshake as an I/O
/// error that wraps it.
fn rustls_error(error: &ureq::Error) -> Option<&rustls::Error> {
    match error {
        ureq::Error::Rustls(e) => Some(e),
        ureq::Error::Io(io) => io.get_ref()?.downcast_ref::<rustls::Error>(),
        _ => None,
    }
}

/// Why the server's certificate did not verify, from the TLS library's typed error (its
/// certificate verifier's own error for a CA certificate used as the server's).
fn certificate_failure(problem: &rustls::CertificateError) -> CertificateFailure {
    use rustls::CertificateError as E;
    match problem {
        E::UnknownIssuer => CertificateFailure::UnknownIssuer,
        E::NotValidForName | E::NotValidForNameContext { .. } => CertificateFailure::WrongName,
        E::Expired | E::ExpiredContext { .. } | E::NotValidYet | E::NotValidYetContext { .. } => {
            CertificateFailure::NotCurrentlyValid
        }
        E::Other(other)
            if matches!(
                other.0.downcast_ref::<webpki::Error>(),
                Some(webpki::Error::CaUsedAsEndEntity)
            ) =>
        {
            CertificateFailure::CaUsedAsEndEntity
        }
        _ => CertificateFailure::Other,
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
/// The TLS settings of every agent: the public roots, plus `ca_file`'s certificates.
pub(crate) fn tls_config(ca_file: Option<&Path>) -> Result<TlsConfig, GitLabConfigError> {
    Ok(match ca_file {
        None => TlsConfig::builder().build(),
        Some(path) => TlsConfig::builder()
            .root_certs(roots_with_ca_file(path)?)
            .build(),
    })
}

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

/// Replaces the user-info of a URL-like text (proxy credentials) before it is quoted. A text
/// without a scheme is read as `http://…` (as a proxy value is); a text with an `@` whose
/// credentials cannot be told apart is replaced whole.
fn redact_userinfo(text: &str) -> String {
    if !text.contains('@') {
        return text.to_owned();
    }
    let has_scheme = text.contains("://");
    let prefixed = if has_scheme {
        text.to_owned()
    } else {
        format!("http://{text}")
    };
    match Url::parse(&prefixed) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            let shown = url.to_string();
            let shown = if has_scheme {
                shown
            } else {
                shown.trim_start_matches("http://").to_owned()
            };
            if shown.contains('@') {
                "<proxy URL with credentials>".into()
            } else {
                shown
            }
        }
        Err(_) => "<proxy URL with credentials>".into(),
    }
}

/// Builds the ureq proxy for `value`, which came from `source` (a variable name). Every
/// refusal names the source and the supported schemes and never shows credentials.
pub(crate) fn build_proxy(source: &str, value: &str) -> Result<ureq::Proxy, GitLabConfigError> {
    let refuse = |why: &str| {
        GitLabConfigError::Proxy(format!(
            "{source}={:?}: {why}; supported proxy schemes: {SUPPORTED_PROXY_SCHEMES}",
            redact_userinfo(value)
        ))
    };
    // ureq reads a value without a scheme as `http://`, as curl does; the URL parser here
    // checks the same reading has a host, so an empty or port-only authority is refused now
    // rather than at the first request.
    let with_scheme = if value.contains("://") {
        value.to_owned()
    } else {
        format!("http://{value}")
    };
    let parsed = Url::parse(&with_scheme).map_err(|_| refuse("not a proxy URL"))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(refuse("the proxy URL has no host"));
    }
    if parsed.path() != "/" && !parsed.path().is_empty()
        || parsed.query().is_some()
        || parsed.fragment().is_some()
    {
        return Err(refuse(
            "a proxy URL is scheme://[user:password@]host[:port] only",
        ));
    }
    let proxy = ureq::Proxy::new(value).map_err(|_| refuse("not a supported proxy URL"))?;
    match proxy.protocol() {
        ureq::ProxyProtocol::Socks4 | ureq::ProxyProtocol::Socks4A
            if proxy.username().is_some() || proxy.password().is_some() =>
        {
            Err(refuse(
                "SOCKS4 cannot carry a user name or password (use socks5:// for an authenticating proxy)",
            ))
        }
        _ => Ok(proxy),
    }
}

/// True when `ASSENT_ALLOW_HTTP` is on (`1`, `true`, `yes`, …: the one on/off parser,
/// [`assent_core::switch`]): the operator accepts a plain-`http://` API base to a remote host.
/// Anything else keeps the warning, so a misspelt value fails towards saying more.
pub fn allow_http(lookup: impl Fn(&str) -> Option<String>) -> bool {
    lookup(ALLOW_HTTP_VAR).is_some_and(|v| assent_core::switch::parse_switch(&v) == Some(true))
}

/// True for a host that never leaves the machine: `localhost`, `127.0.0.0/8`, `::1` (also
/// as an IPv4-mapped address).
pub fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(name)) => name.trim_end_matches('.').eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        None => false,
    }
}

/// The warning for an API base that sends the token unencrypted: plain `http://` to a host
/// that is not loopback, unless `allow_http`. `None` when there is nothing to say.
pub fn cleartext_warning(base: &Url, allow_http: bool) -> Option<String> {
    if base.scheme() != "http" || allow_http || is_loopback_host(base) {
        return None;
    }
    Some(format!(
        "the GitLab API URL {} is plain http:// to a host that is not loopback, so the token \
         travels unencrypted; use https:// (or set {ALLOW_HTTP_VAR}=1 to accept this)",
        base.origin().ascii_serialization()
    ))
}

/// Replaces every occurrence of `secret` in `text` with `<redacted>`: the exact string, any
/// ASCII-case variant of it (a host name is lowercased by URL parsing, a log may upper-case)
/// and any mix of literal and percent-encoded bytes, once or twice encoded, with upper- or
/// lowercase hex (`glpat%2Dabc`, `%67lpat-abc`, `glpat%252Dabc`), as a URL, a query or a form
/// body carries it. An empty secret redacts nothing.
pub fn redact_secret(text: &str, secret: &str) -> String {
    let secret = secret.as_bytes();
    let bytes = text.as_bytes();
    if secret.is_empty() {
        return text.to_owned();
    }
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match secret_match_len(bytes, i, secret) {
            Some(len) => {
                out.extend_from_slice(b"<redacted>");
                i += len;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    // Matches start and end on ASCII bytes or on whole characters of a UTF-8 secret, so the
    // result is UTF-8; the lossy conversion is only a guard.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The length of the text at `start` that spells `secret` (see [`redact_secret`]).
fn secret_match_len(text: &[u8], start: usize, secret: &[u8]) -> Option<usize> {
    let hex = |at: usize| -> Option<u8> {
        let pair = text.get(at..at + 2)?;
        let digits = std::str::from_utf8(pair).ok()?;
        u8::from_str_radix(digits, 16).ok()
    };
    let mut at = start;
    for &want in secret {
        if text.get(at) == Some(&b'%') {
            match hex(at + 1) {
                Some(decoded) if decoded.eq_ignore_ascii_case(&want) => {
                    at += 3;
                    continue;
                }
                // `%25` is an encoded `%`: a twice-encoded byte.
                Some(b'%') => {
                    if let Some(decoded) = hex(at + 3)
                        && decoded.eq_ignore_ascii_case(&want)
                    {
                        at += 5;
                        continue;
                    }
                }
                _ => {}
            }
        }
        match text.get(at) {
            Some(b) if b.eq_ignore_ascii_case(&want) => at += 1,
            _ => return None,
        }
    }
    Some(at - start)
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
    select_proxy_with_source(target, lookup).map(|(_, proxy)| proxy)
}

/// [`select_proxy`], with the name of the variable the proxy came from (for error messages).
pub fn select_proxy_with_source(
    target: &Url,
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<(&'static str, String)> {
    let get = |names: &[&'static str]| {
        names.iter().find_map(|&n| {
            lookup(n)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .map(|v| (n, v))
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
        Some((_, no_proxy)) if no_proxy_matches(&no_proxy, host, port) => None,
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

    #[test]
    fn a_body_of_unannounced_length_is_taken_as_it_arrives_and_stops_where_it_does_not_fit() {
        let text = vec![b'x'; 200 * 1024];
        // Fits: every byte taken, none beyond.
        let budget = ContentBudget::new(300 * 1024);
        let (mut body, mut taken) = (Vec::new(), 0);
        read_within(&mut &text[..], &mut body, &budget, &mut taken).unwrap();
        assert_eq!((body.len(), taken), (text.len(), text.len() as u64));
        assert!(budget.try_take(100 * 1024), "exactly the rest is left");
        assert!(!budget.try_take(1));

        // Does not fit: the read stops at the first chunk past the budget, having held no
        // more than the budget, and the budget is spent.
        let budget = ContentBudget::new(100 * 1024);
        let (mut body, mut taken) = (Vec::new(), 0);
        let err = read_within(&mut &text[..], &mut body, &budget, &mut taken).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(body.len() as u64 <= budget.limit(), "{}", body.len());
        assert_eq!(taken, body.len() as u64);
        assert!(budget.is_spent());

        // Announced and taken already: reading it takes nothing more.
        let budget = ContentBudget::new(text.len() as u64);
        assert!(budget.try_take(text.len() as u64));
        let (mut body, mut taken) = (Vec::new(), text.len() as u64);
        read_within(&mut &text[..], &mut body, &budget, &mut taken).unwrap();
        assert_eq!(body.len(), text.len());
        assert!(!budget.is_spent());
    }

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn the_token_is_redacted_exact_case_folded_and_percent_encoded() {
        let secret = "glpat-AbC_123";
        for leaked in [
            "glpat-AbC_123",
            "GLPAT-ABC_123",
            "glpat-abc_123",
            "glpat%2DAbC_123",
            "glpat%2dAbC%5f123",
            "%67%6c%70%61%74%2d%41%62%43%5f%31%32%33",
            "%67%6C%70%61%74%2D%41%62%43%5F%31%32%33",
            "glpat%252DAbC%255F123",
            "GlPaT%2dabc_123",
        ] {
            let text = format!("GET /x?private_token={leaked}&y=1 failed");
            assert_eq!(
                redact_secret(&text, secret),
                "GET /x?private_token=<redacted>&y=1 failed",
                "{leaked}"
            );
        }
        assert_eq!(
            redact_secret("é glpat-abc_123GLPAT-ABC_123 ü", secret),
            "é <redacted><redacted> ü"
        );
        // Near misses and stray percent signs stay as they are.
        for kept in [
            "glpat-AbC_12",
            "glpat-AbC 123",
            "%",
            "%G",
            "%2",
            "100% glpat",
            "ünïcode",
        ] {
            assert_eq!(redact_secret(kept, secret), kept);
        }
        assert_eq!(redact_secret("anything", ""), "anything");
    }

    #[test]
    fn plain_http_to_a_host_that_is_not_loopback_warns_unless_allowed() {
        for remote in [
            "http://gitlab.example.com/api/v4/",
            "http://10.0.0.5:8080/api/v4/",
            "http://[fd00::1]/api/v4/",
            "http://localhost.evil.example/api/v4/",
            "http://127.0.0.1.nip.io/api/v4/",
            "http://0.0.0.0/api/v4/",
        ] {
            let warning = cleartext_warning(&url(remote), false)
                .unwrap_or_else(|| panic!("{remote} must warn"));
            assert!(warning.contains("unencrypted"), "{warning}");
            assert!(warning.contains("ASSENT_ALLOW_HTTP=1"), "{warning}");
            assert!(
                !warning.contains("/api/v4"),
                "only the origin is named: {warning}"
            );
            assert_eq!(cleartext_warning(&url(remote), true), None, "{remote}");
        }
        for quiet in [
            "https://gitlab.example.com/api/v4/",
            "http://127.0.0.1:8080/api/v4/",
            "http://127.5.6.7/api/v4/",
            "http://localhost/api/v4/",
            "http://LOCALHOST./api/v4/",
            "http://[::1]:80/api/v4/",
            "http://[::ffff:127.0.0.1]/api/v4/",
        ] {
            assert_eq!(cleartext_warning(&url(quiet), false), None, "{quiet}");
        }
        let env = |value: &'static str| {
            move |name: &str| (name == ALLOW_HTTP_VAR).then(|| value.to_owned())
        };
        for yes in ["1", " 1 ", "true", "YES", "on"] {
            assert!(allow_http(env(yes)), "{yes:?}");
        }
        for no in ["", "0", "false", "off", "11", "maybe"] {
            assert!(!allow_http(env(no)), "{no:?}");
        }
        assert!(!allow_http(|_: &str| None));
    }

    #[test]
    fn odd_proxy_values_are_refused_or_work_and_never_panic() {
        let refused = [
            "ftp://proxy.example:21",
            "socks4://user:s3cret@127.0.0.1:1080",
            "socks4a://user@127.0.0.1:1080",
            "socks6://127.0.0.1:1080",
            "garbage with spaces",
            "http://",
            "http://:8080",
            "://proxy",
            "http://proxy:99999",
            "http://proxy.example/some/path",
            "http://proxy.example?q=1",
            "\u{0}",
            "http://[::1",
            "user:s3cret@",
            "😀://proxy",
        ];
        for value in refused {
            let err = build_proxy("HTTPS_PROXY", value).expect_err(value);
            let text = err.to_string();
            assert!(text.contains("HTTPS_PROXY="), "{text}");
            assert!(text.contains(SUPPORTED_PROXY_SCHEMES), "{text}");
            assert!(!text.contains("s3cret"), "{text}");
            assert!(!text.contains('\n'), "{text}");
        }
        // Every accepted form gets as far as a connection attempt (nothing listens on port 1):
        // an error, never a panic.
        let accepted = [
            "http://127.0.0.1:1",
            "HTTP://127.0.0.1:1",
            "https://127.0.0.1:1",
            "127.0.0.1:1",
            "http://user:s3cret@127.0.0.1:1",
            "socks://127.0.0.1:1",
            "socks4://127.0.0.1:1",
            "socks4a://127.0.0.1:1",
            "socks5://127.0.0.1:1",
            "SOCKS5://127.0.0.1:1",
            "socks5h://user:s3cret@127.0.0.1:1",
        ];
        let token = Token::new("glpat-x");
        for value in accepted {
            build_proxy("ALL_PROXY", value).expect(value);
            let proxy = ProxyConfig::Url(value.to_owned());
            let transport = Transport::new(&TransportSettings {
                api_url: "http://127.0.0.1:1/api/v4",
                token: &token,
                ca_file: None,
                connect_timeout: Duration::from_secs(2),
                request_timeout: Duration::from_secs(2),
                body_limit: DEFAULT_BODY_LIMIT,
                proxy: &proxy,
            })
            .expect(value);
            let request = PreparedRequest {
                method: Method::Get,
                url: url("http://127.0.0.1:1/api/v4/user"),
                body: None,
            };
            let failure = transport.execute(&request).expect_err(value);
            assert!(!failure.to_string().contains("s3cret"), "{failure}");
        }
    }

    #[test]
    fn the_proxy_error_names_the_variable_it_came_from() {
        let https = url("https://gitlab.example/api/v4/");
        let http = url("http://gitlab.example/api/v4/");
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            select_proxy_with_source(&https, env(&[("ALL_PROXY", "ftp://p")])),
            Some(("ALL_PROXY", "ftp://p".to_owned()))
        );
        assert_eq!(
            select_proxy_with_source(&https, env(&[("https_proxy", "x"), ("ALL_PROXY", "y")])),
            Some(("https_proxy", "x".to_owned()))
        );
        assert_eq!(
            select_proxy_with_source(&http, env(&[("HTTP_PROXY", "x")])),
            Some(("HTTP_PROXY", "x".to_owned()))
        );
    }

    #[test]
    fn certificate_failures_are_read_from_the_tls_librarys_types() {
        use rustls::CertificateError as E;
        use rustls::OtherError;
        use std::sync::Arc;
        for (error, failure) in [
            (E::UnknownIssuer, CertificateFailure::UnknownIssuer),
            (E::NotValidForName, CertificateFailure::WrongName),
            (E::Expired, CertificateFailure::NotCurrentlyValid),
            (E::NotValidYet, CertificateFailure::NotCurrentlyValid),
            (
                E::Other(OtherError(Arc::new(webpki::Error::CaUsedAsEndEntity))),
                CertificateFailure::CaUsedAsEndEntity,
            ),
            (
                E::Other(OtherError(Arc::new(webpki::Error::EndEntityUsedAsCa))),
                CertificateFailure::Other,
            ),
            (E::BadSignature, CertificateFailure::Other),
        ] {
            assert_eq!(certificate_failure(&error), failure, "{error:?}");
        }
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
