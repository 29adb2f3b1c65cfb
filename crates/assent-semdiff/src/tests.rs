//! Tests across the module: formats, parse-then-diff, large files and properties.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::{Change, ChangeKind};

fn topics_by_name(pointer: &str) -> Option<String> {
    (pointer == "/topics").then(|| "name".to_owned())
}

fn no_identity(_: &str) -> Option<String> {
    None
}

fn parse(file: &str, text: &str) -> Node {
    let format = format_for_path(file).expect("a governed file");
    parse_document(file, format, text.as_bytes(), &Limits::default()).expect("parses")
}

/// [`diff_documents`] of two `serde_json` values, for properties stated over them.
fn diff_values(
    old: Option<&Value>,
    new: Option<&Value>,
    identity: &dyn Fn(&str) -> Option<String>,
) -> Vec<Change> {
    let (old, new) = (old.map(Node::from), new.map(Node::from));
    diff_documents("f", old.as_ref(), new.as_ref(), identity).changes
}

/// One change per line, `kind pointer: old -> new`, for snapshots.
fn render(changes: &[Change]) -> String {
    let show = |v: &Option<Value>| v.as_ref().map_or("-".to_owned(), Value::to_string);
    changes
        .iter()
        .map(|c| {
            format!(
                "{} {}#{}: {} -> {}\n",
                c.kind.as_str(),
                c.file,
                c.pointer,
                show(&c.old),
                show(&c.new)
            )
        })
        .collect()
}

#[test]
fn format_for_path_by_extension_case_insensitive() {
    for (path, format) in [
        ("a.json", Some(Format::Json)),
        ("dir/a.JSON", Some(Format::Json)),
        ("topics/orders.yaml", Some(Format::Yaml)),
        ("x.Yml", Some(Format::Yaml)),
        ("Cargo.toml", Some(Format::Toml)),
        ("a.tar.TOML", Some(Format::Toml)),
        ("README.md", None),
        ("Makefile", None),
        ("json", None),
        (".json", None),
        ("conf.json/README", None),
        ("a.yaml.bak", None),
        ("", None),
    ] {
        assert_eq!(format_for_path(path), format, "{path:?}");
    }
}

#[test]
fn default_limits_are_the_documented_ones() {
    assert_eq!(
        Limits::default(),
        Limits {
            max_bytes: 16 * 1024 * 1024,
            max_depth: 128,
            max_nodes: 1_000_000
        }
    );
}

const OLD_YAML: &str = "\
topics:
  - name: orders.events.v1
    retention_days: 30
    partitions: 12
  - name: payments/settled
    retention_days: 7
  - name: legacy.audit
    retention_days: 365
owner: team-a
";

const NEW_YAML: &str = "\
owner: team-b
topics:
  - name: payments/settled
    retention_days: 7
    compacted: true
  - name: orders.events.v1
    retention_days: 7
    partitions: 12
  - name: users.v2
    retention_days: 14
";

const NEW_JSON: &str = r#"{
  "owner": "team-b",
  "topics": [
    {"name": "payments/settled", "retention_days": 7, "compacted": true},
    {"name": "orders.events.v1", "retention_days": 7, "partitions": 12},
    {"name": "users.v2", "retention_days": 14}
  ]
}"#;

const NEW_TOML: &str = r#"
owner = "team-b"

[[topics]]
name = "payments/settled"
retention_days = 7
compacted = true

[[topics]]
name = "orders.events.v1"
retention_days = 7
partitions = 12

[[topics]]
name = "users.v2"
retention_days = 14
"#;

#[test]
fn a_topic_registry_change_reads_as_named_fields() {
    let old = parse("topics.yaml", OLD_YAML);
    let new = parse("topics.yaml", NEW_YAML);
    let changes = diff_documents("topics.yaml", Some(&old), Some(&new), &topics_by_name).changes;
    insta::assert_snapshot!(render(&changes));
}

