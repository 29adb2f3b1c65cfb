//! Fault injection rules.
//!
//! Rules form an ordered list. For each API request every rule whose matcher matches counts
//! one occurrence; a rule *fires* when its [`When`] accepts that occurrence number. Latency of
//! every firing rule is added up and the header edits of every firing rule are applied in
//! order; the first firing other rule decides the request's fate. Control routes
//! (`/__fake/...`) are never subject to faults.

use serde::{Deserialize, Serialize};

use crate::route::RouteKind;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
/// One fault rule: which requests it matches, on which occurrences it fires, and what it does.
pub struct FaultRule {
    /// HTTP method to match (`GET`, `POST`, `PUT`, ...); `None` matches any.
    #[serde(default)]
    pub method: Option<String>,
    /// Which requests count as occurrences of this rule (default: any).
    #[serde(default)]
    pub matcher: Matcher,
    /// Which occurrences fire (default: every one).
    #[serde(default)]
    pub when: When,
    /// What a firing rule does to the request.
    pub action: FaultAction,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "snake_case")]
/// Which API requests a rule counts.
pub enum Matcher {
    /// Every API request.
    #[default]
    Any,
    /// A route kind, e.g. `RouteKind::Discussions` (with `method: POST` = create a thread).
    Route(RouteKind),
    /// A substring of the raw request path (before percent-decoding, without the query).
    PathContains(String),
    /// A substring of the raw query string (without `?`), e.g. `page=2` for one listing page.
    QueryContains(String),
    /// Any write (a method other than GET/HEAD).
    AnyWrite,
    /// A POST that creates a note: a thread (`…/discussions`), a reply
    /// (`…/discussions/:id/notes`) or a plain note (`…/notes`): what GitLab's `notes_create`
    /// application limit counts.
    NoteCreation,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "snake_case")]
/// Which of a rule's matching requests (counted from 1) it fires on.
pub enum When {
    /// Only the n-th matching request (1-based).
    Nth(u64),
    /// The first n matching requests.
    FirstN(u64),
    /// The n-th matching request and every later one (1-based), e.g. every listing after
    /// the first.
    From(u64),
    /// Every matching request.
    #[default]
    Every,
}

