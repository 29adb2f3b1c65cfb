//! The pagination driver: every page of a GitLab listing, or an error.
//!
//! * The first request asks for `per_page=100`.
//! * The next page comes from `X-Next-Page` (empty = this was the last page); when that header
//!   is absent, from `Link: <…>; rel="next"` (absent `next` = last page).
//! * A next link is followed only when it keeps the API base's origin (scheme, host, port),
//!   carries no user-info (ureq would turn `user:password@` into an `Authorization` header)
//!   and stays under the API base path; anything else fails the listing, without quoting the
//!   user-info: the token is never sent to another origin, nor beside other credentials.
//! * `X-Total`/`X-Total-Pages` are never read (GitLab omits them above 10,000 items and they
//!   can be stale); completeness comes only from the next-page headers.
//! * A page with neither header is accepted as the last one only when it is not full (fewer
//!   items than its page size); a full page without headers cannot be proven last and fails
//!   the listing.
//! * **Page size.** A page whose body exceeds the transport's limit (many large notes, MR
//!   descriptions, diffs) is asked again at half its size, down to 1; only a single item over
//!   the limit fails the listing, with an error naming the page and the limit, unless the
//!   caller reads such a page another way (`list_all_with`: the discussions listing streams
//!   it and keeps only the bot's note bodies, `super::discussion_stream`). GitLab pages
//!   are offsets (page `k` at `per_page` `n` starts at item `(k-1)·n`), so a new size must
//!   divide the offset of the page being asked: the size is the largest one at most half the
//!   old that does, and the page number is recomputed from the offset, so no item is skipped
//!   or repeated. After a page at a reduced size, the next one grows back (at most doubling,
//!   aligned the same way, never above the size the server last honoured), so one heavy page
//!   does not cost the rest of the listing its page size. A cursor link (no `page`) changes
//!   only its `per_page`. The server's `X-Per-Page` is the size in effect when it clamps the
//!   request; completeness is still proven by the next-page headers of every page.
//! * Each page goes through the read retry policy; a page that still fails returns that
//!   request's error (a forge failure). A page that is not a JSON list, a full page without
//!   pagination headers, a next page already fetched or not after the current one (a loop),
//!   a refused next link or more than `max_pages` pages is [`ForgeError::IncompleteListing`].
//!   Either way the caller gets every item or none.

use std::collections::HashSet;

use serde::de::DeserializeOwned;
use url::Url;

use super::retry::{ReadFailure, Requester};
use super::transport::{Method, PreparedRequest, RawResponse};
use assent_forge::ForgeError;

/// Items asked for per page.
pub const PER_PAGE: usize = 100;
/// Default cap on the pages of one listing (200,000 items at full pages).
pub const DEFAULT_MAX_PAGES: u32 = 2_000;

/// True for a 404 meaning "this path/tree does not exist" rather than "this project or
/// commit does not exist" (which must stay an error: an inaccessible project is not an
/// empty one). Here, beside the listing's own first-page rule (`Listing::missing_is_empty`),
/// below the client and the repository, which read a single file's absence by it too.
pub(crate) fn is_absent_content(error: &ForgeError) -> bool {
    match error {
        ForgeError::Status {
            status: 404,
            message,
            ..
        } => {
            let m = message.to_ascii_lowercase();
            ![
                "project not found",
                "commit not found",
                "ref not found",
                "branch not found",
            ]
            .iter()
            .any(|s| m.contains(s))
        }
        _ => false,
    }
}

/// What is listed and how.
#[derive(Debug, Clone)]
pub(crate) struct Listing<'a> {
    /// Named in errors ("discussions of merge request 7").
    pub(crate) what: &'a str,
    /// A 404 on the first page that names no project or commit means "nothing there" (a
    /// tree path that does not exist).
    pub(crate) missing_is_empty: bool,
    /// Page cap.
    pub(crate) max_pages: u32,
}

/// How a page request can be resized without moving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Paging {
    /// Offset pagination: the page starts at item `offset`.
    Offset { offset: u64 },
    /// A cursor (keyset) link without `page`: the position is in the cursor, `per_page` can
    /// change freely.
    Cursor,
    /// A link with a `page` but no `per_page` (or unreadable ones): its position depends on
    /// a size the server chose, so it is never resized.
    Fixed,
}

