//! The value builder shared by all three formats.
//!
//! Each parser drives this `serde` seed through `deserialize_any`, so JSON, YAML and TOML end up
//! in the same [`Node`] model under the same rules: duplicate keys, non-scalar keys,
//! non-finite numbers and application tags are refused, and depth and node-count limits are
//! enforced while the tree grows. Errors are raised *inside* the visitor that sees the
//! offending token, because that is where `serde_json` and `serde_yaml` attach the line number.
//!
//! Lines of values ([`Line`]): neither parser tells a visitor where it is, so each format gets
//! them its own way ([`Lines`]). JSON is scanned once beforehand for where each value starts,
//! in document order, and the builder hands those out in the same order as it counts nodes.
//! `toml` keeps a byte span for every value and gives it to a seed that asks for a
//! `serde_spanned` struct; offsets become lines through an index of the newlines.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

use super::keys::Key;
use super::lines::{NewlineIndex, json_value_lines};
use super::tree::{Interner, KeyClash, Line, Node, ObjectBuilder};

/// The key under which `toml` hands a datetime to `deserialize_any` (a one-entry map). It is
/// private to `toml_datetime`, hence repeated here; a test pins the behaviour.
const TOML_DATETIME_FIELD: &str = "$__toml_private_datetime";

/// The struct name and fields by which a seed asks `toml` for a value's span (`toml` answers
/// with a map of these three fields). Private to `serde_spanned`, hence repeated here; a test
/// pins that every TOML value gets its line.
const SPANNED_NAME: &str = "$__serde_spanned_private_Spanned";
const SPANNED_START: &str = "$__serde_spanned_private_start";
const SPANNED_END: &str = "$__serde_spanned_private_end";
const SPANNED_VALUE: &str = "$__serde_spanned_private_value";
const SPANNED_FIELDS: &[&str] = &[SPANNED_START, SPANNED_END, SPANNED_VALUE];

/// Error text for a list used as a map key (shared with the YAML pre-scan).
pub(super) const LIST_KEY: &str = "lists as map keys are not supported";
/// Error text for a map used as a map key (shared with the YAML pre-scan).
pub(super) const MAP_KEY: &str = "maps as map keys are not supported";

/// Error text for a document nested deeper than `max_depth`.
pub(super) fn too_deep(max_depth: usize) -> String {
    format!("nesting deeper than {max_depth} levels (limit)")
}

/// Error text for a document with more than `max_nodes` values.
pub(super) fn too_many_nodes(max_nodes: usize) -> String {
    format!("document has more than {max_nodes} values (limit)")
}

/// The error for integer `n` when a double cannot hold it exactly, else `None`.
///
/// Many readers hold every number as an IEEE double: JavaScript, Go's `encoding/json` into an
/// `interface{}`, and so `ghodss/yaml` too. They read 9007199254740993 as 9007199254740992,
/// while Python and assent keep the integer, so a policy would judge a value those programs
/// never see. Integers a double holds exactly (every one up to 2^53, and round ones beyond)
/// read alike everywhere.
pub(super) fn inexact_in_a_double(n: i128) -> Option<String> {
    let double = n as f64;
    if double as i128 == n && double.abs() < 1.7e38 {
        return None;
    }
    Some(format!(
        "integer {n} is beyond what a double holds exactly: readers that keep numbers as \
         doubles (JavaScript, Go's encoding/json and ghodss/yaml into an interface{{}}) read \
         {double:e}; write it as a string"
    ))
}

/// Where the values of one document start.
enum Lines {
    /// JSON: the line of each value, in the order [`Budget::count_node`] counts them.
    InOrder(Vec<Line>),
    /// TOML: values come with byte spans; this turns their offsets into lines.
    Spans(NewlineIndex),
}

/// The limits, running node count and value lines of one parse.
pub(super) struct Budget {
    max_depth: usize,
    max_nodes: usize,
    nodes: Cell<usize>,
    /// Shared allocations for the keys and short strings of this document.
    texts: RefCell<Interner>,
    lines: Lines,
    /// Whether a one-entry map keyed [`TOML_DATETIME_FIELD`] may be a datetime. Only for TOML
    /// (and there only when its value comes without a span: [`DatetimeOrSpanned`]); in JSON
    /// or YAML such a key is ordinary data and must stay a map.
    toml_datetimes: bool,
    /// TOML only: a key refused by [`KeySeed`] (with the line of the earlier key it clashes
    /// with), kept until its value is read, because `toml` places a key's error at its table,
    /// and the value's span has the key's line. `toml` hands keys over sorted, not in
    /// document order, so the error takes the later of the two lines.
    refused_key: RefCell<Option<(String, Line)>>,
    /// TOML only: the line of the key refused, for the error (`toml` would give its table's).
    pub(super) refused_key_line: Cell<Line>,
}

