//! The fuzz targets' properties in the ordinary test suite.
//!
//! `assent_test_support::fuzz` holds the checks the `cargo fuzz` targets run (see
//! `docs/reliability.md` for the commands). This file runs the same checks:
//!
//! * on every input kept under `tests/fuzz/regressions/<target>/` (crashes, hangs and
//!   interesting finds of past fuzzing runs, kept so that they never come back), and
//! * under proptest, with generators biased towards each target's grammar, so the targets'
//!   code paths are exercised by `cargo test` even where `cargo fuzz` cannot run. The `inert`
//!   target's checks also run on their own: the helper on hostile strings, and whole finding
//!   and summary bodies built from hostile values, read by a CommonMark/GFM parser.

use std::path::Path;

use assent_test_support::fuzz::checks;
#[cfg(unix)]
use assent_test_support::fuzz::tree_checks;
use proptest::prelude::*;

fn regressions(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/regressions")
        .join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path.display().to_string(), bytes)
        })
        .collect();
    inputs.sort();
    assert!(
        !inputs.is_empty(),
        "no regression inputs in {}",
        dir.display()
    );
    inputs
}

#[test]
fn kept_marker_inputs() {
    for (name, bytes) in regressions("marker") {
        eprintln!("{name}");
        if let Ok(body) = std::str::from_utf8(&bytes) {
            checks::marker(body);
        }
    }
}

#[test]
fn kept_policy_inputs() {
    for (name, bytes) in regressions("policy") {
        eprintln!("{name}");
        checks::policy(&bytes);
    }
}

#[test]
fn kept_semantic_diff_inputs() {
    for (name, bytes) in regressions("semantic_diff") {
        eprintln!("{name}");
        checks::semantic_diff(&bytes);
    }
}

#[test]
fn kept_unified_diff_inputs() {
    for (name, bytes) in regressions("unified_diff") {
        eprintln!("{name}");
        checks::unified_diff(&bytes);
    }
}

#[test]
fn kept_inert_inputs() {
    for (name, bytes) in regressions("inert") {
        eprintln!("{name}");
        if let Ok(text) = std::str::from_utf8(&bytes) {
            checks::inert_input(text);
        }
    }
}

/// Text made of the pieces each grammar cares about, mixed with arbitrary characters.
fn pieces(vocabulary: &'static [&'static str]) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => proptest::sample::select(vocabulary).prop_map(str::to_owned),
        1 => any::<char>().prop_map(String::from),
        1 => "[a-z0-9 ]{0,6}",
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

const DIFF_WORDS: &[&str] = &[
    "@@ -",
    " +",
    " @@",
    " @@ heading",
    ",",
    "0",
    "1",
    "3",
    "4294967295",
    "\n",
    "\n ",
    "\n+",
    "\n-",
    "\n\\ No newline at end of file",
    "\n@@ -1,3 +1,3 @@",
    "diff --git a/f b/f\n",
    "--- a/f\n+++ b/f\n",
    "x",
    "\r",
];

const MARKER_WORDS: &[&str] = &[
    "<!-- assent:marker ",
    " -->",
    "-->",
    "{",
    "}",
    "\"v\":1",
    "\"kind\":\"finding\"",
    "\"kind\":\"summary\"",
    "\"rule\":\"r\"",
    "\"rule\":\"assent/summary\"",
    "\"subject\":\"f#/p\"",
    "\"subject\":\"\"",
    "\"occurrence\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\"",
    "\"state\":\"verified\"",
    "\"head\":\"1111111111111111111111111111111111111111\"",
    ",",
    ":",
    "\\u003c",
    "\\u0026",
    "\\\"",
    "\n",
    "\r",
    "/",
    " ",
];

const POLICY_WORDS: &[&str] = &[
    "apiVersion: assent/v1\nkind: Policy\nrules:\n",
    "  - id: r\n    match:\n      files: [\"**\"]\n    effect: challenge\n",
    "    when: \"",
    "\"\n",
    "new.all(x, ",
    "new.map(x, x + x)",
    ".exists(y, y == x)",
    ")",
    "(",
    "int(new) < int(old)",
    "kind == 'add'",
    "    message: \"{{ new }} {{ entry }}\"\n",
    "identities:\n  \"**\": { \"/topics\": name }\n",
    "&a ",
    "*a",
    "!tag ",
    "[",
    "]",
    "\n",
    "  ",
];

const DOC_WORDS: &[&str] = &[
    "{", "}", "[", "]", ":", ",", "\"name\"", "\"a\"", "1", "1.0", "-0", "1e999", "null", "true",
    "\n", "  ", "- ", "a: ", "&x ", "*x", "!!str ", "---\n", "=", "[[t]]\n", "\0",
];

