//! Field-level diff of two value trees (docs/contract.md#desired-state), and the identity-keyed lists it refuses to
//! compare (docs/contract.md#identity-keys).

use std::borrow::Cow;
use std::cmp::Ordering;

use super::tree::Node;
use crate::{Change, ChangeKind};

/// Escapes one RFC 6901 reference token: `~` becomes `~0`, then `/` becomes `~1`.
pub fn escape_pointer_token(token: &str) -> String {
    // `~` first, or the `~` introduced by `~1` would be escaped again.
    token.replace('~', "~0").replace('/', "~1")
}

/// What [`diff_documents`] found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DocumentDiff {
    /// Field-level changes, in document order with sorted keys: each at the highest pointer
    /// where the two sides differ (a deleted key is one change carrying its whole subtree).
    pub changes: Vec<Change>,
    /// The changes under those, spelled out for rules ([`diff_documents_with`]): every value
    /// inside a container that `changes` deletes, adds or replaces by a value of another type
    /// is itself a `delete`, an `add` or (present on both sides under the same pointer) a
    /// diff of its own. Only those the caller wants, in document order after their change.
    pub descendants: Vec<Change>,
    /// The wanted descendants would copy more values than
    /// [`Descendants::max_values`]: `descendants` is then empty, so the caller must fail
    /// closed rather than judge part of them.
    pub descendants_cut: bool,
    /// How many values (nodes of `old` and `new` together) `descendants` carries, within
    /// [`Descendants::max_values`]: what a caller that bounds several diffs together has spent.
    pub descendant_values: usize,
    /// Identity-keyed lists that could not be compared, in the same order. No change at or
    /// under their pointers is in `changes` or `descendants`.
    pub ambiguities: Vec<AmbiguousList>,
}

/// Which changes under a reported change [`diff_documents_with`] spells out, and how much of
/// the documents it may copy for them.
pub struct Descendants<'a> {
    /// Whether a change of this kind at this pointer is wanted (for a run: whether some rule
    /// could match it). Asked for every descendant; an unwanted one costs no copy.
    pub wanted: &'a dyn Fn(&str, ChangeKind) -> bool,
    /// Most values (nodes of `old` and `new` together) the wanted descendants may carry in
    /// all. Each descendant copies its own subtree, so a deep document costs more than its
    /// size; past this the descendants are dropped and [`DocumentDiff::descendants_cut`] set.
    pub max_values: usize,
    /// Whether `wanted` also filters the reported changes: one it refuses is then neither
    /// copied nor in [`DocumentDiff::changes`]. A run judges changes and nothing else, and a
    /// list set to `null` would otherwise copy the whole list into a change no rule reads.
    pub filter_reported: bool,
}

/// A list declared with an identity field whose entries cannot be told apart on at least
/// one side, so it is not compared at all (never by position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmbiguousList {
    /// RFC 6901 pointer of the list, as changes under it would have carried.
    pub pointer: String,
    /// The identity field declared for the list.
    pub field: String,
    /// What is wrong at the base, `None` when nothing is (or that side was not looked at).
    pub base: Option<SideAmbiguity>,
    /// What is wrong at the source, `None` when nothing is.
    pub source: Option<SideAmbiguity>,
}
/// Why the entries of one side of an identity-keyed list cannot be told apart. At least one
/// of the two lists is non-empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SideAmbiguity {
    /// Identity values (string form) held by more than one entry, sorted by value.
    pub duplicates: Vec<DuplicateIdentity>,
    /// Entries without a usable identity, in document order.
    pub unkeyed: Vec<UnkeyedEntry>,
}

/// One identity value held by several entries of the same side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateIdentity {
    /// The value, in the string form used for the pointer token (`1` and `"1"` are the same).
    pub value: String,
    /// The entries holding it, in document order (two or more).
    pub entries: Vec<EntryAt>,
}

/// An entry of an identity-keyed list that has no usable identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnkeyedEntry {
    /// Where it is.
    pub entry: EntryAt,
    /// What is missing.
    pub reason: Unkeyed,
}

/// Why an entry has no usable identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unkeyed {
    /// The entry is not a map.
    NotAMap,
    /// The entry is a map without the identity field.
    MissingField,
    /// The identity field holds something other than a string or an integer.
    NotStringOrInteger,
}

/// Where an entry of a list is, on its side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryAt {
    /// 0-based position in the list.
    pub index: usize,
    /// 1-based line the entry starts on, when the tree knows it.
    pub line: Option<usize>,
}

