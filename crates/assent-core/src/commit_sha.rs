//! Commit SHAs as GitLab reports them: SHA-1 (40 hex) or SHA-256 (64 hex) repositories.
//!
//! One definition, so that an input, a marker and a fixture accept the same SHAs: a
//! SHA-256 repository must not pass the marker codec and then fail `run`'s input check.

/// True when `text` is a commit SHA in GitLab's form: 40 or 64 lowercase hex digits.
pub fn is_commit_sha(text: &str) -> bool {
    matches!(text.len(), 40 | 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Reads a commit SHA given by a user or CI variable: surrounding case is normalized to
/// GitLab's lowercase; `None` when it is not 40 or 64 hex digits.
pub fn parse_commit_sha(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    is_commit_sha(&lower).then_some(lower)
}

/// The first 8 characters of a SHA (the whole text when shorter), for display.
pub fn short(sha: &str) -> &str {
    match sha.char_indices().nth(8) {
        Some((i, _)) => &sha[..i],
        None => sha,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_hash_lengths_are_commit_shas_and_nothing_else_is() {
        assert!(is_commit_sha(&"a".repeat(40)));
        assert!(is_commit_sha(&"0123456789abcdef".repeat(4)));
        for bad in [
            "a".repeat(39),
            "a".repeat(41),
            "a".repeat(63),
            "a".repeat(65),
            "A".repeat(40),
            "g".repeat(40),
            String::new(),
        ] {
            assert!(!is_commit_sha(&bad), "{bad:?}");
        }
    }

    #[test]
    fn parsing_lowercases_and_refuses_other_lengths() {
        assert_eq!(parse_commit_sha(&"AB".repeat(32)), Some("ab".repeat(32)));
        assert_eq!(parse_commit_sha(&"ab".repeat(20)), Some("ab".repeat(20)));
        assert_eq!(parse_commit_sha("abc123"), None);
        assert_eq!(parse_commit_sha(&"é".repeat(20)), None);
    }

    #[test]
    fn short_never_splits_a_character() {
        assert_eq!(short(&"a".repeat(64)), "aaaaaaaa");
        assert_eq!(short("abc"), "abc");
        assert_eq!(short("ééééééééé"), "éééééééé");
    }
}
