//! The findings of a merge request depend on the documents on both sides, not on how the
//! edit is spelled (docs/policies.md, "How changes reach rules").
//!
//! Property: for random pairs of documents (nested maps, lists with and without identity
//! keys, scalars, nulls, type changes, emptied and absent files), the findings
//! [`compute_desired_state`] gives for a fixed set of rules (`**`, `*` and literal pointers,
//! each kind) are exactly those of a leaf-level oracle written here independently of the
//! diff: every value of each side gets its pointer, and each pointer present on one side only
//! is an `add` or a `delete`, each pointer whose value differs (other than two containers of
//! the same kind, whose children speak for them) a `modify`. Deleting a container, emptying
//! it, nulling it or replacing it with another type is then, for the rules, the same as
//! taking it apart entry by entry.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;

const FILE: &str = "conf/a.json";

/// Lists whose last token is `items` are keyed by `id`.
const IDENTITY_FIELD: &str = "id";

/// `(rule id, pointer pattern, kinds)`; `None`: every kind.
const RULES: &[(&str, &str, Option<&str>)] = &[
    ("every-add", "/**", Some("add")),
    ("every-modify", "/**", Some("modify")),
    ("every-delete", "/**", Some("delete")),
    ("every-kind", "/**", None),
    ("item-added", "/items/*", Some("add")),
    ("item-deleted", "/items/*", Some("delete")),
    ("nested-item-field", "/**/items/*/a", None),
    ("top-key-deleted", "/*", Some("delete")),
    ("second-level", "/*/*", Some("modify")),
    ("file-added", "", Some("add")),
    ("file-modified", "", Some("modify")),
    ("file-deleted", "", Some("delete")),
];

fn policy() -> String {
    let mut text = format!(
        "apiVersion: assent/v1\nkind: Policy\nidentities:\n  \"conf/*.json\": {{ \"/**/items\": {IDENTITY_FIELD} }}\nrules:\n"
    );
    for (id, pointer, kinds) in RULES {
        text.push_str(&format!(
            "  - id: {id}\n    match:\n      files: [\"conf/*.json\"]\n      pointer: \"{pointer}\"\n"
        ));
        if let Some(kind) = kinds {
            text.push_str(&format!("      kinds: [{kind}]\n"));
        }
        text.push_str("    effect: comment\n    group_above: 1000000\n");
    }
    text
}

// ---- The oracle: every value of a side at its pointer. ----

/// One side, flattened: pointer → value, and the keyed lists whose entries cannot be told
/// apart (not descended into).
#[derive(Default)]
struct Flat<'v> {
    values: BTreeMap<String, &'v Value>,
    unkeyable: BTreeSet<String>,
}

fn token(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

fn keyed_list(pointer: &str) -> bool {
    pointer.rsplit('/').next() == Some("items") && !pointer.is_empty()
}

/// The identities of a keyed list's entries (string form), or `None` when some entry has
/// none or two share one.
fn identities(items: &[Value]) -> Option<Vec<String>> {
    let mut ids = Vec::new();
    for item in items {
        let id = match item.get(IDENTITY_FIELD)? {
            Value::String(s) if item.is_object() => s.clone(),
            Value::Number(n) if item.is_object() && (n.is_i64() || n.is_u64()) => n.to_string(),
            _ => return None,
        };
        ids.push(id);
    }
    let unique: BTreeSet<&String> = ids.iter().collect();
    (unique.len() == ids.len()).then_some(ids)
}

fn flatten<'v>(value: &'v Value, pointer: String, flat: &mut Flat<'v>) {
    flat.values.insert(pointer.clone(), value);
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                flatten(child, format!("{pointer}/{}", token(key)), flat);
            }
        }
        Value::Array(items) if keyed_list(&pointer) => match identities(items) {
            Some(ids) => {
                for (id, child) in ids.iter().zip(items) {
                    flatten(child, format!("{pointer}/{}", token(id)), flat);
                }
            }
            None => {
                flat.unkeyable.insert(pointer);
            }
        },
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                flatten(child, format!("{pointer}/{i}"), flat);
            }
        }
        _ => {}
    }
}

