//! Quoting file content in one-line problems: short, and with nothing a terminal or a log
//! viewer would act on.
//!
//! `assent lint` and `assent test` run in CI on merge requests whose author wrote the files
//! they read, and their problems end up in job logs. A problem may quote what it found (an
//! unknown field's name, a rule id, `serde_yaml`'s `invalid type: string "…"`), but only as
//! a short excerpt: a file's bytes are never echoed wholesale, and control characters (an
//! ANSI escape, a carriage return that rewrites the line, a newline that forges an `ok:`
//! line) and invisible direction or line-separator characters are escaped as `\u{…}`.

/// Longest quoted run kept in a problem (a `` `…` `` or `"…"` segment), in characters.
pub const MAX_QUOTED_CHARS: usize = 48;

/// Longest problem message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 480;

/// `text` with every control or invisible formatting character escaped (`\n`, `\r`, `\t`,
/// else `\u{hex}`); everything else is kept. The one escape of every text output
/// ([`crate::terminal::terminal_safe`]).
pub fn escape_controls(text: &str) -> String {
    crate::terminal::terminal_safe(text).into_owned()
}

/// The first `max_chars` characters of `text`, then `…` when there was more.
fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// A short, escaped excerpt of `text`: control characters escaped, at most `max_chars`
/// characters of the escaped text, `…` when cut.
pub fn excerpt(text: &str, max_chars: usize) -> String {
    truncate(&escape_controls(text), max_chars)
}

/// A multi-line text (a rendered message) fit to print under something: its non-blank lines,
/// each an [`excerpt`] of `max_chars`, at most `max_lines` of them, then `… N more line(s)`.
pub fn excerpt_lines(text: &str, max_lines: usize, max_chars: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(max_lines)
        .map(|line| excerpt(line, max_chars))
        .collect();
    if lines.len() > max_lines {
        out.push(format!("… {} more line(s)", lines.len() - max_lines));
    }
    out
}

/// A problem message fit to print: every quoted run (between backticks, or between double
/// quotes with `\"` escapes, as `serde` quotes strings) cut to [`MAX_QUOTED_CHARS`], control
/// characters escaped, and the whole cut to [`MAX_MESSAGE_CHARS`].
pub fn sanitize_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4 * MAX_MESSAGE_CHARS));
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        if c != '`' && c != '"' {
            out.push(c);
            continue;
        }
        let mut quoted = String::new();
        let mut closed = false;
        while let Some(inner) = chars.next() {
            if inner == c {
                closed = true;
                break;
            }
            quoted.push(inner);
            if c == '"'
                && inner == '\\'
                && let Some(escaped) = chars.next()
            {
                quoted.push(escaped);
            }
        }
        out.push(c);
        out.push_str(&truncate(&quoted, MAX_QUOTED_CHARS));
        if closed {
            out.push(c);
        }
        // Bounded work whatever the message: stop once the result is cut anyway.
        if out.len() > 4 * MAX_MESSAGE_CHARS {
            break;
        }
    }
    truncate(&escape_controls(&out), MAX_MESSAGE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_invisible_formatting_are_escaped() {
        assert_eq!(escape_controls("plain `text` é"), "plain `text` é");
        assert_eq!(
            escape_controls("a\nok: 8 rule(s)\r\t\u{1b}[31m\u{202e}\u{2028}\u{0}"),
            "a\\nok: 8 rule(s)\\r\\t\\u{1b}[31m\\u{202e}\\u{2028}\\u{0}"
        );
    }

    #[test]
    fn excerpts_are_short_and_cut_on_character_boundaries() {
        assert_eq!(excerpt("short", 10), "short");
        assert_eq!(excerpt("ééééé", 3), "ééé…");
        assert_eq!(excerpt("a\nb", 2), "a\\…");
    }

    #[test]
    fn multi_line_texts_keep_a_few_escaped_lines() {
        assert_eq!(excerpt_lines("one", 3, 10), vec!["one"]);
        assert_eq!(
            excerpt_lines("a\n\n\u{1b}[2Jb\nc\nd\ne", 3, 4),
            vec!["a", "\\u{1…", "c", "… 2 more line(s)"]
        );
        assert!(excerpt_lines("", 3, 10).is_empty());
    }

    #[test]
    fn long_quoted_runs_are_cut_and_the_rest_is_kept() {
        let secret = "S".repeat(5000);
        let message = format!("rules: invalid type: string \"{secret}\", expected a sequence");
        let clean = sanitize_message(&message);
        assert_eq!(
            clean,
            format!(
                "rules: invalid type: string \"{}…\", expected a sequence",
                "S".repeat(MAX_QUOTED_CHARS)
            )
        );
        // Escaped quotes inside a serde string do not end it.
        let clean = sanitize_message(&format!("string \"a\\\"{secret}\" end"));
        assert!(clean.ends_with("…\" end"), "{clean}");
        let clean = sanitize_message(&format!("unknown field `{secret}`, expected `id`"));
        assert!(clean.ends_with("…`, expected `id`"), "{clean}");
        // An unclosed quote is cut too, and short runs are untouched.
        let clean = sanitize_message(&format!("rule `{secret}"));
        assert_eq!(clean.chars().count(), "rule `".len() + MAX_QUOTED_CHARS + 1);
        assert_eq!(
            sanitize_message("duplicate rule id `a` (first defined at a.yaml:4)"),
            "duplicate rule id `a` (first defined at a.yaml:4)"
        );
    }

    #[test]
    fn messages_are_one_line_and_bounded() {
        let long = format!("x{}", "y\n".repeat(10_000));
        let clean = sanitize_message(&long);
        assert!(!clean.contains('\n'));
        assert_eq!(clean.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(clean.ends_with('…'));
        let many_quotes = "`a` ".repeat(100_000);
        assert_eq!(
            sanitize_message(&many_quotes).chars().count(),
            MAX_MESSAGE_CHARS + 1
        );
    }
}
