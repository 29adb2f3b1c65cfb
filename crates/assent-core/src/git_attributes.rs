//! The built-in `assent/git-attributes`: what git hands a consumer of a governed path is part
//! of the change (docs/policies.md, "Git attributes").
//!
//! A line of a `.gitattributes` file changes what a checkout or an archive of a path contains,
//! or hides its change from review, without touching the path: `topics/orders.yaml
//! export-ignore` takes the file out of every `git archive` (GitLab's archive downloads),
//! `export-subst` expands `$Format:…$` in it there, `filter`, `text`, `eol`, `crlf`,
//! `working-tree-encoding` and `ident` rewrite it on checkout, `-diff` (and the `binary` macro)
//! and `linguist-generated` / `gitlab-generated` hide its diff from a reviewer (GitLab lists
//! such a file as `generated_file`, `lib/api/entities/diff.rb`, and collapses it). No policy
//! rule sees any of that, since the governed file's own content does not change.
//!
//! [`judge`] is pure, so a local check with a checkout can apply the same rule: given each
//! changed `.gitattributes` file's content on both sides and the globs that make a path
//! governed ([`crate::policy::PolicySet::file_globs`]), it finds each line added or removed
//! (a moved line is both, since order decides which line wins) that assigns an attribute
//! named by `effect_of` in any state (set, `-unset`, `!unspecified`, `=value`: each undoes
//! another line) to a pattern that can match a governed path. One `challenge` per
//! `.gitattributes` path, subject `<path>#`; its occurrence covers the lines (as git reads
//! them, with which side) and the globs they reach, so the same edit keeps its thread on a
//! rerun and any other edit of those lines gets a new one.
//!
//! # Reading the file as git does (`gitattributes(5)`, git's `attr.c` and `dir.c`)
//!
//! * A line is a pattern, then attributes, split on blanks (space, tab, CR); a pattern may be
//!   a C-quoted string. Blank lines and lines starting with `#` are nothing. A line of 2048
//!   bytes or more, an attribute with an invalid name, or a pattern starting with `!` (negative
//!   patterns are refused in attribute files) makes git ignore the whole line: so does assent.
//! * Patterns are relative to the file's directory. Without a `/` (a trailing one aside) a
//!   pattern matches a path's last component at any depth below it; with one, the path below
//!   the directory, a leading `/` only anchoring. `*` and `?` never match `/`, `**` does
//!   between slashes (git's `wildmatch` with `WM_PATHNAME`, ported in [`wildmatch`]). A
//!   trailing `/` matches directories only: only `export-ignore` is looked up on a
//!   directory (`git archive` skips the whole tree), so only it reaches a file that way.
//! * `[attr]name …` defines a macro in the top-level `.gitattributes` only (git ignores it
//!   elsewhere); `binary` is git's own (`-diff -merge -text`). A macro reaches a governed path
//!   with the attributes it stands for, and a changed definition reaches every path given the
//!   macro anywhere, so it counts as reaching every governed glob. An attribute name that is
//!   neither one git or GitLab defines nor a macro the top-level file at hand defines may be a
//!   macro defined where assent cannot see (a top-level file this merge request does not
//!   change, a user's `core.attributesFile`), so it counts as one that changes contents.
//! * `.git/info/attributes` and a user's or the system's attribute files are not in the
//!   repository: no merge request can change them, so no run sees them.
//!
//! # Reaching a governed path without the paths
//!
//! The run has no checkout, so which governed files exist is unknown: a line reaches a
//! governed path when its pattern and some rule's `match.files` glob can match one path
//! ([`may_overlap`]). The test errs on one side only: character classes and brace
//! alternatives count as any character or any run within a component, and literals compare
//! ASCII-case-insensitively (a checkout with `core.ignoreCase`, macOS's and Windows', matches
//! attributes so), so a line may be found reaching a glob it cannot, never the other way
//! (held by a property test against [`AttributesPattern::matches`] and `globset`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::inert;
use crate::model::{ChangeKind, Effect as FindingEffect, Finding, Occurrence, Slot};

/// Rule id of the finding for a `.gitattributes` change that reaches governed paths.
pub const RULE_GIT_ATTRIBUTES: &str = "assent/git-attributes";

/// The name git reads attributes from, in any directory.
pub const ATTRIBUTES_FILE: &str = ".gitattributes";

/// git ignores an attributes line of this many bytes or more (`ATTR_MAX_LINE_LENGTH`).
const MAX_LINE_BYTES: usize = 2048;

