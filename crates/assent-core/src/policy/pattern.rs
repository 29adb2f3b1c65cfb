//! File globs and JSON-pointer patterns: the two halves of a rule's `match` and of an
//! identity declaration.
//!
//! * File globs use `globset` with `literal_separator(true)`, so `*` stays within one
//!   directory and only `**` crosses directories (`topics/*.yaml` does not match
//!   `topics/old/a.yaml`).
//! * Pointer patterns work on RFC 6901 reference tokens, never on raw text: both the pattern
//!   and the pointer are split on `/` and each token is unescaped (`~1` → `/`, `~0` → `~`)
//!   before literal comparison, so a key containing `/` is written `a~1b` in a pattern and
//!   matches the pointer `/a~1b`. A segment that is exactly `*` matches one token; exactly
//!   `**` matches zero or more tokens. A `*` anywhere else in a segment is rejected rather
//!   than silently read as a literal, because `/topics/orders*` would otherwise look like a
//!   prefix match that never fires. Consequence: a key literally named `*` cannot be matched
//!   by name (use `*`).

use globset::{GlobBuilder, GlobMatcher};

/// Why a file glob or pointer pattern was rejected at load time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// `globset` refused the glob.
    #[error("invalid file glob `{glob}`: {reason}")]
    Glob {
        /// The glob as written.
        glob: String,
        /// `globset`'s explanation.
        reason: String,
    },
    /// A non-empty pointer pattern must start with `/` (RFC 6901).
    #[error("invalid pointer pattern `{0}`: must be empty or start with `/`")]
    NoLeadingSlash(String),
    /// A `~` not followed by `0` or `1`.
    #[error("invalid pointer pattern `{0}`: `~` must be followed by `0` or `1`")]
    BadEscape(String),
    /// A segment mixing `*` with other characters.
    #[error("invalid pointer pattern `{0}`: `*` and `**` must be a whole segment")]
    PartialWildcard(String),
}

/// A compiled repository-path glob.
#[derive(Debug, Clone)]
pub struct FileGlob {
    source: String,
    matcher: GlobMatcher,
}

impl FileGlob {
    /// Compiles `glob` with `*` confined to one path component.
    pub fn new(glob: &str) -> Result<Self, PatternError> {
        let compiled = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| PatternError::Glob {
                glob: glob.to_owned(),
                reason: e.kind().to_string(),
            })?;
        Ok(FileGlob {
            source: glob.to_owned(),
            matcher: compiled.compile_matcher(),
        })
    }

    /// Whether the repository path `path` matches.
    pub fn is_match(&self, path: &str) -> bool {
        self.matcher.is_match(path)
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether every path `other` matches is matched by `self` as well, decided component
    /// by component (split on `/`): a `**` component covers any run of components, `*`
    /// covers one component without `**`, and any other component covers an equal one, or
    /// a component without glob syntax (`*?[]{}`) that it matches as a one-component glob.
    ///
    /// An approximation that errs on one side only: `true` is always right, but some
    /// containments that need the glob's full semantics are not seen (`topics/*.yaml` does
    /// not cover `topics/{a,b}.yaml` here), so a lint warning built on it can be a false
    /// alarm and never a missed gap.
    pub fn covers(&self, other: &FileGlob) -> bool {
        let wide: Vec<&str> = self.source.split('/').collect();
        let narrow: Vec<&str> = other.source.split('/').collect();
        covers_by(
            &wide,
            &narrow,
            |w| *w == "**",
            |w, n| match (*w, *n) {
                (_, "**") => false,
                ("*", _) => true,
                (w, n) if w == n => true,
                (w, n) if !n.contains(['*', '?', '[', ']', '{', '}']) => GlobBuilder::new(w)
                    .literal_separator(true)
                    .build()
                    .is_ok_and(|glob| glob.compile_matcher().is_match(n)),
                _ => false,
            },
        )
    }
}

/// Whether the segments `wide` match everything the segments `narrow` match, where
/// `any_run(w)` says a wide segment matches any run of segments (`**`), whatever they are,
/// and `one(w, n)` whether it covers the one narrow segment `n`. A dynamic programme over
/// (wide, narrow) positions, so many `**` cannot make it exponential.
fn covers_by<W, N>(
    wide: &[W],
    narrow: &[N],
    any_run: impl Fn(&W) -> bool,
    one: impl Fn(&W, &N) -> bool,
) -> bool {
    // reach[j]: the first i wide segments cover exactly the first j narrow ones.
    let mut reach = vec![false; narrow.len() + 1];
    reach[0] = true;
    for w in wide {
        let mut next = vec![false; narrow.len() + 1];
        let run = any_run(w);
        for j in 0..=narrow.len() {
            next[j] = if run {
                reach[j] || (j > 0 && next[j - 1])
            } else {
                j > 0 && reach[j - 1] && one(w, &narrow[j - 1])
            };
        }
        reach = next;
    }
    reach[narrow.len()]
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// One token, compared after unescaping.
    Literal(String),
    /// `*`: exactly one token.
    One,
    /// `**`: zero or more tokens.
    Any,
}

