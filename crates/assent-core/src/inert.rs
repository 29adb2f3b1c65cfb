//! Contributor text, rendered inert (docs/contract.md#inert-text).
//!
//! Everything a merge request supplies (values, keys, file names, pointers, entry names,
//! parser messages quoting them) reaches a note body only through [`code`]: one CommonMark
//! code span that GitLab renders literally, so no mention, link, image, HTML, reference or
//! quick action can come from it.
//!
//! # How a string becomes inert
//!
//! 1. [`escape`] makes invisible and line-breaking characters visible: `\n`, `\r`, `\t`, `\0`,
//!    and `\u{..}` for every other control character, the Unicode line and paragraph
//!    separators, bidirectional controls, zero-width and tag characters. The result is one
//!    line whose every character shows. A backslash stays itself (so a value's own `\n` and an
//!    escaped newline read alike; the receipt and the file hold the exact value).
//! 2. [`fence`] wraps the escaped text in a backtick fence one longer than its longest
//!    backtick run, so nothing inside can close it, and pads it with one space on each side
//!    when the text starts or ends with a backtick or a space (CommonMark strips one space from
//!    each side of a padded span, so the text shows exactly). Text made only of spaces needs no
//!    padding (CommonMark does not strip it), and the empty string renders as a span holding
//!    one space: an empty code span does not exist in CommonMark.
//!
//! A span is inert only as a whole: the text around it must not glue a backtick or a
//! backslash to its fence (the policy template renderer keeps that true for messages), and in
//! a GFM table every `|` of the row, inside spans too, is written `\|` ([`table_cell`]).
//! Cutting a rendered line must not split a span: [`cut_line`] cuts only between spans, or
//! shortens the span it falls in and closes it again; [`cut_markdown`] does the same for a
//! text of many lines.
//!
//! # Long text (docs/contract.md#note-size)
//!
//! GitLab refuses a note over 1,000,000 characters, and a merge request can hold a value of
//! any size. [`shortened`] keeps the first characters of a long text and names the full
//! text's length and SHA-256, so a reader can still tell two long values apart and check one
//! against the file; occurrences are always computed from the full value, never from this.

use std::borrow::Cow;
use std::ops::Range;

use sha2::{Digest, Sha256};

/// `text` as one inert code span: [`escape`], then [`fence`].
pub fn code(text: &str) -> String {
    fence(&escape(text))
}

/// `text` when it has at most `max_chars` characters; otherwise its first `max_chars`
/// characters, then `…[<n> characters, sha256:<64 hex>]`, where `n` counts the full text's
/// characters and the digest is of its UTF-8 bytes (`printf %s "$value" | sha256sum` gives
/// the same hex). Render the result with [`code`] like any contributor text.
pub fn shortened(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!(
            "{}…[{} characters, sha256:{}]",
            &text[..cut],
            text.chars().count(),
            hex::encode(Sha256::digest(text.as_bytes()))
        )),
    }
}

/// Whether `c` is shown as an escape: it breaks a line, controls the terminal or the text
/// direction, or does not show at all.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00ad}'                      // soft hyphen
            | '\u{061c}'                    // Arabic letter mark
            | '\u{180e}'                    // Mongolian vowel separator
            | '\u{200b}'                    // zero-width space
            | '\u{200e}' | '\u{200f}'       // left-to-right and right-to-left marks
            | '\u{2028}' | '\u{2029}'       // line and paragraph separators
            | '\u{202a}'..='\u{202e}'       // bidirectional embeddings and overrides
            | '\u{2060}'..='\u{2064}'       // word joiner and invisible operators
            | '\u{2066}'..='\u{2069}'       // bidirectional isolates
            | '\u{feff}'                    // zero-width no-break space (BOM)
            | '\u{fff9}'..='\u{fffb}'       // interlinear annotation controls
            | '\u{e0000}'..='\u{e007f}'     // tag characters
        )
}