impl When {
    pub(crate) fn accepts(&self, occurrence: u64) -> bool {
        match self {
            When::Nth(n) => occurrence == *n,
            When::FirstN(n) => occurrence <= *n,
            When::From(n) => occurrence >= *n,
            When::Every => true,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
/// What a firing rule does. "Not applied": the state is left as it was.
pub enum FaultAction {
    /// 429, `text/plain` body `Retry later`, `Retry-After: N` and `RateLimit-*` headers
    /// (GitLab's Rack::Attack throttle). Not applied.
    RateLimitText {
        /// The `Retry-After` seconds.
        retry_after: u64,
    },
    /// 429 JSON `{"message":"This endpoint has been requested too many times. Try again later."}`
    /// with `Retry-After` (GitLab's application rate limits). Not applied.
    RateLimitJson {
        /// The `Retry-After` seconds.
        retry_after: u64,
    },
    /// 500 `{"message":"500 Internal Server Error"}`. Not applied.
    ServerError,
    /// 403 `{"message":"403 Forbidden"}`, as GitLab answers a token whose role or scope may
    /// not use the route. Not applied.
    Forbidden,
    /// 502 with an HTML body. Not applied.
    BadGateway,
    /// 503 with an HTML body. Not applied.
    Unavailable,
    /// Answers `status` with the JSON `body`, as GitLab refusing a request it did not act on
    /// (e.g. a DiffNote position on a line GitLab's diff does not have). Not applied.
    Refuse {
        /// The status answered.
        status: u16,
        /// The JSON body answered.
        body: serde_json::Value,
    },
    /// Sleep before handling.
    Latency {
        /// Milliseconds to sleep.
        ms: u64,
    },
    /// Apply the write, then lose the answer: a 500 or a connection closed without a response.
    LostAck {
        /// Close the connection without an answer instead of answering 500.
        close: bool,
    },
    /// Reset the connection (RST) before the request is handled. Not applied.
    Reset,
    /// Block the response until [`crate::FakeGitLab::release_holds`] is called or `timeout_ms`
    /// pass (then the request completes normally). `apply`: Before = handle after release,
    /// After = handle first then hold the answer, Never = never handle, close the connection
    /// on release.
    Hold {
        /// When the request is handled relative to the hold.
        apply: HoldApply,
        /// Release by itself after this many milliseconds (`None`: only on release).
        timeout_ms: Option<u64>,
    },
    /// 301 with `Location` (default: the same URL with `/moved` before `/api/v4`). Not applied.
    Redirect {
        /// The `Location` header (`None`: the default above).
        location: Option<String>,
    },
    /// A rate limit: at most `limit` matching requests per fixed window of `window_ms`
    /// (a window opens at the first matching request after the last one closed); the rest
    /// are answered like GitLab's application limits (429 JSON `This endpoint has been
    /// requested too many times…` with `Retry-After`: the seconds left in the window, rounded
    /// up) and not applied. With `headers`, every matching answer also carries
    /// `RateLimit-Limit`, `RateLimit-Remaining` (after this request) and `RateLimit-Reset`
    /// (the window's end, a Unix time rounded up), as GitLab.com sends them.
    WindowLimit {
        /// Matching requests allowed per window.
        limit: u64,
        /// The window's length in milliseconds.
        window_ms: u64,
        /// Send `RateLimit-*` headers on every matching answer.
        #[serde(default)]
        headers: bool,
    },
    /// Answers exactly `status`, `headers` and `body`, whatever the route: for an answer no
    /// other action gives, e.g. a `Retry-After` form, an HTML page with a success status, a
    /// JSON shape the state cannot produce (fields missing or `null`). Not applied.
    Reply {
        /// The status answered.
        status: u16,
        /// The headers answered, in order.
        #[serde(default)]
        headers: Vec<(String, String)>,
        /// The body answered.
        #[serde(default)]
        body: String,
    },
    /// Edits the headers of the answer, whatever gives it (the state or another rule): every
    /// header named in `remove` goes (any case), then each of `set` replaces the headers of its
    /// name. Applied as usual. Like [`FaultAction::Latency`], it adds to the rule that decides
    /// the request's fate rather than being it: e.g. a listing page whose pagination headers a
    /// proxy stripped, a lying `X-Total-Pages`, `RateLimit-*` headers on a successful write.
    Headers {
        /// Headers set, each replacing the headers of its name.
        #[serde(default)]
        set: Vec<(String, String)>,
        /// Header names removed (any case), before `set`.
        #[serde(default)]
        remove: Vec<String>,
    },
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
/// When a held request is handled (see [`FaultAction::Hold`]).
pub enum HoldApply {
    /// Handled after the release.
    Before,
    /// Handled at once, its answer held until the release.
    After,
    /// Never handled: the connection is closed on release.
    Never,
}

impl FaultRule {
    /// A rule that fires `action` on every API request.
    pub fn new(action: FaultAction) -> Self {
        FaultRule {
            method: None,
            matcher: Matcher::Any,
            when: When::Every,
            action,
        }
    }
    /// Only requests of this HTTP method.
    pub fn method(mut self, m: &str) -> Self {
        self.method = Some(m.to_ascii_uppercase());
        self
    }
    /// Only requests of this route kind.
    pub fn route(mut self, r: RouteKind) -> Self {
        self.matcher = Matcher::Route(r);
        self
    }
    /// Only requests whose raw path contains `s`.
    pub fn path_contains(mut self, s: &str) -> Self {
        self.matcher = Matcher::PathContains(s.into());
        self
    }
    /// Only requests whose raw query contains `s`.
    pub fn query_contains(mut self, s: &str) -> Self {
        self.matcher = Matcher::QueryContains(s.into());
        self
    }
    /// Only writes (any method but GET and HEAD).
    pub fn any_write(mut self) -> Self {
        self.matcher = Matcher::AnyWrite;
        self
    }
    /// Only requests that create a note (thread, reply or plain note).
    pub fn note_creation(mut self) -> Self {
        self.matcher = Matcher::NoteCreation;
        self
    }
    /// Fire on the `n`-th matching request only (1-based).
    pub fn nth(mut self, n: u64) -> Self {
        self.when = When::Nth(n);
        self
    }
    /// Fire on the first `n` matching requests.
    pub fn first_n(mut self, n: u64) -> Self {
        self.when = When::FirstN(n);
        self
    }
    /// Fire on the `n`-th matching request and every later one.
    pub fn from_nth(mut self, n: u64) -> Self {
        self.when = When::From(n);
        self
    }
    /// Fire on every matching request.
    pub fn every(mut self) -> Self {
        self.when = When::Every;
        self
    }

    pub(crate) fn matches(
        &self,
        method: &str,
        raw_path: &str,
        query: &str,
        kind: RouteKind,
    ) -> bool {
        if let Some(m) = &self.method
            && !m.eq_ignore_ascii_case(method)
        {
            return false;
        }
        match &self.matcher {
            Matcher::Any => true,
            Matcher::Route(r) => *r == kind,
            Matcher::PathContains(s) => raw_path.contains(s.as_str()),
            Matcher::QueryContains(s) => query.contains(s.as_str()),
            Matcher::AnyWrite => !matches!(method, "GET" | "HEAD"),
            Matcher::NoteCreation => {
                method.eq_ignore_ascii_case("POST")
                    && matches!(
                        kind,
                        RouteKind::Discussions | RouteKind::DiscussionNotes | RouteKind::Notes
                    )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn when_accepts_its_occurrences() {
        let accepted = |w: When| (1..=5).filter(|&o| w.accepts(o)).collect::<Vec<_>>();
        assert_eq!(accepted(When::Nth(2)), [2]);
        assert_eq!(accepted(When::FirstN(2)), [1, 2]);
        assert_eq!(accepted(When::From(3)), [3, 4, 5]);
        assert_eq!(accepted(When::Every), [1, 2, 3, 4, 5]);
        let rule = FaultRule::new(FaultAction::ServerError).from_nth(2);
        assert_eq!(rule.when, When::From(2));
        let json = serde_json::to_string(&rule.when).unwrap();
        assert_eq!(json, r#"{"from":2}"#);
    }

    #[test]
    fn note_creation_matches_the_posts_that_create_notes() {
        let rule = FaultRule::new(FaultAction::ServerError).note_creation();
        for kind in [
            RouteKind::Discussions,
            RouteKind::DiscussionNotes,
            RouteKind::Notes,
        ] {
            assert!(rule.matches("POST", "/p", "", kind), "{kind:?}");
            assert!(!rule.matches("GET", "/p", "", kind), "{kind:?}");
        }
        assert!(!rule.matches("PUT", "/p", "", RouteKind::Note));
        assert!(!rule.matches("PUT", "/p", "", RouteKind::Discussion));
    }
}
