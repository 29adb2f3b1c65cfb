//! The retry policy: reads are retried, writes never are, and a rate limit is waited out.
//!
//! A **read** (GET) is retried on a transport failure (connect, reset, timeout, truncated
//! body), on 429 (GitLab's plain-text `Retry later` form with `Retry-After`/`RateLimit-Reset`,
//! and its JSON application-limit form) and on every 5xx (JSON or not: a load balancer's HTML
//! 502 counts). Attempts are bounded ([`RetryPolicy::max_attempts`]); between attempts the
//! delay is the server's `Retry-After` (else `RateLimit-Reset`), capped at
//! [`RetryPolicy::retry_after_cap`], or else exponential backoff with full jitter: a uniform
//! random delay in `[0, min(max_backoff, base_delay * 2^retry)]`. A 3xx, another 4xx, or an
//! over-limit body is final at once. Redirects are never followed, but for one: a raw file
//! read with `lfs=true` that GitLab answers with `302` to its object storage
//! (`Requester::read_lfs_within`, docs/contract.md#lfs-redirect).
//!
//! A **write** (POST/PUT) is never retried blindly. An answer of 2xx is success; 3xx and 4xx
//! other than 429 are [`ForgeError::Status`] (GitLab refused; nothing was written); 5xx, or no
//! complete answer after the request may have reached the server, is
//! [`ForgeError::AmbiguousWrite`]: the caller lists again and lets the listing decide. A write
//! that provably never left (name resolution, connect or proxy-connect failure) is
//! [`ForgeError::Transport`].
//!
//! A **429** on a write is a refusal, not an ambiguity (docs/contract.md#write-rate-limits): GitLab's rate limiters
//! (Rack::Attack and the application limits such as note creation) answer before the request
//! reaches the code that acts. So the same write is sent again after the wait the answer asks
//! for (`Retry-After`, else `RateLimit-Reset`, capped, and at least
//! [`MIN_WRITE_RATE_LIMIT_WAIT`]), or a bounded backoff when it names none.
//!
//! Every wait for a rate limit, a read's or a write's, counts against one budget per client
//! ([`RetryPolicy::rate_limit_budget`], i.e. per run): a 429 whose wait no longer fits is
//! [`ForgeError::RateLimited`], and the run stops (exit 3) instead of waiting past the CI
//! job's patience. Writes are also **paced**: when an answer's `RateLimit-Remaining` says the
//! window is nearly spent (at most [`PACE_AT_REMAINING`]), the next write first waits until
//! `RateLimit-Reset`, within the same budget, rather than collecting a 429.
//!
//! An ambiguous write returns only once [`RetryPolicy::write_settle`] has passed since it
//! was sent: GitLab gives up on a request after its own request timeout (60 s by default),
//! so by then it has applied the write or never will, and the listing that decides is
//! authoritative. Without the wait, a write GitLab applies late (after a proxy dropped the
//! connection, or after the client's own timeout) would be re-created from a listing taken
//! too early, and the late copy would appear after the run had verified. A 429 needs no such
//! wait: nothing is in flight.
//!
//! The sleeper is injectable ([`Sleeper`]) so tests neither sleep nor guess the delays; the
//! budget counts the delays asked of it, so a recording sleeper sees the same accounting.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::transport::{
    Failure, PreparedRequest, RawResponse, StreamSink, Transport, error_message,
};
use assent_forge::{ContentBudget, ForgeError, RateLimited, TransportFailure};

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
    /// Total time one client (one run, one sweep) may wait for GitLab's rate limits: 429
    /// answers to reads and writes, and write pacing (default 10 minutes). Once a wait no
    /// longer fits, the request fails with [`ForgeError::RateLimited`].
    pub rate_limit_budget: Duration,
}

/// The default [`RetryPolicy::write_settle`].
pub const DEFAULT_WRITE_SETTLE: Duration = Duration::from_secs(65);

/// The default [`RetryPolicy::rate_limit_budget`]: long enough to post a few thousand threads
/// under GitLab's default note-creation limit (300 a minute), short of a CI job's default
/// one-hour timeout.
pub const DEFAULT_RATE_LIMIT_BUDGET: Duration = Duration::from_secs(600);

