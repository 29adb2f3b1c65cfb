//! The value tree a governed file is parsed into and diffed on.
//!
//! Why not `serde_json::Value`: a 10 MB registry holds about half a million values, and
//! `Value` spends a `String` allocation on every map key and a full B-tree node (over 600
//! bytes) on every map, however small. Both sides of a file are held at once for the diff, so
//! that overhead decided assent's peak memory. A [`Node`] map is one exact-sized slice of
//! entries sorted by key, and keys and short strings are interned per document (`Arc<str>`,
//! one allocation per distinct text: a registry repeats its field names, owners and enum-like
//! values thousands of times), which makes a tree of such a file a third of the size. Sorted entries
//! also make the diff a merge of two sorted slices and lookups a binary search.
//!
//! Every node also remembers the [`Line`] it starts on, so a finding about a list entry can
//! name `file:line`. The line lives in padding the enum has anyway (a test pins the size at
//! 24 bytes), so it costs no memory, and equality ignores it: the same value written on
//! another line is the same value, and the diff's skip of equal subtrees keeps working when
//! an edit above shifts every line below.
//!
//! The tree is immutable once built. Changes carry `serde_json::Value`s ([`Node::to_value`]),
//! because that is what policies and receipts speak.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Number, Value};

use super::keys::{self, Key};

/// The 1-based line a value starts on in its file, or unknown.
///
/// Unknown for a tree built from a `serde_json::Value` ([`Node::from`]), which has no text.
/// The parsers give every value its line (see [`parse_document`](super::parse_document)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Line(u32);

impl Line {
    /// No known line.
    pub const UNKNOWN: Line = Line(0);

    /// Line `line` (1-based); `0` is unknown. Lines beyond `u32` (impossible within the size
    /// limit) saturate.
    pub fn new(line: usize) -> Line {
        Line(u32::try_from(line).unwrap_or(u32::MAX))
    }

    /// The 1-based line, or `None` when unknown.
    pub fn get(self) -> Option<usize> {
        (self.0 != 0).then_some(self.0 as usize)
    }
}

/// A JSON-compatible value: what every governed format is read into, each with the [`Line`]
/// it starts on (ignored by `==`).
#[derive(Debug, Clone)]
pub enum Node {
    /// `null`.
    Null(Line),
    /// `true` or `false`.
    Bool(bool, Line),
    /// A finite number (integers keep their exact 64-bit value).
    Number(Number, Line),
    /// A string (shared with equal short strings of the same document).
    String(Arc<str>, Line),
    /// A list, in order.
    Array(Box<[Node]>, Line),
    /// A map: entries sorted by key (byte order), keys unique.
    Object(Box<[(Key, Node)]>, Line),
}

/// Value equality: lines are where a value was written, not part of it.
impl PartialEq for Node {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Node::Null(_), Node::Null(_)) => true,
            (Node::Bool(a, _), Node::Bool(b, _)) => a == b,
            (Node::Number(a, _), Node::Number(b, _)) => a == b,
            (Node::String(a, _), Node::String(b, _)) => a == b,
            (Node::Array(a, _), Node::Array(b, _)) => a == b,
            (Node::Object(a, _), Node::Object(b, _)) => a == b,
            _ => false,
        }
    }
}

impl Node {
    /// The value of `key` in a map, or `None` (also for anything that is not a map).
    pub fn get(&self, key: &str) -> Option<&Node> {
        let Node::Object(entries, _) = self else {
            return None;
        };
        entries
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .map(|i| &entries[i].1)
    }

    /// The items of a list, or `None` for anything else.
    pub fn as_array(&self) -> Option<&[Node]> {
        match self {
            Node::Array(items, _) => Some(items),
            _ => None,
        }
    }

    /// The line this value starts on (for a map or list in block style, the line of its
    /// first entry), or `None` when unknown.
    pub fn line(&self) -> Option<usize> {
        self.source_line().get()
    }

    fn source_line(&self) -> Line {
        match self {
            Node::Null(line)
            | Node::Bool(_, line)
            | Node::Number(_, line)
            | Node::String(_, line)
            | Node::Array(_, line)
            | Node::Object(_, line) => *line,
        }
    }

