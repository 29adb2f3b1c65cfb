//! Links in bodies: to a thread of the merge request and to a file at a pinned SHA.
//!
//! A link's destination sits inside Markdown, where one wrong character ends it early or
//! turns the rest of a line into something else (docs/contract.md#inert-text). Both of its parts are hostile:
//! the web URL comes from the forge's answer, the path from the merge request. So:
//!
//! * a web URL is used only when it is `http(s)://` followed by characters that can neither
//!   end a link destination nor start Markdown or HTML (letters, digits, `-._~:/%`), with no
//!   user info and within [`MAX_URL_CHARS`]; anything else gives no link (the body still
//!   names the note or file in words or an inert code span);
//! * a path is percent-encoded segment by segment, every byte but the unreserved ones
//!   (`A–Z a–z 0–9 - . _ ~`) written `%XX`, so no character of a file name (`)`, `]`,
//!   spaces, `<`, backticks, newlines, `@`) survives as itself; a path with an empty, `.` or
//!   `..` segment, which no repository holds and a browser would resolve elsewhere, gives no
//!   link;
//! * the link text is fixed wording chosen by the caller, never contributor text.

use crate::commit_sha::CommitSha;

/// Longest web URL or link destination written into a body, in characters. Real ones are
/// far shorter; the bound keeps a summary of many rows within the note budget (docs/contract.md#note-size).
pub const MAX_URL_CHARS: usize = 1_000;

/// A web URL the forge reported, checked to be inert inside a Markdown link destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WebUrl(String);

impl WebUrl {
    /// `text` when it is a safe `http(s)` URL (see the module docs), without a trailing `/`.
    pub fn parse(text: &str) -> Option<WebUrl> {
        let rest = text
            .strip_prefix("https://")
            .or_else(|| text.strip_prefix("http://"))?;
        let host = rest.split('/').next().unwrap_or("");
        let safe = |b: u8| b.is_ascii_alphanumeric() || b"-._~:/%".contains(&b);
        if host.is_empty()
            || text.len() > MAX_URL_CHARS
            || !rest.bytes().all(safe)
            || !valid_escapes(rest)
        {
            return None;
        }
        Some(WebUrl(text.trim_end_matches('/').to_owned()))
    }

    /// The project's web URL from a merge request's (`<project>/-/merge_requests/<iid>`).
    pub fn project_of_merge_request(&self) -> Option<WebUrl> {
        let (project, iid) = self.0.rsplit_once("/-/merge_requests/")?;
        let numeric = !iid.is_empty() && iid.bytes().all(|b| b.is_ascii_digit());
        (numeric && project.contains("://") && !project.ends_with(':'))
            .then(|| WebUrl(project.to_owned()))
    }

