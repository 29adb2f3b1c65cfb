//! Tests across the module: formats, parse-then-diff, large files and properties.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::model::{Change, ChangeKind};

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
