//! The retry policy: reads are retried, writes never are.
//!
//! A **read** (GET) is retried on a transport failure (connect, reset, timeout, truncated
//! body), on 429 (GitLab's plain-text `Retry later` form with `Retry-After`/`RateLimit-Reset`,
//! and its JSON application-limit form) and on every 5xx (JSON or not: a load balancer's HTML
//! 502 counts). Attempts are bounded ([`RetryPolicy::max_attempts`]); between attempts the
//! delay is the server's `Retry-After` (else `RateLimit-Reset`), capped at
//! [`RetryPolicy::retry_after_cap`], or else exponential backoff with full jitter: a uniform
//! random delay in `[0, min(max_backoff, base_delay * 2^retry)]`. A 3xx (redirects are never
//! followed), another 4xx, or an over-limit body is final at once.
//!
//! A **write** (POST/PUT) is sent exactly once. An answer of 2xx is success; 3xx and 4xx other
//! than 429 are [`ForgeError::Status`] (GitLab refused; nothing was written); 429, 5xx, or no
//! complete answer after the request may have reached the server is
//! [`ForgeError::AmbiguousWrite`]: the caller lists again and lets the listing decide. A write
//! that provably never left (name resolution, connect or proxy-connect failure) is
//! [`ForgeError::Transport`].
//!
//! An ambiguous write returns only once [`RetryPolicy::write_settle`] has passed since it
//! was sent: GitLab gives up on a request after its own request timeout (60 s by default),
//! so by then it has applied the write or never will, and the listing that decides is
//! authoritative. Without the wait, a write GitLab applies late (after a proxy dropped the
//! connection, or after the client's own timeout) would be re-created from a listing taken
//! too early, and the late copy would appear after the run had verified.
//!
//! The sleeper is injectable ([`Sleeper`]) so tests neither sleep nor guess the delays.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::transport::{Failure, PreparedRequest, RawResponse, Transport, error_message};
use assent_forge::ForgeError;

/// Waits between read attempts. Implementations must be thread-safe.
pub trait Sleeper: Send + Sync {
    /// Waits for `delay`.
    fn sleep(&self, delay: Duration);
}

/// Sleeps the calling thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadSleeper;

impl Sleeper for ThreadSleeper {
    fn sleep(&self, delay: Duration) {
        std::thread::sleep(delay);
    }
}

impl<F: Fn(Duration) + Send + Sync> Sleeper for F {
    fn sleep(&self, delay: Duration) {
        self(delay)
    }
}

/// Bounds and delays of read retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per read, the first included (default 5).
    pub max_attempts: u32,
    /// Backoff ceiling of the first retry (default 500 ms), doubled per retry.
    pub base_delay: Duration,
    /// Upper bound of the backoff ceiling (default 30 s).
    pub max_backoff: Duration,
    /// Upper bound of a server-requested delay (`Retry-After`, `RateLimit-Reset`; default 60 s).
    pub retry_after_cap: Duration,
    /// How long after a write was sent GitLab may still apply it: its request timeout
    /// (Puma's worker timeout, 60 s by default) plus a margin (default 65 s). An ambiguous
    /// write waits out the rest of this time before it is reported.
    pub write_settle: Duration,
}

/// The default [`RetryPolicy::write_settle`].
pub const DEFAULT_WRITE_SETTLE: Duration = Duration::from_secs(65);

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            retry_after_cap: Duration::from_secs(60),
            write_settle: DEFAULT_WRITE_SETTLE,
        }
    }
}

impl RetryPolicy {
    /// The full-jitter backoff before retry number `retry` (0 = first retry).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        let ceiling = self.base_delay.saturating_mul(factor).min(self.max_backoff);
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(fastrand::u64(0..=millis))
    }

    /// The delay a 429/5xx answer asks for, capped; `None` when it asks for none.
    pub(crate) fn requested_delay(&self, response: &RawResponse) -> Option<Duration> {
        requested_delay(response, SystemTime::now()).map(|d| d.min(self.retry_after_cap))
    }
}

