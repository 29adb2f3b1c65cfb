//! The YAML front end: a value tree built straight from libyaml's event stream.
//!
//! Why not `serde_yaml`: it buffers every event of a document, with owned copies of each
//! scalar, tag and anchor, before deserializing anything. On a 10 MB registry that buffer cost
//! more time and memory than the tree itself. Here each event is turned into tree as it
//! arrives: one pass, no buffer, and every YAML-only refusal is made at the event that causes
//! it, so a hostile file costs little:
//!
//! * an alias is refused at its first occurrence (an alias bomb costs one event);
//! * a second document is refused at its start;
//! * depth and node-count limits are checked before a container is opened, iteratively, so a
//!   10,000-deep document is refused without recursion;
//! * lists or maps used as keys are refused;
//! * tags other than the core schema's scalar and container tags are refused.
//!
//! What a scalar means is `scalar.rs`'s job; `events.rs` holds the only `unsafe` in the crate.
//! Errors about a value's content (a duplicate key, a tag, a number JSON cannot hold) name
//! the path to it, `topics[3].acls: duplicate key "principal"`, so it can be found in a large
//! file even where the line is ambiguous.

mod events;
mod readers;
mod scalar;

use serde_json::Number;

use self::events::{EventKind, EventReader, Tag};
use self::scalar::Scalar;
use super::build;
use super::keys::Key;
use super::tree::{Interner, Line, Node, ObjectBuilder};

/// The deepest nesting built whatever the configured limit. The tree is dropped, compared and
/// hashed recursively, so an unbounded depth could overflow the stack after parsing;
/// `serde_yaml`'s recursion guard had the same value.
const DEPTH_CEILING: usize = 128;

/// Why a YAML document was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct YamlError {
    /// 1-based line of the offending event.
    pub(super) line: usize,
    pub(super) message: String,
}

/// A container being filled, with the line it starts on.
enum Frame {
    Seq(Vec<Node>, Line),
    Map {
        object: ObjectBuilder,
        /// The key whose value is being read; `None` while the next event is a key.
        key: Option<Key>,
        line: Line,
    },
}

/// Parses one YAML document into a value tree under the depth and node limits.
pub(super) fn parse_yaml(
    input: &str,
    max_depth: usize,
    max_nodes: usize,
) -> Result<Node, YamlError> {
    let Some(mut reader) = EventReader::new(input.as_bytes()) else {
        return Err(YamlError {
            line: 1,
            message: "the YAML parser could not be initialised".to_owned(),
        });
    };
    let mut document = DocumentBuilder::new(max_depth.min(DEPTH_CEILING), max_nodes);
    loop {
        let event = reader.next_event().map_err(|e| YamlError {
            line: e.line,
            message: e.message,
        })?;
        let line = event.line;
        let at = Line::new(line);
        let step = match event.kind {
            EventKind::StreamEnd => return Ok(document.finish()),
            EventKind::DocumentStart => document.start_document(),
            EventKind::Alias => Err("YAML aliases are not supported in governed files".to_owned()),
            EventKind::Scalar { text, plain, tag } if document.reading_key() => {
                document.key(text, plain, &tag)
            }
            EventKind::Scalar { text, plain, tag } => document.scalar(text, plain, &tag, at),
            EventKind::SequenceStart(tag) => document.open(Container::Seq, &tag, at),
            EventKind::MappingStart(tag) => document.open(Container::Map, &tag, at),
            EventKind::SequenceEnd | EventKind::MappingEnd => document.close(),
            EventKind::Other => Ok(()),
        };
        step.map_err(|message| YamlError { line, message })?;
    }
}

/// Which container an event opens.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Seq,
    Map,
}

/// The tree being built from the events, one method per kind of event, each refusing what
/// the event makes unacceptable (the message, without the line: the caller adds it).
struct DocumentBuilder {
    /// The containers open, outermost first.
    stack: Vec<Frame>,
    /// The document's value, once its top-level node is finished.
    root: Option<Node>,
    texts: Interner,
    documents: usize,
    nodes: usize,
    max_depth: usize,
    max_nodes: usize,
}