/// Whether `path` is a `.gitattributes` file (in any directory) that git reads.
pub fn is_attributes_file(path: &str) -> bool {
    path == ATTRIBUTES_FILE || path.ends_with("/.gitattributes")
}

/// The directory a `.gitattributes` path's patterns are relative to: `""` at the top, else
/// the directory with its trailing `/`.
fn directory_of(path: &str) -> &str {
    &path[..path.len() - ATTRIBUTES_FILE.len()]
}

/// What an attribute does to a path's content or its review; `None`: nothing of either.
fn effect_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "export-ignore" => "leaves the path out of `git archive` (GitLab's archive downloads)",
        "export-subst" => "expands `$Format:…$` placeholders in the path in `git archive`",
        "filter" => "runs a clean/smudge filter over the path on checkout and commit",
        "text" | "eol" | "crlf" => "converts the path's line endings on checkout",
        "working-tree-encoding" => "re-encodes the path on checkout",
        "ident" => "expands `$Id$` in the path on checkout",
        "diff" => "hides the path's diff (`-diff`) or shows it through a textconv driver",
        "linguist-generated" | "gitlab-generated" => {
            "collapses the path's diff as generated in GitLab's merge request changes"
        }
        _ => return None,
    })
}

/// Attributes git and GitLab define that change neither what a checkout or an archive holds
/// nor what a reviewer sees of the change.
const CONTENT_NEUTRAL: &[&str] = &[
    "merge",
    "conflict-marker-size",
    "whitespace",
    "delta",
    "encoding",
    "lockable",
    "linguist-language",
    "linguist-vendored",
    "linguist-documentation",
    "linguist-detectable",
    "gitlab-language",
];

/// One attribute as a line assigns it, written back as git reads it (`name`, `-name`,
/// `!name` or `name=value`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Assignment {
    /// The attribute's name.
    pub name: String,
    /// The assignment as written, prefix or value included.
    pub text: String,
}

/// What one line of an attributes file is to git.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributesLine {
    /// `pattern attr…`: the attributes of the paths the pattern matches.
    Pattern {
        /// The pattern as git matches it.
        pattern: AttributesPattern,
        /// Its assignments, in order.
        assignments: Vec<Assignment>,
    },
    /// `[attr]name attr…` in a top-level file: the macro `name` stands for `assignments`.
    Macro {
        /// The macro's name.
        name: String,
        /// What it stands for.
        assignments: Vec<Assignment>,
    },
}

