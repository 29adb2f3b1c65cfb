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
pub struct FaultRule {
    /// HTTP method to match (`GET`, `POST`, `PUT`, ...); `None` matches any.
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub matcher: Matcher,
    #[serde(default)]
    pub when: When,
    pub action: FaultAction,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Matcher {
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
pub enum FaultAction {
    /// 429, `text/plain` body `Retry later`, `Retry-After: N` and `RateLimit-*` headers
    /// (GitLab's Rack::Attack throttle). Not applied.
    RateLimitText { retry_after: u64 },
    /// 429 JSON `{"message":"This endpoint has been requested too many times. Try again later."}`
    /// with `Retry-After` (GitLab's application rate limits). Not applied.
    RateLimitJson { retry_after: u64 },
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
        status: u16,
        body: serde_json::Value,
    },
    /// Sleep before handling.
    Latency { ms: u64 },
    /// Apply the write, then lose the answer: a 500 or a connection closed without a response.
    LostAck { close: bool },
    /// Reset the connection (RST) before the request is handled. Not applied.
    Reset,
    /// Block the response until [`crate::FakeGitLab::release_holds`] is called or `timeout_ms`
    /// pass (then the request completes normally). `apply`: Before = handle after release,
    /// After = handle first then hold the answer, Never = never handle, close the connection
    /// on release.
    Hold {
        apply: HoldApply,
        timeout_ms: Option<u64>,
    },
    /// 301 with `Location` (default: the same URL with `/moved` before `/api/v4`). Not applied.
    Redirect { location: Option<String> },
    /// A rate limit: at most `limit` matching requests per fixed window of `window_ms`
    /// (a window opens at the first matching request after the last one closed); the rest
    /// are answered like GitLab's application limits (429 JSON `This endpoint has been
    /// requested too many times…` with `Retry-After`: the seconds left in the window, rounded
    /// up) and not applied. With `headers`, every matching answer also carries
    /// `RateLimit-Limit`, `RateLimit-Remaining` (after this request) and `RateLimit-Reset`
    /// (the window's end, a Unix time rounded up), as GitLab.com sends them.
    WindowLimit {
        limit: u64,
        window_ms: u64,
        #[serde(default)]
        headers: bool,
    },
    /// Answers exactly `status`, `headers` and `body`, whatever the route: for an answer no
    /// other action gives, e.g. a `Retry-After` form, an HTML page with a success status, a
    /// JSON shape the state cannot produce (fields missing or `null`). Not applied.
    Reply {
        status: u16,
        #[serde(default)]
        headers: Vec<(String, String)>,
        #[serde(default)]
        body: String,
    },
    /// Edits the headers of the answer, whatever gives it (the state or another rule): every
    /// header named in `remove` goes (any case), then each of `set` replaces the headers of its
    /// name. Applied as usual. Like [`FaultAction::Latency`], it adds to the rule that decides
    /// the request's fate rather than being it: e.g. a listing page whose pagination headers a
    /// proxy stripped, a lying `X-Total-Pages`, `RateLimit-*` headers on a successful write.
    Headers {
        #[serde(default)]
        set: Vec<(String, String)>,
        #[serde(default)]
        remove: Vec<String>,
    },
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HoldApply {
    Before,
    After,
    Never,
}

impl FaultRule {
    pub fn new(action: FaultAction) -> Self {
        FaultRule {
            method: None,
            matcher: Matcher::Any,
            when: When::Every,
            action,
        }
    }
    pub fn method(mut self, m: &str) -> Self {
        self.method = Some(m.to_ascii_uppercase());
        self
    }
    pub fn route(mut self, r: RouteKind) -> Self {
        self.matcher = Matcher::Route(r);
        self
    }
    pub fn path_contains(mut self, s: &str) -> Self {
        self.matcher = Matcher::PathContains(s.into());
        self
    }
    pub fn query_contains(mut self, s: &str) -> Self {
        self.matcher = Matcher::QueryContains(s.into());
        self
    }
    pub fn any_write(mut self) -> Self {
        self.matcher = Matcher::AnyWrite;
        self
    }
    pub fn note_creation(mut self) -> Self {
        self.matcher = Matcher::NoteCreation;
        self
    }
    pub fn nth(mut self, n: u64) -> Self {
        self.when = When::Nth(n);
        self
    }
    pub fn first_n(mut self, n: u64) -> Self {
        self.when = When::FirstN(n);
        self
    }
    pub fn from_nth(mut self, n: u64) -> Self {
        self.when = When::From(n);
        self
    }
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