/// A page request with what the driver knows about it.
#[derive(Debug, Clone)]
struct PageRequest {
    request: PreparedRequest,
    paging: Paging,
    /// The page size the server will apply (the asked `per_page`, capped by what it honoured).
    size: u64,
}

fn query_u64(url: &Url, key: &str) -> Option<Result<u64, ()>> {
    url.query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim().parse::<u64>().map_err(drop))
}

/// Sets query parameters in place (first occurrence replaced, repeats dropped), appending
/// those not present, so an unchanged URL keeps its text.
fn set_query_values(url: &mut Url, values: &[(&str, String)]) {
    let mut seen: Vec<&str> = Vec::new();
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (k, v) in url.query_pairs() {
        match values.iter().find(|(key, _)| *key == k) {
            Some((key, _)) if seen.contains(key) => {}
            Some((key, value)) => {
                seen.push(key);
                pairs.push((k.into_owned(), value.clone()));
            }
            None => pairs.push((k.into_owned(), v.into_owned())),
        }
    }
    for (key, value) in values {
        if !seen.contains(key) {
            pairs.push(((*key).to_owned(), value.clone()));
        }
    }
    url.query_pairs_mut().clear().extend_pairs(pairs);
}

/// The largest page size at most `at_most` (and at least 1) that divides `offset`, so a
/// page of that size starts exactly at `offset`.
fn aligned_size(offset: u64, at_most: u64) -> u64 {
    let at_most = at_most.max(1);
    if offset == 0 {
        return at_most;
    }
    (1..=at_most)
        .rev()
        .find(|&size| offset.is_multiple_of(size))
        .unwrap_or(1)
}

impl PageRequest {
    /// Reads what `url` asks for. `first`: the driver's own first request (no `page`, page 1).
    fn new(url: Url, first: bool, ceiling: u64) -> PageRequest {
        let per_page = query_u64(&url, "per_page");
        let page = query_u64(&url, "page");
        let asked = match per_page {
            Some(Ok(n)) if n >= 1 => Some(n),
            _ => None,
        };
        let size = asked.unwrap_or(PER_PAGE as u64).min(ceiling).max(1);
        let paging = match (page, asked) {
            (Some(Ok(page)), Some(_)) => Paging::Offset {
                offset: page.max(1).saturating_sub(1).saturating_mul(size),
            },
            (None, Some(_)) if first => Paging::Offset { offset: 0 },
            (None, Some(_)) => Paging::Cursor,
            _ => Paging::Fixed,
        };
        PageRequest {
            request: PreparedRequest {
                method: Method::Get,
                url,
                body: None,
            },
            paging,
            size,
        }
    }

    /// The same position at page size `size`, or `None` when it cannot be resized there.
    fn resized(&self, size: u64) -> Option<PageRequest> {
        let mut url = self.request.url.clone();
        match self.paging {
            Paging::Offset { offset } if size >= 1 && offset.is_multiple_of(size) => {
                set_query_values(
                    &mut url,
                    &[
                        ("per_page", size.to_string()),
                        ("page", (offset / size + 1).to_string()),
                    ],
                )
            }
            Paging::Cursor if size >= 1 => {
                set_query_values(&mut url, &[("per_page", size.to_string())]);
            }
            _ => return None,
        }
        Some(PageRequest {
            request: PreparedRequest {
                method: Method::Get,
                url,
                body: None,
            },
            paging: self.paging,
            size,
        })
    }

    /// The request for the same items at a smaller page size, when there is one.
    fn smaller(&self) -> Option<PageRequest> {
        if self.size <= 1 {
            return None;
        }
        let half = self.size / 2;
        match self.paging {
            Paging::Offset { offset } => self.resized(aligned_size(offset, half)),
            Paging::Cursor => self.resized(half),
            Paging::Fixed => None,
        }
    }