impl Budget {
    /// The budget for parsing JSON `text`.
    pub(super) fn json(max_depth: usize, max_nodes: usize, text: &str) -> Self {
        let lines = json_value_lines(text, max_depth, max_nodes);
        Self::new(max_depth, max_nodes, Lines::InOrder(lines), false)
    }

    /// The budget for parsing TOML `text`.
    pub(super) fn toml(max_depth: usize, max_nodes: usize, text: &str) -> Self {
        let lines = Lines::Spans(NewlineIndex::new(text.as_bytes()));
        Self::new(max_depth, max_nodes, lines, true)
    }

    /// A budget giving no lines, for feeding the builder from another deserializer
    /// (`serde_yaml`, kept as the YAML tests' reference).
    #[cfg(test)]
    pub(super) fn without_lines(max_depth: usize, max_nodes: usize) -> Self {
        Self::new(max_depth, max_nodes, Lines::InOrder(Vec::new()), false)
    }

    fn new(max_depth: usize, max_nodes: usize, lines: Lines, toml_datetimes: bool) -> Self {
        Budget {
            max_depth,
            max_nodes,
            nodes: Cell::new(0),
            texts: RefCell::new(Interner::default()),
            lines,
            toml_datetimes,
            refused_key: RefCell::new(None),
            refused_key_line: Cell::new(Line::UNKNOWN),
        }
    }

    /// Counts one more value, and gives the line it starts on when the format's lines come
    /// in counting order (otherwise unknown here; a span sets it later).
    fn count_node<E: de::Error>(&self) -> Result<Line, E> {
        let n = self.nodes.get() + 1;
        if n > self.max_nodes {
            return Err(E::custom(too_many_nodes(self.max_nodes)));
        }
        self.nodes.set(n);
        Ok(match &self.lines {
            Lines::InOrder(lines) => lines.get(n - 1).copied().unwrap_or_default(),
            Lines::Spans(_) => Line::UNKNOWN,
        })
    }
}

/// Builds one value at nesting `depth` (the number of containers enclosing it).
#[derive(Clone, Copy)]
pub(super) struct ValueSeed<'b> {
    pub(super) budget: &'b Budget,
    pub(super) depth: usize,
}

impl ValueSeed<'_> {
    /// The seed for a child of the container this seed is building.
    fn child(&self) -> Self {
        ValueSeed {
            budget: self.budget,
            depth: self.depth + 1,
        }
    }

    /// Fails, at the line of `value`, if the key just read for it was refused (TOML).
    fn check_refused_key<E: de::Error>(&self, value: &Node) -> Result<(), E> {
        match self.budget.refused_key.borrow_mut().take() {
            Some((message, earlier)) => {
                let line = value.line().map_or(Line::UNKNOWN, Line::new);
                self.budget.refused_key_line.set(line.max(earlier));
                Err(E::custom(message))
            }
            None => Ok(()),
        }
    }

    fn enter_container<E: de::Error>(&self) -> Result<Line, E> {
        let line = self.budget.count_node()?;
        if self.depth + 1 > self.budget.max_depth {
            return Err(E::custom(too_deep(self.budget.max_depth)));
        }
        Ok(line)
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Node;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        match self.budget.lines {
            Lines::Spans(_) => {
                deserializer.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, Spanned(self))
            }
            Lines::InOrder(_) => deserializer.deserialize_any(self),
        }
    }
}

/// Reads `toml`'s span wrapper around one value: its start offset (which becomes the value's
/// line), its end, then the value itself, built by the wrapped seed.
struct Spanned<'b>(ValueSeed<'b>);

/// The wrapped value, read as any value (not asking for a span again).
struct Unspanned<'b>(ValueSeed<'b>);

impl<'de> DeserializeSeed<'de> for Unspanned<'_> {
    type Value = Node;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(self.0)
    }
}