    /// The same value starting on `line` instead (for parsers that learn the position of a
    /// value only after building it).
    pub(super) fn at_line(mut self, at: Line) -> Node {
        match &mut self {
            Node::Null(line)
            | Node::Bool(_, line)
            | Node::Number(_, line)
            | Node::String(_, line)
            | Node::Array(_, line)
            | Node::Object(_, line) => *line = at,
        }
        self
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Node::Null(_) => Value::Null,
            Node::Bool(b, _) => Value::Bool(*b),
            Node::Number(n, _) => Value::Number(n.clone()),
            Node::String(s, _) => Value::String(s.to_string()),
            Node::Array(items, _) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(entries, _) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_value()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

impl From<&Value> for Node {
    fn from(value: &Value) -> Self {
        let mut keys = Interner::default();
        from_value(value, &mut keys)
    }
}

fn from_value(value: &Value, keys: &mut Interner) -> Node {
    match value {
        Value::Null => Node::Null(Line::UNKNOWN),
        Value::Bool(b) => Node::Bool(*b, Line::UNKNOWN),
        Value::Number(n) => Node::Number(n.clone(), Line::UNKNOWN),
        Value::String(s) => Node::String(keys.text(s), Line::UNKNOWN),
        Value::Array(items) => Node::Array(
            items.iter().map(|v| from_value(v, keys)).collect(),
            Line::UNKNOWN,
        ),
        Value::Object(map) => {
            let mut object = ObjectBuilder::default();
            for (k, v) in map {
                // A tree of a `Value` is data assent already holds, not a file to judge: its
                // keys are unique, and how other readers would take them is not asked.
                let key = keys.intern(k);
                object.push_unchecked(key, from_value(v, keys));
            }
            object.finish(Line::UNKNOWN)
        }
    }
}

/// Strings up to this many bytes are interned; longer ones (descriptions, unique names) rarely
/// repeat, and hashing them would cost time for nothing.
const SHORT_TEXT: usize = 32;

/// Hands out one shared allocation per distinct key, and per distinct short string.
///
/// The set keeps the standard SipHash on purpose: the texts come from the MR's author, and a
/// hash that can be flooded with collisions would make interning quadratic.
#[derive(Debug, Default)]
pub(super) struct Interner {
    keys: HashSet<Key>,
}

impl Interner {
    /// A string value: shared when short, its own allocation otherwise.
    pub(super) fn text(&mut self, text: &str) -> Arc<str> {
        if text.len() <= SHORT_TEXT {
            self.intern(text)
        } else {
            text.into()
        }
    }

    /// A map key (always shared: keys repeat in every record).
    pub(super) fn intern(&mut self, text: &str) -> Key {
        if let Some(key) = self.keys.get(text) {
            return Key::clone(key);
        }
        let key: Key = text.into();
        self.keys.insert(Key::clone(&key));
        key
    }
}

/// A map being built: its entries in document order, and what makes a new key unsafe.
#[derive(Debug, Default)]
pub(super) struct ObjectBuilder {
    entries: Vec<(Key, Node)>,
    /// The case fold of each entry's key (`keys::folded`), in the same order: a key that
    /// folds like an earlier one is refused, so the folds of a map are unique.
    folds: Vec<Key>,
    /// Fold to entry position, built once a map outgrows a linear scan, so a huge map costs
    /// O(n) checks, not O(n²).
    index: Option<HashMap<Key, usize>>,
}

/// Why a key cannot join a map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum KeyClash {
    /// The map already has this exact key.
    Duplicate,
    /// The map has a key differing from this one only in letter case (the earlier key, and
    /// the line of its value when known). See `keys.rs`.
    FoldsLike(Key, Option<usize>),
    /// The key holds an invisible character.
    Invisible(char),
}

impl KeyClash {
    /// The error message for `key`.
    pub(super) fn message(&self, key: &str) -> String {
        match self {
            KeyClash::Duplicate => format!("duplicate key {key:?}"),
            KeyClash::FoldsLike(earlier, line) => keys::folds_like(key, earlier, *line),
            KeyClash::Invisible(c) => keys::invisible_in_key(key, *c),
        }
    }
}

/// Up to this many entries, a clash is looked for by scanning.
const SCAN_LIMIT: usize = 16;

impl ObjectBuilder {
    /// Reserves `key` for the entry about to be [`push`](Self::push)ed, or says why the map
    /// cannot take it. Separate from `push` because a bad key is refused at the key, before
    /// its value is read; one check per key, not two.
    pub(super) fn claim(&mut self, key: &Key) -> Result<(), KeyClash> {
        if let Some(c) = keys::invisible_char(key) {
            return Err(KeyClash::Invisible(c));
        }
        let fold = keys::folded(key);
        let earlier = match &self.index {
            Some(index) => index.get(&fold).copied(),
            None => self.folds.iter().position(|f| *f == fold),
        };
        if let Some(at) = earlier {
            let (earlier, value) = &self.entries[at];
            return Err(match earlier == key {
                true => KeyClash::Duplicate,
                false => KeyClash::FoldsLike(Key::clone(earlier), value.line()),
            });
        }
        self.folds.push(fold);
        Ok(())
    }