#[test]
fn the_same_data_in_yaml_json_and_toml_gives_the_same_changes() {
    let old = parse("t.yaml", OLD_YAML);
    let from = |file: &str, text: &str| {
        diff_documents("t", Some(&old), Some(&parse(file, text)), &topics_by_name).changes
    };
    // The same changes; only where each value is written differs.
    let without_lines = |changes: Vec<Change>| -> Vec<Change> {
        changes
            .into_iter()
            .map(|c| Change {
                old_line: None,
                new_line: None,
                ..c
            })
            .collect()
    };
    let new_lines =
        |changes: &[Change]| -> Vec<Option<usize>> { changes.iter().map(|c| c.new_line).collect() };
    let (yaml, json, toml) = (
        from("t.yaml", NEW_YAML),
        from("t.json", NEW_JSON),
        from("t.toml", NEW_TOML),
    );
    assert_eq!(yaml.len(), 5);
    assert_eq!(without_lines(yaml.clone()), without_lines(json.clone()));
    assert_eq!(without_lines(yaml.clone()), without_lines(toml.clone()));
    // owner, (deleted topic), retention_days, compacted, the added topic: each value's own line.
    assert_eq!(new_lines(&yaml), [Some(1), None, Some(7), Some(5), Some(9)]);
    assert_eq!(new_lines(&json), [Some(2), None, Some(5), Some(4), Some(6)]);
    assert_eq!(
        new_lines(&toml),
        [Some(2), None, Some(11), Some(7), Some(14)]
    );
    let old_lines: Vec<Option<usize>> = yaml.iter().map(|c| c.old_line).collect();
    assert_eq!(old_lines, [Some(9), Some(7), Some(3), None, None]);
}

/// The line of each entry of `topics` and of each entry's `name`.
fn topic_lines(node: &Node) -> Vec<(Option<usize>, Option<usize>)> {
    let topics = node.get("topics").and_then(Node::as_array).expect("topics");
    topics
        .iter()
        .map(|t| (t.line(), t.get("name").and_then(Node::line)))
        .collect()
}

#[test]
fn every_format_gives_list_entries_and_values_their_lines() {
    let some = |pairs: &[(usize, usize)]| -> Vec<(Option<usize>, Option<usize>)> {
        pairs.iter().map(|&(a, b)| (Some(a), Some(b))).collect()
    };
    assert_eq!(
        topic_lines(&parse("t.yaml", NEW_YAML)),
        some(&[(3, 3), (6, 6), (9, 9)])
    );
    assert_eq!(
        topic_lines(&parse("t.json", NEW_JSON)),
        some(&[(4, 4), (5, 5), (6, 6)])
    );
    // A TOML table of an array of tables starts at its `[[topics]]` header.
    assert_eq!(
        topic_lines(&parse("t.toml", NEW_TOML)),
        some(&[(4, 5), (9, 10), (14, 15)])
    );
    let inline = "topics = [\n  { name = \"a\" },\n  { name = \"b\" },\n]\n";
    assert_eq!(
        topic_lines(&parse("t.toml", inline)),
        some(&[(2, 2), (3, 3)])
    );
    let flow = "topics: [{name: a},\n  {name: b}]\n";
    assert_eq!(topic_lines(&parse("t.yaml", flow)), some(&[(1, 1), (2, 2)]));
    // A byte-order mark does not shift lines.
    let bom = format!("\u{feff}{NEW_JSON}");
    assert_eq!(
        topic_lines(&parse("t.json", &bom)),
        some(&[(4, 4), (5, 5), (6, 6)])
    );
}

/// Every value of `node` in document order for a document whose keys were written sorted.
fn preorder<'n>(node: &'n Node, out: &mut Vec<&'n Node>) {
    out.push(node);
    match node {
        Node::Array(items, _) => items.iter().for_each(|n| preorder(n, out)),
        Node::Object(entries, _) => entries.iter().for_each(|(_, n)| preorder(n, out)),
        _ => {}
    }
}

