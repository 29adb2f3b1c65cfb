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
use super::tree::{Interner, Key, Line, Node, ObjectBuilder};

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
    let max_depth = max_depth.min(DEPTH_CEILING);
    let Some(mut reader) = EventReader::new(input.as_bytes()) else {
        return Err(YamlError {
            line: 1,
            message: "the YAML parser could not be initialised".to_owned(),
        });
    };
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Node> = None;
    let mut texts = Interner::default();
    let mut documents = 0usize;
    let mut nodes = 0usize;
    loop {
        let event = reader.next_event().map_err(|e| YamlError {
            line: e.line,
            message: e.message,
        })?;
        let line = event.line;
        let fail = |message: String| Err(YamlError { line, message });
        let at = Line::new(line);
        let reading_key = matches!(stack.last(), Some(Frame::Map { key: None, .. }));
        let is_seq = matches!(event.kind, EventKind::SequenceStart(_));
        match event.kind {
            EventKind::StreamEnd => return Ok(root.unwrap_or(Node::Null(Line::UNKNOWN))),
            EventKind::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return fail(
                        "a governed YAML file must hold exactly one document, found a second"
                            .to_owned(),
                    );
                }
            }
            EventKind::Alias => {
                return fail("YAML aliases are not supported in governed files".to_owned());
            }
            EventKind::Scalar { text, plain, tag } if reading_key => {
                let source = (plain && tag == Tag::None && readers::may_resolve(&text))
                    .then(|| text.clone());
                let key = resolve_checked(text, plain, &tag, true)
                    .and_then(key_text)
                    .and_then(|key| match source {
                        Some(source) if source != key => {
                            Err(readers::noncanonical_key(&source, &key))
                        }
                        _ => Ok(key),
                    });
                let Some(Frame::Map {
                    object, key: slot, ..
                }) = stack.last_mut()
                else {
                    unreachable!("reading_key means the top frame is a map");
                };
                let key = key.and_then(|text| {
                    let key = texts.intern(&text);
                    match object.claim(&key) {
                        Ok(()) => Ok(key),
                        Err(clash) => Err(clash.message(&text)),
                    }
                });
                match key {
                    Ok(key) => *slot = Some(key),
                    // A key error is about the map holding it.
                    Err(message) => return fail(at_path(&stack[..stack.len() - 1], message)),
                }
            }
            EventKind::Scalar { text, plain, tag } => {
                nodes += 1;
                if nodes > max_nodes {
                    return fail(build::too_many_nodes(max_nodes));
                }
                match resolve_checked(text, plain, &tag, false)
                    .and_then(|s| node_value(s, at, &mut texts))
                {
                    Ok(value) => attach(&mut stack, &mut root, value),
                    Err(message) => return fail(at_path(&stack, message)),
                }
            }
            EventKind::SequenceStart(tag) | EventKind::MappingStart(tag) => {
                if reading_key {
                    return fail(
                        if is_seq {
                            build::LIST_KEY
                        } else {
                            build::MAP_KEY
                        }
                        .to_owned(),
                    );
                }
                let own_tag = if is_seq { "seq" } else { "map" };
                let tag_fits = match &tag {
                    Tag::None => true,
                    Tag::Core(name) => name == own_tag,
                    Tag::Other(_) => false,
                };
                if !tag_fits {
                    return fail(at_path(&stack, scalar::unsupported_tag(&tag)));
                }
                nodes += 1;
                if nodes > max_nodes {
                    return fail(build::too_many_nodes(max_nodes));
                }
                if stack.len() + 1 > max_depth {
                    return fail(build::too_deep(max_depth));
                }
                stack.push(if is_seq {
                    Frame::Seq(Vec::new(), at)
                } else {
                    Frame::Map {
                        object: ObjectBuilder::default(),
                        key: None,
                        line: at,
                    }
                });
            }
            EventKind::SequenceEnd | EventKind::MappingEnd => {
                let value = match stack.pop() {
                    Some(Frame::Seq(items, line)) => Node::Array(items.into_boxed_slice(), line),
                    Some(Frame::Map { object, line, .. }) => object.finish(line),
                    // libyaml never ends a container it did not start.
                    None => return fail("unbalanced YAML event stream".to_owned()),
                };
                attach(&mut stack, &mut root, value);
            }
            EventKind::Other => {}
        }
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