    /// The URL.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Every `%` starts an escape of two hex digits (a stray `%` could combine with what
/// follows into a character the check above never saw).
fn valid_escapes(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().all(|(i, &b)| {
        b != b'%'
            || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}

/// `path` percent-encoded per segment (see the module docs), or `None` for a path with an
/// empty, `.` or `..` segment.
pub fn encode_path(path: &str) -> Option<String> {
    let mut out = String::with_capacity(path.len());
    for (i, segment) in path.split('/').enumerate() {
        if segment.is_empty() || segment == "." || segment == ".." {
            return None;
        }
        if i > 0 {
            out.push('/');
        }
        for &b in segment.as_bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    Some(out)
}

/// `<project>/-/blob/<sha>/<path>#L<line>` (no `#L…` without a line), or `None` when the SHA
/// is not a commit SHA, the path cannot be encoded, or the result exceeds [`MAX_URL_CHARS`].
pub fn blob_url(
    project: &WebUrl,
    sha: &CommitSha,
    path: &str,
    line: Option<usize>,
) -> Option<String> {
    let mut url = format!("{}/-/blob/{sha}/{}", project.as_str(), encode_path(path)?);
    if let Some(line) = line {
        url.push_str(&format!("#L{line}"));
    }
    (url.len() <= MAX_URL_CHARS).then_some(url)
}

/// `<merge request URL>#note_<id>`: the first note of a thread.
pub fn note_url(merge_request: &WebUrl, note_id: u64) -> String {
    format!("{}#note_{note_id}", merge_request.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "2222222222222222222222222222222222222222";

    fn project() -> WebUrl {
        WebUrl::parse("https://gitlab.example.com/group/sub/proj").unwrap()
    }

    #[test]
    fn a_merge_request_url_gives_its_project() {
        let mr = WebUrl::parse("https://gitlab.example.com:8443/g/p/-/merge_requests/7").unwrap();
        assert_eq!(
            mr.project_of_merge_request().unwrap().as_str(),
            "https://gitlab.example.com:8443/g/p"
        );
        assert_eq!(note_url(&mr, 12), format!("{}#note_12", mr.as_str()));
        for not_an_mr in [
            "https://h/g/p/-/merge_requests/",
            "https://h/g/p/-/merge_requests/7x",
            "https://h/g/p/-/issues/7",
            "https:///-/merge_requests/7",
        ] {
            let parsed = WebUrl::parse(not_an_mr);
            assert_eq!(
                parsed.and_then(|u| u.project_of_merge_request()),
                None,
                "{not_an_mr}"
            );
        }
    }

    #[test]
    fn only_inert_web_urls_are_used() {
        for bad in [
            "javascript:alert(1)",
            "ftp://h/p",
            "https://",
            "https://h/p) [x](https://evil",
            "https://h/p\n/close",
            "https://h/p <b>",
            "https://user:pw@h/p",
            "https://h/p?q=1",
            "https://h/p#frag",
            "https://h/p`x`",
            "https://h/%zz",
            "https://h/%4",
        ] {
            assert_eq!(WebUrl::parse(bad), None, "{bad:?}");
        }
        let long = format!("https://h/{}", "a".repeat(MAX_URL_CHARS));
        assert_eq!(WebUrl::parse(&long), None);
        assert_eq!(
            WebUrl::parse("http://127.0.0.1:8080/g/p/")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8080/g/p"
        );
    }

    #[test]
    fn hostile_file_names_are_percent_encoded_so_no_character_survives() {
        for (path, encoded) in [
            ("topics/orders.yaml", "topics/orders.yaml"),
            ("a b/c)d.yaml", "a%20b/c%29d.yaml"),
            (
                "x](javascript:alert(1)).yaml",
                "x%5D%28javascript%3Aalert%281%29%29.yaml",
            ),
            ("<img src=x>.json", "%3Cimg%20src%3Dx%3E.json"),
            ("`code`\n@all.toml", "%60code%60%0A%40all.toml"),
            ("é/#L1?.yaml", "%C3%A9/%23L1%3F.yaml"),
        ] {
            assert_eq!(encode_path(path).as_deref(), Some(encoded), "{path:?}");
            let url = blob_url(&project(), &CommitSha::parse(SHA).unwrap(), path, Some(3)).unwrap();
            let destination = url.trim_start_matches("https://");
            assert!(
                destination
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~:/%#".contains(&b)),
                "{url}"
            );
            assert!(
                url.ends_with(&format!("/-/blob/{SHA}/{encoded}#L3")),
                "{url}"
            );
        }
        for refused in ["", "/a", "a/", "a//b", "a/./b", "../b", "a/.."] {
            assert_eq!(encode_path(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn blob_urls_stay_bounded() {
        assert_eq!(
            blob_url(&project(), &CommitSha::parse(SHA).unwrap(), "f.yaml", None).as_deref(),
            Some(
                "https://gitlab.example.com/group/sub/proj/-/blob/2222222222222222222222222222222222222222/f.yaml"
            )
        );
        assert_eq!(
            blob_url(
                &project(),
                &CommitSha::parse(SHA).unwrap(),
                &"x".repeat(MAX_URL_CHARS),
                None
            ),
            None
        );
    }
}
