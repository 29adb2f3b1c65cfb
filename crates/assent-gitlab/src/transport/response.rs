//! A response as received (status, headers, whole body), and GitLab's own explanation read
//! from an error response's body.

/// The longest excerpt of a non-JSON error body quoted in an error.
const EXCERPT_CHARS: usize = 200;

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
}
