//! The pagination driver: every page of a GitLab listing, or an error.
//!
//! * The first request asks for `per_page=100`.
//! * The next page comes from `X-Next-Page` (empty = this was the last page); when that header
//!   is absent, from `Link: <…>; rel="next"` (absent `next` = last page). A next link must
//!   have the API base's origin (scheme, host, port), else the listing fails: the token is
//!   never sent to another origin.
//! * `X-Total`/`X-Total-Pages` are never read (GitLab omits them above 10,000 items and they
//!   can be stale); completeness comes only from the next-page headers.
//! * A page with neither header is accepted as the last one only when it is not full (fewer
//!   than 100 items); a full page without headers cannot be proven last and fails the listing.
//! * Each page goes through the read retry policy; a page that still fails returns that
//!   request's error (a forge failure). A page that is not a JSON list, a full page without
//!   pagination headers, a next page already fetched (a loop) or more than `max_pages` pages
//!   is [`ForgeError::IncompleteListing`]. Either way the caller gets every item or none.

use std::collections::HashSet;

use serde::de::DeserializeOwned;
use url::Url;

use super::forge::is_absent_content;
use super::retry::Requester;
use super::transport::{Method, PreparedRequest, RawResponse};
use crate::forge::ForgeError;

/// Items asked for per page.
pub const PER_PAGE: usize = 100;
/// Default cap on the pages of one listing (200,000 items).
pub const DEFAULT_MAX_PAGES: u32 = 2_000;

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

/// Fetches every page of `first` and decodes each as a JSON list of `T`.
pub(crate) fn list_all<T: DeserializeOwned>(
    requester: &Requester,
    first: PreparedRequest,
    listing: &Listing<'_>,
) -> Result<Vec<T>, ForgeError> {
    let incomplete = |reason: String| ForgeError::IncompleteListing {
        what: listing.what.to_owned(),
        reason,
    };
    let mut request = first;
    debug_assert_eq!(request.method, Method::Get);
    request.set_query_param("per_page", &PER_PAGE.to_string());
    let base = requester.transport.base().clone();
    let mut fetched: HashSet<String> = HashSet::new();
    let mut items = Vec::new();
    let mut page = 0u32;
    loop {
        page += 1;
        fetched.insert(request.url.as_str().to_owned());
        let response = match requester.read(&request) {
            Ok(response) => response,
            Err(error) if page == 1 && listing.missing_is_empty && is_absent_content(&error) => {
                return Ok(Vec::new());
            }
            // A request that still fails after its retries is a forge failure, not a listing
            // that GitLab says is incomplete: the caller must not publish on it (SPEC §3).
            Err(error) => return Err(on_page(error, page)),
        };
        let list: Vec<T> = serde_json::from_slice(&response.body).map_err(|e| {
            incomplete(requester.transport.redact(format!(
                "page {page} (GET {}) is not the expected list: {e}",
                request.route()
            )))
        })?;
        let count = list.len();
        items.extend(list);
        let next = match next_page(&response, &request.url) {
            Ok(Next::Last) => return Ok(items),
            Ok(Next::Unknown) if count < PER_PAGE => return Ok(items),
            Ok(Next::Unknown) => {
                return Err(incomplete(format!(
                    "page {page} is full ({count} items) but carries neither X-Next-Page nor a Link header, so \
                     the listing cannot be proven complete"
                )));
            }
            Ok(Next::At(url)) => url,
            Err(reason) => return Err(incomplete(format!("page {page}: {reason}"))),
        };
        if next.origin() != base.origin() {
            return Err(incomplete(format!(
                "page {page}: the next-page link points to another origin ({}), not followed",
                next.origin().ascii_serialization()
            )));
        }
        if fetched.contains(next.as_str()) {
            return Err(incomplete(format!(
                "page {page}: the next page {} was already fetched (a pagination loop)",
                next.path()
            )));
        }
        if page >= listing.max_pages {
            return Err(incomplete(format!(
                "more than {} pages of {PER_PAGE} items; giving up",
                listing.max_pages
            )));
        }
        request = PreparedRequest {
            method: Method::Get,
            url: next,
            body: None,
        };
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
        } => ForgeError::Transport {
            method,
            route,
            message: format!("{message} (page {page})"),
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