impl<'de> Visitor<'de> for Spanned<'_> {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value with its span")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let Lines::Spans(newlines) = &self.0.budget.lines else {
            unreachable!("only a span-giving format asks for spans");
        };
        let mut line = Line::UNKNOWN;
        while let Some(field) = map.next_key::<SpanField>()? {
            match field {
                SpanField::Start => line = newlines.line_of(map.next_value::<usize>()?),
                SpanField::End => {
                    map.next_value::<de::IgnoredAny>()?;
                }
                SpanField::Value => {
                    let value = map.next_value_seed(Unspanned(self.0))?;
                    // Nothing the wrapper could add after its value matters.
                    while map.next_key::<de::IgnoredAny>()?.is_some() {
                        map.next_value::<de::IgnoredAny>()?;
                    }
                    return Ok(value.at_line(line));
                }
            }
        }
        Err(de::Error::custom("a TOML value span without its value"))
    }
}

/// What `toml` gives under its datetime marker key ([`TOML_DATETIME_FIELD`]).
enum DatetimeOrValue {
    /// The RFC 3339 text of a datetime value.
    Datetime(String),
    /// The value of a key written so in the document.
    Value(Node),
}

/// Reads the value under [`TOML_DATETIME_FIELD`], telling a datetime from a table that holds
/// that key: `toml` hands a datetime's text over as a bare string, which knows nothing of
/// spans, while a value from the document always answers the span request with its span.
/// The key itself cannot tell them apart: any document may write it.
struct DatetimeOrSpanned<'b>(ValueSeed<'b>);

impl<'de> DeserializeSeed<'de> for DatetimeOrSpanned<'_> {
    type Value = DatetimeOrValue;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<DatetimeOrValue, D::Error> {
        deserializer.deserialize_struct(SPANNED_NAME, SPANNED_FIELDS, self)
    }
}

impl<'de> Visitor<'de> for DatetimeOrSpanned<'_> {
    type Value = DatetimeOrValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a TOML datetime or a value with its span")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<DatetimeOrValue, E> {
        Ok(DatetimeOrValue::Datetime(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<DatetimeOrValue, E> {
        Ok(DatetimeOrValue::Datetime(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<DatetimeOrValue, A::Error> {
        Spanned(self.0).visit_map(map).map(DatetimeOrValue::Value)
    }
}

/// A field of `toml`'s span wrapper, read without allocating (three per TOML value).
enum SpanField {
    Start,
    End,
    Value,
}

impl<'de> de::Deserialize<'de> for SpanField {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldName;
        impl Visitor<'_> for FieldName {
            type Value = SpanField;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field of a TOML value span")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<SpanField, E> {
                match v {
                    SPANNED_START => Ok(SpanField::Start),
                    SPANNED_END => Ok(SpanField::End),
                    SPANNED_VALUE => Ok(SpanField::Value),
                    other => Err(E::unknown_field(other, SPANNED_FIELDS)),
                }
            }
        }
        deserializer.deserialize_identifier(FieldName)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-compatible value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v, self.budget.count_node()?))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Number(v.into(), self.budget.count_node()?))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Number(v.into(), self.budget.count_node()?))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Node, E> {
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(small), _) => self.visit_i64(small),
            (_, Ok(small)) => self.visit_u64(small),
            _ => Err(E::custom(format_args!(
                "integer {v} does not fit in 64 bits"
            ))),
        }
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        match u64::try_from(v) {
            Ok(small) => self.visit_u64(small),
            Err(_) => Err(E::custom(format_args!(
                "integer {v} does not fit in 64 bits"
            ))),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        let line = self.budget.count_node()?;
        Number::from_f64(v)
            .map(|n| Node::Number(n, line))
            .ok_or_else(|| {
                E::custom(format_args!(
                    "number {v} (NaN or infinite) cannot be represented in JSON"
                ))
            })
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        self.visit_string(v.to_owned())
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node, E> {
        let line = self.budget.count_node()?;
        Ok(Node::String(self.budget.texts.borrow_mut().text(&v), line))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null(self.budget.count_node()?))
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        self.visit_unit()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_newtype_struct<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Node, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let line = self.enter_container()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.child())? {
            items.push(item);
        }
        Ok(Node::Array(items.into_boxed_slice(), line))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut object = ObjectBuilder::default();
        let Some(first) = map.next_key_seed(KeySeed::new(&mut object, self.budget))? else {
            let line = self.enter_container()?;
            return Ok(object.finish(line));
        };
        let (line, value) = if self.budget.toml_datetimes && *first == *TOML_DATETIME_FIELD {
            match map.next_value_seed(DatetimeOrSpanned(self.child()))? {
                // A TOML datetime: its value is the RFC 3339 text, which is what we keep.
                DatetimeOrValue::Datetime(text) => return self.visit_string(text),
                // A table with the marker key written in it: data, as to every other TOML
                // reader, and the rest of the table with it. (TOML lines come from spans, so
                // counting the table after its first value changes no line.)
                DatetimeOrValue::Value(value) => (self.enter_container()?, value),
            }
        } else {
            // Counted after its first key but before any value: still the map's place in the
            // document order of values, which is what JSON's line table is in.
            let line = self.enter_container()?;
            (line, map.next_value_seed(self.child())?)
        };
        self.check_refused_key::<A::Error>(&value)?;
        object.push(first, value);
        while let Some(key) = map.next_key_seed(KeySeed::new(&mut object, self.budget))? {
            let value = map.next_value_seed(self.child())?;
            self.check_refused_key::<A::Error>(&value)?;
            object.push(key, value);
        }
        Ok(object.finish(line))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Node, A::Error> {
        // No front end calls this any more (YAML has its own builder); `serde_yaml`, kept as a
        // reference in the YAML tests, calls it for a node with an application tag such as
        // `!secret`, the "variant" being the tag name.
        let (tag, _rest): (String, A::Variant) = data.variant()?;
        Err(de::Error::custom(format_args!(
            "YAML tags are not supported in governed files (found !{tag})"
        )))
    }
}