/// `Retry-After` (delta seconds) or else `RateLimit-Reset` (a Unix time, or delta seconds
/// when small), relative to `now`.
fn requested_delay(response: &RawResponse, now: SystemTime) -> Option<Duration> {
    if let Some(secs) = response
        .header("retry-after")
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        return Some(Duration::from_secs(secs));
    }
    let reset = response
        .header("ratelimit-reset")
        .and_then(|v| v.trim().parse::<u64>().ok())?;
    // GitLab sends a Unix timestamp; tolerate a delta-seconds value as well.
    if reset < 1_000_000_000 {
        return Some(Duration::from_secs(reset));
    }
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(reset.saturating_sub(now)))
}

/// The transport with its retry policy and sleeper: the only way requests are sent.
pub(crate) struct Requester {
    pub(crate) transport: Transport,
    pub(crate) policy: RetryPolicy,
    pub(crate) sleeper: Arc<dyn Sleeper>,
}

impl fmt::Debug for Requester {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Requester")
            .field("transport", &self.transport)
            .field("policy", &self.policy)
            .finish()
    }
}

enum Verdict {
    Done(RawResponse),
    Retry {
        error: ForgeError,
        delay: Option<Duration>,
    },
    Fail(ReadFailure),
}

/// Why a read failed, keeping apart the one failure a listing can recover from by asking
/// for a smaller page.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The answer's body exceeded the transport's limit (`limit` bytes); final at once, never
    /// retried as is. `error` is what a caller that cannot shrink the request reports.
    BodyTooLarge { limit: u64, error: ForgeError },
    /// Any other failure, after the retries the policy allows.
    Failed(ForgeError),
}

impl ReadFailure {
    /// The error to report.
    pub(crate) fn into_error(self) -> ForgeError {
        match self {
            ReadFailure::BodyTooLarge { error, .. } | ReadFailure::Failed(error) => error,
        }
    }
}

impl Requester {
    /// Sends a GET, retrying per the policy; returns a 2xx response or the last error.
    pub(crate) fn read(&self, request: &PreparedRequest) -> Result<RawResponse, ForgeError> {
        self.read_bounded(request).map_err(ReadFailure::into_error)
    }

    /// [`Requester::read`], telling an over-limit body apart from other failures.
    pub(crate) fn read_bounded(
        &self,
        request: &PreparedRequest,
    ) -> Result<RawResponse, ReadFailure> {
        debug_assert!(request.method.is_read());
        let attempts = self.policy.max_attempts.max(1);
        let mut retry = 0;
        loop {
            let verdict = self.judge_read(request, self.transport.execute(request));
            match verdict {
                Verdict::Done(response) => return Ok(response),
                Verdict::Fail(failure) => return Err(failure),
                Verdict::Retry { error, delay } => {
                    if retry + 1 >= attempts {
                        return Err(ReadFailure::Failed(error));
                    }
                    let delay = delay.unwrap_or_else(|| self.policy.backoff(retry));
                    self.sleeper.sleep(delay);
                    retry += 1;
                }
            }
        }
    }

    fn judge_read(
        &self,
        request: &PreparedRequest,
        outcome: Result<RawResponse, Failure>,
    ) -> Verdict {
        let method = request.method.as_str().to_owned();
        let route = request.route();
        match outcome {
            Err(failure @ Failure::BodyTooLarge { limit, .. }) => {
                Verdict::Fail(ReadFailure::BodyTooLarge {
                    limit,
                    error: ForgeError::Decode {
                        method,
                        route,
                        message: failure.to_string(),
                    },
                })
            }
            Err(failure) => Verdict::Retry {
                error: ForgeError::Transport {
                    method,
                    route,
                    message: self.transport.redact(failure.to_string()),
                },
                delay: None,
            },
            Ok(response) => match response.status {
                200..=299 => Verdict::Done(response),
                429 | 500..=599 => Verdict::Retry {
                    delay: self.policy.requested_delay(&response),
                    error: self.status_error(request, &response),
                },
                _ => Verdict::Fail(ReadFailure::Failed(self.status_error(request, &response))),
            },
        }
    }