/// `text` with every character for which [`needs_escape`] holds written as a visible escape
/// (`\n`, `\r`, `\t`, `\0`, else `\u{hex}`), so the result is one line of visible characters.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// `content` (already one line, see [`escape`]) as a code span that shows it exactly: a fence
/// longer than any backtick run inside, padded when the content starts or ends with a
/// backtick or a space.
pub fn fence(content: &str) -> String {
    debug_assert!(
        !content.contains(['\n', '\r']),
        "a code span's content must be one line: {content:?}"
    );
    if content.is_empty() {
        return "` `".to_owned();
    }
    let longest = longest_backtick_run(content);
    let ticks = "`".repeat(longest + 1);
    let all_spaces = content.bytes().all(|b| b == b' ');
    let pad = if !all_spaces && (content.starts_with(['`', ' ']) || content.ends_with(['`', ' '])) {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{content}{pad}{ticks}")
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// `markdown` made safe for one GFM table cell: line endings become spaces and every `|` is
/// written `\|`. GFM splits a row at a bare `|` even inside a code span, and removes the
/// backslash of `\|` before reading the cell, so spans keep showing their text exactly.
pub fn table_cell(markdown: &str) -> String {
    markdown.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// One code span found in a line of Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanAt {
    /// Byte range of the whole span, fences included.
    pub whole: Range<usize>,
    /// Byte range of the text the span shows (inside the fences, without CommonMark's padding).
    pub shown: Range<usize>,
}

/// The code spans of one line of Markdown, as CommonMark reads them: a backtick run not
/// escaped by a backslash opens a span that the next run of the same length closes; a run
/// with no such partner is literal text. (Raw HTML and autolinks, which could claim a
/// backtick first, are not looked for: assent's own text and the policy text it composes
/// around spans put no backtick inside them.)
pub fn code_spans(line: &str) -> Vec<SpanAt> {
    let bytes = line.as_bytes();
    let runs = BacktickRuns::of(bytes);
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if i + 1 < bytes.len() && bytes[i + 1].is_ascii_punctuation() => i += 2,
            b'`' => {
                let open = run_end(bytes, i);
                let len = open - i;
                match runs.next(open, len) {
                    Some(close) => {
                        spans.push(SpanAt {
                            whole: i..close + len,
                            shown: shown_range(line, open, close),
                        });
                        i = close + len;
                    }
                    None => i = open,
                }
            }
            _ => i += 1,
        }
    }
    spans
}

fn run_end(bytes: &[u8], start: usize) -> usize {
    let mut end = start;
    while end < bytes.len() && bytes[end] == b'`' {
        end += 1;
    }
    end
}

/// Where each maximal backtick run of a line starts, by its length. Looking a closer up here
/// instead of scanning the rest of the line for it keeps a line of many unmatched runs (MR
/// text can be a megabyte of them, a policy template a mebibyte) linear, not quadratic.
/// Shared by the code spans of assent's own Markdown (bytes) and of policy templates
/// (tokens).
pub(crate) struct BacktickRuns {
    starts_by_len: std::collections::HashMap<usize, Vec<usize>>,
}

impl BacktickRuns {
    fn of(bytes: &[u8]) -> Self {
        Self::of_items(bytes, |&b| b == b'`')
    }

    /// The runs of `items`, where `is_backtick` says which items are backticks.
    pub(crate) fn of_items<T>(items: &[T], is_backtick: impl Fn(&T) -> bool) -> Self {
        let mut starts_by_len: std::collections::HashMap<usize, Vec<usize>> =
            std::collections::HashMap::new();
        let mut i = 0;
        while i < items.len() {
            if is_backtick(&items[i]) {
                let mut end = i + 1;
                while end < items.len() && is_backtick(&items[end]) {
                    end += 1;
                }
                starts_by_len.entry(end - i).or_default().push(i);
                i = end;
            } else {
                i += 1;
            }
        }
        BacktickRuns { starts_by_len }
    }

    /// The start of the first maximal run of exactly `len` backticks at or after `from`
    /// (`from` is the end of a run, so every run after it is maximal).
    pub(crate) fn next(&self, from: usize, len: usize) -> Option<usize> {
        let starts = self.starts_by_len.get(&len)?;
        starts.get(starts.partition_point(|&s| s < from)).copied()
    }
}

/// CommonMark: content that starts and ends with a space, and is not only spaces, loses one
/// space on each side.
fn shown_range(line: &str, start: usize, end: usize) -> Range<usize> {
    let content = &line[start..end];
    if content.len() >= 2
        && content.starts_with(' ')
        && content.ends_with(' ')
        && !content.bytes().all(|b| b == b' ')
    {
        start + 1..end - 1
    } else {
        start..end
    }
}