#[test]
fn a_whole_file_add_snapshot() {
    let new = parse("t.toml", "a = 1\n[b]\nc = [true]\n");
    insta::assert_snapshot!(render(&diff_documents("t.toml", None, Some(&new), &no_identity).changes), @r#"add t.toml#: - -> {"a":1,"b":{"c":[true]}}"#);
}

/// A topic registry of `n` entries of about 200 bytes, `retention(i)` days each.
fn registry(n: usize, retention: impl Fn(usize) -> usize) -> String {
    let mut out = String::from("topics:\n");
    for i in 0..n {
        out.push_str(&format!(
            "  - name: team{}.topic{i:06}.events\n    retention_days: {}\n    partitions: {}\n    owner: team-{}@example.com\n    description: \"{}\"\n",
            i % 97,
            retention(i),
            1 + i % 12,
            i % 97,
            "x".repeat(80)
        ));
    }
    out
}

#[test]
fn a_ten_megabyte_registry_of_50k_entries_parses_and_diffs() {
    let n = 50_000;
    let old_text = registry(n, |_| 30);
    assert!(old_text.len() > 10_000_000, "{} bytes", old_text.len());
    // Entries 10,000 and 49,999 shrink their retention; the rest is unchanged.
    let new_text = registry(n, |i| if i == 10_000 || i == 49_999 { 7 } else { 30 });
    let old = parse_document(
        "big.yaml",
        Format::Yaml,
        old_text.as_bytes(),
        &Limits::default(),
    )
    .unwrap();
    let new = parse_document(
        "big.yaml",
        Format::Yaml,
        new_text.as_bytes(),
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(
        old.get("topics").and_then(Node::as_array).map(<[_]>::len),
        Some(n)
    );

    let changes = diff_documents("big.yaml", Some(&old), Some(&new), &topics_by_name).changes;
    // Identity-keyed entries come out sorted by identity text, so team44 precedes team9.
    let summary: Vec<(&str, ChangeKind, Option<&Value>, Option<&Value>)> = changes
        .iter()
        .map(|c| (c.pointer.as_str(), c.kind, c.old.as_ref(), c.new.as_ref()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                "/topics/team44.topic049999.events/retention_days",
                ChangeKind::Modify,
                Some(&json!(30)),
                Some(&json!(7))
            ),
            (
                "/topics/team9.topic010000.events/retention_days",
                ChangeKind::Modify,
                Some(&json!(30)),
                Some(&json!(7))
            ),
        ]
    );
}

/// Small JSON values: scalars (including the numbers 1 and 1.0, which differ) and nested
/// lists and objects with a few short keys, so random pairs often share structure.
fn small_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..3).prop_map(Value::from),
        Just(json!(1.0)),
        "[a-c/~]{0,2}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-c/~]{0,2}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Applies `changes` (from an index-based diff) to `doc`, so the diff can be checked to say
/// everything: adds and modifies in order, then deletes from the last (list tails shrink
/// from the end).
fn apply(mut doc: Option<Value>, changes: &[Change]) -> Option<Value> {
    fn parent_and_token<'v>(doc: &'v mut Value, pointer: &str) -> (&'v mut Value, String) {
        let (parent, token) = pointer.rsplit_once('/').expect("not the root");
        let token = token.replace("~1", "/").replace("~0", "~");
        (doc.pointer_mut(parent).expect("parent exists"), token)
    }
    for change in changes.iter().filter(|c| c.kind != ChangeKind::Delete) {
        let new = change.new.clone().expect("add and modify carry new");
        if change.pointer.is_empty() {
            doc = Some(new);
            continue;
        }
        let (parent, token) =
            parent_and_token(doc.as_mut().expect("document exists"), &change.pointer);
        match parent {
            Value::Object(map) => {
                map.insert(token, new);
            }
            Value::Array(list) => {
                let i: usize = token.parse().expect("index");
                if i == list.len() {
                    list.push(new);
                } else {
                    list[i] = new;
                }
            }
            _ => panic!("parent is a container"),
        }
    }
    for change in changes
        .iter()
        .rev()
        .filter(|c| c.kind == ChangeKind::Delete)
    {
        if change.pointer.is_empty() {
            doc = None;
            continue;
        }
        let (parent, token) =
            parent_and_token(doc.as_mut().expect("document exists"), &change.pointer);
        match parent {
            Value::Object(map) => assert!(map.remove(&token).is_some()),
            Value::Array(list) => {
                assert_eq!(
                    token.parse::<usize>().expect("index"),
                    list.len() - 1,
                    "deletes shrink the tail"
                );
                list.pop();
            }
            _ => panic!("parent is a container"),
        }
    }
    doc
}