/// The field-level changes from `old` to `new`, two versions of `file` (`None` = absent), and
/// the identity-keyed lists that could not be compared. No descendant is spelled out:
/// [`diff_documents_with`] with none wanted.
pub fn diff_documents(
    file: &str,
    old: Option<&Node>,
    new: Option<&Node>,
    identity_for: &dyn Fn(&str) -> Option<String>,
) -> DocumentDiff {
    let none = Descendants {
        wanted: &|_, _| false,
        max_values: 0,
        filter_reported: false,
    };
    diff_documents_with(file, old, new, identity_for, &none)
}

/// The field-level changes from `old` to `new`, two versions of `file` (`None` = absent), the
/// wanted changes under them, and the identity-keyed lists that could not be compared.
///
/// * A whole-file add (`old` absent) or delete (`new` absent) is exactly one change at pointer
///   `""` carrying the whole document; both absent is no change.
/// * Objects recurse per key, keys in sorted order. A key only in `new` is an `add` of its whole
///   subtree, only in `old` a `delete`; equal values give nothing; two objects recurse, two
///   lists are diffed as lists, anything else (including a type change) is one `modify`.
/// * Lists: `identity_for(pointer)` is asked, with the list's pointer as it appears in the
///   output, for the identity field the policy declared there (e.g. `/topics` → `name`). With
///   none, the list is diffed by index: common positions recurse, extra new positions are
///   `add`s and extra old positions `delete`s.
/// * With an identity field, the list is diffed as a map from that field's value (escaped as
///   the pointer token, entries in sorted order): `/topics/orders.events.v1/retention_days`;
///   reordering alone is no change, and an entry whose identity changes is a delete plus an
///   add. This needs, on **both** sides, every element to be a map whose field is a string or
///   an integer, unique by its string form within that side. When either side falls short, the
///   list is an [`AmbiguousList`] naming every offending entry, and **nothing** at or under its
///   pointer is compared: not by identity (which entry is which is exactly what is unknown),
///   and never by position (which would let a duplicate shift a change out of a rule's sight).
///   The rest of the document is diffed as usual.
/// * **Descendants.** Under each change of `changes` the walk goes on, addressing values as a
///   direct diff would (keyed lists by identity, other lists by index, maps by key): a value
///   only in the old subtree is a `delete`, only in the new one an `add`, and a pointer both
///   subtrees hold is diffed like any other (a list turned into a map of the same entries
///   keeps `/topics/a/retention_days` on both sides, so a shrink inside is a `modify`). So
///   deleting a container, emptying it, setting it to null or replacing it with another type
///   reaches every rule written on its descendants exactly as deleting them one by one does.
///   Those `descendants.wanted` accepts are in [`DocumentDiff::descendants`], each with its
///   own values and lines, within `descendants.max_values`.
/// * Keyed lists inside a value that appears or disappears whole (the subtrees above) are
///   checked like any other differing list, on the side that holds them, so an ambiguous
///   list can neither enter nor leave a file unnoticed; the change above it is still
///   reported, nothing under it. Lists that are equal on both sides are not looked at:
///   nothing in them is compared.
///
/// The result is deterministic: identical inputs give identical output, in document order with
/// sorted keys.
pub fn diff_documents_with(
    file: &str,
    old: Option<&Node>,
    new: Option<&Node>,
    identity_for: &dyn Fn(&str) -> Option<String>,
    descendants: &Descendants<'_>,
) -> DocumentDiff {
    let mut walk = Walk {
        file,
        identity_for,
        descendants,
        values_left: descendants.max_values,
        found: DocumentDiff::default(),
    };
    walk.pair(&mut String::new(), old, new, false);
    if !walk.found.descendants_cut {
        walk.found.descendant_values = descendants.max_values - walk.values_left;
    }
    walk.found
}

/// The state of one diff: where changes go and how lists are keyed.
struct Walk<'a> {
    file: &'a str,
    identity_for: &'a dyn Fn(&str) -> Option<String>,
    descendants: &'a Descendants<'a>,
    /// What is left of `descendants.max_values`.
    values_left: usize,
    found: DocumentDiff,
}

/// One child position of two containers being compared: its escaped pointer token and the
/// value on each side.
type Entry<'t, 'v> = (Cow<'t, str>, Option<&'v Node>, Option<&'v Node>);

/// The elements of an identity-keyed list: identity (string form), position, element; sorted
/// by identity.
type Keyed<'v> = Vec<(Cow<'v, str>, usize, &'v Node)>;

/// The children of one side of a value under a change: escaped token and value.
type Children<'v> = Vec<(String, &'v Node)>;