    /// This request grown towards `ceiling` after a page at a reduced size (at most doubled),
    /// or itself when it cannot grow.
    fn grown(self, ceiling: u64) -> PageRequest {
        if self.size >= ceiling {
            return self;
        }
        let target = self.size.saturating_mul(2).min(ceiling);
        let size = match self.paging {
            Paging::Offset { offset } => aligned_size(offset, target),
            Paging::Cursor => target,
            Paging::Fixed => return self,
        };
        if size > self.size {
            self.resized(size).unwrap_or(self)
        } else {
            self
        }
    }

    /// Where the page starts, for messages (1-based item number), when known.
    fn first_item(&self) -> Option<u64> {
        match self.paging {
            Paging::Offset { offset } => Some(offset + 1),
            _ => None,
        }
    }
}

/// Refuses a next-page link that would send the token elsewhere, or beside other
/// credentials. The message never quotes the link's user-info.
fn check_next_link(next: &Url, base: &Url) -> Result<(), String> {
    if !next.username().is_empty() || next.password().is_some() {
        return Err("the next-page link carries user-info (credentials), not followed".to_owned());
    }
    if next.origin() != base.origin() {
        return Err(format!(
            "the next-page link points to another origin ({}), not followed",
            next.origin().ascii_serialization()
        ));
    }
    if !next.path().starts_with(base.path()) {
        return Err(format!(
            "the next-page link leaves the API base {} (for {}), not followed",
            base.path(),
            next.path()
        ));
    }
    Ok(())
}

/// Reads a page another way when it exceeds the body limit even at one item per page: the
/// response (its headers; the body may be empty) and the page's items, or why the body is
/// not the expected list, or why the read failed.
pub(crate) type OversizePage<'a, T> =
    &'a dyn Fn(&PreparedRequest) -> Result<(RawResponse, Result<Vec<T>, String>), ReadFailure>;

/// Fetches every page of `first` and decodes each as a JSON list of `T`.
pub(crate) fn list_all<T: DeserializeOwned>(
    requester: &Requester,
    first: PreparedRequest,
    listing: &Listing<'_>,
) -> Result<Vec<T>, ForgeError> {
    list_all_with(requester, first, listing, None)
}

/// [`list_all`], with `oversize` reading a page that is over the body limit even at one
/// item (for discussions: streamed, keeping only what the caller needs of it). Without it,
/// such a page fails the listing.
pub(crate) fn list_all_with<T: DeserializeOwned>(
    requester: &Requester,
    first: PreparedRequest,
    listing: &Listing<'_>,
    oversize: Option<OversizePage<'_, T>>,
) -> Result<Vec<T>, ForgeError> {
    let incomplete = |reason: String| ForgeError::IncompleteListing {
        what: listing.what.to_owned(),
        reason: requester.transport.redact(reason),
    };
    debug_assert_eq!(first.method, Method::Get);
    let mut first_url = first.url;
    set_query_values(&mut first_url, &[("per_page", PER_PAGE.to_string())]);
    let mut walk = Walk {
        base: requester.transport.base().clone(),
        fetched: HashSet::new(),
        ceiling: PER_PAGE as u64,
        page: 0,
        max_pages: listing.max_pages,
    };
    let mut current = PageRequest::new(first_url, true, walk.ceiling);
    let mut items = Vec::new();
    loop {
        walk.page += 1;
        let page = walk.page;
        walk.fetched.insert(current.request.url.as_str().to_owned());
        let Some((response, read_otherwise)) =
            read_page(requester, &mut current, listing, oversize, page)?
        else {
            return Ok(Vec::new());
        };
        // A server that clamps `per_page` says so; later offsets use its size.
        if let Some(Ok(served)) = response
            .header("x-per-page")
            .map(|v| v.trim().parse::<u64>().map_err(drop))
            && served >= 1
            && served < current.size
        {
            walk.ceiling = walk.ceiling.min(served);
            current.size = served;
        }
        let list: Result<Vec<T>, String> = match read_otherwise {
            Some(items) => items,
            None => serde_json::from_slice(&response.body).map_err(|e| e.to_string()),
        };
        let list = list.map_err(|e| {
            incomplete(format!(
                "page {page} (GET {}) is not the expected list: {e}",
                current.request.route()
            ))
        })?;
        let count = list.len() as u64;
        items.extend(list);
        match walk.after(&response, &current, count) {
            Ok(None) => return Ok(items),
            Ok(Some(next)) => current = next,
            Err(reason) => return Err(incomplete(reason)),
        }
    }
}