impl AttributesLine {
    /// The line as git reads it: one space between its parts, the pattern unquoted.
    pub fn normalized(&self) -> String {
        let (head, assignments) = match self {
            AttributesLine::Pattern {
                pattern,
                assignments,
            } => (pattern.written.clone(), assignments),
            AttributesLine::Macro { name, assignments } => (format!("[attr]{name}"), assignments),
        };
        std::iter::once(head)
            .chain(assignments.iter().map(|a| a.text.clone()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every line of the attributes file at `file_path` that git takes, in order (see the module
/// docs for what it ignores).
pub fn parse(file_path: &str, bytes: &[u8]) -> Vec<AttributesLine> {
    let directory = directory_of(file_path);
    let top_level = directory.is_empty();
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|line| parse_line(directory, top_level, line))
        .collect()
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn skip_blanks(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| !is_blank(b))
        .unwrap_or(bytes.len());
    &bytes[start..]
}

fn split_word(bytes: &[u8]) -> (&[u8], &[u8]) {
    let end = bytes
        .iter()
        .position(|&b| is_blank(b))
        .unwrap_or(bytes.len());
    bytes.split_at(end)
}

fn parse_line(directory: &str, top_level: bool, line: &[u8]) -> Option<AttributesLine> {
    let line = skip_blanks(line);
    if line.is_empty() || line[0] == b'#' || line.len() >= MAX_LINE_BYTES {
        return None;
    }
    let (name, states) = if line[0] == b'"' {
        unquote_c_style(line)?
    } else {
        let (name, rest) = split_word(line);
        (name.to_vec(), rest)
    };
    let assignments = parse_assignments(skip_blanks(states))?;
    if let Some(macro_name) = name.strip_prefix(b"[attr]") {
        // git skips blanks after the prefix and takes the next word as the name, but only
        // when the line's first word is longer than the prefix.
        if !top_level || macro_name.is_empty() {
            return None;
        }
        let name = String::from_utf8(macro_name.to_vec()).ok()?;
        return is_valid_name(&name).then_some(AttributesLine::Macro { name, assignments });
    }
    if name.first() == Some(&b'!') {
        return None;
    }
    let written = String::from_utf8_lossy(&name).into_owned();
    Some(AttributesLine::Pattern {
        pattern: AttributesPattern::new(directory, &written),
        assignments,
    })
}

/// The pattern of a line starting with `"`, unquoted as git's `unquote_c_style` does, and the
/// rest of the line; `None` when git would not unquote it either (then git reads the line
/// unquoted: the pattern is the first word, quotes included).
fn unquote_c_style(line: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < line.len() {
        match line[i] {
            b'"' => return Some((out, &line[i + 1..])),
            b'\\' => {
                i += 1;
                let c = *line.get(i)?;
                match c {
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'v' => out.push(11),
                    b'\\' | b'"' => out.push(c),
                    b'0'..=b'3' => {
                        let digits = line.get(i..i + 3)?;
                        if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                            return None;
                        }
                        out.push(digits.iter().fold(0u8, |n, d| n * 8 + (d - b'0')));
                        i += 2;
                    }
                    _ => return None,
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    None
}

/// The assignments of a line, or `None` when one is invalid (git then ignores the line).
fn parse_assignments(mut states: &[u8]) -> Option<Vec<Assignment>> {
    let mut out = Vec::new();
    while !states.is_empty() {
        let (word, rest) = split_word(states);
        states = skip_blanks(rest);
        let text = String::from_utf8(word.to_vec()).ok()?;
        let bare = text.strip_prefix(['-', '!']).unwrap_or(&text);
        let name = bare.split_once('=').map_or(bare, |(name, _)| name);
        if !is_valid_name(name) || name.starts_with("builtin_") {
            return None;
        }
        out.push(Assignment {
            name: name.to_owned(),
            text,
        });
    }
    Some(out)
}

/// git's `attr_name_valid`: letters, digits, `-`, `.`, `_`, not starting with `-`.
fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

/// A pattern of an attributes file, as git's `parse_path_pattern` prepares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributesPattern {
    /// The directory of its file (`""` or ending in `/`).
    directory: String,
    /// The pattern as written (unquoted).
    written: String,
    /// The pattern without its trailing `/` (and, for a path pattern, its leading `/`).
    body: String,
    /// It had a trailing `/`: it matches directories only.
    directories_only: bool,
    /// It has no `/` (a trailing one aside): it matches a path's last component.
    last_component: bool,
}

impl AttributesPattern {
    /// `pattern` as written in the attributes file of `directory` (`""` or ending in `/`).
    pub fn new(directory: &str, pattern: &str) -> Self {
        let (body, directories_only) = match pattern.strip_suffix('/') {
            Some(body) => (body, true),
            None => (pattern, false),
        };
        let last_component = !body.contains('/');
        let body = if last_component {
            body
        } else {
            body.strip_prefix('/').unwrap_or(body)
        };
        AttributesPattern {
            directory: directory.to_owned(),
            written: pattern.to_owned(),
            body: body.to_owned(),
            directories_only,
            last_component,
        }
    }

    /// Whether git gives the repository path `path` (a directory when `is_dir`) this
    /// pattern's attributes, case-sensitively (`core.ignoreCase` off), as git's `attr.c`
    /// `path_matches` decides.
    pub fn matches(&self, path: &str, is_dir: bool) -> bool {
        if self.directories_only && !is_dir {
            return false;
        }
        // A file's attributes are read only from the attribute files of its directories.
        let Some(below) = path.strip_prefix(self.directory.as_str()) else {
            return false;
        };
        if below.is_empty() {
            return false;
        }
        if self.last_component {
            let name = below.rsplit('/').next().unwrap_or(below);
            wildmatch(self.body.as_bytes(), name.as_bytes(), false)
        } else {
            wildmatch(self.body.as_bytes(), below.as_bytes(), true)
        }
    }

    /// The repository paths this pattern matches as a language of [`Token`]s: the file's
    /// directory, then (for a last-component pattern) any directories, then the pattern.
    fn tokens(&self) -> Vec<Token> {
        let mut tokens: Vec<Token> = self.directory.bytes().map(Token::Literal).collect();
        if self.last_component {
            // `(any/)?`, over-approximated by a run of anything.
            tokens.push(Token::AnyRun);
        }
        tokens.extend(glob_tokens(self.body.as_bytes(), Dialect::Wildmatch));
        tokens
    }
}

/// git's `wildmatch` (`wildmatch.c`), on bytes: `pathname` is `WM_PATHNAME` (`*`, `?` and
/// classes never match `/`; `**` between slashes matches any directories).
pub fn wildmatch(pattern: &[u8], text: &[u8], pathname: bool) -> bool {
    matches!(dowild(pattern, text, pathname), Wild::Match)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wild {
    Match,
    NoMatch,
    AbortAll,
    AbortToStarStar,
}

fn is_glob_special(c: u8) -> bool {
    matches!(c, b'*' | b'?' | b'[' | b'\\')
}

/// The port of `dowild`: the same steps over the same indices, so the differential test
/// against `git check-attr` holds it to git's answers.
fn dowild(p: &[u8], text: &[u8], pathname: bool) -> Wild {
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let (mut pi, mut ti) = (0usize, 0usize);
    while pi < p.len() {
        let mut p_ch = p[pi];
        let t_ch = at(text, ti);
        if t_ch == 0 && p_ch != b'*' {
            return Wild::AbortAll;
        }
        match p_ch {
            b'?' => {
                if pathname && t_ch == b'/' {
                    return Wild::NoMatch;
                }
            }
            b'*' => {
                let match_slash;
                pi += 1;
                if at(p, pi) == b'*' {
                    let prev_is_start_or_slash = pi < 2 || p[pi - 2] == b'/';
                    while at(p, pi) == b'*' {
                        pi += 1;
                    }
                    let next = at(p, pi);
                    if prev_is_start_or_slash
                        && (next == 0 || next == b'/' || (next == b'\\' && at(p, pi + 1) == b'/'))
                    {
                        if next == b'/'
                            && dowild(&p[pi + 1..], &text[ti..], pathname) == Wild::Match
                        {
                            return Wild::Match;
                        }
                        match_slash = true;
                    } else {
                        match_slash = !pathname;
                    }
                } else {
                    match_slash = !pathname;
                }
                if pi >= p.len() {
                    if !match_slash && text[ti..].contains(&b'/') {
                        return Wild::NoMatch;
                    }
                    return Wild::Match;
                } else if !match_slash && p[pi] == b'/' {
                    let Some(slash) = text[ti..].iter().position(|&c| c == b'/') else {
                        return Wild::NoMatch;
                    };
                    // The slash itself is matched by the pattern's `/` below.
                    ti += slash;
                    p_ch = b'/';
                    if at(text, ti) != p_ch {
                        return Wild::NoMatch;
                    }
                    pi += 1;
                    ti += 1;
                    continue;
                }
                let mut t_ch = at(text, ti);
                loop {
                    if t_ch == 0 {
                        break;
                    }
                    if !is_glob_special(p[pi]) {
                        let want = p[pi];
                        loop {
                            t_ch = at(text, ti);
                            if t_ch == 0 || (!match_slash && t_ch == b'/') || t_ch == want {
                                break;
                            }
                            ti += 1;
                        }
                        if t_ch != want {
                            return if match_slash {
                                Wild::AbortAll
                            } else {
                                Wild::AbortToStarStar
                            };
                        }
                    }
                    let matched = dowild(&p[pi..], &text[ti..], pathname);
                    if matched != Wild::NoMatch {
                        if !match_slash || matched != Wild::AbortToStarStar {
                            return matched;
                        }
                    } else if !match_slash && t_ch == b'/' {
                        return Wild::AbortToStarStar;
                    }
                    ti += 1;
                    t_ch = at(text, ti);
                }
                return Wild::AbortAll;
            }
            b'[' => {
                pi += 1;
                p_ch = at(p, pi);
                let negated = p_ch == b'!' || p_ch == b'^';
                if negated {
                    pi += 1;
                    p_ch = at(p, pi);
                }
                let mut prev_ch = 0u8;
                let mut matched = false;
                loop {
                    if p_ch == 0 {
                        return Wild::AbortAll;
                    }
                    if p_ch == b'\\' {
                        pi += 1;
                        p_ch = at(p, pi);
                        if p_ch == 0 {
                            return Wild::AbortAll;
                        }
                        if t_ch == p_ch {
                            matched = true;
                        }
                    } else if p_ch == b'-'
                        && prev_ch != 0
                        && at(p, pi + 1) != 0
                        && at(p, pi + 1) != b']'
                    {
                        pi += 1;
                        p_ch = p[pi];
                        if p_ch == b'\\' {
                            pi += 1;
                            p_ch = at(p, pi);
                            if p_ch == 0 {
                                return Wild::AbortAll;
                            }
                        }
                        if t_ch <= p_ch && t_ch >= prev_ch {
                            matched = true;
                        }
                        p_ch = 0;
                    } else if p_ch == b'[' && at(p, pi + 1) == b':' {
                        let start = pi + 2;
                        let Some(len) = p[start..].iter().position(|&c| c == b']') else {
                            return Wild::AbortAll;
                        };
                        let end = start + len;
                        if end == start || p[end - 1] != b':' {
                            // Not a class after all: a literal `[`.
                            p_ch = b'[';
                            if t_ch == p_ch {
                                matched = true;
                            }
                        } else {
                            let class = &p[start..end - 1];
                            match class_matches(class, t_ch) {
                                Some(true) => matched = true,
                                Some(false) => {}
                                None => return Wild::AbortAll,
                            }
                            pi = end;
                            p_ch = 0;
                        }
                    } else if t_ch == p_ch {
                        matched = true;
                    }
                    prev_ch = p_ch;
                    pi += 1;
                    p_ch = at(p, pi);
                    if p_ch == b']' {
                        break;
                    }
                }
                if matched == negated || (pathname && t_ch == b'/') {
                    return Wild::NoMatch;
                }
            }
            _ => {
                if p_ch == b'\\' {
                    pi += 1;
                    p_ch = at(p, pi);
                }
                if t_ch != p_ch {
                    return Wild::NoMatch;
                }
            }
        }
        pi += 1;
        ti += 1;
    }
    if ti < text.len() {
        Wild::NoMatch
    } else {
        Wild::Match
    }
}

/// A POSIX class of a bracket expression (`[:alpha:]`), `None` for a name git refuses.
fn class_matches(class: &[u8], c: u8) -> Option<bool> {
    Some(match class {
        b"alnum" => c.is_ascii_alphanumeric(),
        b"alpha" => c.is_ascii_alphabetic(),
        b"blank" => c == b' ' || c == b'\t',
        b"cntrl" => c.is_ascii_control(),
        b"digit" => c.is_ascii_digit(),
        b"graph" => c.is_ascii_graphic(),
        b"lower" => c.is_ascii_lowercase(),
        b"print" => c.is_ascii_graphic() || c == b' ',
        b"punct" => c.is_ascii_punctuation(),
        b"space" => c.is_ascii_whitespace() || c == 11,
        b"upper" => c.is_ascii_uppercase(),
        b"xdigit" => c.is_ascii_hexdigit(),
        _ => return None,
    })
}

/// One step of a path language both pattern dialects reduce to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// This byte (compared ASCII-case-insensitively).
    Literal(u8),
    /// One byte other than `/`.
    One,
    /// Any run of bytes other than `/`.
    Run,
    /// Any run of bytes.
    AnyRun,
}

/// Which glob syntax a pattern is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// git's `wildmatch`: no braces.
    Wildmatch,
    /// `globset` with `literal_separator`: `{a,b}` alternatives as well.
    Globset,
}

/// The language of `pattern`, widened where exactness would cost a full automaton: a class is
/// any byte but `/` (any run when a `globset` class holds `/`), a brace group any run
/// (across `/` when it holds one), a `**` between slashes any run, the slash after it
/// included.
fn glob_tokens(pattern: &[u8], dialect: Dialect) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            b'\\' if i + 1 < pattern.len() => {
                tokens.push(Token::Literal(pattern[i + 1]));
                i += 2;
                continue;
            }
            b'*' => {
                let start = i;
                while i < pattern.len() && pattern[i] == b'*' {
                    i += 1;
                }
                let double = i - start >= 2;
                let at_boundary = (start == 0 || pattern[start - 1] == b'/')
                    && (i == pattern.len() || pattern[i] == b'/');
                if double && at_boundary {
                    // `**/` also matches no directory at all: the run takes the slash with it.
                    tokens.push(Token::AnyRun);
                    if i < pattern.len() {
                        i += 1;
                    }
                } else {
                    tokens.push(Token::Run);
                }
                continue;
            }
            b'?' => tokens.push(Token::One),
            b'[' => {
                // To the closing `]` (one right after `[`, `[!` or `[^` is a member).
                let mut j = i + 1;
                if matches!(pattern.get(j), Some(b'!' | b'^')) {
                    j += 1;
                }
                if pattern.get(j) == Some(&b']') {
                    j += 1;
                }
                while j < pattern.len() && pattern[j] != b']' {
                    j += 1;
                }
                if j < pattern.len() {
                    // `globset` lets a class match `/`; `wildmatch` never does.
                    let crosses = dialect == Dialect::Globset && pattern[i..j].contains(&b'/');
                    tokens.push(if crosses { Token::AnyRun } else { Token::One });
                    i = j + 1;
                    continue;
                }
                tokens.push(Token::Literal(b'['));
            }
            b'{' if dialect == Dialect::Globset => {
                let close = pattern[i..].iter().position(|&c| c == b'}');
                if let Some(len) = close {
                    let group = &pattern[i..i + len];
                    tokens.push(if group.contains(&b'/') {
                        Token::AnyRun
                    } else {
                        Token::Run
                    });
                    i += len + 1;
                    continue;
                }
                tokens.push(Token::Literal(b'{'));
            }
            c => tokens.push(Token::Literal(c)),
        }
        i += 1;
    }
    tokens
}

/// Whether some path is matched by both `pattern` (an attributes pattern, or, with
/// `through_directory`, a directory it matches and anything below) and the `globset` glob
/// `glob`. Errs towards `true` only (see the module docs).
pub fn may_overlap(pattern: &AttributesPattern, through_directory: bool, glob: &str) -> bool {
    let mut left = pattern.tokens();
    if through_directory {
        left.push(Token::Literal(b'/'));
        left.push(Token::AnyRun);
    } else if pattern.directories_only {
        return false;
    }
    let right = glob_tokens(glob.as_bytes(), Dialect::Globset);
    languages_meet(&left, &right)
}

/// Whether the two token languages share a string: a search over pairs of positions, each
/// step reading one byte both accept (or skipping a run that reads none).
fn languages_meet(a: &[Token], b: &[Token]) -> bool {
    let width = b.len() + 1;
    let mut seen = vec![false; (a.len() + 1) * width];
    let mut stack = vec![(0usize, 0usize)];
    let is_run = |t: Option<&Token>| matches!(t, Some(Token::Run | Token::AnyRun));
    while let Some((i, j)) = stack.pop() {
        if std::mem::replace(&mut seen[i * width + j], true) {
            continue;
        }
        if i == a.len() && j == b.len() {
            return true;
        }
        let (ta, tb) = (a.get(i), b.get(j));
        if is_run(ta) {
            stack.push((i + 1, j));
        }
        if is_run(tb) {
            stack.push((i, j + 1));
        }
        if let (Some(&ta), Some(&tb)) = (ta, tb)
            && share_a_byte(ta, tb)
        {
            let ni = if is_run(Some(&ta)) { i } else { i + 1 };
            let nj = if is_run(Some(&tb)) { j } else { j + 1 };
            // Two runs reading a byte each stay where they are: nothing new follows, so the
            // skips above suffice.
            if (ni, nj) != (i, j) {
                stack.push((ni, nj));
            }
        }
    }
    false
}

/// Whether one byte is accepted by both tokens.
fn share_a_byte(a: Token, b: Token) -> bool {
    match (a, b) {
        (Token::Literal(x), Token::Literal(y)) => x.eq_ignore_ascii_case(&y),
        (Token::Literal(c), other) | (other, Token::Literal(c)) => {
            c != b'/' || other == Token::AnyRun
        }
        _ => true,
    }
}

/// One side of a changed attributes file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideContent<'a> {
    /// The file does not exist on that side.
    Absent,
    /// Its bytes.
    Present(&'a [u8]),
}

/// A changed `.gitattributes` path with its two sides.
#[derive(Debug, Clone, Copy)]
pub struct AttributesChange<'a> {
    /// The path (one path on both sides: a rename is a deletion and an addition).
    pub path: &'a str,
    /// Its content at the base.
    pub base: SideContent<'a>,
    /// Its content at the source.
    pub source: SideContent<'a>,
}

/// Which side a changed line is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum LineSide {
    /// Removed: only at the base.
    Base,
    /// Added: only at the source.
    Source,
}