    /// Sends a POST/PUT exactly once; returns a 2xx response or the classified error. An
    /// ambiguous outcome is reported only after the write has settled (module docs).
    pub(crate) fn write(&self, request: &PreparedRequest) -> Result<RawResponse, ForgeError> {
        let sent = Instant::now();
        let outcome = self.write_once(request);
        if let Err(ForgeError::AmbiguousWrite { .. }) = &outcome {
            let remaining = self.policy.write_settle.saturating_sub(sent.elapsed());
            if !remaining.is_zero() {
                self.sleeper.sleep(remaining);
            }
        }
        outcome
    }

    fn write_once(&self, request: &PreparedRequest) -> Result<RawResponse, ForgeError> {
        debug_assert!(!request.method.is_read());
        let method = request.method.as_str().to_owned();
        let route = request.route();
        match self.transport.execute(request) {
            Err(Failure::NotSent(message)) => Err(ForgeError::Transport {
                method,
                route,
                message: self.transport.redact(message),
            }),
            Err(failure) => Err(ForgeError::AmbiguousWrite {
                method,
                route,
                message: self.transport.redact(failure.to_string()),
            }),
            Ok(response) => match response.status {
                200..=299 => Ok(response),
                429 | 500..=599 => Err(ForgeError::AmbiguousWrite {
                    method,
                    route,
                    message: self.transport.redact(format!(
                        "HTTP {}: {}",
                        response.status,
                        error_message(&response.body)
                    )),
                }),
                _ => Err(self.status_error(request, &response)),
            },
        }
    }

    /// The error for a non-2xx answer: 3xx names the refused redirect target, others quote
    /// GitLab's message.
    pub(crate) fn status_error(
        &self,
        request: &PreparedRequest,
        response: &RawResponse,
    ) -> ForgeError {
        let message = if (300..400).contains(&response.status) {
            match response.header("location") {
                Some(location) => format!(
                    "redirect to {} refused (redirects are never followed)",
                    location_target(location)
                ),
                None => "redirect refused (redirects are never followed)".to_owned(),
            }
        } else {
            error_message(&response.body)
        };
        ForgeError::Status {
            method: request.method.as_str().to_owned(),
            route: request.route(),
            status: response.status,
            message: self.transport.redact(message),
        }
    }
}

/// A redirect target as quoted in errors: scheme, host and path; no credentials or query.
fn location_target(location: &str) -> String {
    match url::Url::parse(location) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => location
            .split(['?', '#'])
            .next()
            .unwrap_or_default()
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(headers: &[(&str, &str)]) -> RawResponse {
        RawResponse {
            status: 429,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned()))
                .collect(),
            body: Vec::new(),
        }
    }

    #[test]
    fn backoff_is_full_jitter_under_a_doubling_ceiling() {
        let policy = RetryPolicy::default();
        for retry in 0..10 {
            let ceiling = (policy.base_delay * 2u32.pow(retry)).min(policy.max_backoff);
            for _ in 0..50 {
                assert!(policy.backoff(retry) <= ceiling);
            }
        }
        assert!(policy.backoff(100) <= policy.max_backoff);
    }

    #[test]
    fn requested_delay_reads_retry_after_then_ratelimit_reset() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            requested_delay(&response(&[("Retry-After", "7")]), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            requested_delay(&response(&[("RateLimit-Reset", "1700000012")]), now),
            Some(Duration::from_secs(12))
        );
        assert_eq!(
            requested_delay(&response(&[("RateLimit-Reset", "1600000000")]), now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            requested_delay(&response(&[("Retry-After", "soon")]), now),
            None
        );
        assert_eq!(requested_delay(&response(&[]), now), None);
        let capped = RetryPolicy::default().requested_delay(&response(&[("Retry-After", "3600")]));
        assert_eq!(capped, Some(Duration::from_secs(60)));
    }

    #[test]
    fn redirect_targets_lose_query_and_credentials() {
        assert_eq!(
            location_target("https://u:p@other.example/x?token=1#f"),
            "https://other.example/x"
        );
        assert_eq!(location_target("/relative?x=1"), "/relative");
    }
}