/// One page's answer, and its items when the caller's other way read them; `None` when the
/// first page says the listed path does not exist and the listing allows that (empty).
type PageAnswer<T> = Option<(RawResponse, Option<Result<Vec<T>, String>>)>;

/// Reads one page, asking again at a smaller size while it exceeds the body limit, and at
/// one item by the caller's other way when it has one.
fn read_page<T>(
    requester: &Requester,
    current: &mut PageRequest,
    listing: &Listing<'_>,
    oversize: Option<OversizePage<'_, T>>,
    page: u32,
) -> Result<PageAnswer<T>, ForgeError> {
    loop {
        match requester.read_bounded(&current.request) {
            Ok(response) => return Ok(Some((response, None))),
            Err(ReadFailure::BodyTooLarge { limit, error }) => match current.smaller() {
                Some(smaller) => *current = smaller,
                None => {
                    let Some(read) = oversize else {
                        return Err(too_large(error, listing, page, current, limit));
                    };
                    return match read(&current.request) {
                        Ok((response, items)) => Ok(Some((response, Some(items)))),
                        Err(ReadFailure::BodyTooLarge { limit, error }) => {
                            Err(too_large(error, listing, page, current, limit))
                        }
                        Err(ReadFailure::Failed(error)) => Err(on_page(error, page)),
                        // A listing is read without a content budget: this cannot happen.
                        Err(failure @ ReadFailure::OverBudget { .. }) => {
                            Err(on_page(failure.into_error(), page))
                        }
                    };
                }
            },
            Err(ReadFailure::Failed(error))
                if page == 1 && listing.missing_is_empty && is_absent_content(&error) =>
            {
                return Ok(None);
            }
            // A request that still fails after its retries is a forge failure, not a
            // listing that GitLab says is incomplete: the caller must not publish on it
            // (docs/contract.md#desired-state).
            Err(ReadFailure::Failed(error)) => return Err(on_page(error, page)),
            // A listing is read without a content budget: this cannot happen.
            Err(failure @ ReadFailure::OverBudget { .. }) => {
                return Err(on_page(failure.into_error(), page));
            }
        }
    }
}

/// Where a listing has been: what proves it complete and refuses a loop.
struct Walk {
    /// The API base a next link must stay under.
    base: Url,
    /// Every page URL asked so far.
    fetched: HashSet<String>,
    /// The largest page size the server has shown it honours (lowered by `X-Per-Page`).
    ceiling: u64,
    /// The page just read, from 1.
    page: u32,
    /// Page cap.
    max_pages: u32,
}

impl Walk {
    /// After `current`'s answer of `count` items: `None` when the listing is complete, the
    /// next page's request, or why the listing cannot be proven complete.
    fn after(
        &self,
        response: &RawResponse,
        current: &PageRequest,
        count: u64,
    ) -> Result<Option<PageRequest>, String> {
        let page = self.page;
        let next = match next_page(response, &current.request.url) {
            Ok(Next::Last) => return Ok(None),
            Ok(Next::Unknown) if count < current.size => return Ok(None),
            Ok(Next::Unknown) => {
                return Err(format!(
                    "page {page} is full ({count} items) but carries neither X-Next-Page nor a Link header, so \
                     the listing cannot be proven complete"
                ));
            }
            Ok(Next::At(url)) => url,
            Err(reason) => return Err(format!("page {page}: {reason}")),
        };
        check_next_link(&next, &self.base).map_err(|reason| format!("page {page}: {reason}"))?;
        let next = PageRequest::new(next, false, self.ceiling);
        let backwards = match (current.paging, next.paging) {
            (Paging::Offset { offset: now }, Paging::Offset { offset: then }) => then <= now,
            _ => false,
        };
        if backwards || self.fetched.contains(next.request.url.as_str()) {
            return Err(format!(
                "page {page}: the next page {} was already fetched or is not after this one (a pagination loop)",
                next.request.url.path()
            ));
        }
        if page >= self.max_pages {
            return Err(format!(
                "more than {} pages of up to {PER_PAGE} items; giving up",
                self.max_pages
            ));
        }
        Ok(Some(next.grown(self.ceiling)))
    }
}