impl Walk<'_> {
    /// Records one change at `pointer`: a reported one, or (`beneath` a reported change) a
    /// descendant when wanted and within the budget.
    fn push(
        &mut self,
        pointer: &str,
        kind: ChangeKind,
        old: Option<&Node>,
        new: Option<&Node>,
        beneath: bool,
    ) {
        if !beneath && self.descendants.filter_reported && !(self.descendants.wanted)(pointer, kind)
        {
            return;
        }
        if beneath {
            if self.found.descendants_cut || !(self.descendants.wanted)(pointer, kind) {
                return;
            }
            let cost = [old, new]
                .into_iter()
                .flatten()
                .try_fold(0usize, |cost, node| {
                    count_within(node, self.values_left - cost).map(|n| cost + n)
                });
            match cost {
                Some(cost) => self.values_left -= cost,
                None => {
                    // Judging part of them would be a guess: drop all, the caller fails closed.
                    self.found.descendants_cut = true;
                    self.found.descendants = Vec::new();
                    return;
                }
            }
        }
        let change = Change {
            file: self.file.to_owned(),
            pointer: pointer.to_owned(),
            kind,
            old: old.map(Node::to_value),
            new: new.map(Node::to_value),
            old_line: old.and_then(Node::line),
            new_line: new.and_then(Node::line),
        };
        if beneath {
            self.found.descendants.push(change);
        } else {
            self.found.changes.push(change);
        }
    }

    /// Diffs the values at `pointer` on each side (`None`: absent there). `beneath`: a change
    /// above was already reported, so changes here are descendants. The pointer buffer is
    /// shared down the walk and restored on return, so a deep document does not allocate one
    /// string per level.
    fn pair(
        &mut self,
        pointer: &mut String,
        old: Option<&Node>,
        new: Option<&Node>,
        beneath: bool,
    ) {
        match (old, new) {
            (None, None) => {}
            (Some(old), Some(new)) => self.value(pointer, old, new, beneath),
            (None, Some(_)) => {
                self.push(pointer, ChangeKind::Add, None, new, beneath);
                self.under(pointer, None, new);
            }
            (Some(_), None) => {
                self.push(pointer, ChangeKind::Delete, old, None, beneath);
                self.under(pointer, old, None);
            }
        }
    }

    /// Diffs two present values at `pointer`.
    fn value(&mut self, pointer: &mut String, old: &Node, new: &Node, beneath: bool) {
        if old == new {
            return;
        }
        match (old, new) {
            (Node::Object(old, _), Node::Object(new, _)) => {
                let entries = merge_sorted(old, new, |(key, _)| key.as_ref(), |(_, v)| v)
                    .map(|(key, old, new)| (Cow::Owned(escape_pointer_token(key)), old, new));
                self.entries(pointer, entries, beneath);
            }
            (Node::Array(old, _), Node::Array(new, _)) => self.list(pointer, old, new, beneath),
            _ => {
                self.push(pointer, ChangeKind::Modify, Some(old), Some(new), beneath);
                self.under(pointer, Some(old), Some(new));
            }
        }
    }

    /// Diffs the children of a container, given in output order.
    fn entries<'t, 'v>(
        &mut self,
        pointer: &mut String,
        entries: impl Iterator<Item = Entry<'t, 'v>>,
        beneath: bool,
    ) {
        for (token, old, new) in entries {
            let len = pointer.len();
            pointer.push('/');
            pointer.push_str(&token);
            self.pair(pointer, old, new, beneath);
            pointer.truncate(len);
        }
    }

    fn list(&mut self, pointer: &mut String, old: &[Node], new: &[Node], beneath: bool) {
        let Some(field) = (self.identity_for)(pointer) else {
            let len = old.len().max(new.len());
            let entries = (0..len).map(|i| (Cow::Owned(i.to_string()), old.get(i), new.get(i)));
            self.entries(pointer, entries, beneath);
            return;
        };
        match (keyed_by(old, &field), keyed_by(new, &field)) {
            (Ok(old), Ok(new)) => {
                let entries = merge_sorted(&old, &new, |(id, _, _)| id.as_ref(), |(_, _, v)| *v)
                    .map(|(id, old, new)| (Cow::Owned(escape_pointer_token(id)), old, new));
                self.entries(pointer, entries, beneath);
            }
            (base, source) => self.found.ambiguities.push(AmbiguousList {
                pointer: pointer.clone(),
                field,
                base: base.err(),
                source: source.err(),
            }),
        }
    }

    /// Walks on under a change just recorded at `pointer` whose sides are `old` and `new`
    /// (not two maps, not two lists): the children of each side, merged by token, are
    /// descendants. A keyed list whose entries cannot be told apart on a side it is on is an
    /// [`AmbiguousList`], and nothing under it is looked at.
    fn under(&mut self, pointer: &mut String, old: Option<&Node>, new: Option<&Node>) {
        let (old_children, new_children) =
            match (self.children(pointer, old), self.children(pointer, new)) {
                (Ok(old), Ok(new)) => (old, new),
                (base, source) => {
                    let field = (self.identity_for)(pointer).unwrap_or_default();
                    self.found.ambiguities.push(AmbiguousList {
                        pointer: pointer.clone(),
                        field,
                        base: base.err(),
                        source: source.err(),
                    });
                    return;
                }
            };
        if old_children.is_empty() || new_children.is_empty() {
            // One side only (or neither): in its document order.
            let entries = old_children
                .into_iter()
                .map(|(token, node)| (Cow::Owned(token), Some(node), None))
                .chain(
                    new_children
                        .into_iter()
                        .map(|(token, node)| (Cow::Owned(token), None, Some(node))),
                );
            self.entries(pointer, entries, true);
            return;
        }
        // A list and a map at the same pointer: children meet by token, so an entry keyed
        // `a` and a key `a` are the same value's two versions.
        let (mut old_children, mut new_children) = (old_children, new_children);
        old_children.sort_by(|a, b| a.0.cmp(&b.0));
        new_children.sort_by(|a, b| a.0.cmp(&b.0));
        let merged: Vec<(String, Option<&Node>, Option<&Node>)> = merge_sorted(
            &old_children,
            &new_children,
            |(t, _)| t.as_str(),
            |(_, v)| v,
        )
        .map(|(token, old, new)| (token.to_owned(), old, new))
        .collect();
        self.entries(
            pointer,
            merged.into_iter().map(|(t, o, n)| (Cow::Owned(t), o, n)),
            true,
        );
    }

    /// The children of one side's value at `pointer` as a direct diff addresses them: map
    /// keys, identities of a keyed list, positions of another list; none for a scalar or an
    /// absent value. `Err` when the value is a keyed list whose entries cannot be told apart.
    fn children<'v>(
        &self,
        pointer: &str,
        node: Option<&'v Node>,
    ) -> Result<Children<'v>, SideAmbiguity> {
        Ok(match node {
            Some(Node::Object(entries, _)) => entries
                .iter()
                .map(|(key, child)| (escape_pointer_token(key), child))
                .collect(),
            Some(Node::Array(items, _)) => match (self.identity_for)(pointer) {
                None => items
                    .iter()
                    .enumerate()
                    .map(|(i, child)| (i.to_string(), child))
                    .collect(),
                Some(field) => keyed_by(items, &field)?
                    .into_iter()
                    .map(|(id, _, child)| (escape_pointer_token(&id), child))
                    .collect(),
            },
            _ => Vec::new(),
        })
    }
}

