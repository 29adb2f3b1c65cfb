//! Parsing a governed file into a value tree: the per-format front ends and their errors.

use serde::de::DeserializeSeed;

use super::build::{self, Budget, ValueSeed};
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
            let tree = parsed.map_err(|e| {
                let line = (e.line() > 0).then_some(e.line());
                fail(line, strip_position(e.to_string(), e.line(), e.column()))
            })?;
            match json_number_refusal(text) {
                Some((line, message)) => Err(fail(Some(line), message)),
                None => Ok(tree),
            }
        }
        Format::Yaml => yaml::parse_yaml(text, limits.max_depth, limits.max_nodes)
            .map_err(|e| fail(Some(e.line), e.message)),
        Format::Toml => {
            let budget = Budget::toml(limits.max_depth, limits.max_nodes, text);
            let seed = seed(&budget);
            let parsed = toml::de::Deserializer::parse(text).and_then(|de| seed.deserialize(de));
            parsed.map_err(|e| {
                let line = budget.refused_key_line.get().get().or_else(|| {
                    e.span()
                        .map(|span| line_of_offset(text.as_bytes(), span.start))
                });
                fail(line, e.message().to_owned())
            })
        }
    }
}

/// The first integer literal of valid JSON `text` that readers would read differently, with
/// its line and why: one a double cannot hold exactly ([`build::inexact_in_a_double`]; the
/// value builder only sees `serde_json`'s reading, already a double past 64 bits), or `-0`,
/// which Python reads as the integer 0 and every reader that keeps doubles (and `serde_json`)
/// as -0.0. Fractions and exponents are doubles to every reader and are not looked at.
fn json_number_refusal(text: &str) -> Option<(usize, String)> {
    let bytes = text.as_bytes();
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => line += 1,
            b'"' => {
                // Valid JSON: a string holds no raw newline, and `\\` escapes one byte.
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                let literal = &text[start..i];
                if literal.contains(['.', 'e', 'E']) {
                    continue;
                }
                if literal == "-0" {
                    return Some((
                        line,
                        "number -0 is the integer 0 to some readers (Python's json) and the \
                         double -0.0 to others (JavaScript, Go's encoding/json); write 0"
                            .to_owned(),
                    ));
                }
                let message = match literal.parse::<i128>() {
                    Ok(n) => build::inexact_in_a_double(n),
                    Err(_) => Some(format!(
                        "integer {literal} is wider than 128 bits, beyond what any reader \
                         agrees on; write it as a string"
                    )),
                };
                if let Some(message) = message {
                    return Some((line, message));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
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
            parse(Format::Yaml, "1: a\ntrue: b\nnull: c\n1.5: d\nx: e\n"),
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
        // serde_json would read an integer beyond 64 bits as a float; Python reads the
        // integer. Refused, as is every integer a double cannot hold exactly.
        let (line, message) = error(Format::Json, "[1,\n99999999999999999999999]");
        assert_eq!(line, Some(2));
        assert!(message.contains("read 1e23"), "{message}");
        assert_eq!(parse(Format::Json, "[1e23]"), Ok(json!([1e23])));
    }

    /// `(format, document, line, what the message must say)`: a shape some reader of the
    /// file reads otherwise than assent would (`docs/policies.md`, "What assent refuses to
    /// parse, and why").
    const READ_OTHERWISE: &[(Format, &str, usize, &str)] = &[
        // YAML 1.1 integers: leading-zero octal, underscores, sexagesimal, 0o/0X prefixes.
        (
            Format::Yaml,
            "topics:\n  - name: a\n    retention_days: 030\n",
            3,
            "topics[0].retention_days: plain scalar \"030\" is the string \"030\" to assent (YAML 1.2) but the integer 24 to PyYAML (YAML 1.1) and the integer 24 to Go's yaml.v3",
        ),
        (
            Format::Yaml,
            "partitions: 012\n",
            1,
            "the integer 10 to PyYAML",
        ),
        (
            Format::Yaml,
            "a: 1_000\n",
            1,
            "the integer 1000 to PyYAML (YAML 1.1) and the integer 1000 to Go's yaml.v3",
        ),
        (Format::Yaml, "a: 1:30\n", 1, "the integer 90 to PyYAML"),
        (
            Format::Yaml,
            "a: 190:20:30\n",
            1,
            "the integer 685230 to PyYAML",
        ),
        (
            Format::Yaml,
            "a: 0o17\n",
            1,
            "is the integer 15 to assent (YAML 1.2) but the string \"0o17\" to PyYAML",
        ),
        (
            Format::Yaml,
            "a: 0X1F\n",
            1,
            "the integer 31 to Go's yaml.v3",
        ),
        (Format::Yaml, "a: 09\n", 1, "the float 9.0 to Go's yaml.v3"),
        // YAML 1.1 floats need a dot and a signed exponent.
        (
            Format::Yaml,
            "a: 1e3\n",
            1,
            "is the float 1000.0 to assent (YAML 1.2) but the string \"1e3\" to PyYAML",
        ),
        (
            Format::Yaml,
            "a: 1.5e3\n",
            1,
            "the string \"1.5e3\" to PyYAML",
        ),
        (Format::Yaml, "a: +.5\n", 1, "the string \"+.5\" to PyYAML"),
        (Format::Yaml, "a: 1.0e+400\n", 1, "the float inf to PyYAML"),
        // YAML 1.1 booleans, in any case.
        (
            Format::Yaml,
            "enabled: yes\n",
            1,
            "the boolean true in YAML 1.1",
        ),
        (Format::Yaml, "a: Off\n", 1, "the boolean false in YAML 1.1"),
        (Format::Yaml, "a: [x, n]\n", 1, "a[1]: plain scalar \"n\""),
        (Format::Yaml, "yes: 1\n", 1, "plain scalar \"yes\""),
        // Timestamps other than a plain date.
        (
            Format::Yaml,
            "at: 2024-01-15 10:00:00\n",
            1,
            "a timestamp to PyYAML",
        ),
        (
            Format::Yaml,
            "at: 2024-1-5\n",
            1,
            "a timestamp to Go's yaml.v3",
        ),
        // Merge keys, inline or not, and << as a value.
        (
            Format::Yaml,
            "topics:\n  - name: a\n    retention_days: 30\n    <<: {retention_days: 1}\n",
            4,
            "topics[0]: \"<<\" is YAML 1.1's merge key",
        ),
        (
            Format::Yaml,
            "a:\n  <<:\n    b: 1\n",
            2,
            "a: \"<<\" is YAML 1.1's merge key",
        ),
        (Format::Yaml, "a: {x: 1, <<: {y: 2}}\n", 1, "merge key"),
        (Format::Yaml, "a: <<\n", 1, "merge key"),
        // Keys alike under case folding, in every format.
        (
            Format::Yaml,
            "retention_days: 30\nretention_day\u{17f}: 1\n",
            2,
            "keys \"retention_days\" (line 1) and \"retention_day\u{17f}\" differ only in letter case",
        ),
        (
            Format::Yaml,
            "a:\n  Name: x\n  NAME: y\n",
            3,
            "a: keys \"Name\" (line 2) and \"NAME\"",
        ),
        (
            Format::Json,
            "{\"retention_days\": 30,\n \"RETENTION_DAYS\": 1}",
            2,
            "keys \"retention_days\" (line 1) and \"RETENTION_DAYS\" differ only in letter case",
        ),
        (
            Format::Json,
            "{\"kafka\": 1, \"\\u212aafka\": 2}",
            1,
            "differ only in letter case",
        ),
        (
            Format::Toml,
            "retention_days = 30\nRetention_Days = 1\n",
            2,
            "differ only in letter case",
        ),
        (
            Format::Toml,
            "[a]\nx = 1\n[A]\nx = 2\n",
            3,
            "differ only in letter case",
        ),
        // Invisible characters in keys, in every format.
        (
            Format::Yaml,
            "retention\u{feff}_days: 1\n",
            1,
            "key \"retention\\u{feff}_days\" holds the invisible character U+FEFF: it displays as \"retention_days\"",
        ),
        (
            Format::Yaml,
            "a:\n  \"retention\\u200b_days\": 1\n",
            2,
            "a: key \"retention\\u{200b}_days\" holds the invisible character U+200B",
        ),
        (Format::Json, "{\"retention\\u200d_days\": 1}", 1, "U+200D"),
        (Format::Json, "{\"a\": {\"b\u{202e}\": 1}}", 1, "U+202E"),
        (Format::Toml, "\"retention\\u00ad_days\" = 1\n", 1, "U+00AD"),
        // JSON numbers readers disagree on.
        (
            Format::Json,
            "{\"id\": 9007199254740993}",
            1,
            "read 9.007199254740992e15",
        ),
        (
            Format::Json,
            "[\n-0]",
            2,
            "number -0 is the integer 0 to some readers",
        ),
        (
            Format::Yaml,
            "id: 9007199254740993\n",
            1,
            "beyond what a double holds exactly",
        ),
    ];

    #[test]
    fn shapes_other_readers_read_otherwise_are_refused_at_their_line() {
        for &(format, text, line, says) in READ_OTHERWISE {
            let (got, message) = error(format, text);
            assert_eq!(got, Some(line), "{format:?} {text:?}: {message}");
            assert!(
                message.contains(says),
                "{format:?} {text:?}:\n{message}\nlacks\n{says}"
            );
        }
    }

    #[test]
    fn what_every_reader_reads_alike_is_still_accepted() {
        let yaml = "a: \"030\"\nb: '1:30'\nc: \"yes\"\nd: '<<'\ne: 2024-01-15\nf: 1.5e+3\n\
                    g: 0x1F\nh: 0b101\ni: 007.5\nj: -0\nk: 1.2.3\nl: true\nm: ~\nn: .5\n\
                    o: orders\np: \"\\u200b\"\nq: 9007199254740992\nr: \"RETENTION_DAYS\"\ny: 1\n";
        assert_eq!(
            parse(Format::Yaml, yaml),
            Ok(json!({
                "a": "030", "b": "1:30", "c": "yes", "d": "<<", "e": "2024-01-15", "f": 1500.0,
                "g": 31, "h": 5, "i": 7.5, "j": 0, "k": "1.2.3", "l": true, "m": null, "n": 0.5,
                "o": "orders", "p": "\u{200b}", "q": 9007199254740992u64, "r": "RETENTION_DAYS",
                "y": 1
            }))
        );
        // Tagged scalars are what their tag says to every reader.
        assert_eq!(
            parse(Format::Yaml, "a: !!str 030\nb: !!int 30\n"),
            Ok(json!({"a": "030", "b": 30}))
        );
        assert_eq!(
            parse(
                Format::Json,
                "{\"a\": -0.0, \"b\": 9007199254740992, \"c\": 1e400000000}"
            )
            .map_err(|e| e.message.contains("out of range")),
            Err(true),
            "serde_json itself refuses an infinite literal"
        );
        assert_eq!(
            parse(
                Format::Json,
                "{\"a\": -0.0, \"b\": 9007199254740992, \"c\": \"\\u200b-0 9007199254740993\"}"
            ),
            Ok(json!({"a": -0.0, "b": 9007199254740992u64, "c": "\u{200b}-0 9007199254740993"}))
        );
        assert_eq!(
            parse(Format::Toml, "a = 9007199254740993\nb = \"\\u200b\"\n"),
            Ok(json!({"a": 9007199254740993u64, "b": "\u{200b}"})),
            "TOML readers keep 64-bit integers; invisible characters in values are data"
        );
    }

    #[test]
    fn json_lone_surrogates_are_refused() {
        assert_eq!(error(Format::Json, "[\"\\ud800\"]").0, Some(1));
        assert_eq!(error(Format::Json, "[\n\"\\udc00x\"]").0, Some(2));
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