proptest! {
    #[test]
    fn diffing_a_value_with_itself_is_empty(a in small_json()) {
        prop_assert!(diff_values(Some(&a), Some(&a), &no_identity).is_empty());
    }

    #[test]
    fn a_diff_is_empty_exactly_when_the_values_are_equal(a in small_json(), b in small_json()) {
        let changes = diff_values(Some(&a), Some(&b), &no_identity);
        prop_assert_eq!(changes.is_empty(), a == b);
    }

    #[test]
    fn applying_a_diff_to_old_gives_new(a in small_json(), b in small_json()) {
        let changes = diff_values(Some(&a), Some(&b), &no_identity);
        prop_assert_eq!(apply(Some(a), &changes), Some(b));
    }

    #[test]
    fn json_and_yaml_renderings_parse_back_to_the_same_value(v in small_json()) {
        let json = serde_json::to_string_pretty(&v).unwrap();
        prop_assert_eq!(parse_document("f", Format::Json, json.as_bytes(), &Limits::default()).map(|n| n.to_value()), Ok(v.clone()));
        let yaml = serde_yaml::to_string(&v).unwrap();
        prop_assert_eq!(parse_document("f", Format::Yaml, yaml.as_bytes(), &Limits::default()).map(|n| n.to_value()), Ok(v));
    }

    #[test]
    fn every_value_of_pretty_json_gets_its_own_line_in_document_order(v in small_json()) {
        // Pretty JSON puts every value after the root on a new line; keys come out sorted, as
        // the tree keeps them, so the tree's pre-order is the document's.
        let text = serde_json::to_string_pretty(&v).unwrap();
        let node = parse_document("f", Format::Json, text.as_bytes(), &Limits::default()).unwrap();
        let mut values = Vec::new();
        preorder(&node, &mut values);
        let lines: Vec<Option<usize>> = values.iter().map(|n| n.line()).collect();
        prop_assert_eq!(lines[0], Some(1));
        prop_assert!(lines.iter().all(Option::is_some), "{:?}", lines);
        prop_assert!(lines.windows(2).all(|w| w[0] < w[1]), "{:?} in {}", lines, text);
        prop_assert!(lines.last().unwrap().unwrap() <= text.lines().count());
    }

    #[test]
    fn an_identity_list_with_a_repeated_name_is_never_compared(
        old_names in prop::collection::vec("[a-c]", 0..5),
        new_names in prop::collection::vec("[a-c]", 0..5),
    ) {
        let entries = |names: &[String]| -> Value {
            json!({"topics": names.iter().enumerate().map(|(i, n)| json!({"name": n, "v": i})).collect::<Vec<_>>(), "owner": names.len()})
        };
        let (old, new) = (entries(&old_names), entries(&new_names));
        let repeats = |names: &[String]| names.iter().collect::<std::collections::BTreeSet<_>>().len() < names.len();
        let (old_node, new_node) = (Node::from(&old), Node::from(&new));
        let found = diff_documents("f", Some(&old_node), Some(&new_node), &topics_by_name);
        let lists_differ = old["topics"] != new["topics"];
        let ambiguous = lists_differ && (repeats(&old_names) || repeats(&new_names));
        prop_assert_eq!(found.ambiguities.len(), usize::from(ambiguous));
        if let Some(list) = found.ambiguities.first() {
            prop_assert_eq!(list.base.is_some(), repeats(&old_names));
            prop_assert_eq!(list.source.is_some(), repeats(&new_names));
        }
        for change in &found.changes {
            // Only the owner, or an entry addressed by its name: never a position.
            let by_name = change.pointer.strip_prefix("/topics/").is_some_and(|rest| rest.starts_with(['a', 'b', 'c']));
            prop_assert!(change.pointer == "/owner" || (!ambiguous && by_name), "{:?}", change);
        }
        prop_assert_eq!(found.changes.iter().any(|c| c.pointer == "/owner"), old_names.len() != new_names.len());
    }

    #[test]
    fn reordering_an_identity_list_is_never_a_change(names in prop::collection::btree_set("[a-z/~.]{1,6}", 0..8), seed in any::<u64>()) {
        let entries: Vec<Value> = names.iter().enumerate().map(|(i, n)| json!({"name": n, "v": i})).collect();
        let mut shuffled = entries.clone();
        // A deterministic permutation driven by the seed.
        let len = shuffled.len().max(1) as u64;
        shuffled.rotate_left((seed % len) as usize);
        if seed % 2 == 0 { shuffled.reverse(); }
        let old = json!({"topics": entries});
        let new = json!({"topics": shuffled});
        prop_assert!(diff_values(Some(&old), Some(&new), &topics_by_name).is_empty());
    }
}

/// Keys a parser library gives a meaning of its own to: the `toml` crate's datetime marker and
/// `serde_spanned`'s span fields, `serde_json`'s number and raw-value markers (features off in
/// this build, and keys of a map either way). Written in a document, each is data, as it is
/// to every other reader of the format (`tests/it/consumers.rs` holds that to them).
const RESERVED_KEYS: &[&str] = &[
    "$__toml_private_datetime",
    "$__toml_private_Datetime",
    "$__serde_spanned_private_start",
    "$__serde_spanned_private_end",
    "$__serde_spanned_private_value",
    "$__serde_spanned_private_Spanned",
    "$serde_json::private::Number",
    "$serde_json::private::RawValue",
];

