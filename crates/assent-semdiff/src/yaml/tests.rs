//! The tree builder: refusals at their line, paths in messages, and a differential test
//! against `serde_yaml`, which built these trees before.

use proptest::prelude::*;
use serde::de::DeserializeSeed;
use serde_json::{Value, json};

use super::*;
use crate::build::{Budget, ValueSeed};

fn parse(text: &str) -> Result<Value, YamlError> {
    parse_yaml(text, 128, 1_000_000).map(|node| node.to_value())
}

fn error(text: &str) -> (usize, String) {
    let e = parse(text).expect_err("must be refused");
    (e.line, e.message)
}

#[test]
fn documents_of_every_shape() {
    assert_eq!(parse(""), Ok(Value::Null));
    assert_eq!(parse("# only a comment\n"), Ok(Value::Null));
    assert_eq!(parse("---\n...\n"), Ok(Value::Null));
    assert_eq!(parse("42"), Ok(json!(42)));
    assert_eq!(
        parse("a: 1\nb: [x, {c: d}]\nc:\n  - 1\n  - - 2\n"),
        Ok(json!({"a": 1, "b": ["x", {"c": "d"}], "c": [1, [2]]}))
    );
    assert_eq!(parse("---\nanchor: &a 1\n...\n"), Ok(json!({"anchor": 1})));
    assert_eq!(
        parse("a: {}\nb: []\nc:\n"),
        Ok(json!({"a": {}, "b": [], "c": null}))
    );
    assert_eq!(
        parse("s: |\n  two\n  lines\nf: >\n  folded\n  text\nq: \"\\t\\u00e9\"\n"),
        Ok(json!({"s": "two\nlines\n", "f": "folded text\n", "q": "\té"}))
    );
}

#[test]
fn refuses_alias_second_document_and_complex_keys_at_their_line() {
    assert_eq!(
        error("a: &x 1\nb: *x\n"),
        (
            2,
            "YAML aliases are not supported in governed files".to_owned()
        )
    );
    let (line, message) = error("a: 1\n---\nb: 2\n");
    assert_eq!(line, 2);
    assert!(message.contains("exactly one document"), "{message}");
    assert_eq!(
        error("x:\n  ? [a, b]\n  : 1\n"),
        (2, build::LIST_KEY.to_owned())
    );
    assert_eq!(error("{a: 1}: 2\n"), (1, build::MAP_KEY.to_owned()));
}

#[test]
fn counts_values_not_keys_and_depth_iteratively() {
    assert!(parse_yaml("{a: 1, b: 2}", 128, 3).is_ok());
    assert_eq!(
        parse_yaml("{a: 1, b: 2}", 128, 2).unwrap_err().message,
        build::too_many_nodes(2)
    );
    assert!(parse_yaml("[[[]]]", 3, 100).is_ok());
    assert_eq!(
        parse_yaml("[[[]]]", 2, 100).unwrap_err().message,
        build::too_deep(2)
    );
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    assert_eq!(parse(&deep).unwrap_err().message, build::too_deep(128));
    // The ceiling holds even when the configured limit is higher.
    assert_eq!(
        parse_yaml(&deep, usize::MAX, usize::MAX)
            .unwrap_err()
            .message,
        build::too_deep(DEPTH_CEILING)
    );
}

#[test]
fn content_errors_name_the_path_to_the_value() {
    assert_eq!(
        error("a: 1\nb:\n  x: 1\n  x: 2\n"),
        (4, "b: duplicate key \"x\"".to_owned())
    );
    assert_eq!(
        error("topics:\n  - name: a\n    acls:\n      - {p: 1, p: 2}\n"),
        (4, "topics[0].acls[0]: duplicate key \"p\"".to_owned())
    );
    assert_eq!(
        error("- 1\n- .nan\n"),
        (
            2,
            "[1]: number NaN (NaN or infinite) cannot be represented in JSON".to_owned()
        )
    );
    assert_eq!(
        error("a: !secret x\n"),
        (
            1,
            "a: YAML tags are not supported in governed files (found !secret)".to_owned()
        )
    );
    assert_eq!(
        error("1: a\n'1': b\n"),
        (2, "duplicate key \"1\"".to_owned())
    );
}