/// The error of a page that exceeds the body limit even at one item per page (or whose
/// size cannot be changed): names the listing, the page, where it starts and the limit.
fn too_large(
    error: ForgeError,
    listing: &Listing<'_>,
    page: u32,
    request: &PageRequest,
    limit: u64,
) -> ForgeError {
    let at = match request.first_item() {
        Some(item) => format!(" (from item {item})"),
        None => String::new(),
    };
    let how = if request.size <= 1 {
        "even at per_page=1".to_owned()
    } else {
        format!(
            "at per_page={} and its page size cannot be changed",
            request.size
        )
    };
    let message = format!(
        "page {page} of {}{at} is larger than the {limit}-byte response body limit {how}",
        listing.what
    );
    match error {
        ForgeError::Decode { method, route, .. } => ForgeError::Decode {
            method,
            route,
            message,
        },
        other => other,
    }
}

/// Names the page in a failed request's message, keeping the error's kind.
fn on_page(error: ForgeError, page: u32) -> ForgeError {
    match error {
        ForgeError::Status {
            method,
            route,
            status,
            message,
        } => ForgeError::Status {
            method,
            route,
            status,
            message: format!("{message} (page {page})"),
        },
        ForgeError::Transport {
            method,
            route,
            message,
            cause,
        } => ForgeError::Transport {
            method,
            route,
            message: format!("{message} (page {page})"),
            cause,
        },
        other => other,
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// The headers say this was the last page.
    Last,
    /// No pagination header at all.
    Unknown,
    /// The next page's URL.
    At(Url),
}

/// Reads the next page from `X-Next-Page` (preferred) or `Link`.
fn next_page(response: &RawResponse, current: &Url) -> Result<Next, String> {
    if let Some(value) = response.header("x-next-page") {
        let value = value.trim();
        if value.is_empty() {
            return Ok(Next::Last);
        }
        let number: u64 = value
            .parse()
            .map_err(|_| format!("X-Next-Page is not a page number: {value:?}"))?;
        let mut url = current.clone();
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, _)| k != "page")
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        url.query_pairs_mut()
            .clear()
            .extend_pairs(kept)
            .append_pair("page", &number.to_string());
        return Ok(Next::At(url));
    }
    let mut any_link = false;
    for value in response.header_all("link") {
        any_link = true;
        for (target, rels) in parse_link_header(value) {
            if rels.iter().any(|r| r.eq_ignore_ascii_case("next")) {
                let url = current
                    .join(&target)
                    .map_err(|e| format!("unusable next link: {e}"))?;
                return Ok(Next::At(url));
            }
        }
    }
    Ok(if any_link { Next::Last } else { Next::Unknown })
}