    /// Appends the entry of the key just claimed.
    pub(super) fn push(&mut self, key: Key, value: Node) {
        self.entries.push((key, value));
        let at = self.entries.len() - 1;
        match &mut self.index {
            Some(index) => {
                index.insert(Key::clone(&self.folds[at]), at);
            }
            None if self.entries.len() > SCAN_LIMIT => {
                let index = self.folds.iter().cloned().enumerate();
                self.index = Some(index.map(|(at, fold)| (fold, at)).collect());
            }
            None => {}
        }
    }

    /// Appends an entry without the checks of [`claim`](Self::claim), for a map known to be
    /// valid already (a `serde_json::Value`'s, whose keys are unique).
    fn push_unchecked(&mut self, key: Key, value: Node) {
        self.folds.push(keys::folded(&key));
        self.entries.push((key, value));
    }

    /// The finished map, sorted by key, starting on `line`.
    pub(super) fn finish(mut self, line: Line) -> Node {
        self.entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Node::Object(self.entries.into_boxed_slice(), line)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn round_trips_through_value_with_sorted_keys() {
        let value = json!({"z": [1, -2, 2.5, "s", null, true], "a": {"k": {}}, "": []});
        let node = Node::from(&value);
        assert_eq!(node.to_value(), value);
        let Node::Object(entries, _) = &node else {
            panic!("a map");
        };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["", "a", "z"]);
        assert_eq!(node.get("a"), Some(&Node::from(&json!({"k": {}}))));
        assert_eq!(node.get("b"), None);
        assert_eq!(Node::Null(Line::UNKNOWN).get("a"), None);
        assert_eq!(
            node.get("z").and_then(Node::as_array).map(<[_]>::len),
            Some(6)
        );
        assert_eq!(node.as_array(), None);
    }

    #[test]
    fn builder_refuses_duplicates_before_and_after_indexing() {
        let mut keys = Interner::default();
        let mut object = ObjectBuilder::default();
        for i in 0..40 {
            let key = keys.intern(&format!("k{i}"));
            assert_eq!(object.claim(&key), Ok(()), "{key}");
            object.push(Key::clone(&key), Node::Null(Line::new(i + 1)));
            assert_eq!(object.claim(&key), Err(KeyClash::Duplicate), "{key} again");
            assert_eq!(object.claim(&keys.intern("k0")), Err(KeyClash::Duplicate));
            let shouting = keys.intern(&format!("K{i}"));
            assert_eq!(
                object.claim(&shouting),
                Err(KeyClash::FoldsLike(key, Some(i + 1))),
                "{shouting}"
            );
            assert_eq!(
                object.claim(&keys.intern("k\u{200b}0")),
                Err(KeyClash::Invisible('\u{200b}'))
            );
        }
        let node = object.finish(Line::UNKNOWN);
        let Node::Object(entries, _) = node else {
            panic!("a map");
        };
        assert_eq!(entries.len(), 40);
        assert!(entries.windows(2).all(|w| w[0].0 < w[1].0), "sorted");
    }

    #[test]
    fn lines_cost_no_memory_and_never_change_equality() {
        assert_eq!(std::mem::size_of::<Node>(), 24);
        let at = |line: usize| Node::Number(1.into(), Line::new(line));
        assert_eq!(at(3), at(9));
        assert_eq!(at(3).line(), Some(3));
        assert_eq!(at(0).line(), None);
        let list = |line: usize| Node::Array(vec![at(line)].into_boxed_slice(), Line::new(line));
        assert_eq!(list(1), list(2));
        assert_ne!(list(1), Node::Array(Box::new([]), Line::new(1)));
        assert_eq!(Node::from(&json!({"a": [1]})).line(), None);
        assert_eq!(at(3).at_line(Line::new(7)).line(), Some(7));
        assert_ne!(Node::Null(Line::UNKNOWN), Node::Bool(false, Line::UNKNOWN));
    }

    #[test]
    fn interned_keys_and_short_strings_share_one_allocation() {
        let mut keys = Interner::default();
        let a = keys.intern("name");
        let b = keys.intern("name");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &keys.intern("other")));
        assert!(
            Arc::ptr_eq(&keys.text("name"), &a),
            "a short string shares with a key"
        );
        let long = "x".repeat(SHORT_TEXT + 1);
        assert!(!Arc::ptr_eq(&keys.text(&long), &keys.text(&long)));
        assert_eq!(*keys.text(&long), *long);
    }
}