impl LineSide {
    fn as_str(self) -> &'static str {
        match self {
            LineSide::Base => "base",
            LineSide::Source => "source",
        }
    }
}

/// A changed line that reaches governed globs, and what its attributes do.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Reaching {
    side: LineSide,
    line: String,
    /// Each attribute that counts, with what it does.
    attributes: BTreeMap<String, String>,
    globs: BTreeSet<String>,
}

/// The `assent/git-attributes` findings of `changes` (each path once), for the globs that
/// make a path governed: one `challenge` per attributes file with a changed line that reaches
/// one. Sorted by path.
pub fn judge(changes: &[AttributesChange<'_>], governed_globs: &[&str]) -> Vec<Finding> {
    if governed_globs.is_empty() {
        return Vec::new();
    }
    let top_level = changes.iter().find(|c| c.path == ATTRIBUTES_FILE);
    let macros_at = |side: Option<SideContent<'_>>| {
        side.map(|content| match content {
            SideContent::Present(bytes) => macros_of(&parse(ATTRIBUTES_FILE, bytes)),
            SideContent::Absent => BTreeMap::new(),
        })
    };
    let macros = [
        macros_at(top_level.map(|c| c.base)),
        macros_at(top_level.map(|c| c.source)),
    ];
    let mut findings: Vec<Finding> = changes
        .iter()
        .filter(|c| is_attributes_file(c.path))
        .filter_map(|change| {
            let reaching = reaching_lines(change, &macros, governed_globs);
            (!reaching.is_empty()).then(|| finding(change.path, &reaching))
        })
        .collect();
    findings.sort_by(|a, b| a.slot.cmp(&b.slot));
    findings
}