#[test]
fn keys_a_parser_library_reserves_are_data_in_every_format() {
    for &key in RESERVED_KEYS {
        let expected = json!({"t": {key: "1979-05-27", "other": 1}, "after": true});
        let json_doc = expected.to_string();
        let yaml_doc = format!("t:\n  \"{key}\": \"1979-05-27\"\n  other: 1\nafter: true\n");
        let toml_doc = format!("after = true\n[t]\n\"{key}\" = \"1979-05-27\"\nother = 1\n");
        for (file, doc) in [
            ("f.json", json_doc),
            ("f.yaml", yaml_doc),
            ("f.toml", toml_doc),
        ] {
            assert_eq!(parse(file, &doc).to_value(), expected, "{file}: {doc}");
        }
    }
}

#[test]
fn a_toml_table_holding_the_datetime_marker_key_is_a_table() {
    let value = |doc: &str| parse("f.toml", doc).to_value();
    // Its value may be anything, a real datetime included; the other keys stay in the table.
    assert_eq!(
        value("\"$__toml_private_datetime\" = 1979-05-27T07:32:00Z\nx = 1\n"),
        json!({"$__toml_private_datetime": "1979-05-27T07:32:00Z", "x": 1})
    );
    assert_eq!(
        value("t = { \"$__toml_private_datetime\" = [1, { a = 2 }], b = 1979-05-27 }\n"),
        json!({"t": {"$__toml_private_datetime": [1, {"a": 2}], "b": "1979-05-27"}})
    );
    assert_eq!(
        value("t = { \"$__toml_private_datetime\" = \"x\" }\n"),
        json!({"t": {"$__toml_private_datetime": "x"}})
    );
    // Real datetimes are still their text, alone or beside the marker key.
    assert_eq!(
        value("at = 1979-05-27T07:32:00Z\nday = 1979-05-27\ntime = 07:32:00\n"),
        json!({"at": "1979-05-27T07:32:00Z", "day": "1979-05-27", "time": "07:32:00"})
    );

    // So an edit or a new key beside the marker is a change, at its own line.
    let old = parse(
        "f.toml",
        "[topic]\n\"$__toml_private_datetime\" = \"2024-01-01\"\nretention_days = 30\n",
    );
    let new = parse(
        "f.toml",
        "[topic]\n\"$__toml_private_datetime\" = \"2024-01-01\"\nretention_days = 1\nowner = \"x\"\n",
    );
    let changes = diff_documents("f.toml", Some(&old), Some(&new), &no_identity).changes;
    let seen: Vec<(&str, ChangeKind, Option<usize>)> = changes
        .iter()
        .map(|c| (c.pointer.as_str(), c.kind, c.new_line))
        .collect();
    assert_eq!(
        seen,
        [
            ("/topic/owner", ChangeKind::Add, Some(4)),
            ("/topic/retention_days", ChangeKind::Modify, Some(3)),
        ]
    );
}

/// What ends a line to some reader: git and GitLab count `\n` alone; libyaml (YAML 1.1) also
/// a lone CR, U+0085, U+2028 and U+2029; U+000B and U+000C end a line to Python's
/// `str.splitlines` and are refused by every format's parser here.
const BREAKS_ANYWHERE: &[&str] = &["\n", "\r\n"];
const YAML_BREAKS: &[&str] = &["\n", "\r\n", "\r", "\u{85}", "\u{2028}", "\u{2029}"];
/// JSON whitespace may hold CR and LF; the other characters only fit inside a string.
const JSON_WHITESPACE: &[&str] = &["\n", "\r\n", "\r", " "];
const UNICODE_BREAKS: &[&str] = &["\u{85}", "\u{2028}", "\u{2029}", "\r"];

/// The line git gives to the first occurrence of `needle` in `text`.
fn git_line(text: &str, needle: &str) -> usize {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} in {text:?}"));
    1 + text[..at].matches('\n').count()
}

