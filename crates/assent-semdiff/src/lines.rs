//! Where values start, for the parsers that do not say.
//!
//! `serde_json` tells a visitor nothing about positions, so [`json_value_lines`] scans the
//! text once before parsing and lists the line of every value in document order, the order
//! in which the value builder counts them. `toml` gives byte spans, which [`NewlineIndex`]
//! turns into lines, counting `\n` alone as git does. (libyaml's events carry their own line,
//! which `yaml/events.rs` turns into git's through the same index where they differ.)

use super::tree::Line;

/// The line of each value of JSON `text`, in document order: a container before its
/// contents, map keys not counted (they are not values).
///
/// Only meaningful for valid JSON, which is the only input whose lines are ever used: on
/// anything else `serde_json` refuses the document. Never panics, whatever the input. The
/// scan stops once it has found more than `max_nodes` values or nested deeper than
/// `max_depth`, since the builder refuses such a document anyway; so the table of a hostile
/// file stays within `4 × (max_nodes + 1)` bytes.
pub(super) fn json_value_lines(text: &str, max_depth: usize, max_nodes: usize) -> Vec<Line> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut line = 1usize;
    // Whether each open container is a map; only the innermost matters at any point.
    let mut open_maps: Vec<bool> = Vec::new();
    // In a map, whether the next string is a key: after `{` or `,` it is, after `:` it is not.
    let mut key_next = false;
    // Inside a bare token (number, `true`, `false`, `null`), which starts one value.
    let mut in_token = false;
    let mut i = 0;
    while i < bytes.len() && lines.len() <= max_nodes && open_maps.len() <= max_depth {
        let b = bytes[i];
        let starts_token = !matches!(
            b,
            b'"' | b'{' | b'[' | b'}' | b']' | b',' | b':' | b' ' | b'\t' | b'\r' | b'\n'
        );
        if !starts_token {
            in_token = false;
        }
        match b {
            b'"' => {
                let in_map = open_maps.last() == Some(&true);
                if !(in_map && key_next) {
                    lines.push(Line::new(line));
                }
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    match bytes[i] {
                        b'\\' => i += 2,
                        // Not valid JSON inside a string, but the count stays true to the text.
                        b'\n' => {
                            line += 1;
                            i += 1;
                        }
                        _ => i += 1,
                    }
                }
            }
            b'{' | b'[' => {
                lines.push(Line::new(line));
                open_maps.push(b == b'{');
                key_next = b == b'{';
            }
            b'}' | b']' => {
                open_maps.pop();
            }
            b',' => key_next = open_maps.last() == Some(&true),
            b':' => key_next = false,
            b'\n' => line += 1,
            _ if starts_token && !in_token => {
                lines.push(Line::new(line));
                in_token = true;
            }
            _ => {}
        }
        i += 1;
    }
    lines
}

/// The byte offsets of a text's newlines, to find the line of any offset.
pub(super) struct NewlineIndex(Vec<usize>);

impl NewlineIndex {
    pub(super) fn new(text: &[u8]) -> Self {
        NewlineIndex(
            text.iter()
                .copied()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i)
                .collect(),
        )
    }

    /// The 1-based line holding byte `offset`.
    pub(super) fn line_of(&self, offset: usize) -> Line {
        Line::new(1 + self.0.partition_point(|&newline| newline < offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<usize> {
        json_value_lines(text, 128, 1_000)
            .into_iter()
            .map(|l| l.get().expect("known"))
            .collect()
    }

    #[test]
    fn every_json_value_in_document_order_keys_excluded() {
        let text = "{\n  \"a\": [1, -2.5e+3,\n    \"x\\\"y\"],\n  \"b\": {\"c\": true, \"d\": null},\n  \"e\": {}\n}";
        // {, [, 1, -2.5e+3, "x\"y", {, true, null, {}
        assert_eq!(lines(text), [1, 2, 2, 2, 3, 4, 4, 4, 5]);
        assert_eq!(lines("[\"a\", {\"k\": \"v\"}, []]"), [1, 1, 1, 1, 1]);
        assert_eq!(lines("  7  "), [1]);
        assert!(lines("").is_empty());
    }

    #[test]
    fn strings_hide_structure_and_escapes_do_not_end_them() {
        assert_eq!(lines("[\"{[,:\", \"\\\\\", \"a\\\"],\"]"), [1, 1, 1, 1]);
    }

    #[test]
    fn the_scan_stops_at_the_limits_and_never_panics() {
        assert_eq!(json_value_lines("[1,2,3,4,5]", 128, 2).len(), 3);
        assert_eq!(json_value_lines(&"[".repeat(10_000), 5, 1_000_000).len(), 6);
        for text in ["\"", "\"\\", "}}]]", ",,::", "[\"a\\"] {
            json_value_lines(text, 128, 1_000);
        }
    }

    #[test]
    fn newline_index_finds_the_line_of_an_offset() {
        let index = NewlineIndex::new(b"ab\ncd\n\nef");
        let at = |offset| index.line_of(offset).get();
        assert_eq!(
            [at(0), at(2), at(3), at(5), at(6), at(7), at(99)],
            [
                Some(1),
                Some(1),
                Some(2),
                Some(2),
                Some(3),
                Some(4),
                Some(4)
            ]
        );
    }
}