/// The number of values in `node` (itself included), or `None` when it is more than `limit`:
/// the count stops there, so counting costs no more than the budget it checks.
fn count_within(node: &Node, limit: usize) -> Option<usize> {
    fn go(node: &Node, left: &mut usize) -> bool {
        if *left == 0 {
            return false;
        }
        *left -= 1;
        match node {
            Node::Array(items, _) => items.iter().all(|child| go(child, left)),
            Node::Object(entries, _) => entries.iter().all(|(_, child)| go(child, left)),
            _ => true,
        }
    }
    let mut left = limit;
    go(node, &mut left).then(|| limit - left)
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

/// The elements of `list` keyed by the string form of their `field`, sorted by it, or what
/// keeps them from being told apart: elements that are not maps, lack the field or hold
/// something other than a string or integer there, and values held by more than one element
/// (compared by string form, so `"1"` and `1` collide rather than being guessed apart).
fn keyed_by<'v>(list: &'v [Node], field: &str) -> Result<Keyed<'v>, SideAmbiguity> {
    let mut keyed: Keyed<'v> = Vec::with_capacity(list.len());
    let mut unkeyed = Vec::new();
    for (index, element) in list.iter().enumerate() {
        let id = match element {
            Node::Object(..) => match element.get(field) {
                Some(Node::String(s, _)) => Ok(Cow::Borrowed(s.as_ref())),
                Some(Node::Number(n, _)) if n.is_i64() || n.is_u64() => {
                    Ok(Cow::Owned(n.to_string()))
                }
                Some(_) => Err(Unkeyed::NotStringOrInteger),
                None => Err(Unkeyed::MissingField),
            },
            _ => Err(Unkeyed::NotAMap),
        };
        match id {
            Ok(id) => keyed.push((id, index, element)),
            Err(reason) => unkeyed.push(UnkeyedEntry {
                entry: entry_at(index, element),
                reason,
            }),
        }
    }
    // Ties by position, so a duplicate's entries come out in document order.
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let duplicates: Vec<DuplicateIdentity> = keyed
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|same| same.len() > 1)
        .map(|same| DuplicateIdentity {
            value: same[0].0.to_string(),
            entries: same.iter().map(|&(_, i, e)| entry_at(i, e)).collect(),
        })
        .collect();
    if duplicates.is_empty() && unkeyed.is_empty() {
        Ok(keyed)
    } else {
        Err(SideAmbiguity {
            duplicates,
            unkeyed,
        })
    }
}