#[test]
fn tags_on_containers_must_match_them() {
    assert_eq!(
        parse("a: !!seq [1]\nb: !!map {c: 1}\n"),
        Ok(json!({"a": [1], "b": {"c": 1}}))
    );
    assert_eq!(
        error("a: !!map [1]\n").1,
        "a: YAML tags are not supported in governed files (found !!map)"
    );
    assert_eq!(
        error("a:\n  - !reference [x, y]\n"),
        (
            2,
            "a[0]: YAML tags are not supported in governed files (found !reference)".to_owned()
        )
    );
    // A %TAG shorthand does not smuggle an application tag past the check.
    assert_eq!(
        error("%TAG !e! tag:example.com,2000:\n---\na: !e!x 1\n").1,
        "a: YAML tags are not supported in governed files (found tag:example.com,2000:x)"
    );
}

#[test]
fn scalar_keys_take_their_text() {
    assert_eq!(
        parse("1: a\ntrue: b\nnull: c\n1.5: d\nx: e\n16: f\n99999999999999999999: g\n"),
        Ok(json!({
            "1": "a", "true": "b", "null": "c", "1.5": "d", "x": "e", "16": "f",
            "99999999999999999999": "g"
        }))
    );
    // A key whose text is not the one written would be another key to a reader keeping keys
    // as written.
    for (text, source) in [
        (
            "a: 1
0x10: f
",
            "0x10",
        ),
        (
            "~: c
", "~",
        ),
        (
            "True: b
", "True",
        ),
        (
            "5.: x
", "5.",
        ),
    ] {
        let (line, message) = error(text);
        assert_eq!(line, text.lines().count(), "{text}");
        assert!(
            message.starts_with(&format!("key {source:?} is the scalar ")),
            "{message}"
        );
    }
    assert_eq!(
        parse(
            "'~': c
\"0x10\": f\n"
        ),
        Ok(json!({"~": "c", "0x10": "f"}))
    );
    assert_eq!(
        error("? .inf\n: 1\n").1,
        "map key inf (NaN or infinite) is not supported"
    );
}

#[test]
fn syntax_errors_carry_libyaml_text_and_line() {
    let (line, message) = error("a: 1\nb: [1, 2\n");
    assert_eq!(line, 3);
    assert!(
        message.contains("while parsing a flow sequence at line 2 column 4"),
        "{message}"
    );
    assert_eq!(error("a: b: c\n").0, 1);
    assert_eq!(error("a:\n\t- 1\n").0, 2, "tabs cannot indent");
}

/// Whether `message` refuses a scalar or key because YAML 1.1 readers or case-insensitive
/// ones would read it otherwise (`readers.rs`, `keys.rs`): refusals `serde_yaml` never made.
fn refused_for_other_readers(message: &str) -> bool {
    message.contains(" to assent (YAML 1.2) but ")
        || message.contains("YAML 1.1's merge key")
        || message.contains("differ only in letter case")
        || message.contains("beyond what a double holds exactly")
        || message.contains("keep keys as written")
}

/// The tree `serde_yaml` built through the shared value seed, as assent did before.
fn serde_yaml_tree(text: &str) -> Result<Value, Option<usize>> {
    let budget = Budget::without_lines(128, 1_000_000);
    let seed = ValueSeed {
        budget: &budget,
        depth: 0,
    };
    seed.deserialize(serde_yaml::Deserializer::from_str(text))
        .map(|node| node.to_value())
        .map_err(|e| e.location().map(|at| at.line()))
}

/// Scalars that exercise every resolution rule, written as they would appear in a file.
const SCALARS: &[&str] = &[
    "1",
    "-1",
    "+1",
    "0",
    "-0",
    "007",
    "-01",
    "0x1F",
    "-0x1f",
    "0o17",
    "0b11",
    "0x",
    "1_000",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "99999999999999999999999999999999999999999",
    "1.5",
    "-2.5e3",
    ".5",
    "1.",
    "1e999",
    ".inf",
    "-.Inf",
    ".NaN",
    "inf",
    "NaN",
    "~",
    "null",
    "Null",
    "NULL",
    "nULL",
    "true",
    "True",
    "FALSE",
    "yes",
    "on",
    "''",
    "'1'",
    "\"true\"",
    "\"\\u00e9\"",
    "hello world",
    "!!str 12",
    "!!int '7'",
    "!!int 0x10",
    "!!float 1",
    "!!bool 'True'",
    "!!null '~'",
    "!!int x",
    "2001-12-14",
    "a:b",
    "\"\"",
];