/// What Markdown, GitLab references and quick actions are made of, and the characters that
/// break lines or hide.
const INERT_WORDS: &[&str] = &[
    "`",
    "``",
    "```",
    "|",
    "\\|",
    "\\",
    "<",
    ">",
    "<img src=x>",
    "<details>",
    "<!--",
    "-->",
    "@",
    "@all",
    "@here",
    "[",
    "]",
    "(",
    ")",
    "[x](http://e.example)",
    "!",
    "![i](http://e.example/i.png)",
    "/",
    "/close",
    "/merge",
    "\n",
    "\r",
    "\r\n",
    "\0",
    "\t",
    "\u{85}",
    "\u{2028}",
    "\u{2029}",
    "\u{202e}",
    "\u{200b}",
    "\u{feff}",
    " ",
    "  ",
    "*",
    "_",
    "~~",
    "$",
    "$`",
    "#1",
    "!2",
    "~label",
    "%m",
    "&",
    "&amp;",
    ":smile:",
    "http://e.example",
    "www.e.example",
    "- ",
    "# ",
    "> ",
    "1. ",
    "---",
    "===",
    "    ",
    "{{ new }}",
    "\u{1f}",
    "\"",
    "'",
];

fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => pieces(INERT_WORDS),
        1 => any::<String>(),
    ]
}

fn hostile_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{Value, json};
    prop_oneof![
        4 => hostile_text().prop_map(Value::String),
        1 => (hostile_text(), any::<i64>()).prop_map(|(s, n)| json!([s, n])),
        1 => (hostile_text(), hostile_text()).prop_map(|(k, v)| json!({ k: v })),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => Just(Value::Null),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn inert_helper(text in hostile_text()) {
        checks::inert_text(&text);
    }

    #[test]
    fn inert_finding_and_summary_bodies(
        file in hostile_text(),
        pointer in hostile_text(),
        old in hostile_value(),
        new in hostile_value(),
        entry in proptest::option::of(hostile_text()),
    ) {
        checks::finding_bodies(&checks::HostileChange { file, pointer, old, new, entry });
    }

    #[test]
    fn inert_builtin_bodies(name in hostile_text(), reason in hostile_text()) {
        checks::builtin_bodies(&name, &reason);
    }

    #[test]
    fn inert_target(text in pieces(INERT_WORDS)) {
        checks::inert_input(&text);
    }

    #[test]
    fn unified_diff_target(text in pieces(DIFF_WORDS)) {
        checks::unified_diff(text.as_bytes());
    }

    #[test]
    fn marker_target(body in pieces(MARKER_WORDS)) {
        checks::marker(&body);
    }

    #[test]
    fn policy_target(text in pieces(POLICY_WORDS)) {
        checks::policy(text.as_bytes());
    }

    #[test]
    fn semantic_diff_target(format in 0u8..3, text in pieces(DOC_WORDS)) {
        let mut data = vec![format];
        data.extend_from_slice(text.as_bytes());
        checks::semantic_diff(&data);
    }
}

// ---------------------------------------------------------------- policy_tree (Unix only)

#[cfg(unix)]
#[test]
fn kept_policy_tree_inputs() {
    for (name, bytes) in regressions("policy_tree") {
        eprintln!("{name}");
        tree_checks::policy_tree(&bytes);
    }
}

/// Records of the `policy_tree` layout (`assent_test_support::fuzz::tree_checks`): a kind, a place, a
/// path, then `0x01` and a payload.
#[cfg(unix)]
fn tree_record() -> impl Strategy<Value = Vec<u8>> {
    let kind = proptest::sample::select(&b"ffffddllllsbm"[..]);
    let place = proptest::sample::select(&b"pptr"[..]);
    let name = proptest::sample::select(
        &[
            "a.yaml",
            "b.YML",
            "sub",
            "sub/c.yaml",
            ".assent",
            ".assent/policies",
            "x\n.yaml",
            "\u{1b}[2K.yaml",
            "d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/e.yaml",
            "notes.md",
            "../up",
        ][..],
    );
    let payload = prop_oneof![
        3 => pieces(POLICY_WORDS),
        1 => proptest::sample::select(&["@secret", "@zero", "@outside", ".", "..", "/", "a.yaml"][..])
            .prop_map(str::to_owned),
        1 => Just("name: c\nfiles:\n  - path: a.json\n    head: \"{}\"\nexpect: { decision: APPROVE }\n".to_owned()),
    ];
    (kind, place, name, payload).prop_map(|(kind, place, name, payload)| {
        let mut record = vec![kind, place];
        record.extend_from_slice(name.as_bytes());
        record.push(1);
        record.extend_from_slice(payload.as_bytes());
        record
    })
}

#[cfg(unix)]
proptest! {
    // Each case builds a tree on disk: fewer cases than the in-memory targets.
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn policy_tree_target(records in proptest::collection::vec(tree_record(), 0..12)) {
        tree_checks::policy_tree(&records.join(&0u8));
    }
}
