//! Parsing a governed file into a value tree: the per-format front ends and their errors.

use serde::de::DeserializeSeed;

use super::build::{Budget, ValueSeed};
use super::tree::Node;
use super::{Format, Limits, yaml};

/// Why a governed file could not be read as a value tree.
///
/// Displays as `file:line: message`, or `file: message` when no line applies (a file over the
/// size limit).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ParseError {
    /// Repository path of the file, as given to [`parse_document`].
    pub file: String,
    /// 1-based line of the problem, when it has one.
    pub line: Option<usize>,
    /// What is wrong, without the position (that is in `line`).
    pub message: String,
}

/// Parses `bytes`, the content of `file` in `format`, into a value tree within `limits`.
///
/// See the module docs for the rules (duplicate keys, YAML aliases and tags, numbers, limits).
/// Never panics and never recurses deeper than the parsers' own guards, whatever the input.
pub fn parse_document(
    file: &str,
    format: Format,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Node, ParseError> {
    let fail = |line: Option<usize>, message: String| ParseError {
        file: file.to_owned(),
        line,
        message,
    };
    if bytes.len() > limits.max_bytes {
        return Err(fail(
            None,
            format!(
                "file is {} bytes, more than the {} allowed",
                bytes.len(),
                limits.max_bytes
            ),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        fail(
            Some(line_of_offset(bytes, at)),
            format!("invalid UTF-8 at byte {at}"),
        )
    })?;
    // A byte-order mark carries no content; serde_json would reject it. It sits on line 1
    // and has no newline, so line numbers in the rest are unchanged.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);

    let seed = |budget| ValueSeed { budget, depth: 0 };
    match format {
        Format::Json => {
            let budget = Budget::json(limits.max_depth, limits.max_nodes, text);
            let seed = seed(&budget);
            let mut de = serde_json::Deserializer::from_str(text);
            let parsed = seed
                .deserialize(&mut de)
                .and_then(|value| de.end().map(|()| value));
            parsed.map_err(|e| {
                let line = (e.line() > 0).then_some(e.line());
                fail(line, strip_position(e.to_string(), e.line(), e.column()))
            })
        }
        Format::Yaml => yaml::parse_yaml(text, limits.max_depth, limits.max_nodes)
            .map_err(|e| fail(Some(e.line), e.message)),
        Format::Toml => {
            let budget = Budget::toml(limits.max_depth, limits.max_nodes, text);
            let seed = seed(&budget);
            let parsed = toml::de::Deserializer::parse(text).and_then(|de| seed.deserialize(de));
            parsed.map_err(|e| {
                let line = e
                    .span()
                    .map(|span| line_of_offset(text.as_bytes(), span.start));
                fail(line, e.message().to_owned())
            })
        }
    }
}

/// The 1-based line holding byte `offset` of `bytes`.
fn line_of_offset(bytes: &[u8], offset: usize) -> usize {
    let end = offset.min(bytes.len());
    1 + bytes[..end].iter().filter(|&&b| b == b'\n').count()
}

/// Drops the trailing ` at line L column C` that `serde_json` and `serde_yaml` append, since
/// [`ParseError`] carries the line itself.
fn strip_position(message: String, line: usize, column: usize) -> String {
    let suffix = format!(" at line {line} column {column}");
    match message.strip_suffix(&suffix) {
        Some(bare) => bare.to_owned(),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn parse(format: Format, text: &str) -> Result<Value, ParseError> {
        parse_document("f", format, text.as_bytes(), &Limits::default()).map(|n| n.to_value())
    }

    /// `(line, message)` of the error parsing `text`.
    fn error(format: Format, text: &str) -> (Option<usize>, String) {
        let e = parse(format, text).expect_err("must not parse");
        (e.line, e.message)
    }

    #[test]
    fn display_is_file_line_message() {
        let e = ParseError {
            file: "a/b.yaml".into(),
            line: Some(3),
            message: "bad".into(),
        };
        assert_eq!(e.to_string(), "a/b.yaml:3: bad");
        assert_eq!(ParseError { line: None, ..e }.to_string(), "a/b.yaml: bad");
    }

    #[test]
    fn parses_each_format() {
        assert_eq!(
            parse(Format::Json, r#"{"a": [1, 2.5, "x", null, true]}"#),
            Ok(json!({"a": [1, 2.5, "x", null, true]}))
        );
        assert_eq!(
            parse(Format::Yaml, "a: [1, 2.5, x, ~, true]\n"),
            Ok(json!({"a": [1, 2.5, "x", null, true]}))
        );
        assert_eq!(
            parse(Format::Toml, "a = [1, 2.5, \"x\"]\n"),
            Ok(json!({"a": [1, 2.5, "x"]}))
        );
    }

    #[test]
    fn size_limit_has_no_line() {
        let limits = Limits {
            max_bytes: 4,
            ..Limits::default()
        };
        let e = parse_document("f", Format::Json, b"[1, 2]", &limits).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (None, "file is 6 bytes, more than the 4 allowed")
        );
        assert!(parse_document("f", Format::Json, b"[12]", &limits).is_ok());
    }

    #[test]
    fn invalid_utf8_names_the_line_of_the_bad_byte() {
        for format in [Format::Json, Format::Yaml, Format::Toml] {
            let e = parse_document("f", format, b"a\nb\n\xff\n", &Limits::default()).unwrap_err();
            assert_eq!(
                (e.line, e.message.as_str()),
                (Some(3), "invalid UTF-8 at byte 4"),
                "{format:?}"
            );
        }
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        for format in [Format::Json, Format::Yaml] {
            let doc = if format == Format::Json {
                "\u{feff}{\"a\": 1}"
            } else {
                "\u{feff}a: 1"
            };
            assert_eq!(parse(format, doc), Ok(json!({"a": 1})), "{format:?}");
        }
        assert_eq!(parse(Format::Toml, "\u{feff}a = 1"), Ok(json!({"a": 1})));
    }

    #[test]
    fn syntax_errors_carry_their_line() {
        assert_eq!(error(Format::Json, "{\n\"a\": 1,\n}").0, Some(3));
        assert_eq!(error(Format::Yaml, "a: 1\nb: [1, 2\n").0, Some(3));
        assert_eq!(error(Format::Toml, "a = 1\nb = \n").0, Some(2));
        assert_eq!(error(Format::Json, "[1] [2]").0, Some(1), "trailing data");
    }

    #[test]
    fn duplicate_keys_are_refused_at_their_line() {
        assert_eq!(
            error(
                Format::Json,
                "{\n\"a\": 1,\n\"b\": {\"x\": 1},\n\"a\": 2\n}"
            ),
            (Some(4), "duplicate key \"a\"".into())
        );
        assert_eq!(
            error(Format::Json, "{\"b\": {\"x\": 1,\n \"x\": 2}}"),
            (Some(2), "duplicate key \"x\"".into())
        );
        assert_eq!(
            error(Format::Yaml, "a: 1\nb:\n  x: 1\n  x: 2\n"),
            (Some(4), "b: duplicate key \"x\"".into())
        );
        let (line, message) = error(Format::Toml, "a = 1\nb = 2\na = 3\n");
        assert_eq!(line, Some(3), "{message}");
    }

    #[test]
    fn yaml_scalar_keys_become_strings_and_collide_by_string_form() {
        assert_eq!(
            parse(Format::Yaml, "1: a\ntrue: b\n~: c\n1.5: d\nx: e\n"),
            Ok(json!({"1": "a", "true": "b", "null": "c", "1.5": "d", "x": "e"}))
        );
        assert_eq!(
            error(Format::Yaml, "1: a\n'1': b\n"),
            (Some(2), "duplicate key \"1\"".into())
        );
    }

    #[test]
    fn yaml_complex_keys_are_refused_at_their_line() {
        assert_eq!(
            error(Format::Yaml, "a: 1\n? [x, y]\n: 2\n"),
            (Some(2), "lists as map keys are not supported".into())
        );
        assert_eq!(
            error(Format::Yaml, "a: 1\n{k: v}: 2\n"),
            (Some(2), "maps as map keys are not supported".into())
        );
    }

    #[test]
    fn yaml_documents_one_per_file_empty_is_null() {
        assert_eq!(parse(Format::Yaml, ""), Ok(Value::Null));
        assert_eq!(parse(Format::Yaml, "# only a comment\n"), Ok(Value::Null));
        assert_eq!(parse(Format::Yaml, "---\na: 1\n...\n"), Ok(json!({"a": 1})));
        let (line, message) = error(Format::Yaml, "a: 1\n---\nb: 2\n");
        assert_eq!(line, Some(2));
        assert!(message.contains("exactly one document"), "{message}");
    }

    #[test]
    fn yaml_aliases_are_refused_anchors_alone_are_fine() {
        assert_eq!(
            parse(Format::Yaml, "a: &x 1\nb: 2\n"),
            Ok(json!({"a": 1, "b": 2}))
        );
        assert_eq!(
            error(Format::Yaml, "base: &b {x: 1}\nother:\n  x: *b\n"),
            (
                Some(3),
                "YAML aliases are not supported in governed files".into()
            )
        );
        // The usual use of an alias, a merge, is refused at its key, on the same line.
        let (line, message) = error(Format::Yaml, "base: &b {x: 1}\nother:\n  <<: *b\n");
        assert_eq!(line, Some(3));
        assert!(
            message.starts_with("other: \"<<\" is YAML 1.1's merge key"),
            "{message}"
        );
    }

    #[test]
    fn yaml_application_tags_are_refused_standard_tags_resolve() {
        let (line, message) = error(Format::Yaml, "a: 1\nb: !secret hunter2\n");
        // serde_yaml prefixes the path of the offending node.
        assert_eq!(
            (line, message.as_str()),
            (
                Some(2),
                "b: YAML tags are not supported in governed files (found !secret)"
            )
        );
        assert_eq!(
            error(Format::Yaml, "a:\n  - !reference [x, y]\n").0,
            Some(2)
        );
        assert_eq!(
            parse(Format::Yaml, "a: !!str 123\nb: !!int '7'\n"),
            Ok(json!({"a": "123", "b": 7}))
        );
    }

    #[test]
    fn non_finite_and_oversized_numbers_are_refused() {
        for (text, line) in [
            ("a: 1\nb: .nan\n", 2),
            ("a: .inf\n", 1),
            ("a:\n  - -.Inf\n", 2),
        ] {
            let (got, message) = error(Format::Yaml, text);
            assert_eq!(got, Some(line), "{text}: {message}");
            assert!(
                message.contains("cannot be represented in JSON"),
                "{message}"
            );
        }
        assert_eq!(error(Format::Toml, "a = 1\nb = nan\n").0, Some(2));
        assert_eq!(error(Format::Toml, "b = -inf\n").0, Some(1));
        assert!(parse(Format::Yaml, "a: 99999999999999999999999\n").is_err());
        // serde_json reads an integer beyond 64 bits as a float (documented, not refused).
        assert_eq!(
            parse(Format::Json, "[99999999999999999999999]"),
            Ok(json!([1e23]))
        );
    }

    #[test]
    fn toml_datetimes_become_strings() {
        assert_eq!(
            parse(
                Format::Toml,
                "at = 1979-05-27T07:32:00Z\nday = 1979-05-27\n"
            ),
            Ok(json!({"at": "1979-05-27T07:32:00Z", "day": "1979-05-27"}))
        );
        // Only TOML's private marker key is special: in JSON it is ordinary data.
        let doc = r#"{"$__toml_private_datetime": "x"}"#;
        assert_eq!(
            parse(Format::Json, doc),
            Ok(json!({"$__toml_private_datetime": "x"}))
        );
    }

    #[test]
    fn depth_limit_applies_to_every_format() {
        let limits = Limits {
            max_depth: 3,
            ..Limits::default()
        };
        let at = |format, text: &str| parse_document("f", format, text.as_bytes(), &limits);
        assert!(at(Format::Json, "[[[1]]]").is_ok());
        assert_eq!(
            at(Format::Json, "[[[[1]]]]").unwrap_err().message,
            "nesting deeper than 3 levels (limit)"
        );
        assert!(at(Format::Yaml, "a: {b: [1]}").is_ok());
        assert_eq!(
            at(Format::Yaml, "a:\n  b:\n    c:\n      d: 1\n")
                .unwrap_err()
                .line,
            Some(4)
        );
        assert!(at(Format::Toml, "a = {b = [1]}").is_ok());
        assert_eq!(
            at(Format::Toml, "a = 1\nb = {c = [[1]]}").unwrap_err().line,
            Some(2)
        );
    }

    #[test]
    fn node_limit_applies_to_every_format() {
        // {"a": [1, 2]} is four values: the object, the list, two numbers.
        let ok = Limits {
            max_nodes: 4,
            ..Limits::default()
        };
        let tight = Limits {
            max_nodes: 3,
            ..Limits::default()
        };
        for (format, text) in [
            (Format::Json, r#"{"a": [1, 2]}"#),
            (Format::Yaml, "a: [1, 2]"),
            (Format::Toml, "a = [1, 2]"),
        ] {
            assert!(
                parse_document("f", format, text.as_bytes(), &ok).is_ok(),
                "{format:?}"
            );
            let e = parse_document("f", format, text.as_bytes(), &tight).unwrap_err();
            assert_eq!(
                e.message, "document has more than 3 values (limit)",
                "{format:?}"
            );
        }
    }

    #[test]
    fn ten_thousand_deep_documents_are_errors_not_crashes() {
        let n = 10_000;
        let json = "[".repeat(n) + &"]".repeat(n);
        let flow_yaml = "a: ".to_owned() + &"[".repeat(n) + &"]".repeat(n);
        let block_yaml = "- ".repeat(n) + "1\n"; // compact nested block sequences
        let toml_array = "a = ".to_owned() + &"[".repeat(n) + &"]".repeat(n);
        let toml_inline = "a = ".to_owned() + &"{b = ".repeat(n) + "1" + &"}".repeat(n);
        let toml_dotted = (0..n)
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
            .join(".")
            + " = 1";
        let toml_header = "[".to_owned()
            + &(0..n)
                .map(|i| format!("k{i}"))
                .collect::<Vec<_>>()
                .join(".")
            + "]";
        // `toml` reports no position for an over-long key chain, so those carry no line.
        for (format, text, has_line) in [
            (Format::Json, json, true),
            (Format::Yaml, flow_yaml, true),
            (Format::Yaml, block_yaml, true),
            (Format::Toml, toml_array, true),
            (Format::Toml, toml_inline, true),
            (Format::Toml, toml_dotted, false),
            (Format::Toml, toml_header, false),
        ] {
            let e = parse(format, &text).expect_err("a 10,000-deep document must be refused");
            assert_eq!(e.line.is_some(), has_line, "{format:?}: {e}");
        }
    }

    #[test]
    fn default_depth_edges_per_format() {
        let nested = |n: usize| "[".repeat(n) + &"]".repeat(n);
        let ok = |format, n| parse(format, &nested(n)).is_ok();
        // serde_json's own guard is one level stricter than the default limit.
        assert!(ok(Format::Json, 127) && !ok(Format::Json, 128));
        assert!(ok(Format::Yaml, 128) && !ok(Format::Yaml, 129));
        let toml = |n: usize| parse(Format::Toml, &format!("a = {}", nested(n))).is_ok();
        assert!(toml(80) && !toml(81), "toml's guard is 80 nested brackets");
    }

    #[test]
    fn parsers_own_guards_hold_even_with_a_huge_depth_limit() {
        let limits = Limits {
            max_depth: usize::MAX,
            ..Limits::default()
        };
        let json = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(parse_document("f", Format::Json, json.as_bytes(), &limits).is_err());
        let yaml = "[".repeat(10_000) + &"]".repeat(10_000);
        assert!(parse_document("f", Format::Yaml, yaml.as_bytes(), &limits).is_err());
        // Within the parsers' guards a deep document still parses.
        let json = "[".repeat(120) + &"]".repeat(120);
        assert!(parse_document("f", Format::Json, json.as_bytes(), &limits).is_ok());
        assert!(parse_document("f", Format::Yaml, json.as_bytes(), &limits).is_ok());
    }

    #[test]
    fn billion_laughs_is_refused_at_the_first_alias() {
        let mut doc = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (name, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            let refs = vec![format!("*{prev}"); 9].join(",");
            doc.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        let e = parse(Format::Yaml, &doc).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (Some(2), "YAML aliases are not supported in governed files")
        );
    }

    #[test]
    fn line_of_offset_counts_newlines_before_it() {
        assert_eq!(line_of_offset(b"ab\ncd", 0), 1);
        assert_eq!(line_of_offset(b"ab\ncd", 2), 1);
        assert_eq!(line_of_offset(b"ab\ncd", 3), 2);
        assert_eq!(line_of_offset(b"ab\ncd", 99), 2);
    }
}