fn strictly_under(pointer: &str, ancestor: &str) -> bool {
    pointer.len() > ancestor.len()
        && pointer.starts_with(ancestor)
        && pointer.as_bytes()[ancestor.len()] == b'/'
}

fn pattern_matches(pattern: &str, pointer: &str) -> bool {
    fn split(p: &str) -> Vec<&str> {
        p.strip_prefix('/')
            .map_or_else(Vec::new, |rest| rest.split('/').collect())
    }
    fn go(pattern: &[&str], tokens: &[&str]) -> bool {
        match pattern.split_first() {
            None => tokens.is_empty(),
            Some((&"**", rest)) => (0..=tokens.len()).any(|skip| go(rest, &tokens[skip..])),
            Some((segment, rest)) => tokens
                .split_first()
                .is_some_and(|(t, more)| (*segment == "*" || segment == t) && go(rest, more)),
        }
    }
    go(&split(pattern), &split(pointer))
}

type Judged = BTreeSet<(String, String, String)>;

/// `(rule, subject, occurrence)` of every finding the oracle expects, and the subjects of the
/// ambiguous lists.
fn oracle(base: Option<&Value>, source: Option<&Value>) -> (Judged, BTreeSet<String>) {
    // An empty document (`null`) facing a document that holds something is no document.
    let empty = |v: Option<&Value>| v.is_some_and(Value::is_null);
    let (base, source) = match (empty(base), empty(source)) {
        (true, false) if source.is_some() => (None, source),
        (false, true) if base.is_some() => (base, None),
        _ => (base, source),
    };
    let (mut old, mut new) = (Flat::default(), Flat::default());
    if let Some(base) = base {
        flatten(base, String::new(), &mut old);
    }
    if let Some(source) = source {
        flatten(source, String::new(), &mut new);
    }
    let mut ambiguous: Vec<String> = Vec::new();
    for pointer in old.unkeyable.union(&new.unkeyable) {
        let differs = old.values.get(pointer) != new.values.get(pointer);
        if differs && !ambiguous.iter().any(|a| strictly_under(pointer, a)) {
            ambiguous.push(pointer.clone());
        }
    }
    let pointers: BTreeSet<&String> = old.values.keys().chain(new.values.keys()).collect();
    let mut findings = Judged::new();
    for pointer in pointers {
        if ambiguous.iter().any(|a| strictly_under(pointer, a)) {
            continue;
        }
        let (o, n) = (
            old.values.get(pointer).copied(),
            new.values.get(pointer).copied(),
        );
        let kind = match (o, n) {
            (Some(o), Some(n)) if o == n => continue,
            (Some(Value::Object(_)), Some(Value::Object(_)))
            | (Some(Value::Array(_)), Some(Value::Array(_))) => continue,
            (Some(_), Some(_)) => ChangeKind::Modify,
            (Some(_), None) => ChangeKind::Delete,
            (None, Some(_)) => ChangeKind::Add,
            (None, None) => unreachable!("a pointer of one side"),
        };
        let subject = format!("{FILE}#{pointer}");
        for (rule, pattern, kinds) in RULES {
            if pattern_matches(pattern, pointer) && kinds.is_none_or(|k| k == kind.as_str()) {
                let occurrence = Occurrence::of(rule, &subject, kind, o, n);
                findings.insert((rule.to_string(), subject.clone(), occurrence.to_string()));
            }
        }
    }
    let ambiguous = ambiguous
        .into_iter()
        .map(|p| format!("{FILE}#{p}"))
        .collect();
    (findings, ambiguous)
}