/// Reads one map key as a string and refuses it if the map being built already has it, or
/// a key other readers take for it (`keys.rs`).
///
/// The check lives here rather than after `next_key_seed` returns so that the parser reports
/// the line of the duplicate key itself.
struct KeySeed<'m> {
    existing: &'m mut ObjectBuilder,
    keys: &'m RefCell<Interner>,
    /// Whether a refused key is reported after its value (TOML: see `Budget::refused_key`).
    defer_refusal: bool,
    refused_key: &'m RefCell<Option<(String, Line)>>,
}

impl<'m> KeySeed<'m> {
    fn new(existing: &'m mut ObjectBuilder, budget: &'m Budget) -> Self {
        KeySeed {
            existing,
            keys: &budget.texts,
            defer_refusal: budget.toml_datetimes,
            refused_key: &budget.refused_key,
        }
    }

    fn accept<E: de::Error>(self, text: &str) -> Result<Key, E> {
        let key = self.keys.borrow_mut().intern(text);
        match self.existing.claim(&key) {
            Ok(()) => Ok(key),
            // A TOML duplicate never gets here: `toml` refuses it first, at its line.
            Err(clash) if self.defer_refusal => {
                let earlier = match clash {
                    KeyClash::FoldsLike(_, Some(line)) => Line::new(line),
                    _ => Line::UNKNOWN,
                };
                *self.refused_key.borrow_mut() = Some((clash.message(text), earlier));
                Ok(key)
            }
            Err(clash) => Err(E::custom(clash.message(text))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar map key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        self.accept(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key, E> {
        self.accept(&v)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key, E> {
        self.accept(&v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
        self.accept(&v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
        self.accept(&v.to_string())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Key, E> {
        self.accept(&v.to_string())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Key, E> {
        self.accept(&v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Key, E> {
        // Same text the value would print as in JSON, so `1.5: x` is key "1.5".
        match Number::from_f64(v) {
            Some(n) => self.accept(&n.to_string()),
            None => Err(E::custom(format_args!(
                "map key {v} (NaN or infinite) is not supported"
            ))),
        }
    }

    fn visit_unit<E: de::Error>(self) -> Result<Key, E> {
        self.accept("null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Key, E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<Key, A::Error> {
        Err(de::Error::custom(LIST_KEY))
    }

    fn visit_map<A: MapAccess<'de>>(self, _map: A) -> Result<Key, A::Error> {
        Err(de::Error::custom(MAP_KEY))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Key, A::Error> {
        let (tag, _rest): (String, A::Variant) = data.variant()?;
        Err(de::Error::custom(format_args!(
            "YAML tags are not supported in governed files (found !{tag})"
        )))
    }
}