/// The shortest wait before a write refused with 429 is sent again. `Retry-After` counts whole
/// seconds, so `0` means "within the second"; waiting at least this long also bounds how many
/// times a write is sent within the budget.
pub const MIN_WRITE_RATE_LIMIT_WAIT: Duration = Duration::from_secs(1);

/// `RateLimit-Remaining` at or below which the next write waits for `RateLimit-Reset`: one
/// request of headroom, for the reads of the same run and other jobs of the same bot user.
pub const PACE_AT_REMAINING: u64 = 1;

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            retry_after_cap: Duration::from_secs(60),
            write_settle: DEFAULT_WRITE_SETTLE,
            rate_limit_budget: DEFAULT_RATE_LIMIT_BUDGET,
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
        requested_delay(response, wall_clock()).map(|d| d.min(self.retry_after_cap))
    }

    /// The wait before a write refused with 429 for the `refusal`-th time in a row (0 =
    /// first) is sent again: what the answer asks for (capped, at least
    /// [`MIN_WRITE_RATE_LIMIT_WAIT`]), else a backoff from 1 s doubling to `max_backoff`,
    /// jittered over its upper half so that it never collapses to nothing.
    pub(crate) fn write_rate_limit_wait(&self, response: &RawResponse, refusal: u32) -> Duration {
        if let Some(asked) = self.requested_delay(response) {
            return asked.max(MIN_WRITE_RATE_LIMIT_WAIT);
        }
        let factor = 1u32.checked_shl(refusal.min(31)).unwrap_or(u32::MAX);
        let ceiling = MIN_WRITE_RATE_LIMIT_WAIT
            .saturating_mul(factor)
            .min(self.max_backoff.max(MIN_WRITE_RATE_LIMIT_WAIT));
        let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(fastrand::u64(millis / 2..=millis))
    }
}

/// The crate's one reading of the time of day: what an HTTP date in `Retry-After` and a
/// `RateLimit-Reset` epoch are measured against (waits themselves are `Instant`s).
fn wall_clock() -> SystemTime {
    SystemTime::now()
}

/// How long to hold the next write when `response` says the rate-limit window is nearly
/// spent (`RateLimit-Remaining` at most [`PACE_AT_REMAINING`]): until `RateLimit-Reset`,
/// capped like a requested delay. `None` when the answer says nothing of the kind.
fn pace_after(response: &RawResponse, now: SystemTime, cap: Duration) -> Option<Duration> {
    let remaining = response
        .header("ratelimit-remaining")
        .and_then(|v| v.trim().parse::<u64>().ok())?;
    if remaining > PACE_AT_REMAINING {
        return None;
    }
    let reset = response
        .header("ratelimit-reset")
        .and_then(|v| v.trim().parse::<u64>().ok())?;
    let delay = if reset < 1_000_000_000 {
        Duration::from_secs(reset)
    } else {
        let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
        Duration::from_secs(reset.saturating_sub(now))
    };
    Some(delay.min(cap)).filter(|d| !d.is_zero())
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
    pub(crate) limits: Mutex<RateLimitState>,
}

/// What this client knows of GitLab's rate limits: the waits spent on them and the pause the
/// last answer asked of the next write.
#[derive(Debug, Default)]
pub(crate) struct RateLimitState {
    /// Rate-limit waits so far (429s on reads and writes, write pacing), as asked of the
    /// sleeper.
    waited: Duration,
    /// When an answer said the window is nearly spent, and how long until it resets.
    pace: Option<(Instant, Duration)>,
    /// Writes refused with 429, each sent again (or given up on) afterwards.
    refused_writes: u64,
}

/// The rate limits one client met: what `assent run` and the benchmarks report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimitTally {
    /// Total wait for rate limits (429 waits and pacing), as asked of the sleeper.
    pub waited: Duration,
    /// Writes GitLab refused with 429.
    pub refused_writes: u64,
}

impl fmt::Debug for Requester {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Requester")
            .field("transport", &self.transport)
            .field("policy", &self.policy)
            .finish()
    }
}