/// What the run judges of the same pair.
fn judged(base: Option<&Value>, source: Option<&Value>) -> (Judged, BTreeSet<String>) {
    let content = |v: Option<&Value>| match v {
        None => FileContent::Absent,
        Some(v) => FileContent::Present(serde_json::to_vec_pretty(v).unwrap()),
    };
    let out = compute_desired_state(ReviewInputs {
        policy_files: vec![PolicyFile {
            path: ".assent/policies/rules.yaml".into(),
            bytes: policy().into_bytes(),
        }],
        policy_problems: Vec::new(),
        self_edit_sides: Default::default(),
        changed_files: Ok(vec![ChangedFileInput {
            old_path: FILE.into(),
            new_path: FILE.into(),
            base: content(base),
            source: content(source),
        }]),
        mr: MrContext::default(),
        limits: Limits::default(),
    });
    let mut findings = Judged::new();
    let mut ambiguous = BTreeSet::new();
    for finding in out.desired.findings {
        if finding.slot.rule == RULE_AMBIGUOUS_IDENTITY {
            ambiguous.insert(finding.slot.subject);
        } else {
            assert!(
                !finding.slot.rule.starts_with("assent/"),
                "unexpected built-in finding {finding:?}"
            );
            findings.insert((
                finding.slot.rule,
                finding.slot.subject,
                finding.occurrence.to_string(),
            ));
        }
    }
    (findings, ambiguous)
}

// ---- Documents and edits. ----

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0..3i64).prop_map(|n| json!(n)),
        "[xy]".prop_map(Value::String),
    ]
}

/// A keyed list: entries with distinct ids, now and then one without an id or a copy.
fn keyed(inner: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    (
        prop::collection::btree_map(
            "[pqr7]",
            prop::collection::btree_map("[ab]", inner, 0..3),
            0..4,
        ),
        0..8u8,
    )
        .prop_map(|(entries, flaw)| {
            let mut items: Vec<Value> = entries
                .into_iter()
                .map(|(id, fields)| {
                    let mut map: Map<String, Value> = fields.into_iter().collect();
                    // `7` is an integer identity, the others strings.
                    let id = if id == "7" {
                        json!(7)
                    } else {
                        Value::String(id)
                    };
                    map.insert(IDENTITY_FIELD.into(), id);
                    Value::Object(map)
                })
                .collect();
            match flaw {
                0 if !items.is_empty() => items.push(items[0].clone()),
                1 => items.push(json!({"a": 1})),
                _ => {}
            }
            Value::Array(items)
        })
}

fn document() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(4, 40, 4, |inner| {
        let inner = inner.boxed();
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            (
                prop::collection::btree_map("[ab]", inner.clone(), 0..3),
                prop::option::weighted(0.6, keyed(inner.clone())),
            )
                .prop_map(|(fields, items)| {
                    let mut map: Map<String, Value> = fields.into_iter().collect();
                    if let Some(items) = items {
                        map.insert("items".into(), items);
                    }
                    Value::Object(map)
                }),
        ]
    })
}

/// One edit of the value at some position of a document.
#[derive(Debug, Clone)]
enum Edit {
    /// Remove it from its map or list (the root: the file becomes `null`).
    Remove,
    Null,
    /// `{}` for a map, `[]` for a list.
    Empty,
    /// A list becomes a map of its entries (keyed by id when they have one), a map a list of
    /// its values.
    Retype,
    Replace(Value),
    /// A scalar becomes another one.
    Bump,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        1 => Just(Edit::Remove),
        1 => Just(Edit::Null),
        1 => Just(Edit::Empty),
        2 => Just(Edit::Retype),
        1 => document().prop_map(Edit::Replace),
        2 => Just(Edit::Bump),
    ]
}

fn count(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count).sum(),
        Value::Object(map) => map.values().map(count).sum(),
        _ => 0,
    }
}

