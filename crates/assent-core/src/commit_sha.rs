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

/// A commit SHA known to be in GitLab's form (40 or 64 lowercase hex digits).
///
/// Constructed only by [`CommitSha::parse`], so holding one is proof the text was checked:
/// a value that was never a SHA cannot reach a pin, a marker or a blob link. Serialises as
/// the plain string; deserialising goes through the same parser, so a receipt or fixture
/// naming a malformed SHA fails to load instead of carrying it on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommitSha(String);

/// Why a text is not a commit SHA.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a commit SHA: expected 40 or 64 hexadecimal digits")]
pub struct NotACommitSha {
    /// The refused text, as given.
    pub text: String,
}

impl CommitSha {
    /// Reads a commit SHA: surrounding case is normalised to GitLab's lowercase; refused
    /// when it is not 40 or 64 hex digits.
    pub fn parse(text: &str) -> Result<CommitSha, NotACommitSha> {
        let lower = text.to_ascii_lowercase();
        if is_commit_sha(&lower) {
            Ok(CommitSha(lower))
        } else {
            Err(NotACommitSha {
                text: text.to_owned(),
            })
        }
    }

    /// The SHA as GitLab spells it (lowercase hex).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 8 hex digits, the form summaries and logs print.
    pub fn short(&self) -> &str {
        short(&self.0)
    }
}

impl std::fmt::Display for CommitSha {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for CommitSha {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for CommitSha {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for CommitSha {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl std::str::FromStr for CommitSha {
    type Err = NotACommitSha;

    fn from_str(text: &str) -> Result<CommitSha, NotACommitSha> {
        CommitSha::parse(text)
    }
}

impl serde::Serialize for CommitSha {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for CommitSha {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<CommitSha, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        CommitSha::parse(&text).map_err(serde::de::Error::custom)
    }
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
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_40_or_64_lowercase_hex_is_a_commit_sha(
            digits in "[0-9a-f]{40}|[0-9a-f]{64}"
        ) {
            let sha = CommitSha::parse(&digits).unwrap();
            prop_assert_eq!(sha.as_str(), digits.as_str());
            prop_assert_eq!(sha.short(), &digits[..8]);
            let json = serde_json::to_string(&sha).unwrap();
            prop_assert_eq!(&json, &format!("\"{digits}\""));
            prop_assert_eq!(serde_json::from_str::<CommitSha>(&json).unwrap(), sha);
        }

        #[test]
        fn anything_else_is_refused_and_fails_to_deserialize(text in "\\PC{0,70}") {
            let lower = text.to_ascii_lowercase();
            let is_sha = matches!(lower.len(), 40 | 64)
                && lower.bytes().all(|b| b.is_ascii_hexdigit());
            prop_assume!(!is_sha);
            prop_assert!(CommitSha::parse(&text).is_err());
            let json = serde_json::to_string(&text).unwrap();
            prop_assert!(serde_json::from_str::<CommitSha>(&json).is_err());
        }

        #[test]
        fn one_wrong_digit_is_refused(
            digits in "[0-9a-f]{40}",
            at in 0usize..40,
            wrong in "[g-zG-Z ./_-]",
        ) {
            let mut text = digits.clone();
            text.replace_range(at..at + 1, &wrong);
            prop_assert!(CommitSha::parse(&text).is_err());
        }
    }

    #[test]
    fn the_refusal_names_the_text() {
        let error = CommitSha::parse("abc123").unwrap_err();
        assert!(error.to_string().contains("\"abc123\""), "{error}");
        assert!(serde_json::from_str::<CommitSha>("\"\"").is_err());
    }

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
        let parsed = |text: &str| CommitSha::parse(text).ok().map(|sha| sha.to_string());
        assert_eq!(parsed(&"AB".repeat(32)), Some("ab".repeat(32)));
        assert_eq!(parsed(&"ab".repeat(20)), Some("ab".repeat(20)));
        assert_eq!(parsed("abc123"), None);
        assert_eq!(parsed(&"é".repeat(20)), None);
    }

    #[test]
    fn short_never_splits_a_character() {
        assert_eq!(short(&"a".repeat(64)), "aaaaaaaa");
        assert_eq!(short("abc"), "abc");
        assert_eq!(short("ééééééééé"), "éééééééé");
    }
}