/// The macros a top-level file defines (a later definition wins, as in git), with git's own.
fn macros_of(lines: &[AttributesLine]) -> BTreeMap<String, Vec<Assignment>> {
    lines
        .iter()
        .filter_map(|line| match line {
            AttributesLine::Macro { name, assignments } => {
                Some((name.clone(), assignments.clone()))
            }
            AttributesLine::Pattern { .. } => None,
        })
        .collect()
}

/// What the assignments of one line do that counts.
#[derive(Default)]
struct Counted {
    /// Each assignment that counts, with what it does.
    attributes: BTreeMap<String, String>,
    /// One of them may be `export-ignore`, the one attribute git looks up on directories.
    on_directories: bool,
}

/// Deeper macro definitions than this are taken as counting (git expands them; a definition
/// this deep is no configuration anyone reviews).
const MAX_MACRO_DEPTH: usize = 8;

/// What an assignment does that counts, through macros (`None` at a side whose top-level
/// file is not at hand); nothing when it changes neither content nor review.
fn counted(
    assignment: &Assignment,
    macros: Option<&BTreeMap<String, Vec<Assignment>>>,
    out: &mut Counted,
    depth: usize,
) {
    let name = assignment.name.as_str();
    if let Some(effect) = effect_of(name) {
        out.on_directories |= name == "export-ignore";
        out.attributes
            .insert(assignment.text.clone(), effect.to_owned());
        return;
    }
    if name == "binary" {
        out.attributes.insert(
            assignment.text.clone(),
            "stands for `-diff -merge -text`: hides the path's diff and its line endings \
             are no longer converted"
                .to_owned(),
        );
        return;
    }
    if let Some(expansion) = macros.and_then(|m| m.get(name)) {
        let mut inner = Counted::default();
        if depth < MAX_MACRO_DEPTH {
            for a in expansion {
                counted(a, macros, &mut inner, depth + 1);
            }
        } else {
            inner.on_directories = true;
        }
        if !inner.attributes.is_empty() || depth >= MAX_MACRO_DEPTH {
            let names: Vec<&str> = inner.attributes.keys().map(String::as_str).collect();
            out.on_directories |= inner.on_directories;
            out.attributes.insert(
                assignment.text.clone(),
                format!("a macro standing for `{}`", names.join(" ")),
            );
        }
        return;
    }
    if CONTENT_NEUTRAL.contains(&name) || name.starts_with("linguist-") || macros.is_some() {
        // With the top-level file at hand, a name it does not define is an attribute of the
        // project's own, which git does nothing with.
        return;
    }
    out.on_directories = true;
    out.attributes.insert(
        assignment.text.clone(),
        "an attribute git does not define: a macro defined where this merge request does not \
         show it may stand for any attribute"
            .to_owned(),
    );
}

