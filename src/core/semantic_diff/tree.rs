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
//! The tree is immutable once built. Changes carry `serde_json::Value`s ([`Node::to_value`]),
//! because that is what policies and receipts speak.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Number, Value};

/// An interned map key.
pub type Key = Arc<str>;

/// A JSON-compatible value: what every governed format is read into.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A finite number (integers keep their exact 64-bit value).
    Number(Number),
    /// A string (shared with equal short strings of the same document).
    String(Arc<str>),
    /// A list, in order.
    Array(Box<[Node]>),
    /// A map: entries sorted by key (byte order), keys unique.
    Object(Box<[(Key, Node)]>),
}

impl Node {
    /// The value of `key` in a map, or `None` (also for anything that is not a map).
    pub fn get(&self, key: &str) -> Option<&Node> {
        let Node::Object(entries) = self else {
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
            Node::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.to_string()),
            Node::Array(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Object(entries) => Value::Object(
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
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Number(n) => Node::Number(n.clone()),
        Value::String(s) => Node::String(keys.text(s)),
        Value::Array(items) => Node::Array(items.iter().map(|v| from_value(v, keys)).collect()),
        Value::Object(map) => {
            let mut object = ObjectBuilder::default();
            for (k, v) in map {
                let key = keys.intern(k);
                // Always new: a `Map` cannot hold a key twice.
                if object.claim(&key) {
                    object.push(key, from_value(v, keys));
                }
            }
            object.finish()
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

/// A map being filled, in document order, with a duplicate check: [`claim`](Self::claim)
/// each key, then [`push`](Self::push) its entry.
#[derive(Debug, Default)]
pub(super) struct ObjectBuilder {
    entries: Vec<(Key, Node)>,
    /// Built once a map outgrows a linear scan, so a huge map costs O(n) checks, not O(n²).
    index: Option<HashSet<Key>>,
}

/// Up to this many entries, a duplicate is looked for by scanning.
const SCAN_LIMIT: usize = 16;

impl ObjectBuilder {
    /// Reserves `key` for the entry about to be [`push`](Self::push)ed: `false` when the map
    /// already has it. Separate from `push` because a duplicate is refused at the key, before
    /// its value is read; one check per key, not two.
    pub(super) fn claim(&mut self, key: &Key) -> bool {
        match &mut self.index {
            Some(index) => index.insert(Key::clone(key)),
            None => !self.entries.iter().any(|(k, _)| k == key),
        }
    }

    /// Appends the entry of the key just claimed.
    pub(super) fn push(&mut self, key: Key, value: Node) {
        self.entries.push((key, value));
        if self.index.is_none() && self.entries.len() > SCAN_LIMIT {
            self.index = Some(self.entries.iter().map(|(k, _)| Key::clone(k)).collect());
        }
    }

    /// The finished map, sorted by key.
    pub(super) fn finish(mut self) -> Node {
        self.entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Node::Object(self.entries.into_boxed_slice())
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
        let Node::Object(entries) = &node else {
            panic!("a map");
        };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["", "a", "z"]);
        assert_eq!(node.get("a"), Some(&Node::from(&json!({"k": {}}))));
        assert_eq!(node.get("b"), None);
        assert_eq!(Node::Null.get("a"), None);
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
            assert!(object.claim(&key), "{key}");
            object.push(Key::clone(&key), Node::Null);
            assert!(!object.claim(&key), "{key} again");
            assert!(!object.claim(&keys.intern("k0")));
        }
        let node = object.finish();
        let Node::Object(entries) = node else {
            panic!("a map");
        };
        assert_eq!(entries.len(), 40);
        assert!(entries.windows(2).all(|w| w[0].0 < w[1].0), "sorted");
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