/// Parses an RFC 8288 `Link` header value into (target, rel values).
fn parse_link_header(value: &str) -> Vec<(String, Vec<String>)> {
    let mut links = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find('<') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('>') else { break };
        let target = after[..end].trim().to_owned();
        let mut params = &after[end + 1..];
        // Parameters run until the next comma outside a quoted string.
        let mut in_quotes = false;
        let mut cut = params.len();
        for (i, c) in params.char_indices() {
            match c {
                '"' => in_quotes = !in_quotes,
                ',' if !in_quotes => {
                    cut = i;
                    break;
                }
                _ => {}
            }
        }
        let param_text = &params[..cut];
        params = &params[cut..];
        let mut rels = Vec::new();
        for param in param_text.split(';') {
            if let Some((name, value)) = param.split_once('=')
                && name.trim().eq_ignore_ascii_case("rel")
            {
                rels.extend(
                    value
                        .trim()
                        .trim_matches('"')
                        .split_whitespace()
                        .map(str::to_owned),
                );
            }
        }
        links.push((target, rels));
        rest = params;
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(headers: &[(&str, &str)]) -> RawResponse {
        RawResponse {
            status: 200,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned()))
                .collect(),
            body: b"[]".to_vec(),
        }
    }

    fn page_request(url: &str, first: bool) -> PageRequest {
        PageRequest::new(Url::parse(url).unwrap(), first, PER_PAGE as u64)
    }

    #[test]
    fn aligned_sizes_divide_the_offset() {
        assert_eq!(aligned_size(0, 50), 50);
        assert_eq!(aligned_size(100, 50), 50);
        assert_eq!(aligned_size(25, 12), 5);
        assert_eq!(aligned_size(75, 37), 25);
        assert_eq!(aligned_size(7, 3), 1);
        assert_eq!(aligned_size(7, 0), 1);
        for offset in 0..300u64 {
            for at_most in 1..=100u64 {
                let size = aligned_size(offset, at_most);
                assert!((1..=at_most).contains(&size));
                assert_eq!(offset % size, 0, "{offset} {at_most}");
            }
        }
    }

    #[test]
    fn query_values_are_replaced_in_place() {
        let mut url = Url::parse("https://gl/x?a=1&per_page=100&b=2&per_page=7").unwrap();
        set_query_values(&mut url, &[("per_page", "50".into()), ("page", "3".into())]);
        assert_eq!(url.query(), Some("a=1&per_page=50&b=2&page=3"));
    }

    #[test]
    fn a_page_is_asked_again_smaller_at_the_same_offset() {
        // First page: halved down to one.
        let first = page_request("https://gl/api/v4/x?sort=asc&per_page=100", true);
        assert_eq!(first.paging, Paging::Offset { offset: 0 });
        let sizes: Vec<u64> = std::iter::successors(Some(first), PageRequest::smaller)
            .map(|r| r.size)
            .collect();
        assert_eq!(sizes, vec![100, 50, 25, 12, 6, 3, 1]);

        // Page 3 at 50 starts at item 100: it grows back to page 2 of 100, or shrinks to
        // page 5 of 25, the same offset either way.
        let third = page_request("https://gl/api/v4/x?per_page=50&page=3", false);
        assert_eq!(third.paging, Paging::Offset { offset: 100 });
        let grown = third.clone().grown(100);
        assert_eq!(grown.request.url.query(), Some("per_page=100&page=2"));
        let smaller = third.smaller().unwrap();
        assert_eq!(smaller.request.url.query(), Some("per_page=25&page=5"));

        // At 25, page 2 starts at 25: 12 does not divide it, 5 does.
        let at_25 = page_request("https://gl/api/v4/x?per_page=25&page=2", false);
        let smaller = at_25.smaller().unwrap();
        assert_eq!(smaller.size, 5);
        assert_eq!(smaller.request.url.query(), Some("per_page=5&page=6"));
        assert_eq!(smaller.paging, Paging::Offset { offset: 25 });

        // Growth is bounded by the ceiling and stays aligned.
        let at_1 = page_request("https://gl/api/v4/x?per_page=1&page=8", false);
        assert_eq!(
            at_1.clone().grown(100).size,
            1,
            "offset 7: only 1 divides it"
        );
        let at_1 = page_request("https://gl/api/v4/x?per_page=1&page=9", false);
        assert_eq!(
            at_1.clone().grown(100).request.url.query(),
            Some("per_page=2&page=5")
        );
        let capped = page_request("https://gl/api/v4/x?per_page=3&page=3", false);
        assert_eq!(capped.clone().grown(3).size, 3, "never above the ceiling");
        assert!(
            page_request("https://gl/x?per_page=1&page=2", false)
                .smaller()
                .is_none()
        );
    }

    #[test]
    fn cursor_links_change_only_their_size_and_fixed_ones_never() {
        let cursor = page_request("https://gl/api/v4/x?cursor=abc&per_page=40", false);
        assert_eq!(cursor.paging, Paging::Cursor);
        let smaller = cursor.smaller().unwrap();
        assert_eq!(smaller.request.url.query(), Some("cursor=abc&per_page=20"));
        assert_eq!(
            smaller.grown(100).request.url.query(),
            Some("cursor=abc&per_page=40")
        );
        let fixed = page_request("https://gl/api/v4/x?page=2", false);
        assert_eq!(fixed.paging, Paging::Fixed);
        assert!(fixed.smaller().is_none());
        assert_eq!(fixed.clone().grown(100).request.url, fixed.request.url);
        let garbled = page_request("https://gl/api/v4/x?page=two&per_page=10", false);
        assert_eq!(garbled.paging, Paging::Fixed);
    }

    #[test]
    fn next_links_keep_the_origin_the_base_path_and_carry_no_credentials() {
        let base = Url::parse("http://gl.example:8080/api/v4/").unwrap();
        let ok = Url::parse("http://gl.example:8080/api/v4/x?page=2").unwrap();
        assert_eq!(check_next_link(&ok, &base), Ok(()));
        for (link, says) in [
            (
                "http://user:s3cret@gl.example:8080/api/v4/x?page=2",
                "user-info",
            ),
            ("http://user@gl.example:8080/api/v4/x?page=2", "user-info"),
            (
                "http://:s3cret@gl.example:8080/api/v4/x?page=2",
                "user-info",
            ),
            ("https://gl.example:8080/api/v4/x?page=2", "another origin"),
            ("http://gl.example:8081/api/v4/x?page=2", "another origin"),
            (
                "http://other.example:8080/api/v4/x?page=2",
                "another origin",
            ),
            (
                "http://gl.example:8080/admin/x?page=2",
                "leaves the API base",
            ),
            (
                "http://gl.example:8080/api/v4/../../admin?page=2",
                "leaves the API base",
            ),
        ] {
            let reason = check_next_link(&Url::parse(link).unwrap(), &base).unwrap_err();
            assert!(reason.contains(says), "{link}: {reason}");
            assert!(
                !reason.contains("s3cret")
                    && !reason.contains("user@")
                    && !reason.contains("user:"),
                "{reason}"
            );
        }
    }

    #[test]
    fn link_header_parsing() {
        let links = parse_link_header(
            r#"<https://gl.example/api/v4/x?page=2&per_page=100>; rel="next", <https://gl.example/api/v4/x?page=1>; rel="first", <https://gl/x?a=1,2>; title="a, b"; rel="last prev""#,
        );
        assert_eq!(links.len(), 3);
        assert_eq!(
            links[0],
            (
                "https://gl.example/api/v4/x?page=2&per_page=100".into(),
                vec!["next".to_string()]
            )
        );
        assert_eq!(links[2].1, vec!["last".to_string(), "prev".to_string()]);
        assert!(parse_link_header("garbage").is_empty());
    }

    #[test]
    fn next_page_prefers_x_next_page_and_replaces_page() {
        let current = Url::parse("https://gl.example/api/v4/x?per_page=100&page=1").unwrap();
        let next = next_page(
            &response(&[
                ("X-Next-Page", "2"),
                ("Link", "<https://evil/x>; rel=\"next\""),
            ]),
            &current,
        );
        assert_eq!(
            next,
            Ok(Next::At(
                Url::parse("https://gl.example/api/v4/x?per_page=100&page=2").unwrap()
            ))
        );
        assert_eq!(
            next_page(&response(&[("X-Next-Page", "")]), &current),
            Ok(Next::Last)
        );
        assert!(next_page(&response(&[("X-Next-Page", "two")]), &current).is_err());
        assert_eq!(next_page(&response(&[]), &current), Ok(Next::Unknown));
        assert_eq!(
            next_page(
                &response(&[("Link", "<https://gl.example/a>; rel=\"first\"")]),
                &current
            ),
            Ok(Next::Last)
        );
        assert_eq!(
            next_page(
                &response(&[("Link", "</api/v4/x?page_token=abc>; rel=\"next\"")]),
                &current
            ),
            Ok(Next::At(
                Url::parse("https://gl.example/api/v4/x?page_token=abc").unwrap()
            ))
        );
    }
}