/// `line` (one line of Markdown) cut to at most about `max` characters, followed by `…` when
/// cut, without ever leaving a code span open: a cut that falls inside a span keeps the span,
/// shortened to what fits and fenced again, so text after it can never turn into Markdown.
pub fn cut_line(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    let mut at = 0;
    for span in code_spans(line) {
        let before = &line[at..span.whole.start];
        if let Some(cut) = take_chars(before, max - used) {
            out.push_str(cut);
            return finish(out);
        }
        out.push_str(before);
        used += before.chars().count();
        let whole = &line[span.whole.clone()];
        let whole_len = whole.chars().count();
        if used + whole_len > max {
            let fence_len = span.shown.start - span.whole.start;
            let room = (max - used).saturating_sub(2 * fence_len);
            let shown = &line[span.shown.clone()];
            let kept: String = shown.chars().take(room).collect();
            if !kept.is_empty() {
                out.push_str(&fence(&kept));
            }
            return finish(out);
        }
        out.push_str(whole);
        used += whole_len;
        at = span.whole.end;
    }
    let rest = &line[at..];
    match take_chars(rest, max - used) {
        Some(cut) => out.push_str(cut),
        None => out.push_str(rest),
    }
    finish(out)
}

/// `markdown` (any number of lines) cut to at most about `max` characters: whole lines while
/// they fit, the line the limit falls in cut by [`cut_line`] (so no code span is left open),
/// then a line saying how long the full text was. Text within the limit is returned as it
/// is.
pub fn cut_markdown(markdown: &str, max: usize) -> Cow<'_, str> {
    let total = markdown.chars().count();
    if total <= max {
        return Cow::Borrowed(markdown);
    }
    let mut out = String::new();
    let mut used = 0;
    for line in markdown.split('\n') {
        let len = line.chars().count();
        if used + len > max {
            // `used` counts the line breaks too, so it can pass `max` by one.
            let room = max.saturating_sub(used);
            if room > 0 {
                out.push_str(&cut_line(line, room));
            }
            break;
        }
        out.push_str(line);
        out.push('\n');
        used += len + 1;
    }
    let kept = out.trim_end().len();
    out.truncate(kept);
    out.push_str(&format!(
        "\n\n_(shortened: the full text has {total} characters, more than a note can hold)_"
    ));
    Cow::Owned(out)
}

/// The first `n` characters of `text` when it has more, else `None`.
fn take_chars(text: &str, n: usize) -> Option<&str> {
    text.char_indices().nth(n).map(|(at, _)| &text[..at])
}

