//! The token, and keeping it out of every text: `Token` never shows itself, and
//! [`redact_secret`] removes it from a text in every form a server or a URL may echo it.
//! Credentials in a proxy or API URL are replaced before that URL is quoted
//! ([`redact_userinfo`]).

use std::fmt;

use url::Url;

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

/// Replaces the user-info of a URL-like text (proxy credentials) before it is quoted. A text
/// without a scheme is read as `http://…` (as a proxy value is); a text with an `@` whose
/// credentials cannot be told apart is replaced whole.
pub(super) fn redact_userinfo(text: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn token_debug_and_display_are_redacted() {
        let t = Token::new("glpat-SECRET");
        assert!(!format!("{t:?}").contains("SECRET"));
        assert!(!format!("{t}").contains("SECRET"));
    }
}