enum RetryDecision {
    Done(RawResponse),
    Retry {
        error: ForgeError,
        delay: Option<Duration>,
        /// A 429: the wait counts against the rate-limit budget.
        rate_limited: bool,
    },
    Fail(ReadFailure),
}

/// One attempt at a write.
enum WriteAttempt {
    Done(Result<RawResponse, ForgeError>),
    /// Refused with 429 before GitLab acted: wait, then send the same write again.
    RateLimited(RawResponse),
}

/// Why a read failed, keeping apart the one failure a listing can recover from by asking
/// for a smaller page.
#[derive(Debug)]
pub(crate) enum ReadFailure {
    /// The answer's body exceeded the transport's limit (`limit` bytes); final at once, never
    /// retried as is. `error` is what a caller that cannot shrink the request reports.
    BodyTooLarge { limit: u64, error: ForgeError },
    /// The answer did not fit in the content budget the read was given; final, never retried.
    OverBudget { limit: u64 },
    /// Any other failure, after the retries the policy allows.
    Failed(ForgeError),
}

impl ReadFailure {
    /// The error to report.
    pub(crate) fn into_error(self) -> ForgeError {
        match self {
            ReadFailure::BodyTooLarge { error, .. } | ReadFailure::Failed(error) => error,
            ReadFailure::OverBudget { limit } => ForgeError::Decode {
                method: "GET".into(),
                route: "-".into(),
                message: format!("the answer does not fit in the {limit}-byte content budget"),
            },
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
        self.read_within(request, None)
    }

    /// [`Requester::read_bounded`] taking a successful answer's body from `budget`
    /// ([`Transport::execute_within`]); an answer that does not fit is
    /// [`ReadFailure::OverBudget`].
    pub(crate) fn read_within(
        &self,
        request: &PreparedRequest,
        budget: Option<&ContentBudget>,
    ) -> Result<RawResponse, ReadFailure> {
        self.read_with(request, || {
            self.transport
                .execute_within(request, budget)
                .map(|response| (response, Some(())))
        })
        .map(|(response, ())| response)
    }

    /// [`Requester::read_within`] for a raw file read with `lfs=true`, following the one
    /// redirect GitLab answers it with when object storage serves LFS objects directly
    /// (`lib/api/files.rb`, raw route: `present_carrierwave_file!` in `lib/api/helpers.rb`
    /// redirects unless `proxy_download` is on): a `302` whose `Location` is https, or plain
    /// http to a loopback host, is fetched once without the token
    /// ([`Transport::execute_storage_within`](super::transport::Transport::execute_storage_within)),
    /// within the same budget. Any other redirect, a second hop from the storage, or a target
    /// that is neither is refused unsent, final. A failed attempt (the storage's 5xx too) is
    /// retried whole, from GitLab's answer: a signed URL may have expired meanwhile.
    pub(crate) fn read_lfs_within(
        &self,
        request: &PreparedRequest,
        budget: Option<&ContentBudget>,
    ) -> Result<RawResponse, ReadFailure> {
        self.read_with(request, || {
            let response = self.transport.execute_within(request, budget)?;
            if response.status != 302 {
                return Ok((response, Some(())));
            }
            let target = storage_target(&request.url, &response)?;
            let stored = self.transport.execute_storage_within(&target, budget)?;
            // Either refusal is GitLab's redirect not taken (its 302), never the storage's
            // status: a storage 404 must not read as a file missing from the repository.
            if (300..400).contains(&stored.status) {
                return Err(Failure::Refused {
                    status: response.status,
                    message: format!(
                        "the LFS object storage at {} answered another redirect{}; assent \
                         follows GitLab's one redirect to its storage, never a second",
                        location_target(target.as_str()),
                        stored
                            .header("location")
                            .map(|l| format!(" (to {})", location_target(l)))
                            .unwrap_or_default()
                    ),
                });
            }
            if (400..500).contains(&stored.status) && stored.status != 429 {
                return Err(Failure::Refused {
                    status: response.status,
                    message: format!(
                        "the LFS object storage at {} refused the object GitLab redirected to \
                         with HTTP {}: {}",
                        location_target(target.as_str()),
                        stored.status,
                        error_message(&stored.body)
                    ),
                });
            }
            Ok((stored, Some(())))
        })
        .map(|(response, ())| response)
    }

    /// [`Requester::read_bounded`] with a 2xx body read by `sink` as it arrives
    /// ([`Transport::execute_streamed`](super::transport::Transport::execute_streamed)): a
    /// connection lost mid-body is retried like any transport error, a sink over its bound
    /// is [`ReadFailure::BodyTooLarge`] at once.
    pub(crate) fn read_streamed<R>(
        &self,
        request: &PreparedRequest,
        sink: StreamSink<'_, R>,
    ) -> Result<(RawResponse, R), ReadFailure> {
        self.read_with(request, || {
            self.transport.execute_streamed(request, &mut *sink)
        })
    }

    fn read_with<R>(
        &self,
        request: &PreparedRequest,
        mut attempt: impl FnMut() -> Result<(RawResponse, Option<R>), Failure>,
    ) -> Result<(RawResponse, R), ReadFailure> {
        debug_assert!(request.method.is_read());
        let attempts = self.policy.max_attempts.max(1);
        let mut retry = 0;
        loop {
            let (outcome, mut value) = match attempt() {
                Ok((response, value)) => (Ok(response), value),
                Err(failure) => (Err(failure), None),
            };
            let verdict = self.judge_read(request, outcome);
            match verdict {
                // Only a 2xx answer is done, and its body is what the attempt read.
                RetryDecision::Done(response) => match value.take() {
                    Some(value) => return Ok((response, value)),
                    None => {
                        return Err(ReadFailure::Failed(ForgeError::Decode {
                            method: request.method.as_str().to_owned(),
                            route: request.route(),
                            message: "the answer's body was not read".to_owned(),
                        }));
                    }
                },
                RetryDecision::Fail(failure) => return Err(failure),
                RetryDecision::Retry {
                    error,
                    delay,
                    rate_limited,
                } => {
                    if retry + 1 >= attempts {
                        return Err(ReadFailure::Failed(error));
                    }
                    let delay = delay.unwrap_or_else(|| self.policy.backoff(retry));
                    if rate_limited {
                        self.wait_for_rate_limit(request, delay, &error)
                            .map_err(ReadFailure::Failed)?;
                    } else {
                        self.sleeper.sleep(delay);
                    }
                    retry += 1;
                }
            }
        }
    }

    fn judge_read(
        &self,
        request: &PreparedRequest,
        outcome: Result<RawResponse, Failure>,
    ) -> RetryDecision {
        let method = request.method.as_str().to_owned();
        let route = request.route();
        match outcome {
            Err(Failure::OverBudget { limit }) => {
                RetryDecision::Fail(ReadFailure::OverBudget { limit })
            }
            Err(Failure::Refused { status, message }) => {
                RetryDecision::Fail(ReadFailure::Failed(ForgeError::Status {
                    method,
                    route,
                    status,
                    message: self.transport.redact(message),
                }))
            }
            Err(failure @ Failure::BodyTooLarge { limit, .. }) => {
                RetryDecision::Fail(ReadFailure::BodyTooLarge {
                    limit,
                    error: ForgeError::Decode {
                        method,
                        route,
                        message: failure.to_string(),
                    },
                })
            }
            // The server speaks plain HTTP on that port: every attempt would get the same.
            Err(failure @ Failure::NotSent(_, TransportFailure::PlainHttp)) => {
                RetryDecision::Fail(ReadFailure::Failed(ForgeError::Transport {
                    method,
                    route,
                    message: self.transport.redact(failure.to_string()),
                    cause: failure.cause(),
                }))
            }
            Err(failure) => RetryDecision::Retry {
                error: ForgeError::Transport {
                    method,
                    route,
                    message: self.transport.redact(failure.to_string()),
                    cause: failure.cause(),
                },
                delay: None,
                rate_limited: false,
            },
            Ok(response) => {
                self.observe(&response);
                match response.status {
                    200..=299 => RetryDecision::Done(response),
                    429 | 500..=599 => RetryDecision::Retry {
                        delay: self.policy.requested_delay(&response),
                        error: self.status_error(request, &response),
                        rate_limited: response.status == 429,
                    },
                    _ => RetryDecision::Fail(ReadFailure::Failed(
                        self.status_error(request, &response),
                    )),
                }
            }
        }
    }

    /// Takes note of what an answer says of the rate-limit window: a nearly spent one holds
    /// the next write until it resets. A 429 sets no pause of its own: its wait is taken
    /// before the request is sent again.
    fn observe(&self, response: &RawResponse) {
        if response.status == 429 {
            return;
        }
        if let Some(pause) = pace_after(response, wall_clock(), self.policy.retry_after_cap) {
            self.lock_limits().pace = Some((Instant::now(), pause));
        }
    }

    fn lock_limits(&self) -> std::sync::MutexGuard<'_, RateLimitState> {
        self.limits.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The rate limits met so far.
    pub(crate) fn rate_limits(&self) -> RateLimitTally {
        let state = self.lock_limits();
        RateLimitTally {
            waited: state.waited,
            refused_writes: state.refused_writes,
        }
    }

    /// Waits `delay` for a rate limit when it fits in what is left of the budget; otherwise
    /// fails with [`ForgeError::RateLimited`] at once (waiting part of it would only meet the
    /// same refusal). `refusal` is the answer that asked for the wait.
    fn wait_for_rate_limit(
        &self,
        request: &PreparedRequest,
        delay: Duration,
        refusal: &ForgeError,
    ) -> Result<(), ForgeError> {
        let budget = self.policy.rate_limit_budget;
        {
            let mut state = self.lock_limits();
            if state.waited.saturating_add(delay) > budget {
                let message = match refusal {
                    ForgeError::Status { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                return Err(ForgeError::RateLimited(Box::new(RateLimited {
                    method: request.method.as_str().to_owned(),
                    route: request.route(),
                    message,
                    next_wait: delay,
                    waited: state.waited,
                    budget,
                })));
            }
            state.waited += delay;
        }
        self.sleeper.sleep(delay);
        Ok(())
    }

    /// Holds a write until the rate-limit window an earlier answer said was nearly spent has
    /// reset, when that wait fits in the budget. When it does not, the write goes out anyway
    /// and GitLab's answer decides.
    fn pace_write(&self) {
        let wait = {
            let mut state = self.lock_limits();
            let Some((seen, pause)) = state.pace.take() else {
                return;
            };
            let wait = pause.saturating_sub(seen.elapsed());
            if wait.is_zero() || state.waited.saturating_add(wait) > self.policy.rate_limit_budget {
                return;
            }
            state.waited += wait;
            wait
        };
        self.sleeper.sleep(wait);
    }

    /// Sends a POST/PUT; returns a 2xx response or the classified error. A write GitLab
    /// refuses with 429 is sent again after the wait it asks for, within the rate-limit
    /// budget; any other failure is final. An ambiguous outcome is reported only after the
    /// write has settled (module docs).
    pub(crate) fn write(&self, request: &PreparedRequest) -> Result<RawResponse, ForgeError> {
        let mut refusals = 0u32;
        loop {
            self.pace_write();
            let sent = Instant::now();
            match self.write_once(request) {
                WriteAttempt::RateLimited(response) => {
                    self.lock_limits().refused_writes += 1;
                    let wait = self.policy.write_rate_limit_wait(&response, refusals);
                    let refusal = self.status_error(request, &response);
                    self.wait_for_rate_limit(request, wait, &refusal)?;
                    refusals = refusals.saturating_add(1);
                }
                WriteAttempt::Done(outcome) => {
                    if let Err(ForgeError::AmbiguousWrite { .. }) = &outcome {
                        let remaining = self.policy.write_settle.saturating_sub(sent.elapsed());
                        if !remaining.is_zero() {
                            self.sleeper.sleep(remaining);
                        }
                    }
                    return outcome;
                }
            }
        }
    }

    fn write_once(&self, request: &PreparedRequest) -> WriteAttempt {
        debug_assert!(!request.method.is_read());
        let method = request.method.as_str().to_owned();
        let route = request.route();
        WriteAttempt::Done(match self.transport.execute(request) {
            Err(Failure::NotSent(message, cause)) => Err(ForgeError::Transport {
                method,
                route,
                message: self.transport.redact(message),
                cause,
            }),
            Err(failure) => Err(ForgeError::AmbiguousWrite {
                method,
                route,
                message: self.transport.redact(failure.to_string()),
            }),
            Ok(response) => {
                self.observe(&response);
                match response.status {
                    200..=299 => Ok(response),
                    429 => return WriteAttempt::RateLimited(response),
                    500..=599 => Err(ForgeError::AmbiguousWrite {
                        method,
                        route,
                        message: self.transport.redact(format!(
                            "HTTP {}: {}",
                            response.status,
                            error_message(&response.body)
                        )),
                    }),
                    _ => Err(self.status_error(request, &response)),
                }
            }
        })
    }

    /// The error for a non-2xx answer: 304 says the request changed nothing, another 3xx names
    /// the refused redirect target, others quote GitLab's message.
    pub(crate) fn status_error(
        &self,
        request: &PreparedRequest,
        response: &RawResponse,
    ) -> ForgeError {
        let message = if response.status == 304 {
            // GitLab's `not_modified!` has no body: it answers a write that is already so.
            "not modified: GitLab says it is already so".to_owned()
        } else if (300..400).contains(&response.status) {
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

/// Where GitLab's `302` to its LFS object storage points, when assent may follow it: an
/// absolute or relative `Location`, over https, or plain http to a loopback host (the tests'
/// storage), without credentials in the URL. Anything else is refused before a byte is sent.
fn storage_target(request_url: &url::Url, response: &RawResponse) -> Result<url::Url, Failure> {
    let refused = |message: String| Failure::Refused {
        status: response.status,
        message,
    };
    let location = response.header("location").ok_or_else(|| {
        refused("GitLab answered the LFS read with a redirect that names no target".to_owned())
    })?;
    let target = request_url.join(location).map_err(|e| {
        refused(format!(
            "GitLab redirected the LFS read to {}, which is not a URL: {e}",
            location_target(location)
        ))
    })?;
    let shown = location_target(target.as_str());
    let secure = target.scheme() == "https"
        || (target.scheme() == "http" && super::transport::is_loopback_host(&target));
    if !secure {
        return Err(refused(format!(
            "GitLab redirected the LFS read to {shown}, which is not https: assent follows the \
             redirect to object storage only over https (plain http to a loopback address in \
             tests); serve the storage over https, or turn on the object storage's \
             `proxy_download` so GitLab serves LFS objects itself"
        )));
    }
    if !target.username().is_empty() || target.password().is_some() {
        return Err(refused(format!(
            "GitLab redirected the LFS read to {shown} with credentials in the URL, which \
             assent never sends"
        )));
    }
    Ok(target)
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
    fn pacing_waits_for_the_reset_only_when_the_window_is_nearly_spent() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let cap = Duration::from_secs(60);
        let answer = |remaining: &str, reset: &str| {
            let mut r = response(&[
                ("RateLimit-Remaining", remaining),
                ("RateLimit-Reset", reset),
            ]);
            r.status = 201;
            r
        };
        assert_eq!(
            pace_after(&answer("0", "1700000020"), now, cap),
            Some(Duration::from_secs(20))
        );
        assert_eq!(
            pace_after(&answer("1", "1700000020"), now, cap),
            Some(Duration::from_secs(20))
        );
        assert_eq!(pace_after(&answer("2", "1700000020"), now, cap), None);
        assert_eq!(
            pace_after(&answer("0", "1700003600"), now, cap),
            Some(cap),
            "capped like Retry-After"
        );
        assert_eq!(
            pace_after(&answer("0", "1600000000"), now, cap),
            None,
            "past"
        );
        assert_eq!(pace_after(&answer("0", "soon"), now, cap), None);
        assert_eq!(pace_after(&response(&[]), now, cap), None);
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
