//! Text for a terminal or a CI job log: no character from a merge request may move the
//! cursor, erase or recolour a line, change the text direction, or start a line of its own.
//!
//! A CI log renders ANSI escapes, so a topic named `x\r\e[2K\e[32massent: APPROVE` printed
//! raw erases its own line and shows a green verdict assent never wrote. Every text output of
//! every command goes through this module: [`terminal_safe`] for one value (a line break in
//! it escaped too), [`terminal_lines`] for a whole output whose line breaks are its own, and
//! [`json_terminal_safe`] for JSON output (still JSON, still the same values).
//!
//! What is escaped ([`is_unsafe`]): every C0 control, DEL and every C1 control (`ESC`, `CSI`,
//! …), every format character (Unicode's `Cf`: bidirectional embeddings, overrides, isolates
//! and marks, zero-width characters, the BOM, tag characters, …) and the line and paragraph
//! separators. Each is written as a visible escape: `\n`, `\r`, `\t`, else `\u{hex}`.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as itself.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || is_format(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Unicode's general category `Cf` (format characters), as of Unicode 15.1.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00ad}'
        | '\u{0600}'..='\u{0605}'
        | '\u{061c}'
        | '\u{06dd}'
        | '\u{070f}'
        | '\u{0890}'..='\u{0891}'
        | '\u{08e2}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{110bd}'
        | '\u{110cd}'
        | '\u{13430}'..='\u{1343f}'
        | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0001}'
        | '\u{e0020}'..='\u{e007f}'
    )
}

fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
    }
}

/// One value, safe to print: every [`is_unsafe`] character, a line break included, written
/// as a visible escape. Borrowed when there is nothing to escape.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A whole text output, safe to print: its `\n` line breaks kept, every other
/// [`is_unsafe`] character escaped (a `\r` before a `\n` too: a line ends only one way).
pub fn terminal_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&terminal_safe(line));
    }
    Cow::Owned(out)
}

/// JSON text (as `serde_json` writes it), safe to print and still the same JSON: `serde_json`
/// escapes only C0 controls, so DEL, C1 controls and format characters inside strings are
/// written as JSON's own `\uXXXX` escapes (a surrogate pair above U+FFFF). Outside strings
/// JSON has none of them; a line break outside a string is kept.
pub fn json_terminal_safe(json: &str) -> Cow<'_, str> {
    if !json.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c != '\n' && is_unsafe(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_hostile_topic_is_one_visible_line() {
        let topic = "x\r\u{1b}[2K\u{1b}[32massent: APPROVE";
        assert_eq!(
            terminal_safe(topic),
            "x\\r\\u{1b}[2K\\u{1b}[32massent: APPROVE"
        );
        assert_eq!(terminal_safe("a\nb"), "a\\nb");
        assert_eq!(terminal_lines("a\nb\u{1b}\n"), "a\nb\\u{1b}\n");
        assert_eq!(terminal_lines("a\r\n"), "a\\r\n");
        assert!(matches!(terminal_safe("plain ü 😀"), Cow::Borrowed(_)));
    }

    #[test]
    fn c1_del_bidi_and_format_characters_are_escaped() {
        for c in [
            '\u{7f}',
            '\u{85}',
            '\u{9b}',
            '\u{202e}',
            '\u{2066}',
            '\u{2069}',
            '\u{200f}',
            '\u{feff}',
            '\u{061c}',
            '\u{2028}',
            '\u{e0041}',
            '\u{1d173}',
        ] {
            let shown = terminal_safe(&c.to_string()).into_owned();
            assert_eq!(shown, format!("\\u{{{:x}}}", u32::from(c)));
        }
    }

    #[test]
    fn json_stays_json_with_the_same_values() {
        let value = serde_json::json!({"subject": "a\u{1b}[2K\u{7f}\u{9b}\u{202e}\u{e0041}\n"});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = json_terminal_safe(&text);
        assert!(!safe.chars().any(|c| c != '\n' && is_unsafe(c)), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
    }

    proptest! {
        #[test]
        fn no_unsafe_character_survives(text in any::<String>()) {
            let one = terminal_safe(&text);
            prop_assert!(!one.chars().any(is_unsafe));
            let lines = terminal_lines(&text);
            prop_assert_eq!(lines.matches('\n').count(), text.matches('\n').count());
            prop_assert!(!lines.chars().any(|c| c != '\n' && is_unsafe(c)));
            let json = serde_json::to_string(&text).unwrap();
            let safe = json_terminal_safe(&json);
            prop_assert!(!safe.chars().any(is_unsafe));
            prop_assert_eq!(serde_json::from_str::<String>(&safe).unwrap(), text);
        }
    }
}