impl DocumentBuilder {
    fn new(max_depth: usize, max_nodes: usize) -> DocumentBuilder {
        DocumentBuilder {
            stack: Vec::new(),
            root: None,
            texts: Interner::default(),
            documents: 0,
            nodes: 0,
            max_depth,
            max_nodes,
        }
    }

    /// The document (an empty stream is `null`).
    fn finish(self) -> Node {
        self.root.unwrap_or(Node::Null(Line::UNKNOWN))
    }

    /// A document starts: a second one is refused.
    fn start_document(&mut self) -> Result<(), String> {
        self.documents += 1;
        if self.documents > 1 {
            return Err(
                "a governed YAML file must hold exactly one document, found a second".to_owned(),
            );
        }
        Ok(())
    }

    /// True when the next scalar is a key of the map being filled.
    fn reading_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    /// Counts one more node, refused past the limit.
    fn count_node(&mut self) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > self.max_nodes {
            return Err(build::too_many_nodes(self.max_nodes));
        }
        Ok(())
    }

    /// A key of the map being filled: its text, refused when another reader would read it
    /// as another key or the map already holds it (the error is about the map holding it).
    fn key(&mut self, text: String, plain: bool, tag: &Tag) -> Result<(), String> {
        let source =
            (plain && *tag == Tag::None && readers::may_resolve(&text)).then(|| text.clone());
        let key = resolve_checked(text, plain, tag, true)
            .and_then(key_text)
            .and_then(|key| match source {
                Some(source) if source != key => Err(readers::noncanonical_key(&source, &key)),
                _ => Ok(key),
            });
        let (map, outer) = self
            .stack
            .split_last_mut()
            .expect("reading a key means a map is open");
        let Frame::Map {
            object, key: slot, ..
        } = map
        else {
            unreachable!("reading a key means the top frame is a map");
        };
        let key = key.and_then(|text| {
            let key = self.texts.intern(&text);
            match object.claim(&key) {
                Ok(()) => Ok(key),
                Err(clash) => Err(clash.message(&text)),
            }
        });
        match key {
            Ok(key) => {
                *slot = Some(key);
                Ok(())
            }
            Err(message) => Err(at_path(outer, message)),
        }
    }

    /// A scalar value starting on `at`.
    fn scalar(&mut self, text: String, plain: bool, tag: &Tag, at: Line) -> Result<(), String> {
        self.count_node()?;
        match resolve_checked(text, plain, tag, false)
            .and_then(|s| node_value(s, at, &mut self.texts))
        {
            Ok(value) => {
                attach(&mut self.stack, &mut self.root, value);
                Ok(())
            }
            Err(message) => Err(at_path(&self.stack, message)),
        }
    }

    /// A list or map starting on `at`: refused as a key, with a tag not its own, past the
    /// node limit or past the depth limit, before anything is built for it.
    fn open(&mut self, container: Container, tag: &Tag, at: Line) -> Result<(), String> {
        if self.reading_key() {
            return Err(match container {
                Container::Seq => build::LIST_KEY,
                Container::Map => build::MAP_KEY,
            }
            .to_owned());
        }
        let own_tag = match container {
            Container::Seq => "seq",
            Container::Map => "map",
        };
        let tag_fits = match tag {
            Tag::None => true,
            Tag::Core(name) => name == own_tag,
            Tag::Other(_) => false,
        };
        if !tag_fits {
            return Err(at_path(&self.stack, scalar::unsupported_tag(tag)));
        }
        self.count_node()?;
        if self.stack.len() + 1 > self.max_depth {
            return Err(build::too_deep(self.max_depth));
        }
        self.stack.push(match container {
            Container::Seq => Frame::Seq(Vec::new(), at),
            Container::Map => Frame::Map {
                object: ObjectBuilder::default(),
                key: None,
                line: at,
            },
        });
        Ok(())
    }

    /// The innermost container ends: its value goes into its parent, or is the document.
    fn close(&mut self) -> Result<(), String> {
        let value = match self.stack.pop() {
            Some(Frame::Seq(items, line)) => Node::Array(items.into_boxed_slice(), line),
            Some(Frame::Map { object, line, .. }) => object.finish(line),
            // libyaml never ends a container it did not start.
            None => return Err("unbalanced YAML event stream".to_owned()),
        };
        attach(&mut self.stack, &mut self.root, value);
        Ok(())
    }
}