/// A generated YAML node, rendered in block or flow style.
#[derive(Debug, Clone)]
enum Gen {
    Scalar(&'static str),
    Seq(Vec<Gen>),
    Map(Vec<(&'static str, Gen)>),
}

/// Keys that collide in every way a resolved key can: as text, as numbers, as null.
const KEYS: &[&str] = &[
    "a", "b", "1", "'1'", "true", "~", "null", "0x1", "1.0", "<<",
];

fn gen_node() -> impl Strategy<Value = Gen> {
    let leaf = prop::sample::select(SCALARS).prop_map(Gen::Scalar);
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Gen::Seq),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..4).prop_map(Gen::Map),
        ]
    })
}

fn flow(node: &Gen) -> String {
    match node {
        Gen::Scalar(s) => (*s).to_owned(),
        Gen::Seq(items) => format!(
            "[{}]",
            items.iter().map(flow).collect::<Vec<_>>().join(", ")
        ),
        Gen::Map(entries) => {
            let entries: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{k}: {}", flow(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

/// Block style, nesting by indentation (empty containers stay in flow style, as YAML needs).
fn block(node: &Gen, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    let nested = |v: &Gen| {
        matches!(v, Gen::Seq(i) if !i.is_empty()) || matches!(v, Gen::Map(e) if !e.is_empty())
    };
    match node {
        Gen::Scalar(_) => out.push_str(&format!("{pad}{}\n", flow(node))),
        Gen::Seq(items) if items.is_empty() => out.push_str(&format!("{pad}[]\n")),
        Gen::Map(entries) if entries.is_empty() => out.push_str(&format!("{pad}{{}}\n")),
        Gen::Seq(items) => {
            for item in items {
                if nested(item) {
                    out.push_str(&format!("{pad}-\n"));
                    block(item, indent + 2, out);
                } else {
                    out.push_str(&format!("{pad}- {}\n", flow(item)));
                }
            }
        }
        Gen::Map(entries) => {
            for (key, value) in entries {
                if nested(value) {
                    out.push_str(&format!("{pad}{key}:\n"));
                    block(value, indent + 2, out);
                } else {
                    out.push_str(&format!("{pad}{key}: {}\n", flow(value)));
                }
            }
        }
    }
}

proptest! {
    /// Same text, same tree as `serde_yaml`, the parser this replaced, or both refused at the
    /// same line: nested documents in block and in flow style, with colliding keys. Aliases,
    /// second documents and non-core tags are left out: assent refused those before
    /// `serde_yaml` saw them, and still does.
    #[test]
    fn agrees_with_serde_yaml(node in gen_node()) {
        let mut text = String::new();
        block(&node, 0, &mut text);
        for text in [text, flow(&node)] {
            let ours = parse(&text);
            let theirs = serde_yaml_tree(&text);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{}", text),
                // Where other readers disagree, assent now refuses what serde_yaml took (or
                // refused later in the file).
                (Err(a), _) if refused_for_other_readers(&a.message) => {}
                (Err(a), Err(line)) => prop_assert_eq!(Some(a.line), *line, "{}: {}", text, a.message),
                _ => prop_assert!(false, "{text}\nours: {ours:?}\nserde_yaml: {theirs:?}"),
            }
        }
    }

    /// Every scalar, alone and as a value, resolves as `serde_yaml` resolved it.
    #[test]
    fn scalars_agree_with_serde_yaml(scalar in prop::sample::select(SCALARS)) {
        for text in [scalar.to_owned(), format!("k: {scalar}\n"), format!("- {scalar}\n")] {
            let ours = parse(&text);
            if let Err(e) = &ours && refused_for_other_readers(&e.message) {
                prop_assert!(serde_yaml_tree(&text).is_ok(), "{}", text);
                continue;
            }
            let theirs = serde_yaml_tree(&text).map_err(|line| line.unwrap_or(0));
            prop_assert_eq!(ours.map_err(|e| e.line), theirs, "{}", text);
        }
    }
}