/// A document in `format` with the keys `k0`…, each set to its value of `values`, and
/// before each key a comment (YAML, TOML) and a string field `n<i>` holding the line breaks
/// `picks` chooses, and between them whitespace of line breaks (JSON).
fn document_with_breaks(format: Format, values: &[u32], picks: &[usize]) -> String {
    let mut pick = picks.iter().copied().cycle();
    let mut from = |set: &[&'static str]| set[pick.next().unwrap_or(0) % set.len()];
    let mut doc = String::new();
    match format {
        Format::Yaml => {
            for (i, v) in values.iter().enumerate() {
                // Each piece of the comment starts with `#`, so it is a comment whatever
                // ends the line before it.
                doc += &format!("# a{}# b{}", from(YAML_BREAKS), from(YAML_BREAKS));
                doc += &format!("n{i}: \"x{} y\"{}", from(YAML_BREAKS), from(YAML_BREAKS));
                doc += &format!("k{i}: {v}{}", from(YAML_BREAKS));
            }
        }
        Format::Json => {
            doc.push('{');
            for (i, v) in values.iter().enumerate() {
                let unicode = from(&UNICODE_BREAKS[..3]);
                doc += &format!("{}\"n{i}\": \"x{unicode}y\",", from(JSON_WHITESPACE));
                doc += &format!("{}\"k{i}\": {v}", from(JSON_WHITESPACE));
                doc += if i + 1 < values.len() { "," } else { "" };
            }
            doc += &format!("{}}}", from(JSON_WHITESPACE));
        }
        Format::Toml => {
            for (i, v) in values.iter().enumerate() {
                let (a, b) = (from(&UNICODE_BREAKS[..3]), from(&UNICODE_BREAKS[..3]));
                doc += &format!("# a{a}b{}", from(BREAKS_ANYWHERE));
                doc += &format!("n{i} = \"x{b}y\"{}", from(BREAKS_ANYWHERE));
                doc += &format!("k{i} = {v}{}", from(BREAKS_ANYWHERE));
            }
        }
    }
    doc
}

proptest! {
    /// Lines given to GitLab (DiffNotes, file links, Code Quality) are git's: whatever line
    /// breaks a file mixes, each change is placed on the line of its key's text.
    #[test]
    fn every_change_is_on_the_line_git_gives_its_text(
        values in prop::collection::vec(0u32..1000, 1..6),
        old_picks in prop::collection::vec(0usize..64, 1..40),
        new_picks in prop::collection::vec(0usize..64, 1..40),
    ) {
        for (format, file) in [(Format::Yaml, "f.yaml"), (Format::Json, "f.json"), (Format::Toml, "f.toml")] {
            let old_text = document_with_breaks(format, &values, &old_picks);
            let new_values: Vec<u32> = values.iter().map(|v| v + 1).collect();
            let new_text = document_with_breaks(format, &new_values, &new_picks);
            let read = |text: &str| parse_document(file, format, text.as_bytes(), &Limits::default())
                .unwrap_or_else(|e| panic!("{e}: {text:?}"));
            let (old, new) = (read(&old_text), read(&new_text));
            // The string fields may change too (libyaml folds some breaks and keeps others):
            // the keys are what is checked.
            let changes: Vec<Change> = diff_documents(file, Some(&old), Some(&new), &no_identity)
                .changes
                .into_iter()
                .filter(|c| c.pointer.starts_with("/k"))
                .collect();
            prop_assert_eq!(changes.len(), values.len(), "{:?}", changes);
            for change in &changes {
                let key = change.pointer.trim_start_matches('/');
                prop_assert_eq!(change.old_line, Some(git_line(&old_text, key)), "{} in {:?}", key, old_text);
                prop_assert_eq!(change.new_line, Some(git_line(&new_text, key)), "{} in {:?}", key, new_text);
            }
        }
    }
}

#[test]
fn yaml_lines_are_git_lines_beside_every_break_libyaml_counts() {
    for brk in ["\r", "\u{85}", "\u{2028}", "\u{2029}"] {
        let doc = format!("# one{brk}# still line one\na: \"x{brk} y\"\nb: 2\n");
        let node = parse("f.yaml", &doc);
        let lines = (
            node.get("a").and_then(Node::line),
            node.get("b").and_then(Node::line),
        );
        assert_eq!(lines, (Some(2), Some(3)), "{brk:?}");
    }
}

#[test]
fn a_character_no_format_allows_is_refused_at_its_git_line() {
    for bad in ["\u{b}", "\u{c}"] {
        for (format, doc) in [
            (
                Format::Yaml,
                format!("# a\r# b\u{2028}\na: 1\nb: x{bad}y\n"),
            ),
            (
                Format::Json,
                format!("{{\"a\": 1,\r\n\"c\": \"\u{2028}\",\n\"b\": {bad}1}}"),
            ),
            (Format::Toml, format!("# a\u{2028}b\na = 1\nb = {bad}1\n")),
        ] {
            let e = parse_document("f", format, doc.as_bytes(), &Limits::default())
                .expect_err("refused");
            assert_eq!(e.line, Some(3), "{format:?} {doc:?}: {e}");
        }
    }
}
