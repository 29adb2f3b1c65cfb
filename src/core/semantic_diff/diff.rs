//! Field-level diff of two value trees (SPEC §3).

use std::borrow::Cow;
use std::cmp::Ordering;

use super::tree::Node;
use crate::core::model::{Change, ChangeKind};

/// Escapes one RFC 6901 reference token: `~` becomes `~0`, then `/` becomes `~1`.
pub fn escape_pointer_token(token: &str) -> String {
    // `~` first, or the `~` introduced by `~1` would be escaped again.
    token.replace('~', "~0").replace('/', "~1")
}

/// The field-level changes from `old` to `new`, two versions of `file` (`None` = absent).
///
/// * A whole-file add (`old` absent) or delete (`new` absent) is exactly one change at pointer
///   `""` carrying the whole document; both absent is no change.
/// * Objects recurse per key, keys in sorted order. A key only in `new` is an `add` of its whole
///   subtree, only in `old` a `delete`; equal values give nothing; two objects recurse, two
///   lists are diffed as lists, anything else (including a type change) is one `modify`.
/// * Lists: `identity_for(pointer)` is asked, with the list's pointer as it appears in the
///   output, for the identity field the policy declared there (e.g. `/topics` → `name`). When
///   it names one and, on **both** sides, every element is an object whose field is a string or
///   integer, unique within that side, the list is diffed as a map from that value (escaped as
///   the pointer token, entries in sorted order): `/topics/orders.events.v1/retention_days`,
///   and reordering alone is no change. An entry whose identity changes is a delete plus an add.
/// * Otherwise — no identity declared, an element without the field, a non-scalar or duplicate
///   identity value — the list is diffed by index: common positions recurse, extra new
///   positions are `add`s and extra old positions `delete`s. Falling back rather than failing
///   keeps the diff complete; the pointers just read less well.
///
/// The result is deterministic: identical inputs give identical output, in document order with
/// sorted keys.
pub fn diff_documents(
    file: &str,
    old: Option<&Node>,
    new: Option<&Node>,
    identity_for: &dyn Fn(&str) -> Option<String>,
) -> Vec<Change> {
    let mut walk = Walk {
        file,
        identity_for,
        changes: Vec::new(),
    };
    match (old, new) {
        (None, None) => {}
        (None, Some(new)) => walk.push("", ChangeKind::Add, None, Some(new)),
        (Some(old), None) => walk.push("", ChangeKind::Delete, Some(old), None),
        (Some(old), Some(new)) => walk.value(&mut String::new(), old, new),
    }
    walk.changes
}

/// The state of one diff: where changes go and how lists are keyed.
struct Walk<'a> {
    file: &'a str,
    identity_for: &'a dyn Fn(&str) -> Option<String>,
    changes: Vec<Change>,
}

/// One child position of two containers being compared: its escaped pointer token and the
/// value on each side.
type Entry<'v> = (String, Option<&'v Node>, Option<&'v Node>);

impl Walk<'_> {
    fn push(&mut self, pointer: &str, kind: ChangeKind, old: Option<&Node>, new: Option<&Node>) {
        self.changes.push(Change {
            file: self.file.to_owned(),
            pointer: pointer.to_owned(),
            kind,
            old: old.map(Node::to_value),
            new: new.map(Node::to_value),
        });
    }

    /// Diffs two present values at `pointer`. The pointer buffer is shared down the walk and
    /// restored on return, so a deep document does not allocate one string per level.
    fn value(&mut self, pointer: &mut String, old: &Node, new: &Node) {
        if old == new {
            return;
        }
        match (old, new) {
            (Node::Object(old, _), Node::Object(new, _)) => {
                let entries = merge_sorted(old, new, |(key, _)| key.as_ref(), |(_, v)| v)
                    .map(|(key, old, new)| (escape_pointer_token(key), old, new));
                self.entries(pointer, entries);
            }
            (Node::Array(old, _), Node::Array(new, _)) => self.list(pointer, old, new),
            _ => self.push(pointer, ChangeKind::Modify, Some(old), Some(new)),
        }
    }

    /// Diffs the children of a container, given in output order.
    fn entries<'v>(&mut self, pointer: &mut String, entries: impl Iterator<Item = Entry<'v>>) {
        for (token, old, new) in entries {
            let len = pointer.len();
            pointer.push('/');
            pointer.push_str(&token);
            match (old, new) {
                (Some(old), Some(new)) => self.value(pointer, old, new),
                (None, Some(new)) => self.push(pointer, ChangeKind::Add, None, Some(new)),
                (Some(old), None) => self.push(pointer, ChangeKind::Delete, Some(old), None),
                (None, None) => {}
            }
            pointer.truncate(len);
        }
    }

    fn list(&mut self, pointer: &mut String, old: &[Node], new: &[Node]) {
        let keyed = (self.identity_for)(pointer)
            .and_then(|field| Some((keyed_by(old, &field)?, keyed_by(new, &field)?)));
        match keyed {
            Some((old, new)) => {
                let entries = merge_sorted(&old, &new, |(id, _)| id.as_ref(), |(_, v)| *v)
                    .map(|(id, old, new)| (escape_pointer_token(id), old, new));
                self.entries(pointer, entries);
            }
            None => {
                let len = old.len().max(new.len());
                let entries = (0..len).map(|i| (i.to_string(), old.get(i), new.get(i)));
                self.entries(pointer, entries);
            }
        }
    }
}