/// The changed lines of one attributes file that reach a governed glob.
fn reaching_lines(
    change: &AttributesChange<'_>,
    macros: &[Option<BTreeMap<String, Vec<Assignment>>>; 2],
    governed_globs: &[&str],
) -> Vec<Reaching> {
    let read = |side: SideContent<'_>| match side {
        SideContent::Present(bytes) => parse(change.path, bytes),
        SideContent::Absent => Vec::new(),
    };
    let (base, source) = (read(change.base), read(change.source));
    let mut out = Vec::new();
    for (side, line) in changed_lines(&base, &source) {
        let side_macros = macros[side as usize].as_ref();
        let mut counts = Counted::default();
        let (assignments, reach_all) = match line {
            AttributesLine::Pattern { assignments, .. } => (assignments, false),
            // A definition reaches every path given the macro, wherever it is given.
            AttributesLine::Macro { assignments, .. } => (assignments, true),
        };
        for assignment in assignments {
            counted(assignment, side_macros, &mut counts, 0);
        }
        let Counted {
            attributes,
            on_directories,
        } = counts;
        if attributes.is_empty() {
            continue;
        }
        let globs: BTreeSet<String> = governed_globs
            .iter()
            .filter(|glob| match line {
                AttributesLine::Macro { .. } => reach_all,
                AttributesLine::Pattern { pattern, .. } => {
                    may_overlap(pattern, false, glob)
                        || (on_directories && may_overlap(pattern, true, glob))
                }
            })
            .map(|glob| (*glob).to_owned())
            .collect();
        if !globs.is_empty() {
            out.push(Reaching {
                side,
                line: line.normalized(),
                attributes,
                globs,
            });
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Past this many pairs of lines, the lines between the common start and end are all taken
/// as changed rather than compared (a longest common subsequence costs their product).
const MAX_COMPARED_PAIRS: usize = 4_000_000;

/// The lines only one side has, by a longest common subsequence of the lines as git reads
/// them (a moved line is removed and added: order decides which line wins).
fn changed_lines<'l>(
    base: &'l [AttributesLine],
    source: &'l [AttributesLine],
) -> Vec<(LineSide, &'l AttributesLine)> {
    let b: Vec<String> = base.iter().map(AttributesLine::normalized).collect();
    let s: Vec<String> = source.iter().map(AttributesLine::normalized).collect();
    let prefix = b.iter().zip(&s).take_while(|(x, y)| x == y).count();
    let suffix = b[prefix..]
        .iter()
        .rev()
        .zip(s[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (bm, sm) = (&b[prefix..b.len() - suffix], &s[prefix..s.len() - suffix]);
    let mut kept_base = vec![false; bm.len()];
    let mut kept_source = vec![false; sm.len()];
    if bm.len().saturating_mul(sm.len()) <= MAX_COMPARED_PAIRS {
        let width = sm.len() + 1;
        let mut lcs = vec![0u32; (bm.len() + 1) * width];
        for i in (0..bm.len()).rev() {
            for j in (0..sm.len()).rev() {
                lcs[i * width + j] = if bm[i] == sm[j] {
                    lcs[(i + 1) * width + j + 1] + 1
                } else {
                    lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < bm.len() && j < sm.len() {
            if bm[i] == sm[j] {
                kept_base[i] = true;
                kept_source[j] = true;
                i += 1;
                j += 1;
            } else if lcs[(i + 1) * width + j] >= lcs[i * width + j + 1] {
                i += 1;
            } else {
                j += 1;
            }
        }
    }
    let removed = (0..bm.len())
        .filter(|&i| !kept_base[i])
        .map(|i| (LineSide::Base, &base[prefix + i]));
    let added = (0..sm.len())
        .filter(|&j| !kept_source[j])
        .map(|j| (LineSide::Source, &source[prefix + j]));
    removed.chain(added).collect()
}

fn finding(path: &str, reaching: &[Reaching]) -> Finding {
    let subject = format!("{path}#");
    let details: Vec<Value> = reaching
        .iter()
        .map(|r| json!({"side": r.side.as_str(), "line": r.line, "globs": r.globs}))
        .collect();
    let details = Value::Array(details);
    let mut list = String::new();
    for r in reaching {
        let verb = match r.side {
            LineSide::Base => "removed",
            LineSide::Source => "added",
        };
        let globs: Vec<String> = r.globs.iter().map(|g| inert::code(g)).collect();
        list.push_str(&format!(
            "\n- {verb} {} reaches governed paths matched by {}:",
            inert::code(&inert::shortened(&r.line, 200)),
            globs.join(", ")
        ));
        for (attribute, effect) in &r.attributes {
            list.push_str(&format!("\n  - {}: {effect}", inert::code(attribute)));
        }
    }
    Finding {
        slot: Slot {
            rule: RULE_GIT_ATTRIBUTES.to_owned(),
            subject: subject.clone(),
        },
        effect: FindingEffect::Challenge,
        occurrence: Occurrence::of(
            RULE_GIT_ATTRIBUTES,
            &subject,
            ChangeKind::Modify,
            None,
            Some(&details),
        ),
        message: format!(
            "This merge request changes {}, which decides what git hands the consumers of \
             governed files (a checkout, `git archive`, GitLab's archive downloads) and what \
             reviewers see of their changes, without changing the files themselves, so no \
             policy rule sees it:{list}\n\nCheck that every consumer of these paths still gets \
             what the files say, and resolve this thread to assent.",
            inert::code(path)
        ),
    }
}

#[cfg(test)]
mod tests;