/// A scalar resolved as [`scalar::resolve`] does, refused when it is plain and untagged and
/// another reader of the file would read it otherwise (`readers.rs`); `key` when it is a map
/// key.
fn resolve_checked(text: String, plain: bool, tag: &Tag, key: bool) -> Result<Scalar, String> {
    if !(plain && *tag == Tag::None && readers::may_resolve(&text)) {
        return scalar::resolve(text, plain, tag);
    }
    let resolved = scalar::resolve(text.clone(), plain, tag)?;
    match readers::refusal(&text, &resolved, key) {
        Some(message) => Err(message),
        None => Ok(resolved),
    }
}

/// Puts a finished value into the container being filled, or makes it the document.
fn attach(stack: &mut [Frame], root: &mut Option<Node>, value: Node) {
    match stack.last_mut() {
        None => *root = Some(value),
        Some(Frame::Seq(items, _)) => items.push(value),
        Some(Frame::Map { object, key, .. }) => {
            if let Some(key) = key.take() {
                object.push(key, value);
            }
        }
    }
}

/// A resolved scalar as a tree value starting on `line`, refusing what JSON cannot hold.
fn node_value(scalar: Scalar, line: Line, texts: &mut Interner) -> Result<Node, String> {
    let too_wide = |v: &dyn std::fmt::Display| format!("integer {v} does not fit in 64 bits");
    Ok(match scalar {
        Scalar::Null => Node::Null(line),
        Scalar::Bool(b) => Node::Bool(b, line),
        Scalar::Int(n) => {
            let number: Number = match (i64::try_from(n), u64::try_from(n)) {
                (Ok(small), _) => small.into(),
                (_, Ok(small)) => small.into(),
                _ => return Err(too_wide(&n)),
            };
            if let Some(message) = build::inexact_in_a_double(n) {
                return Err(message);
            }
            Node::Number(number, line)
        }
        Scalar::BigUnsigned(n) => return Err(too_wide(&n)),
        Scalar::Float(f) => Node::Number(
            Number::from_f64(f).ok_or_else(|| {
                format!("number {f} (NaN or infinite) cannot be represented in JSON")
            })?,
            line,
        ),
        Scalar::Str(s) => Node::String(texts.text(&s), line),
    })
}

/// A resolved scalar as a map key: its text, so `1: a` is key `"1"` and `~: b` key `"null"`.
fn key_text(scalar: Scalar) -> Result<String, String> {
    Ok(match scalar {
        Scalar::Null => "null".to_owned(),
        Scalar::Bool(b) => b.to_string(),
        Scalar::Int(n) => n.to_string(),
        Scalar::BigUnsigned(n) => n.to_string(),
        // The text the number would print as in JSON, so `1.5: x` is key "1.5".
        Scalar::Float(f) => match Number::from_f64(f) {
            Some(n) => n.to_string(),
            None => return Err(format!("map key {f} (NaN or infinite) is not supported")),
        },
        Scalar::Str(s) => s,
    })
}

/// `message` prefixed with the path to the value the open `frames` lead to, as
/// `topics[3].acls: message`; the document itself has no prefix.
fn at_path(frames: &[Frame], message: String) -> String {
    let mut path = String::new();
    for frame in frames {
        match frame {
            Frame::Seq(items, _) => path.push_str(&format!("[{}]", items.len())),
            Frame::Map { key, .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key.as_deref().unwrap_or("?"));
            }
        }
    }
    if path.is_empty() {
        message
    } else {
        format!("{path}: {message}")
    }
}

#[cfg(test)]
mod tests;