fn finish(mut out: String) -> String {
    // Whitespace before the ellipsis would only show as a gap.
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_one_simple_span() {
        assert_eq!(code("orders.events.v1"), "`orders.events.v1`");
        assert_eq!(code("@all"), "`@all`");
        assert_eq!(
            code("![x](http://e.example/a.png)"),
            "`![x](http://e.example/a.png)`"
        );
    }

    #[test]
    fn fences_outgrow_every_backtick_run_and_pad_edge_backticks() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("a``b`c"), "```a``b`c```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("x`"), "`` x` ``");
        assert_eq!(code("`"), "`` ` ``");
        assert_eq!(code("```"), "```` ``` ````");
    }

    #[test]
    fn spaces_at_the_edges_survive_commonmark_stripping() {
        assert_eq!(code(" a "), "`  a  `");
        assert_eq!(code(" a"), "`  a `");
        assert_eq!(code("a "), "` a  `");
        assert_eq!(code("   "), "`   `", "only spaces: CommonMark keeps them");
        assert_eq!(code(""), "` `");
    }

    #[test]
    fn line_breaks_and_invisible_characters_are_escaped_visibly() {
        assert_eq!(escape("a\nb\r\nc\td\0"), "a\\nb\\r\\nc\\td\\0");
        assert_eq!(escape("\u{1b}[31m"), "\\u{1b}[31m");
        assert_eq!(escape("x\u{2028}/close"), "x\\u{2028}/close");
        assert_eq!(escape("admin\u{202e}txt.exe"), "admin\\u{202e}txt.exe");
        assert_eq!(
            escape("a\u{200b}b\u{feff}\u{e0041}"),
            "a\\u{200b}b\\u{feff}\\u{e0041}"
        );
        assert_eq!(escape("\u{85}\u{7f}"), "\\u{85}\\u{7f}");
        assert_eq!(escape("naïve 東京 ✓ \\d"), "naïve 東京 ✓ \\d");
        assert!(!code("a\n/close").contains('\n'));
    }

    #[test]
    fn table_cells_escape_every_pipe() {
        assert_eq!(table_cell(&code("a|b")), "`a\\|b`");
        assert_eq!(table_cell("x | `y`\nz"), "x \\| `y` z");
    }

    /// The closer found by scanning the rest of the line, as first written: the reference
    /// the indexed lookup must agree with.
    fn scanning_code_spans(line: &str) -> Vec<SpanAt> {
        let bytes = line.as_bytes();
        let find_run = |from: usize, len: usize| {
            let mut i = from;
            while i < bytes.len() {
                if bytes[i] == b'`' {
                    let end = run_end(bytes, i);
                    if end - i == len {
                        return Some(i);
                    }
                    i = end;
                } else {
                    i += 1;
                }
            }
            None
        };
        let mut spans = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' if i + 1 < bytes.len() && bytes[i + 1].is_ascii_punctuation() => i += 2,
                b'`' => {
                    let open = run_end(bytes, i);
                    match find_run(open, open - i) {
                        Some(close) => {
                            spans.push(SpanAt {
                                whole: i..close + open - i,
                                shown: shown_range(line, open, close),
                            });
                            i = close + open - i;
                        }
                        None => i = open,
                    }
                }
                _ => i += 1,
            }
        }
        spans
    }

    proptest::proptest! {
        #[test]
        fn indexed_closers_match_the_scan(line in "[`\\\\a ]{0,40}") {
            proptest::prop_assert_eq!(code_spans(&line), scanning_code_spans(&line));
        }
    }

    #[test]
    fn code_spans_follow_commonmark_matching() {
        let shown = |line: &str| -> Vec<String> {
            code_spans(line)
                .into_iter()
                .map(|s| line[s.shown].to_owned())
                .collect()
        };
        assert_eq!(shown("a `b` c ``d`e`` f"), ["b", "d`e"]);
        assert_eq!(shown("`` `x ``"), ["`x"]);
        assert_eq!(
            shown("\\`a` b`"),
            [" b"],
            "an escaped backtick opens nothing"
        );
        assert_eq!(shown("``a` b"), Vec::<String>::new(), "no partner: literal");
        assert_eq!(shown("`   `"), ["   "]);
    }

    #[test]
    fn shortened_keeps_short_text_and_names_length_and_digest_of_long_text() {
        assert!(matches!(shortened("abc", 3), Cow::Borrowed("abc")));
        let long = "é".repeat(5);
        assert_eq!(
            shortened(&long, 2),
            format!(
                "éé…[5 characters, sha256:{}]",
                hex::encode(Sha256::digest(long.as_bytes()))
            )
        );
        // Two long values that share their first characters stay apart.
        assert_ne!(shortened("aaaa1", 3), shortened("aaaa2", 3));
    }

    #[test]
    fn cut_markdown_keeps_whole_lines_and_never_leaves_a_span_open() {
        assert!(matches!(cut_markdown("a\nb", 3), Cow::Borrowed("a\nb")));
        let text = format!("first line\nsecond {} tail\nthird", code("@all `x` <b>"));
        let cut = cut_markdown(&text, 20);
        assert!(cut.starts_with("first line\nsecond"), "{cut}");
        assert!(
            cut.ends_with(&format!(
                "\n\n_(shortened: the full text has {} characters, more than a note can hold)_",
                text.chars().count()
            )),
            "{cut}"
        );
        assert!(!cut.contains("third"), "{cut}");
        for line in cut.lines() {
            let ticks = line.matches('`').count();
            assert!(ticks % 2 == 0, "an open span in {line:?}");
        }
        assert!(!cut.contains("@all"), "{cut}");
        let huge = "x\n".repeat(1_000_000);
        assert!(cut_markdown(&huge, 1_000).chars().count() < 1_100);
        // A limit that falls right after a line break.
        assert!(cut_markdown("ab\ncd\nef", 3).starts_with("ab\n\n_(shortened"));
        assert!(cut_markdown("ab\ncd\nef", 2).starts_with("ab\n\n_(shortened"));
    }

    #[test]
    fn cut_line_never_splits_a_span() {
        assert_eq!(cut_line("short `x`", 200), "short `x`");
        assert_eq!(cut_line("abcdef", 3), "abc…");
        // The cut falls inside the span: the span is shortened and fenced again.
        let hostile = format!("value {} tail", code(&format!("{}`@all`", "x".repeat(20))));
        let cut = cut_line(&hostile, 16);
        assert_eq!(cut, "value `xxxx`…");
        let hostile = format!("v {}", code("ab ``@all <img src=x>"));
        let cut = cut_line(&hostile, 12);
        assert_eq!(cut, "v `` ab ` ``…", "{cut}");
        // No room for any of the span's text: the span goes entirely.
        assert_eq!(
            cut_line(&format!("0123456789 {}", code("@all")), 12),
            "0123456789…"
        );
    }
}