fn entry_at(index: usize, element: &Node) -> EntryAt {
    EntryAt {
        index,
        line: element.line(),
    }
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
        let found = diff_full(old, new, identity);
        assert!(found.ambiguities.is_empty(), "{:?}", found.ambiguities);
        found.changes
    }

    fn diff_full(
        old: Value,
        new: Value,
        identity: &dyn Fn(&str) -> Option<String>,
    ) -> DocumentDiff {
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
        let added = diff_documents("f.json", None, Some(&node), &no_identity).changes;
        assert_eq!(
            added,
            vec![Change {
                file: "f.json".into(),
                pointer: String::new(),
                kind: Add,
                old: None,
                new: Some(doc.clone()),
                old_line: None,
                new_line: None,
            }]
        );
        let deleted = diff_documents("f.json", Some(&node), None, &no_identity).changes;
        assert_eq!(
            summary(&deleted),
            vec![("", Delete, Some(doc.clone()), None)]
        );
        let nothing = DocumentDiff::default();
        assert_eq!(diff_documents("f.json", None, None, &no_identity), nothing);
        assert_eq!(
            diff_documents("f.json", Some(&node), Some(&node), &no_identity),
            nothing
        );
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

    /// The one ambiguous list of a diff that must have exactly one, and no change.
    fn only_ambiguity(found: DocumentDiff) -> AmbiguousList {
        assert!(found.changes.is_empty(), "{:?}", found.changes);
        assert_eq!(found.ambiguities.len(), 1, "{:?}", found.ambiguities);
        found.ambiguities.into_iter().next().unwrap()
    }

    fn at(index: usize) -> EntryAt {
        EntryAt { index, line: None }
    }

    fn duplicate(value: &str, indices: &[usize]) -> SideAmbiguity {
        SideAmbiguity {
            duplicates: vec![DuplicateIdentity {
                value: value.into(),
                entries: indices.iter().map(|&i| at(i)).collect(),
            }],
            unkeyed: Vec::new(),
        }
    }

    fn unkeyed(entries: &[(usize, Unkeyed)]) -> SideAmbiguity {
        SideAmbiguity {
            duplicates: Vec::new(),
            unkeyed: entries
                .iter()
                .map(|&(i, reason)| UnkeyedEntry {
                    entry: at(i),
                    reason,
                })
                .collect(),
        }
    }

    #[test]
    fn a_duplicate_at_the_source_makes_the_list_ambiguous_and_hides_nothing_by_position() {
        // The walk-around: a verbatim copy shifts positions so that the shrunk entry would be
        // compared with a different one. Nothing is compared at all instead.
        let old = json!({"topics": [topic("a", 30), topic("b", 90)]});
        let new = json!({"topics": [topic("b", 90), topic("b", 90), topic("a", 1)]});
        let list = only_ambiguity(diff_full(old, new, &topics_by_name));
        assert_eq!(
            list,
            AmbiguousList {
                pointer: "/topics".into(),
                field: "name".into(),
                base: None,
                source: Some(duplicate("b", &[0, 1])),
            }
        );
    }

    #[test]
    fn a_duplicate_at_the_base_makes_the_list_ambiguous_even_when_the_source_is_fixed() {
        let old = json!({"topics": [topic("a", 30), topic("a", 1), topic("b", 2)]});
        let new = json!({"topics": [topic("a", 1), topic("b", 2)]});
        let list = only_ambiguity(diff_full(old, new, &topics_by_name));
        assert_eq!(list.base, Some(duplicate("a", &[0, 1])));
        assert_eq!(list.source, None);
    }

    #[test]
    fn duplicates_on_both_sides_are_both_reported_sorted_by_value() {
        let old = json!({"topics": [topic("z", 1), topic("a", 1), topic("z", 2), topic("a", 3)]});
        let new = json!({"topics": [topic("m", 1), topic("m", 1), topic("m", 1)]});
        let list = only_ambiguity(diff_full(old, new, &topics_by_name));
        let base = list.base.expect("base side");
        let values: Vec<&str> = base.duplicates.iter().map(|d| d.value.as_str()).collect();
        assert_eq!(values, ["a", "z"]);
        assert_eq!(base.duplicates[1].entries, [at(0), at(2)]);
        assert_eq!(list.source, Some(duplicate("m", &[0, 1, 2])));
    }

    #[test]
    fn entries_without_a_usable_identity_make_the_list_ambiguous() {
        let old = json!({"topics": [topic("a", 9)]});
        let new = json!({"topics": [
            topic("a", 1),
            {"retention_days": 2},
            "b",
            {"name": 1.5},
            {"name": null},
            [{"name": "c"}],
        ]});
        let list = only_ambiguity(diff_full(old, new, &topics_by_name));
        assert_eq!(
            list.source,
            Some(unkeyed(&[
                (1, Unkeyed::MissingField),
                (2, Unkeyed::NotAMap),
                (3, Unkeyed::NotStringOrInteger),
                (4, Unkeyed::NotStringOrInteger),
                (5, Unkeyed::NotAMap),
            ]))
        );
        assert_eq!(list.base, None);
    }

    #[test]
    fn identities_equal_in_string_form_are_duplicates() {
        let old = json!({"topics": [topic("x", 1)]});
        let new = json!({"topics": [{"name": "1"}, topic("x", 1), {"name": 1}]});
        let list = only_ambiguity(diff_full(old, new, &topics_by_name));
        assert_eq!(list.source, Some(duplicate("1", &[0, 2])));
    }

    #[test]
    fn changes_outside_an_ambiguous_list_are_still_diffed() {
        let old = json!({"owner": "a", "topics": [topic("a", 30)], "zones": [topic("q", 1)]});
        let new = json!({
            "owner": "b",
            "topics": [topic("a", 1), topic("a", 1)],
            "zones": [topic("q", 2)]
        });
        let identity =
            |pointer: &str| matches!(pointer, "/topics" | "/zones").then(|| "name".to_owned());
        let found = diff_full(old, new, &identity);
        assert_eq!(
            summary(&found.changes),
            vec![
                ("/owner", Modify, Some(json!("a")), Some(json!("b"))),
                (
                    "/zones/q/retention_days",
                    Modify,
                    Some(json!(1)),
                    Some(json!(2))
                ),
            ]
        );
        let pointers: Vec<&str> = found
            .ambiguities
            .iter()
            .map(|a| a.pointer.as_str())
            .collect();
        assert_eq!(pointers, ["/topics"]);
    }

    fn nested_identity(pointer: &str) -> Option<String> {
        let tokens: Vec<&str> = pointer.split('/').collect();
        match tokens.as_slice() {
            ["", "topics"] => Some("name".into()),
            ["", "topics", _, "acls"] => Some("principal".into()),
            _ => None,
        }
    }

    #[test]
    fn a_nested_identity_list_is_ambiguous_on_its_own_and_its_siblings_are_judged() {
        let old = json!({"topics": [
            {"name": "a", "retention_days": 30, "acls": [{"principal": "u1", "op": "read"}]},
            {"name": "b", "acls": [{"principal": "u2", "op": "read"}]},
        ]});
        let new = json!({"topics": [
            {"name": "a", "retention_days": 7, "acls": [
                {"principal": "u1", "op": "read"},
                {"principal": "u1", "op": "all"},
            ]},
            {"name": "b", "acls": [{"principal": "u2", "op": "write"}]},
        ]});
        let found = diff_full(old, new, &nested_identity);
        assert_eq!(
            summary(&found.changes),
            vec![
                (
                    "/topics/a/retention_days",
                    Modify,
                    Some(json!(30)),
                    Some(json!(7))
                ),
                (
                    "/topics/b/acls/u2/op",
                    Modify,
                    Some(json!("read")),
                    Some(json!("write"))
                ),
            ]
        );
        assert_eq!(found.ambiguities.len(), 1);
        assert_eq!(found.ambiguities[0].pointer, "/topics/a/acls");
        assert_eq!(found.ambiguities[0].field, "principal");
        assert_eq!(found.ambiguities[0].source, Some(duplicate("u1", &[0, 1])));
    }

    #[test]
    fn an_ambiguous_outer_list_hides_its_nested_lists_too() {
        let old = json!({"topics": [{"name": "a", "acls": [{"principal": "u"}]}]});
        let new = json!({"topics": [
            {"name": "a", "acls": [{"principal": "u"}, {"principal": "u"}]},
            {"name": "a"},
        ]});
        let list = only_ambiguity(diff_full(old, new, &nested_identity));
        assert_eq!(list.pointer, "/topics");
    }

    #[test]
    fn an_added_value_is_checked_for_ambiguous_lists_and_still_reported() {
        let doc = json!({"topics": [
            {"name": "a", "acls": [{"principal": "u"}, {"op": "read"}]},
            {"name": "b", "acls": []},
        ]});
        let node = Node::from(&doc);
        let found = diff_documents("f.yaml", None, Some(&node), &nested_identity);
        assert_eq!(
            summary(&found.changes),
            vec![("", Add, None, Some(doc.clone()))]
        );
        assert_eq!(found.ambiguities.len(), 1);
        assert_eq!(found.ambiguities[0].pointer, "/topics/a/acls");
        assert_eq!(
            found.ambiguities[0].source,
            Some(unkeyed(&[(1, Unkeyed::MissingField)]))
        );

        // An added key, and a value replaced by one of another type, alike.
        let dup = json!([{"name": "x"}, {"name": "x"}]);
        for old in [json!({}), json!({"topics": "none yet"})] {
            let found = diff_full(old, json!({"topics": dup.clone()}), &topics_by_name);
            assert_eq!(found.changes.len(), 1);
            assert_eq!(found.ambiguities.len(), 1);
            assert_eq!(found.ambiguities[0].source, Some(duplicate("x", &[0, 1])));
        }
        // An added entry of a keyed list, with an ambiguous list inside.
        let found = diff_full(
            json!({"topics": [{"name": "a"}]}),
            json!({"topics": [{"name": "a"}, {"name": "b", "acls": [{"principal": "p"}, {"principal": "p"}]}]}),
            &nested_identity,
        );
        assert_eq!(found.changes.len(), 1);
        assert_eq!(found.ambiguities[0].pointer, "/topics/b/acls");
    }

    #[test]
    fn a_removed_value_is_checked_and_an_unchanged_list_is_not() {
        // What a deletion takes away is judged entry by entry, so which entry is which must
        // be known at the base too.
        let dup = json!({"topics": [{"name": "x"}, {"name": "x"}]});
        let node = Node::from(&dup);
        let found = diff_documents("f.yaml", Some(&node), None, &topics_by_name);
        assert_eq!(found.changes.len(), 1, "the deletion itself is reported");
        assert_eq!(found.ambiguities.len(), 1);
        assert_eq!(found.ambiguities[0].pointer, "/topics");
        assert_eq!(found.ambiguities[0].base, Some(duplicate("x", &[0, 1])));
        assert_eq!(found.ambiguities[0].source, None);
        // The same ambiguous list on both sides: nothing in it is compared, nothing to hide.
        let mut old = dup.clone();
        old["owner"] = json!("a");
        let mut new = dup;
        new["owner"] = json!("b");
        let found = diff_full(old, new, &topics_by_name);
        assert!(found.ambiguities.is_empty());
        assert_eq!(summary(&found.changes)[0].0, "/owner");
    }

    #[test]
    fn ambiguous_entries_carry_their_lines() {
        let old = Node::from(&json!({"topics": [topic("a", 1)]}));
        let line = |n| super::super::tree::Line::new(n);
        let entry = |name: &str, at: usize| {
            Node::Object(
                vec![("name".into(), Node::String(name.into(), line(at)))].into_boxed_slice(),
                line(at),
            )
        };
        let new = Node::Object(
            vec![(
                "topics".into(),
                Node::Array(
                    vec![entry("a", 2), entry("b", 3), entry("a", 5)].into_boxed_slice(),
                    line(2),
                ),
            )]
            .into_boxed_slice(),
            line(1),
        );
        let found = diff_documents("f.yaml", Some(&old), Some(&new), &topics_by_name);
        let source = found.ambiguities[0].source.clone().expect("source side");
        assert_eq!(
            source.duplicates[0].entries,
            [
                EntryAt {
                    index: 0,
                    line: Some(2)
                },
                EntryAt {
                    index: 2,
                    line: Some(5)
                }
            ]
        );
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

    fn every(_: &str, _: ChangeKind) -> bool {
        true
    }

    fn diff_with(
        old: Value,
        new: Value,
        wanted: &dyn Fn(&str, ChangeKind) -> bool,
        max_values: usize,
    ) -> DocumentDiff {
        let (old, new) = (Node::from(&old), Node::from(&new));
        let descendants = Descendants {
            wanted,
            max_values,
            filter_reported: false,
        };
        diff_documents_with(
            "f.yaml",
            Some(&old),
            Some(&new),
            &topics_by_name,
            &descendants,
        )
    }

    #[test]
    fn a_nulled_keyed_list_spells_out_each_entry_and_field_as_deleted() {
        let old = json!({"topics": [topic("b", 7), topic("a", 30)]});
        let found = diff_with(old.clone(), json!({"topics": null}), &every, usize::MAX);
        assert_eq!(
            summary(&found.changes),
            vec![(
                "/topics",
                Modify,
                Some(old["topics"].clone()),
                Some(json!(null))
            )]
        );
        assert_eq!(
            summary(&found.descendants),
            vec![
                ("/topics/a", Delete, Some(topic("a", 30)), None),
                ("/topics/a/name", Delete, Some(json!("a")), None),
                ("/topics/a/retention_days", Delete, Some(json!(30)), None),
                ("/topics/b", Delete, Some(topic("b", 7)), None),
                ("/topics/b/name", Delete, Some(json!("b")), None),
                ("/topics/b/retention_days", Delete, Some(json!(7)), None),
            ]
        );
        assert!(!found.descendants_cut);
        // The same documents without descendants wanted: the one change, as before.
        let plain = diff_full(old, json!({"topics": null}), &topics_by_name);
        assert_eq!(plain.changes, found.changes);
        assert!(plain.descendants.is_empty());
    }

    #[test]
    fn an_added_value_spells_out_its_entries_as_added_by_index_and_by_identity() {
        let found = diff_with(
            json!({}),
            json!({"topics": [topic("a", 1)], "zones": ["eu"]}),
            &every,
            usize::MAX,
        );
        let pointers: Vec<(&str, ChangeKind)> = found
            .descendants
            .iter()
            .map(|c| (c.pointer.as_str(), c.kind))
            .collect();
        assert_eq!(
            pointers,
            [
                ("/topics/a", Add),
                ("/topics/a/name", Add),
                ("/topics/a/retention_days", Add),
                ("/zones/0", Add),
            ]
        );
    }

    #[test]
    fn a_list_turned_into_a_map_of_the_same_entries_diffs_them_by_token() {
        let found = diff_with(
            json!({"topics": [topic("a", 30), topic("b", 1)]}),
            json!({"topics": {"a": topic("a", 7), "c": 1}}),
            &every,
            usize::MAX,
        );
        assert_eq!(found.changes.len(), 1, "the type change at /topics");
        assert_eq!(
            summary(&found.descendants),
            vec![
                (
                    "/topics/a/retention_days",
                    Modify,
                    Some(json!(30)),
                    Some(json!(7))
                ),
                ("/topics/b", Delete, Some(topic("b", 1)), None),
                ("/topics/b/name", Delete, Some(json!("b")), None),
                ("/topics/b/retention_days", Delete, Some(json!(1)), None),
                ("/topics/c", Add, None, Some(json!(1))),
            ]
        );
    }

    #[test]
    fn descendants_carry_the_line_of_their_own_value() {
        let parse = |text: &str| {
            super::super::parse_document(
                "f.yaml",
                super::super::Format::Yaml,
                text.as_bytes(),
                &super::super::Limits::default(),
            )
            .unwrap()
        };
        let old = parse(
            "topics:\n  - name: a\n    retention_days: 30\n  - name: b\n    retention_days: 7\n",
        );
        let new = parse("# gone\ntopics: null\n");
        let descendants = Descendants {
            wanted: &every,
            max_values: usize::MAX,
            filter_reported: false,
        };
        let found = diff_documents_with(
            "f.yaml",
            Some(&old),
            Some(&new),
            &topics_by_name,
            &descendants,
        );
        assert_eq!(
            (found.changes[0].old_line, found.changes[0].new_line),
            (Some(2), Some(2))
        );
        let lines: Vec<(&str, Option<usize>, Option<usize>)> = found
            .descendants
            .iter()
            .map(|c| (c.pointer.as_str(), c.old_line, c.new_line))
            .collect();
        assert_eq!(
            lines,
            [
                ("/topics/a", Some(2), None),
                ("/topics/a/name", Some(2), None),
                ("/topics/a/retention_days", Some(3), None),
                ("/topics/b", Some(4), None),
                ("/topics/b/name", Some(4), None),
                ("/topics/b/retention_days", Some(5), None),
            ]
        );
    }

    #[test]
    fn only_wanted_descendants_are_copied_and_past_the_budget_none_are() {
        let entries = |pointer: &str, kind| kind == Delete && pointer.matches('/').count() == 2;
        let old = json!({"topics": [topic("a", 30), topic("b", 7)]});
        let found = diff_with(old.clone(), json!({"topics": null}), &entries, 6);
        let pointers: Vec<&str> = found
            .descendants
            .iter()
            .map(|c| c.pointer.as_str())
            .collect();
        assert_eq!(
            pointers,
            ["/topics/a", "/topics/b"],
            "3 values each, 6 in all"
        );
        // One value fewer: the second entry does not fit, and a partial set is no set.
        let cut = diff_with(old, json!({"topics": null}), &entries, 5);
        assert!(cut.descendants_cut);
        assert!(cut.descendants.is_empty());
        assert_eq!(
            cut.changes, found.changes,
            "the change itself is still reported"
        );
    }

    #[test]
    fn an_ambiguous_list_inside_a_replaced_value_blocks_and_hides_its_entries() {
        let found = diff_with(
            json!({"topics": [topic("a", 1), topic("a", 2)]}),
            json!({"topics": null}),
            &every,
            usize::MAX,
        );
        assert_eq!(found.changes.len(), 1);
        assert!(found.descendants.is_empty(), "{:?}", found.descendants);
        assert_eq!(found.ambiguities.len(), 1);
        assert_eq!(found.ambiguities[0].pointer, "/topics");
        assert_eq!(found.ambiguities[0].base, Some(duplicate("a", &[0, 1])));
        assert_eq!(found.ambiguities[0].source, None);
    }
}
