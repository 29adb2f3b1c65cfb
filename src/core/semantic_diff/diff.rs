//! Field-level diff of two value trees (SPEC §3).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

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
    old: Option<&Value>,
    new: Option<&Value>,
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

impl Walk<'_> {
    fn push(&mut self, pointer: &str, kind: ChangeKind, old: Option<&Value>, new: Option<&Value>) {
        self.changes.push(Change {
            file: self.file.to_owned(),
            pointer: pointer.to_owned(),
            kind,
            old: old.cloned(),
            new: new.cloned(),
        });
    }

    /// Diffs two present values at `pointer`. The pointer buffer is shared down the walk and
    /// restored on return, so a deep document does not allocate one string per level.
    fn value(&mut self, pointer: &mut String, old: &Value, new: &Value) {
        if old == new {
            return;
        }
        match (old, new) {
            (Value::Object(old), Value::Object(new)) => {
                // Sorted explicitly: the map type's order depends on a Cargo feature.
                let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
                let entries = keys
                    .into_iter()
                    .map(|k| (escape_pointer_token(k), old.get(k), new.get(k)));
                self.entries(pointer, entries);
            }
            (Value::Array(old), Value::Array(new)) => self.list(pointer, old, new),
            _ => self.push(pointer, ChangeKind::Modify, Some(old), Some(new)),
        }
    }

    /// Diffs the children of a container, given as `(escaped token, old, new)` in output order.
    fn entries<'v>(
        &mut self,
        pointer: &mut String,
        entries: impl Iterator<Item = (String, Option<&'v Value>, Option<&'v Value>)>,
    ) {
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

    fn list(&mut self, pointer: &mut String, old: &[Value], new: &[Value]) {
        let keyed = (self.identity_for)(pointer)
            .and_then(|field| Some((keyed_by(old, &field)?, keyed_by(new, &field)?)));
        match keyed {
            Some((old, new)) => {
                let ids: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
                let entries = ids.into_iter().map(|id| {
                    (
                        escape_pointer_token(id),
                        old.get(id).copied(),
                        new.get(id).copied(),
                    )
                });
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

/// The elements of `list` keyed by the string form of their `field`, or `None` when the list
/// does not qualify: an element that is not an object, lacks the field, has a value other than
/// a string or integer there, or repeats another element's value (compared by string form, so
/// `"1"` and `1` collide and the list falls back to indices rather than guessing).
fn keyed_by<'v>(list: &'v [Value], field: &str) -> Option<BTreeMap<String, &'v Value>> {
    let mut keyed = BTreeMap::new();
    for element in list {
        let id = match element.as_object()?.get(field)? {
            Value::String(s) => s.clone(),
            Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
            _ => return None,
        };
        if keyed.insert(id, element).is_some() {
            return None;
        }
    }
    Some(keyed)
}