/// Merges two slices sorted by a unique key into `(key, old, new)` in key order.
fn merge_sorted<'v, T>(
    old: &'v [T],
    new: &'v [T],
    key: impl Fn(&'v T) -> &'v str,
    value: impl Fn(&'v T) -> &'v Node,
) -> impl Iterator<Item = (&'v str, Option<&'v Node>, Option<&'v Node>)> {
    let (mut old, mut new) = (old.iter().peekable(), new.iter().peekable());
    std::iter::from_fn(move || {
        let order = match (old.peek(), new.peek()) {
            (None, None) => return None,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(&a), Some(&b)) => key(a).cmp(key(b)),
        };
        Some(match order {
            Ordering::Less => old.next().map(|a| (key(a), Some(value(a)), None))?,
            Ordering::Greater => new.next().map(|b| (key(b), None, Some(value(b))))?,
            Ordering::Equal => {
                let (a, b) = (old.next()?, new.next()?);
                (key(a), Some(value(a)), Some(value(b)))
            }
        })
    })
}

/// The elements of `list` keyed by the string form of their `field`, sorted by it, or `None`
/// when the list does not qualify: an element that is not an object, lacks the field, has a
/// value other than a string or integer there, or repeats another element's value (compared by
/// string form, so `"1"` and `1` collide and the list falls back to indices rather than
/// guessing).
fn keyed_by<'v>(list: &'v [Node], field: &str) -> Option<Vec<(Cow<'v, str>, &'v Node)>> {
    let mut keyed = Vec::with_capacity(list.len());
    for element in list {
        let id = match element.get(field)? {
            Node::String(s, _) => Cow::Borrowed(s.as_ref()),
            Node::Number(n, _) if n.is_i64() || n.is_u64() => Cow::Owned(n.to_string()),
            _ => return None,
        };
        keyed.push((id, element));
    }
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    if keyed.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        return None;
    }
    Some(keyed)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use serde_json::{Value, json};

    use super::*;

    fn no_identity(_: &str) -> Option<String> {
        None
    }

    fn topics_by_name(pointer: &str) -> Option<String> {
        (pointer == "/topics").then(|| "name".to_owned())
    }

    /// `(pointer, kind, old, new)` of each change, for compact assertions.
    fn summary(changes: &[Change]) -> Vec<(&str, ChangeKind, Option<Value>, Option<Value>)> {
        changes
            .iter()
            .map(|c| (c.pointer.as_str(), c.kind, c.old.clone(), c.new.clone()))
            .collect()
    }

    fn diff(old: Value, new: Value, identity: &dyn Fn(&str) -> Option<String>) -> Vec<Change> {
        let (old, new) = (Node::from(&old), Node::from(&new));
        diff_documents("f.yaml", Some(&old), Some(&new), identity)
    }

    use ChangeKind::{Add, Delete, Modify};

    #[test]
    fn escape_pointer_token_follows_rfc_6901() {
        assert_eq!(escape_pointer_token("plain"), "plain");
        assert_eq!(escape_pointer_token("a/b"), "a~1b");
        assert_eq!(escape_pointer_token("a~b"), "a~0b");
        // `~1` in the input is a tilde then a one, not an escaped slash.
        assert_eq!(escape_pointer_token("~1/"), "~01~1");
        assert_eq!(escape_pointer_token(""), "");
    }

    #[test]
    fn whole_file_add_and_delete_are_one_change_at_the_root() {
        let doc = json!({"a": [1, 2]});
        let node = Node::from(&doc);
        let added = diff_documents("f.json", None, Some(&node), &no_identity);
        assert_eq!(
            added,
            vec![Change {
                file: "f.json".into(),
                pointer: String::new(),
                kind: Add,
                old: None,
                new: Some(doc.clone()),
            }]
        );
        let deleted = diff_documents("f.json", Some(&node), None, &no_identity);
        assert_eq!(
            summary(&deleted),
            vec![("", Delete, Some(doc.clone()), None)]
        );
        assert!(diff_documents("f.json", None, None, &no_identity).is_empty());
        assert!(diff_documents("f.json", Some(&node), Some(&node), &no_identity).is_empty());
    }

    #[test]
    fn root_scalar_or_type_change_is_a_modify_at_the_root() {
        assert_eq!(
            summary(&diff(json!(1), json!(2), &no_identity)),
            vec![("", Modify, Some(json!(1)), Some(json!(2)))]
        );
        assert_eq!(
            summary(&diff(json!({"a": 1}), json!([1]), &no_identity)),
            vec![("", Modify, Some(json!({"a": 1})), Some(json!([1])))]
        );
    }

    #[test]
    fn objects_recurse_per_key_in_sorted_order() {
        let old = json!({"z": 1, "same": {"x": 1}, "gone": {"deep": [1]}, "nested": {"k": "old", "keep": true}, "t": 1});
        let new = json!({"z": 2, "same": {"x": 1}, "nested": {"k": "new", "keep": true}, "added": [1, 2], "t": "1"});
        assert_eq!(
            summary(&diff(old, new, &no_identity)),
            vec![
                ("/added", Add, None, Some(json!([1, 2]))),
                ("/gone", Delete, Some(json!({"deep": [1]})), None),
                ("/nested/k", Modify, Some(json!("old")), Some(json!("new"))),
                ("/t", Modify, Some(json!(1)), Some(json!("1"))),
                ("/z", Modify, Some(json!(1)), Some(json!(2))),
            ]
        );
    }

    #[test]
    fn null_is_a_value_not_an_absence() {
        assert_eq!(
            summary(&diff(json!({"a": null}), json!({}), &no_identity)),
            vec![("/a", Delete, Some(Value::Null), None)]
        );
        assert_eq!(
            summary(&diff(json!({"a": null}), json!({"a": 0}), &no_identity)),
            vec![("/a", Modify, Some(Value::Null), Some(json!(0)))]
        );
    }

    #[test]
    fn keys_needing_escaping_are_escaped_in_pointers() {
        let old = json!({"a/b": 1, "a~b": {"c/d": 1}});
        let new = json!({"a/b": 2, "a~b": {"c/d": 2}});
        let changes = diff(old, new, &no_identity);
        let pointers: Vec<&str> = changes.iter().map(|c| c.pointer.as_str()).collect();
        assert_eq!(pointers, ["/a~1b", "/a~0b/c~1d"]);
    }

    #[test]
    fn lists_without_identity_diff_by_index() {
        assert_eq!(
            summary(&diff(
                json!({"l": [1, {"a": 1}, 3]}),
                json!({"l": [1, {"a": 2}, 4, 5, 6]}),
                &no_identity
            )),
            vec![
                ("/l/1/a", Modify, Some(json!(1)), Some(json!(2))),
                ("/l/2", Modify, Some(json!(3)), Some(json!(4))),
                ("/l/3", Add, None, Some(json!(5))),
                ("/l/4", Add, None, Some(json!(6))),
            ]
        );
        assert_eq!(
            summary(&diff(json!([1, 2, 3]), json!([1]), &no_identity)),
            vec![
                ("/1", Delete, Some(json!(2)), None),
                ("/2", Delete, Some(json!(3)), None)
            ]
        );
        // Reordering is a change when there is no identity.
        assert_eq!(diff(json!([1, 2]), json!([2, 1]), &no_identity).len(), 2);
    }

    fn topic(name: &str, retention_days: u64) -> Value {
        json!({"name": name, "retention_days": retention_days})
    }

    #[test]
    fn identity_lists_diff_as_maps_keyed_by_the_identity() {
        let old =
            json!({"topics": [topic("b", 30), topic("a", 7), topic("gone", 1), topic("c", 3)]});
        let new =
            json!({"topics": [topic("new", 5), topic("c", 3), topic("a", 7), topic("b", 14)]});
        assert_eq!(
            summary(&diff(old, new, &topics_by_name)),
            vec![
                (
                    "/topics/b/retention_days",
                    Modify,
                    Some(json!(30)),
                    Some(json!(14))
                ),
                ("/topics/gone", Delete, Some(topic("gone", 1)), None),
                ("/topics/new", Add, None, Some(topic("new", 5))),
            ]
        );
    }

    #[test]
    fn reordering_an_identity_list_is_no_change() {
        let old = json!({"topics": [topic("a", 1), topic("b", 2), topic("c", 3)]});
        let new = json!({"topics": [topic("c", 3), topic("a", 1), topic("b", 2)]});
        assert!(diff(old, new, &topics_by_name).is_empty());
    }

    #[test]
    fn identity_values_are_escaped_and_integers_qualify() {
        let old = json!({"topics": [topic("orders/v1", 30), {"name": 7, "retention_days": 1}]});
        let new = json!({"topics": [topic("orders/v1", 7), {"name": 7, "retention_days": 2}]});
        let changes = diff(old, new, &topics_by_name);
        let pointers: Vec<&str> = changes.iter().map(|c| c.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/topics/7/retention_days",
                "/topics/orders~1v1/retention_days"
            ]
        );
    }

    #[test]
    fn renaming_an_identity_is_a_delete_and_an_add() {
        let changes = diff(
            json!({"topics": [topic("a", 1)]}),
            json!({"topics": [topic("b", 1)]}),
            &topics_by_name,
        );
        assert_eq!(
            summary(&changes),
            vec![
                ("/topics/a", Delete, Some(topic("a", 1)), None),
                ("/topics/b", Add, None, Some(topic("b", 1)))
            ]
        );
    }

    #[test]
    fn lists_that_do_not_qualify_fall_back_to_indices() {
        let cases = [
            (
                "an entry without the field",
                json!({"topics": [topic("a", 1), {"retention_days": 2}]}),
            ),
            (
                "a duplicate identity",
                json!({"topics": [topic("a", 1), topic("a", 2)]}),
            ),
            (
                "an identity that is not a string or integer",
                json!({"topics": [topic("a", 1), {"name": 1.5}]}),
            ),
            (
                "an element that is not an object",
                json!({"topics": [topic("a", 1), "b"]}),
            ),
            (
                "identities equal in string form",
                json!({"topics": [topic("a", 1), {"name": "1"}, {"name": 1}]}),
            ),
        ];
        for (why, new) in cases {
            let old = json!({"topics": [topic("a", 9)]});
            let changes = diff(old, new.clone(), &topics_by_name);
            assert_eq!(changes[0].pointer, "/topics/0/retention_days", "{why}");
            assert_eq!(changes[1].pointer, "/topics/1", "{why}");
            // The fallback applies when either side does not qualify.
            let back = diff(new, json!({"topics": [topic("a", 9)]}), &topics_by_name);
            assert_eq!(back[0].pointer, "/topics/0/retention_days", "{why}");
        }
    }

    #[test]
    fn identity_for_is_asked_with_each_list_pointer_as_output() {
        let asked = RefCell::new(Vec::new());
        let identity = |pointer: &str| {
            asked.borrow_mut().push(pointer.to_owned());
            (pointer == "/topics").then(|| "name".to_owned())
        };
        let old = json!({"topics": [{"name": "a/b", "acl": [1]}], "other": [[1]], "same": [1]});
        let new = json!({"topics": [{"name": "a/b", "acl": [2]}], "other": [[2]], "same": [1]});
        let changes = diff(old, new, &identity);
        let pointers: Vec<&str> = changes.iter().map(|c| c.pointer.as_str()).collect();
        assert_eq!(pointers, ["/other/0/0", "/topics/a~1b/acl/0"]);
        // Equal lists are never asked about; nested lists are asked with identity tokens.
        assert_eq!(
            *asked.borrow(),
            ["/other", "/other/0", "/topics", "/topics/a~1b/acl"]
        );
    }

    #[test]
    fn output_is_deterministic() {
        let old = json!({"b": [1, {"x": 1}], "a": {"d": 1, "c": 2}});
        let new = json!({"a": {"c": 3, "d": 4}, "b": [2, {"x": 2}, 3]});
        let first = diff(old.clone(), new.clone(), &no_identity);
        assert_eq!(first, diff(old, new, &no_identity));
        let pointers: Vec<&str> = first.iter().map(|c| c.pointer.as_str()).collect();
        assert_eq!(pointers, ["/a/c", "/a/d", "/b/0", "/b/1/x", "/b/2"]);
    }
}