/// Applies `edit` to the value at pre-order position `at` (0 is the root); `true` when the
/// value is to be removed from its parent.
fn apply(value: &mut Value, at: &mut usize, edit: &Edit) -> bool {
    if *at == 0 {
        match edit {
            Edit::Remove => return true,
            Edit::Null => *value = Value::Null,
            Edit::Empty => match value {
                Value::Array(items) => items.clear(),
                Value::Object(map) => map.clear(),
                _ => *value = json!({}),
            },
            Edit::Retype => {
                *value = match std::mem::take(value) {
                    Value::Array(items) => Value::Object(
                        items
                            .into_iter()
                            .enumerate()
                            .map(|(i, item)| {
                                let key = match item.get(IDENTITY_FIELD) {
                                    Some(Value::String(s)) => s.clone(),
                                    Some(Value::Number(n)) => n.to_string(),
                                    _ => i.to_string(),
                                };
                                (key, item)
                            })
                            .collect(),
                    ),
                    Value::Object(map) => Value::Array(map.into_iter().map(|(_, v)| v).collect()),
                    other => json!([other]),
                }
            }
            Edit::Replace(new) => *value = new.clone(),
            Edit::Bump => {
                *value = match &*value {
                    Value::Bool(b) => Value::Bool(!*b),
                    Value::Number(n) => json!(n.as_i64().unwrap_or(0) + 1),
                    Value::String(s) => Value::String(format!("{s}z")),
                    Value::Null => json!(0),
                    container => container.clone(),
                }
            }
        }
        *at = usize::MAX;
        return false;
    }
    *at -= 1;
    match value {
        Value::Array(items) => {
            let mut i = 0;
            while i < items.len() && *at != usize::MAX {
                if apply(&mut items[i], at, edit) {
                    items.remove(i);
                    *at = usize::MAX;
                } else {
                    i += 1;
                }
            }
        }
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if *at == usize::MAX {
                    break;
                }
                if apply(map.get_mut(&key).unwrap(), at, edit) {
                    map.remove(&key);
                    *at = usize::MAX;
                }
            }
        }
        _ => {}
    }
    false
}

fn edited(base: &Value, edits: &[(usize, Edit)]) -> Value {
    let mut doc = base.clone();
    for (selector, edit) in edits {
        let mut at = selector % count(&doc);
        if apply(&mut doc, &mut at, edit) {
            doc = Value::Null;
        }
    }
    doc
}

/// Whether each side exists: mostly both, sometimes a file created or deleted.
fn presence() -> impl Strategy<Value = (bool, bool)> {
    prop_oneof![8 => Just((true, true)), 1 => Just((false, true)), 1 => Just((true, false))]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn findings_are_those_of_every_value_taken_apart_one_by_one(
        base in document(),
        edits in prop::collection::vec((any::<usize>(), edit()), 1..4),
        (has_base, has_source) in presence(),
    ) {
        let source = edited(&base, &edits);
        let base = has_base.then_some(&base);
        let source = has_source.then_some(&source);
        let (expected, expected_ambiguous) = oracle(base, source);
        let (actual, actual_ambiguous) = judged(base, source);
        prop_assert_eq!(&actual_ambiguous, &expected_ambiguous, "base {:?}\nsource {:?}", base, source);
        let missing: Vec<_> = expected.difference(&actual).collect();
        let extra: Vec<_> = actual.difference(&expected).collect();
        prop_assert!(
            missing.is_empty() && extra.is_empty(),
            "missing {:?}\nextra {:?}\nbase {:?}\nsource {:?}",
            missing, extra, base, source
        );
    }
}

#[test]
fn the_oracle_takes_a_nulled_list_apart() {
    let base = json!({"items": [{"id": "p", "a": 1}]});
    let (findings, _) = oracle(Some(&base), Some(&json!({"items": null})));
    let subjects: BTreeSet<&str> = findings.iter().map(|(_, s, _)| s.as_str()).collect();
    assert_eq!(
        subjects,
        BTreeSet::from([
            "conf/a.json#/items",
            "conf/a.json#/items/p",
            "conf/a.json#/items/p/a",
            "conf/a.json#/items/p/id",
        ])
    );
}