/// A compiled pointer pattern such as `/topics/*/retention_days` or `/**`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointerPattern {
    source: String,
    segments: Vec<Segment>,
}

impl PointerPattern {
    /// Compiles a pattern. `""` matches only the whole-document pointer `""`.
    pub fn new(pattern: &str) -> Result<Self, PatternError> {
        if pattern.is_empty() {
            return Ok(PointerPattern {
                source: String::new(),
                segments: Vec::new(),
            });
        }
        let Some(rest) = pattern.strip_prefix('/') else {
            return Err(PatternError::NoLeadingSlash(pattern.to_owned()));
        };
        let mut segments = Vec::new();
        for raw in rest.split('/') {
            let segment = match raw {
                "*" => Segment::One,
                "**" => Segment::Any,
                _ if raw.contains('*') => {
                    return Err(PatternError::PartialWildcard(pattern.to_owned()));
                }
                _ => Segment::Literal(
                    unescape_token(raw)
                        .ok_or_else(|| PatternError::BadEscape(pattern.to_owned()))?,
                ),
            };
            segments.push(segment);
        }
        Ok(PointerPattern {
            source: pattern.to_owned(),
            segments,
        })
    }

    /// The pattern that matches every pointer, `""` included (the default of `match.pointer`).
    pub fn everything() -> Self {
        PointerPattern {
            source: "/**".to_owned(),
            segments: vec![Segment::Any],
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the RFC 6901 pointer `pointer` matches.
    pub fn is_match(&self, pointer: &str) -> bool {
        let tokens = pointer_tokens(pointer);
        matches(&self.segments, &tokens)
    }

    /// Whether every pointer `other` matches is matched by `self` as well: exact for these
    /// patterns, segment by segment. A `**` covers any run of segments (`*`, `**` and
    /// literals alike), a `*` covers one `*` or one literal, a literal only the same literal;
    /// a `**` of `other` is covered only by a `**`.
    pub fn covers(&self, other: &PointerPattern) -> bool {
        covers_by(
            &self.segments,
            &other.segments,
            |w| *w == Segment::Any,
            |w, n| match (w, n) {
                (_, Segment::Any) => false,
                (Segment::One, _) => true,
                (Segment::Literal(a), Segment::Literal(b)) => a == b,
                _ => false,
            },
        )
    }
}

/// Matches segments against tokens with a dynamic programme over (segment, token) positions:
/// linear in their product, so a pattern with many `**` cannot make matching exponential.
fn matches(segments: &[Segment], tokens: &[String]) -> bool {
    // reach[j]: the first i segments can consume exactly the first j tokens.
    let mut reach = vec![false; tokens.len() + 1];
    reach[0] = true;
    for segment in segments {
        let mut next = vec![false; tokens.len() + 1];
        for j in 0..=tokens.len() {
            match segment {
                Segment::Any => next[j] = reach[j] || (j > 0 && next[j - 1]),
                Segment::One => next[j] = j > 0 && reach[j - 1],
                Segment::Literal(lit) => next[j] = j > 0 && reach[j - 1] && tokens[j - 1] == *lit,
            }
        }
        reach = next;
    }
    reach[tokens.len()]
}

/// Splits an RFC 6901 pointer into unescaped reference tokens. `""` has none; `"/"` has one
/// empty token. A malformed escape is kept verbatim: pointers come from the semantic diff,
/// which only produces valid ones, and matching must not fail on data.
pub fn pointer_tokens(pointer: &str) -> Vec<String> {
    match pointer.strip_prefix('/') {
        None => Vec::new(),
        Some(rest) => rest
            .split('/')
            .map(|t| unescape_token(t).unwrap_or_else(|| t.to_owned()))
            .collect(),
    }
}

/// Unescapes one reference token (`~1` → `/`, `~0` → `~`); `None` on a bad escape.
pub fn unescape_token(token: &str) -> Option<String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(p: &str) -> PointerPattern {
        PointerPattern::new(p).unwrap()
    }

    #[test]
    fn file_glob_star_stays_in_one_directory() {
        let g = FileGlob::new("topics/*.yaml").unwrap();
        assert!(g.is_match("topics/orders.yaml"));
        assert!(!g.is_match("topics/old/orders.yaml"));
        assert!(!g.is_match("other/topics/orders.yaml"));
        let deep = FileGlob::new("topics/**/*.yaml").unwrap();
        assert!(deep.is_match("topics/orders.yaml"));
        assert!(deep.is_match("topics/a/b/orders.yaml"));
        assert!(!deep.is_match("topics/a/b/orders.json"));
        assert!(matches!(
            FileGlob::new("topics/[a.yaml"),
            Err(PatternError::Glob { .. })
        ));
    }

    #[test]
    fn star_is_exactly_one_segment() {
        let p = pat("/topics/*/retention_days");
        assert!(p.is_match("/topics/orders.events.v1/retention_days"));
        assert!(!p.is_match("/topics/retention_days"));
        assert!(!p.is_match("/topics/a/b/retention_days"));
        assert!(!p.is_match("/topics/a/retention_days/x"));
    }

    #[test]
    fn double_star_is_zero_or_more_segments() {
        let p = pat("/topics/**/retention_days");
        assert!(p.is_match("/topics/retention_days"));
        assert!(p.is_match("/topics/a/retention_days"));
        assert!(p.is_match("/topics/a/b/c/retention_days"));
        assert!(!p.is_match("/topics/a/b/c/partitions"));
        let all = pat("/**");
        for ptr in ["", "/", "/a", "/a/b/c"] {
            assert!(all.is_match(ptr), "{ptr:?}");
            assert!(PointerPattern::everything().is_match(ptr), "{ptr:?}");
        }
        let p = pat("/**/**/x/**");
        assert!(p.is_match("/x"));
        assert!(p.is_match("/a/b/x/c"));
        assert!(!p.is_match("/a/b/c"));
    }

    #[test]
    fn pointer_coverage_is_containment_of_what_they_match() {
        let covers = |wide: &str, narrow: &str| pat(wide).covers(&pat(narrow));
        let pointer = "/topics/*/retention_days";
        for wide in [
            pointer,
            "/topics/*/*",
            "/topics/**",
            "/**",
            "/**/retention_days",
            "/topics/**/retention_days",
            "/*/*/retention_days",
        ] {
            assert!(covers(wide, pointer), "{wide} covers {pointer}");
        }
        for narrow in [
            "/topics/*",
            "/topics/orders/retention_days/x",
            "/topics/**/retention_days",
            "/topics/*/partitions",
            "",
        ] {
            assert!(
                !covers(pointer, narrow),
                "{pointer} does not cover {narrow}"
            );
        }
        assert!(covers(pointer, "/topics/orders.v1/retention_days"));
        assert!(!covers("/topics/orders.v1/retention_days", pointer));
        assert!(
            !covers("/topics/*", pointer),
            "a parent is not its descendants"
        );
        assert!(covers("", ""));
        assert!(covers("/**", ""));
        assert!(!covers("/topics/**", ""));
        assert!(!covers("/**/x", "/**"));
        assert!(covers("/**/**", "/a/**/b"));
    }

    #[test]
    fn glob_coverage_errs_only_towards_not_covered() {
        let glob = |g: &str| FileGlob::new(g).unwrap();
        let covers = |wide: &str, narrow: &str| glob(wide).covers(&glob(narrow));
        assert!(covers("topics/*.yaml", "topics/*.yaml"));
        assert!(covers("topics/*", "topics/*.yaml"));
        assert!(covers("**", "topics/*.yaml"));
        assert!(covers("topics/**", "topics/a/*.yaml"));
        assert!(covers("**/*.yaml", "topics/orders.yaml"));
        assert!(covers("topics/*.yaml", "topics/orders.yaml"));
        assert!(!covers("topics/*.yaml", "topics/*"));
        assert!(!covers("topics/*.yaml", "topics/**/*.yaml"));
        assert!(!covers("topics/*.yaml", "other/*.yaml"));
        assert!(!covers("topics/*.yml", "topics/*.yaml"));
        // Not seen, though true: the approximation's one side.
        assert!(!covers("topics/*.yaml", "topics/{a,b}.yaml"));
    }

    #[test]
    fn empty_pattern_matches_only_the_whole_document() {
        let p = pat("");
        assert!(p.is_match(""));
        assert!(!p.is_match("/"));
        assert!(!p.is_match("/a"));
        // "/" is one empty token, distinct from "".
        assert!(pat("/").is_match("/"));
        assert!(!pat("/").is_match(""));
    }

    #[test]
    fn tokens_are_unescaped_before_comparison() {
        // The key `a/b` is `a~1b` in a pointer; the pattern spells it the same way.
        let p = pat("/paths/a~1b/x~0y");
        assert!(p.is_match("/paths/a~1b/x~0y"));
        assert!(!p.is_match("/paths/a/b/x~0y"));
        assert!(!p.is_match("/paths/a~1b/x~1y"));
        // `*` matches an escaped token as one segment.
        assert!(pat("/paths/*/get").is_match("/paths/~1v1~1orders/get"));
        assert_eq!(pointer_tokens("/a~1b/~0/"), vec!["a/b", "~", ""]);
        assert_eq!(pointer_tokens(""), Vec::<String>::new());
    }

    #[test]
    fn malformed_patterns_are_rejected() {
        assert!(matches!(
            PointerPattern::new("topics/*"),
            Err(PatternError::NoLeadingSlash(_))
        ));
        assert!(matches!(
            PointerPattern::new("/a~2"),
            Err(PatternError::BadEscape(_))
        ));
        assert!(matches!(
            PointerPattern::new("/a~"),
            Err(PatternError::BadEscape(_))
        ));
        assert!(matches!(
            PointerPattern::new("/orders*"),
            Err(PatternError::PartialWildcard(_))
        ));
        assert!(matches!(
            PointerPattern::new("/***"),
            Err(PatternError::PartialWildcard(_))
        ));
    }
}
